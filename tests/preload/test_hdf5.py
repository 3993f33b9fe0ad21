"""The HDF5 layer of the runtime (runtime/src/hdf5, docs/hdf5.md): the `hdf5` section of the configuration applied
inside unmodified HDF5 applications, checked by reading the properties back from the files the applications wrote
(tests/mpi/programs/h5_props.c, run without the runtime), from the open file's access list inside the application,
from the MPI-IO calls the statistics counted, and against the statistics' own account ("hdf5" of each file).
"""
import json
import subprocess
from math import prod

import pytest

from conftest import KERNEL, LIBIOTAME, TEST_PROGRAMS, write_json

H5_PROPS = TEST_PROGRAMS / "h5_props"
NOT_MPIO = "the file does not use the MPI-IO driver"
UNTOUCHED = {"driver": "mpio", "applied": {}, "datasets": {}, "not_applied": []}
EARLY = "HDF5 allocated the storage at creation (parallel HDF5 allocates early with the MPI-IO driver)"


def derived_chunk(shape, elem, target):
    """docs/hdf5.md: whole dimensions from the fastest-varying one while they fit in the target, then part of the
    next one, ones before it (an independent re-implementation of runtime/src/hdf5/props.c)."""
    budget, chunk = max(1, min(target, 2 ** 32 - 1) // elem), [0] * len(shape)
    for i in reversed(range(len(shape))):
        chunk[i] = shape[i] if shape[i] <= budget else budget
        budget = budget // shape[i] if shape[i] <= budget else 1
    return chunk


def read_back(job, path):
    """Every dataset of a closed file as HDF5 reads it back, without the runtime."""
    return json.loads(job.run(1, [H5_PROPS, "read", path]).stdout)["datasets"]


def file_stats(stats, name):
    (f,) = [f for f in json.loads(stats.read_text())["files"] if f["path"].endswith(name)]
    return f


def run_kernel(job, n, kernel, args, config, name="s.json"):
    stats = job.tmp / name
    res, p = job.kernel(n, kernel, *args, "--keep", preload=True, config=write_json(job.tmp / "c.json", config),
                        stats=stats)
    assert res["verified"] is True, p.stderr
    # The files read back and verify without the runtime too.
    again, p = job.kernel(n, kernel, *args, "--skip-write")
    assert again["verified"] is True, p.stderr
    return stats


# ---- the library ----

def test_libiotame_does_not_link_hdf5():
    needed = subprocess.run(["readelf", "-d", LIBIOTAME], capture_output=True, text=True, check=True).stdout
    assert "hdf5" not in needed
    symbols = subprocess.run(["nm", "-D", LIBIOTAME], capture_output=True, text=True, check=True).stdout.split("\n")
    undefined = [s.split()[-1] for s in symbols if " U H5" in s]
    assert undefined == []
    exported = {s.split()[-1] for s in symbols if " T H5" in s}
    assert exported == {"H5Fcreate", "H5Fopen", "H5Dcreate2", "H5Dcreate1", "H5Dwrite", "H5Dread"}


# ---- the kernels ----

VPIC = ["--particles", "1000", "--steps", "2"]  # 16 datasets of 8000 bytes with 2 ranks


def test_vpicio_file_access_and_transfer(job):
    hdf5 = {"alignment": 65536, "alignment_threshold": 4096, "sieve_buf_size": 131072, "coll_metadata_reads": True,
            "coll_metadata_writes": True, "transfer": "collective"}
    stats = run_kernel(job, 2, "vpicio", VPIC, {"version": 1, "defaults": {
        "hdf5": hdf5, "mpiio_hints": {"cb_buffer_size": 1048576}}})
    datasets = read_back(job, job.tmp / "iotame-vpicio.h5")
    assert len(datasets) == 16
    for d in datasets.values():  # raw data is over the threshold: aligned
        assert d["layout"] == "contiguous" and d["offset"] % 65536 == 0, d
    f = file_stats(stats, "iotame-vpicio.h5")
    applied = dict(f["hdf5"]["applied"])
    assert applied.pop("alignment") == [4096, 65536]
    assert applied.pop("mpiio_hints") == {"cb_buffer_size": "1048576"}
    assert applied == {k: v for k, v in hdf5.items() if not k.startswith(("align", "transfer"))}
    assert f["hdf5"]["not_applied"] == []
    assert set(f["hdf5"]["datasets"]) == set(datasets)
    assert all(d == {"transfer": "collective"} for d in f["hdf5"]["datasets"].values())
    # The kernel transfers independently; HDF5's MPI-IO calls underneath are intercepted and counted.
    assert f["ops"]["write_at_all"]["count"] > 0 and f["ops"]["read_at_all"]["count"] > 0
    assert f["hints"] == {"cb_buffer_size": "1048576"}
    assert f["bytes_written"] >= 16 * 8000


def test_vpicio_threshold_and_meta_block_size(job):
    # Datasets (8000 bytes) under the threshold are not aligned; metadata goes into blocks of 1 MiB first.
    run_kernel(job, 2, "vpicio", VPIC, {"version": 1, "defaults": {"hdf5": {
        "alignment": 65536, "alignment_threshold": 16384, "meta_block_size": 1048576}}})
    offsets = [d["offset"] for d in read_back(job, job.tmp / "iotame-vpicio.h5").values()]
    assert any(o % 65536 for o in offsets)
    assert min(offsets) >= 1048576


FLASH = ["--maxblocks", "5", "--nxb", "4", "--nyb", "4", "--nzb", "4", "--nguard", "2"]


def test_flashio_chunking_by_file_and_dataset_rules(job):
    # Only the checkpoint file has a rule: the two plot files are left as the application made them.
    config = {"version": 1, "files": [{"match": "*_chk.h5", "hdf5": {
        "chunk_bytes": 1024, "datasets": [{"match": "/dens", "chunk": [1, 4, 4, 4]}]}}]}
    stats = run_kernel(job, 2, "flashio", FLASH, config)
    chk = read_back(job, job.tmp / "iotame-flashio_chk.h5")
    assert chk["/dens"]["chunk"] == [1, 4, 4, 4]
    for name, d in chk.items():
        if name != "/dens":
            assert d["layout"] == "chunked" and d["chunk"] == derived_chunk(d["shape"], d["type_size"], 1024), name
    account = file_stats(stats, "iotame-flashio_chk.h5")["hdf5"]
    assert {k: v["chunk"] for k, v in account["datasets"].items()} == {k: v["chunk"] for k, v in chk.items()}
    assert account["not_applied"] == [] and account["applied"] == {}
    for plot in ["iotame-flashio_plt_cnt.h5", "iotame-flashio_plt_crn.h5"]:
        assert all(d["layout"] == "contiguous" for d in read_back(job, job.tmp / plot).values())
        assert file_stats(stats, plot)["hdf5"] == UNTOUCHED


VORPAL = ["--block", "6x5x4", "--steps", "2", "--collective"]  # /Step#S/field [4][5][12][3] doubles


def test_vorpalio_chunk_bytes_alloc_time_and_independent_transfer(job):
    config = {"version": 1, "defaults": {"hdf5": {
        "alloc_time": "early", "transfer": "independent",
        "datasets": [{"match": "/Step#0/*", "chunk_bytes": 960}]}}}
    stats = run_kernel(job, 2, "vorpalio", VORPAL, config)
    datasets = read_back(job, job.tmp / "iotame-vorpalio.h5")
    step0, step1 = datasets["/Step#0/field"], datasets["/Step#1/field"]
    assert step0["chunk"] == derived_chunk([4, 5, 12, 3], 8, 960) == [1, 3, 12, 3]
    assert step1["layout"] == "contiguous"  # no dataset rule matches it
    assert step0["alloc_time"] == step1["alloc_time"] == "early"
    assert step0["shape"] == step1["shape"] == [4, 5, 12, 3] and step0["type_size"] == 8
    f = file_stats(stats, "iotame-vorpalio.h5")
    assert f["hdf5"]["datasets"] == {
        "/Step#0/field": {"chunk": [1, 3, 12, 3], "alloc_time": "early", "transfer": "independent"},
        "/Step#1/field": {"alloc_time": "early", "transfer": "independent"}}
    # The kernel asks for collective transfers; the configuration makes them independent.
    assert not [op for op in f["ops"] if op.endswith("_all")]


GCRM = ["--cells", "300", "--levels", "7", "--chunk-cells", "128", "--chunk-levels", "3"]


def test_gcrmio_replaces_the_applications_chunks_and_reports_what_it_cannot_do(job):
    config = {"version": 1, "defaults": {"hdf5": {"datasets": [
        {"match": "cell_var_*", "chunk": [64, 7]},
        {"match": "edge_var_0", "chunk": [100000, 7]}]}}}  # more rows than the dataset's 1800
    stats = run_kernel(job, 2, "gcrmio", GCRM, config)
    datasets = read_back(job, job.tmp / "iotame-gcrmio.h5")
    for i in range(4):
        assert datasets[f"/cell_var_{i}"]["chunk"] == [64, 7]
    assert datasets["/edge_var_0"]["chunk"] == [128, 3]  # not applicable: the application's own
    assert datasets["/corner_var_0"]["chunk"] == [128, 3]  # no rule: untouched
    account = file_stats(stats, "iotame-gcrmio.h5")["hdf5"]
    assert set(account["datasets"]) == {f"/cell_var_{i}" for i in range(4)}
    assert account["not_applied"] == [{
        "dataset": "/edge_var_0", "property": "chunk",
        "reason": "chunk dimension 0 (100000) exceeds the dataset's fixed extent (1800)"}]


def test_gcrmio_alloc_time_late_is_reported_under_mpiio(job):
    config = {"version": 1, "defaults": {"hdf5": {"alloc_time": "late", "chunk_bytes": 4096}}}
    stats = run_kernel(job, 2, "gcrmio", ["--cells", "300", "--levels", "7", "--variables", "1",
                                          "--edge-variables", "0", "--corner-variables", "0"], config)
    d = read_back(job, job.tmp / "iotame-gcrmio.h5")["/cell_var_0"]
    assert d["alloc_time"] == "early" and d["chunk"] == derived_chunk([600, 7], 4, 4096) == [146, 7]
    account = file_stats(stats, "iotame-gcrmio.h5")["hdf5"]
    assert account["datasets"] == {"/cell_var_0": {"chunk": [146, 7]}}
    assert account["not_applied"] == [{"dataset": "/cell_var_0", "property": "alloc_time", "reason": EARLY}]


def test_without_configuration_or_disabled_nothing_changes(job):
    stats = job.tmp / "s.json"
    res, _ = job.kernel(2, "vorpalio", *VORPAL, "--keep", preload=True, stats=stats)
    assert res["verified"] is True
    assert file_stats(stats, "iotame-vorpalio.h5")["hdf5"] == UNTOUCHED
    assert all(d["layout"] == "contiguous" for d in read_back(job, job.tmp / "iotame-vorpalio.h5").values())
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {"hdf5": {"chunk_bytes": 960}}})
    res, _ = job.kernel(2, "vorpalio", *VORPAL, "--keep", preload=True, config=config,
                        extra_env={"IOTAME_DISABLE": "1"})
    assert res["verified"] is True
    assert all(d["layout"] == "contiguous" for d in read_back(job, job.tmp / "iotame-vorpalio.h5").values())


