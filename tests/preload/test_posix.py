"""The POSIX layer (runtime/src/posix): what storage sees under MPI-IO, compared with the files and the MPI-IO layer."""
import json

import pytest

from conftest import TEST_PROGRAMS, write_json

POSIX_IO = TEST_PROGRAMS / "posix_io"
BLOCK, BLOCKS = 65536, 4


def run(job, n, mode, name, preload=True, config=None, block=BLOCK, blocks=BLOCKS, extra_env=None):
    data, stats = job.tmp / name, job.tmp / f"{name}.stats.json"
    p = job.run(n, [POSIX_IO, mode, data, block, blocks], preload=preload, config=config,
                stats=stats if preload else None, extra_env=extra_env)
    out = json.loads(p.stdout)
    assert out["verified"]
    return data, (json.loads(stats.read_text()) if preload else None), out


def record(stats, path):
    (f,) = [f for f in stats["files"] if f["path"] == str(path)]
    return f


@pytest.mark.parametrize("n", [1, 2, 4])
def test_independent_bytes_equal_the_file_and_the_mpiio_layer(job, n):
    data, stats, _ = run(job, n, "independent", "ind.dat")
    f = record(stats, data)
    p = f["posix"]
    size = data.stat().st_size
    assert size == n * BLOCK * BLOCKS
    assert p["bytes_written"] == size == f["bytes_written"]
    assert p["bytes_read"] == size == f["bytes_read"]
    # contiguous independent calls reach the file system one request each
    assert p["writes"] == p["reads"] == n * BLOCKS
    assert p["histogram"]["write"] == {str(BLOCK): n * BLOCKS}
    assert p["ranks"] == p["writing_ranks"] == p["reading_ranks"] == n
    # each rank's blocks follow one another (a file's first request is consecutive when it starts at offset 0):
    # all but the first of ranks 1.. are consecutive
    assert p["access"]["write"]["consecutive"] == BLOCKS + (n - 1) * (BLOCKS - 1)
    assert p["seek_distance"]["max"] == (n - 1) * BLOCK * BLOCKS
    assert p["access"]["write"]["sequential"] == n * BLOCKS and p["access"]["write"]["random"] == 0
    assert p["opens"] >= n and p["closes"] == p["opens"]
    assert p["syncs"] >= 1
    assert p["time"]["write"]["max"] >= p["time"]["write"]["avg"] >= p["time"]["write"]["min"] > 0
    # the most requests in flight at once over the node's processes
    assert 1 <= p["max_concurrent"] <= n


def test_two_phase_writes_come_from_the_aggregator_only(job):
    """ROMIO's two-phase collective I/O with one aggregator: the other rank makes no POSIX request."""
    n = 2
    data, stats, _ = run(job, n, "collective", "coll.dat")
    f = record(stats, data)
    p = f["posix"]
    size = data.stat().st_size
    assert size == n * BLOCK * BLOCKS == f["bytes_written"] == f["bytes_read"]
    assert p["bytes_written"] == size and p["bytes_read"] == size
    assert p["writing_ranks"] == 1 and p["reading_ranks"] == 1
    assert p["ranks"] == n  # both opened the file
    # the aggregator writes its collective buffer in file order: fewer, larger requests than the ranks' blocks
    assert 1 <= p["writes"] < n * BLOCKS
    assert p["access"]["write"]["random"] == 0
    assert p["max_concurrent"] == 1
    assert f["ops"]["write_all"]["count"] == n