# ---- an application with property lists of its own ----

FULL = {"alignment": 4096, "alignment_threshold": 2048, "meta_block_size": 65536, "sieve_buf_size": 131072,
        "coll_metadata_reads": True, "coll_metadata_writes": True, "chunk_bytes": 1600, "transfer": "collective",
        "datasets": [{"match": "/g/*", "chunk": [250]}]}


def app(job, n, config=None, serial=False, **kw):
    args = [H5_PROPS, "app", job.tmp / "x.h5", *(["--serial"] if serial else [])]
    cfg = write_json(job.tmp / "c.json", config) if config else None
    p = job.run(n, args, config=cfg, **kw)
    return json.loads(p.stdout)


@pytest.mark.parametrize("override", [False, True])
def test_application_lists_are_unchanged_and_the_file_has_the_configured_ones(job, override):
    plain = app(job, 2)
    config = {"version": 1, "defaults": {"hdf5": FULL, "override": override,
                                         "mpiio_hints": {"cb_buffer_size": 1048576, "romio_ds_write": "enable"}}}
    stats = job.tmp / "s.json"
    out = app(job, 2, config, preload=True, stats=stats)
    # The application's own lists after every call: as it made them; no list of ours left open.
    assert out["problems"] == [] and out["problems_all_ranks"] == 0 and out["verified"] is True
    assert out["plists_left_open"] == plain["plists_left_open"]
    assert set(out["plists_left_open"].values()) == {0}
    # The open file's access list holds the configuration, the MPI file under it the hints.
    assert out["file_access"] == {"alignment": [2048, 4096], "meta_block_size": 65536, "sieve_buf_size": 131072,
                                  "coll_metadata_reads": True, "coll_metadata_writes": True}
    assert plain["file_access"] == {"alignment": [1, 512], "meta_block_size": 4096, "sieve_buf_size": 32768,
                                    "coll_metadata_reads": False, "coll_metadata_writes": False}
    assert out["mpi_hints"]["cb_buffer_size"] == "1048576"
    # The application's own romio_ds_write wins unless the rule overrides it.
    assert out["mpi_hints"]["romio_ds_write"] == ("enable" if override else "disable")
    # What HDF5 reports into the application's transfer list is what happened: collective.
    assert (plain["actual_io_mode"], out["actual_io_mode"]) == ("independent", "collective")

    datasets = read_back(job, job.tmp / "x.h5")
    assert datasets["/a"]["chunk"] == [400]  # H5P_DEFAULT creation list: chunk_bytes 1600 / 4
    for name in ["/g/b", "/g/c"]:  # its own list (H5Dcreate2, H5Dcreate1): the dataset rule
        assert datasets[name]["chunk"] == [250]
        assert datasets[name]["fill_value"] == 7  # never changed
    assert datasets["/compact"]["layout"] == "compact" and datasets["/scalar"]["layout"] == "contiguous"
    for d in datasets.values():
        assert d["type_size"] == 4 and d["shape"] in ([2000], [4, 4], [])
    account = file_stats(stats, "x.h5")["hdf5"]
    assert account["not_applied"] == [
        {"dataset": "/compact", "property": "chunk", "reason": "the application asked for a compact layout"},
        {"dataset": "/scalar", "property": "chunk", "reason": "a scalar dataspace cannot be chunked"}]
    assert account["datasets"]["/a"] == {"chunk": [400], "transfer": "collective"}
    assert account["datasets"]["/g/c"] == {"chunk": [250], "transfer": "collective"}
    hints = {"cb_buffer_size": "1048576"} if not override else {"cb_buffer_size": "1048576", "romio_ds_write": "enable"}
    assert account["applied"]["mpiio_hints"] == hints


def test_serial_driver_alloc_time_and_a_refused_property(job):
    """The default (sec2) driver: allocation time is applied as asked; what needs MPI-IO is reported; a list HDF5
    refuses (a compact dataset allocated late) is retried with the application's own."""
    config = {"version": 1, "defaults": {"hdf5": {"alloc_time": "late", "chunk": [100], "transfer": "collective",
                                                  "coll_metadata_reads": True, "alignment": 4096}}}
    stats = job.tmp / "s.json"
    out = app(job, 1, config, serial=True, preload=True, stats=stats)
    assert out["problems"] == [] and out["verified"] is True
    assert out["file_access"]["alignment"] == [1, 4096]
    datasets = read_back(job, job.tmp / "x.h5.0")
    for name in ["/a", "/g/b", "/g/c"]:
        assert datasets[name]["chunk"] == [100] and datasets[name]["alloc_time"] == "late"
    assert datasets["/scalar"]["alloc_time"] == "late" and datasets["/scalar"]["layout"] == "contiguous"
    assert datasets["/compact"]["layout"] == "compact" and datasets["/compact"]["alloc_time"] == "early"
    account = file_stats(stats, "x.h5.0")["hdf5"]
    assert account["driver"] == "other" and account["applied"] == {"alignment": [1, 4096]}
    reasons = {(e.get("dataset"), e["property"]): e["reason"] for e in account["not_applied"]}
    assert reasons[(None, "coll_metadata_reads")] == NOT_MPIO
    assert reasons[("/a", "transfer")] == NOT_MPIO
    assert reasons[("/compact", "dataset creation")] == (
        "H5Dcreate2 refused the configured properties (compact dataset must have early space allocation): the "
        "application's own were used")
    assert "/compact" not in account["datasets"]


def test_invalid_hdf5_settings_stop_the_job_before_any_io(job):
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {"hdf5": {"chunk": [0], "transfer": "all"}}})
    p = job.run(1, [KERNEL, "vpicio", "--particles", "10"], preload=True, config=config, check=False)
    assert p.returncode == 3
    assert "defaults.hdf5.chunk[0]: expected an integer >= 1, got 0" in p.stderr
    assert 'defaults.hdf5.transfer: expected one of collective, independent, got "all"' in p.stderr
    assert not (job.tmp / "iotame-vpicio.h5").exists()