def test_application_files_are_recorded_only_with_all_files(job):
    data, stats, out = run(job, 2, "plain", "app.dat")
    plain = job.tmp / "app.dat.plain"
    assert all(f["path"] != str(plain) for f in stats["files"])
    assert "posix" in record(stats, data)

    config = write_json(job.tmp / "all.json", {"version": 1, "defaults": {"posix": {"all_files": True}}})
    data, stats, out = run(job, 2, "plain", "all.dat", config=config)
    plain = job.tmp / "all.dat.plain"
    p = record(stats, plain)["posix"]
    assert p["ranks"] == 1  # rank 0 alone writes it
    assert p["bytes_written"] == plain.stat().st_size == 4096 + 100
    assert p["writes"] == 2 and p["reads"] == 1 and p["bytes_read"] == 1000
    assert p["seeks"] == 1 and p["syncs"] == 1
    # write at 0, pwrite at 4096 (consecutive); lseek to 0, read at 0 (consecutive: the first read)
    assert p["access"]["write"]["consecutive"] == 2 and p["access"]["read"]["consecutive"] == 1
    # the runtime's own files are never recorded; the MPI file is, as without all_files
    assert record(stats, data)["posix"]["bytes_written"] == data.stat().st_size
    assert not [f for f in stats["files"] if f["path"].endswith(".json") or f["path"].startswith(("/proc", "/sys"))]


@pytest.mark.parametrize("mode", ["independent", "collective", "plain"])
def test_transparent_data_and_errno(job, mode):
    config = write_json(job.tmp / "all.json", {"version": 1, "defaults": {"posix": {"all_files": True}}})
    plain, _, a = run(job, 2, mode, "plain.dat", preload=False)
    wrapped, _, b = run(job, 2, mode, "wrapped.dat", config=config)
    assert plain.read_bytes() == wrapped.read_bytes()
    assert a["checksum"] == b["checksum"]
    if mode == "plain":
        # pread on a closed descriptor, read on a write-only one, pwrite at a negative offset: the real call's errno
        assert a["errno"] == b["errno"] == [9, 9, 22]
        assert (job.tmp / "plain.dat.plain").read_bytes() == (job.tmp / "wrapped.dat.plain").read_bytes()


def test_disabled_is_a_pass_through(job):
    stats = job.tmp / "off.json"
    p = job.run(2, [POSIX_IO, "plain", job.tmp / "off.dat", BLOCK, BLOCKS], preload=True, stats=stats,
                extra_env={"IOTAME_DISABLE": "1"})
    assert json.loads(p.stdout)["errno"] == [9, 9, 22]
    assert not stats.exists()


def test_the_node_segment_is_not_left_behind(job, tmp_path):
    import os
    before = set(os.listdir("/dev/shm"))
    run(job, 2, "independent", "shm.dat")
    assert not [n for n in set(os.listdir("/dev/shm")) - before if n.startswith("iotame-")]


H5_PROPS = TEST_PROGRAMS / "h5_props"


@pytest.mark.skipif(not H5_PROPS.exists(), reason="no parallel HDF5 for this MPI")
def test_hdf5_files_are_recorded_through_mpiio_and_through_the_serial_driver(job):
    stats = job.tmp / "s.json"
    res, p = job.kernel(2, "vpicio", "--particles", "1000", "--steps", "2", "--keep", preload=True, stats=stats)
    assert res["verified"] is True, p.stderr
    (f,) = [f for f in json.loads(stats.read_text())["files"] if f["path"].endswith("iotame-vpicio.h5")]
    # HDF5's MPI-IO driver, independent transfers: what MPI-IO moved is what reached the file system
    assert f["posix"]["bytes_written"] == f["bytes_written"] > 0
    assert f["posix"]["bytes_read"] == f["bytes_read"]
    # the sec2 driver opens the file itself (H5Fcreate's opening hook): the same file record, POSIX only
    serial = job.tmp / "x.h5"
    job.run(1, [H5_PROPS, "app", serial, "--serial"], preload=True, stats=stats)
    (f,) = [f for f in json.loads(stats.read_text())["files"] if f["path"].endswith("x.h5.0")]
    # (HDF5 extends the file to its end of allocation with ftruncate: the file may be larger than what was written)
    assert f["bytes_written"] == 0 and 0 < f["posix"]["bytes_written"] <= (job.tmp / "x.h5.0").stat().st_size
    assert f["posix"]["writes"] > 0 and f["posix"]["opens"] >= 1
