"""advise's findings on the real logs of ../shared/darshan-logs/ (and the darshan wheel's where no shared log has
the pattern): each finding pinned on a log where it must fire and one where it must not, with the normalised
figure recomputed here from the log's own counters (read with pydarshan, not through iotame) where the figure
decides.

The expectations come from what the jobs are: the 32-rank MPI-IO test reads and writes once per rank (one switch
per rank, not a read-modify-write); the skewed IOR reads collectively (its aggregators' POSIX times differ by
design, its ranks' MPI-IO times do not); the 1.6 TB VPIC read (pytokio) moves its bytes in 100 MB-1 GB reads beside
HDF5 metadata reads; E3SM's PnetCDF output goes through collective buffering with holes (data sieving)."""
import json
from pathlib import Path, PurePosixPath

import pytest

darshan = pytest.importorskip("darshan")

from iotame.advise import advise_loaded                                       # noqa: E402
from iotame.advise._worker import worker_read                                 # noqa: E402
from iotame.advise.findings import (IMBALANCE_RATIO, RMW_SWITCHES_PER_RANK, SMALL_TIME_SHARE,  # noqa: E402
                                    UNREAD_SHARE)
from iotame.cli import main                                                   # noqa: E402

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "darshan-logs"
WHEEL = Path(darshan.__file__).resolve().parent / "examples" / "example_logs"

MPIIO_TEST = SHARED / "mpi_io_test_with_dxt__treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"
SKEW = SHARED / "skew_io__skew-autobench-ior.darshan"
BIG_READ = SHARED / "pytokio__sample-2.darshan"
E3SM = SHARED / "e3sm_io_heatmaps_and_dxt__e3sm_io_heatmap_only.darshan"
IMBALANCED = SHARED / "imbalanced_io__imbalanced-io.darshan"
IOR_HDF5 = SHARED / "ior_pnetcdf_hdf5__shane_ior-HDF5_id438090-438090_11-9-41522-17417065676046418211_1.darshan"
DIAGONAL = SHARED / "hdf5_diagonal_write_only__hdf5_diagonal_write_1_byte_dxt.darshan"


@pytest.fixture(autouse=True)
def no_profile_found(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)


_CACHE: dict = {}


def advice(path: Path):
    """advise's advice for a log, its records read by the worker directly (the findings do not depend on the header
    check, which load.py owns); one read per log and test run."""
    if path not in _CACHE:
        if not path.exists():
            pytest.fail(f"{path}: the shared log is missing (../shared/darshan-logs/ beside the project)")
        data = worker_read(str(path))
        data["path"] = str(path)
        _CACHE[path] = advise_loaded(data, str(path), top=1000)
    return _CACHE[path]


def found(path: Path, fid: str, match: str | None = "*"):
    return [f for f in advice(path).findings if f.id == fid and (match == "*" or f.match == match)]


def counters(path: Path, mod: str):
    """(report, [(file name, rank, counters, fcounters)]) of a module, straight from pydarshan."""
    r = darshan.DarshanReport(str(path), read_all=False)
    r.mod_read_all_records(mod)
    names, fnames = r.counters[mod]["counters"], r.counters[mod]["fcounters"]
    r.read_name_records()
    out = []
    for rec in r.records[mod]:
        out.append((r.name_records[rec["id"]], rec["rank"], dict(zip(names, rec["counters"])),
                    dict(zip(fnames, rec["fcounters"]))))
    return r, out


# --- read_modify_write: switches per rank -------------------------------------------------------------------

def test_read_modify_write_not_on_one_switch_per_rank():
    """The 32-rank MPI-IO test: each rank writes then reads its part (its per-rank records: one switch each)."""
    _, recs = counters(MPIIO_TEST, "POSIX")
    switches = {rank: c["POSIX_RW_SWITCHES"] for name, rank, c, _ in recs if name.endswith("test.out")}
    assert len(switches) == 32 and set(switches.values()) == {1}
    assert sum(switches.values()) >= 16                  # what the old sum over ranks fired on
    assert not found(MPIIO_TEST, "read_modify_write")


def test_read_modify_write_on_the_aggregators_of_e3sm():
    """E3SM's output: only the aggregators have POSIX records, each alternating thousands of times."""
    _, recs = counters(E3SM, "POSIX")
    agg = [c for name, rank, c, _ in recs if PurePosixPath(name).name.startswith("can_I_out")]
    ranks = {rank for name, rank, _, _ in recs if PurePosixPath(name).name.startswith("can_I_out")}
    per_rank = sum(c["POSIX_RW_SWITCHES"] for c in agg) / len(ranks)
    assert per_rank >= RMW_SWITCHES_PER_RANK
    f = found(E3SM, "read_modify_write", "can_I_out_h*.nc")
    assert f and f[0].value == pytest.approx(per_rank, rel=1e-3) and f[0].threshold == RMW_SWITCHES_PER_RANK


# --- rank_imbalance: at the layer the application called ------------------------------------------------------

def test_rank_imbalance_not_at_posix_on_the_skewed_collective_ior():
    _, posix = counters(SKEW, "POSIX")
    _, mpiio = counters(SKEW, "MPI-IO")
    pf = posix[0][3]
    mf = mpiio[0][3]
    assert mpiio[0][2]["MPIIO_COLL_READS"] > 0
    assert pf["POSIX_F_SLOWEST_RANK_TIME"] > 1000 * pf["POSIX_F_FASTEST_RANK_TIME"]   # aggregators against others
    assert mf["MPIIO_F_SLOWEST_RANK_TIME"] < IMBALANCE_RATIO * mf["MPIIO_F_FASTEST_RANK_TIME"]
    assert not found(SKEW, "rank_imbalance")
    assert not advice(SKEW).findings                   # a balanced collective read of 550 GB in large requests


def test_rank_imbalance_on_the_wheels_per_process_ior():
    """No shared log has an imbalance at the layer that did the work; sample-badost (2048 files, one per rank,
    86 on one OST) has: its slowest rank took 22x the mean."""
    log = WHEEL / "sample-badost.darshan"
    _, recs = counters(log, "POSIX")
    times = {}
    for _, rank, _, f in recs:
        times[rank] = times.get(rank, 0.0) + f["POSIX_F_READ_TIME"] + f["POSIX_F_WRITE_TIME"] + f["POSIX_F_META_TIME"]
    mean = sum(times.values()) / len(times)
    f = found(log, "rank_imbalance")
    assert f and f[0].value == pytest.approx(max(times.values()) / mean, rel=1e-3)


# --- small requests: by the time they take --------------------------------------------------------------------

def test_no_small_request_finding_on_the_16_tb_read():
    _, recs = counters(BIG_READ, "POSIX")
    c = recs[0][2]
    small = sum(c[f"POSIX_SIZE_READ_{b}"] for b in ("0_100", "100_1K", "1K_10K", "10K_100K"))
    assert small / c["POSIX_READS"] > 0.8                  # most requests are small ...
    assert c["POSIX_BYTES_READ"] > 1.6e12                  # ... beside 1.6 TB
    assert small * 100_000 / c["POSIX_BYTES_READ"] < 0.01  # which they cannot carry a hundredth of
    ids = {f.id for f in advice(BIG_READ).findings}
    assert not ids & {"small_requests", "collective_small_requests"}
    assert not any(s.key == "staging.prefetch" for s in advice(BIG_READ).settings)


def test_small_collective_requests_on_e3sm_and_small_files_of_the_imbalanced_job():
    f = found(E3SM, "collective_small_requests", "can_I_out_h*.nc")
    assert f and f[0].value >= SMALL_TIME_SHARE and f[0].threshold == SMALL_TIME_SHARE
    small = found(IMBALANCED, "small_requests")
    assert small and all(x.severity == "info" for x in small)    # 20 MB files beside 130 GB: they weigh little


# --- partial POSIX records, modules not analysed, the many-small-files sentence, damaged headers ------------

def test_a_partial_posix_record_is_said_and_its_figures_are_mpiios():
    _, posix = counters(IMBALANCED, "POSIX")
    _, mpiio = counters(IMBALANCED, "MPI-IO")
    name = "/lus/theta-fs0/312046190"
    p = sum(c["POSIX_BYTES_READ"] + c["POSIX_BYTES_WRITTEN"] for n, _, c, _ in posix if n == name)
    m = sum(c["MPIIO_BYTES_READ"] + c["MPIIO_BYTES_WRITTEN"] for n, _, c, _ in mpiio if n == name)
    assert m > 1000 * p
    a = advice(IMBALANCED)
    note = next(n for n in a.notes if name in n)
    assert "partial" in note and "MPI-IO 25.1 GB" in note
    g = next(g for g in a.files if g.match == "312046190")
    assert g.totals.moved == m
    seconds = sum(f[f"MPIIO_F_{k}_TIME"] for n, _, _, f in mpiio if n == name for k in ("READ", "WRITE", "META"))
    assert g.totals.io_seconds == pytest.approx(seconds)
    assert g.totals.io_seconds / a.job.totals.io_seconds > 0.4       # half of the job's time, now seen
    assert found(IMBALANCED, "stripe_count", "312046190")


def test_many_small_files_names_a_real_median_and_weighs_by_time(capsys):
    a = advice(IMBALANCED)                  # 1030 files, most of them opened and not read: not its time
    assert not found(IMBALANCED, "many_small_files")
    assert all("below 0 bytes" not in f.message for f in a.findings)
    dxt = found(WHEEL / "dxt.darshan", "many_small_files")
    assert dxt and "median" in dxt[0].message and dxt[0].value >= dxt[0].threshold


def test_modules_advise_does_not_read_are_named_with_their_bytes(capsys):
    log = WHEEL / "noposix.darshan"        # a job whose only data went through STDIO
    r, recs = counters(log, "STDIO")
    stdio = sum(c["STDIO_BYTES_READ"] + c["STDIO_BYTES_WRITTEN"] for _, _, c, _ in recs)
    f = found(log, "unread_modules")
    assert f and f[0].counters == {"STDIO bytes": stdio} and f[0].value >= UNREAD_SHARE
    assert main(["advise", str(log)]) == 0
    out = capsys.readouterr().out
    assert "STDIO: 1.8 GB, not analysed" in out and "no counter crossed a threshold" not in out
    assert not found(E3SM, "unread_modules")        # 6 KB of STDIO beside 305 GB


def test_a_damaged_process_count_is_replaced_and_said():
    data = worker_read(str(MPIIO_TEST))
    data["job"]["nprocs"] = 4427712942739450220
    a = advise_loaded(data, "x.darshan").to_json()
    assert a["job"]["nprocs"] == 32                    # the records name ranks 0 to 31
    assert any("4,427,712,942,739,450,220 processes, which cannot be" in n for n in a["notes"])
    assert json.dumps(a)                               # and the figures per rank are finite


# --- the others: where they fire and where not ----------------------------------------------------------------

@pytest.mark.parametrize("fid, fires, silent", [
    ("independent_shared", IOR_HDF5, MPIIO_TEST),        # 15 calls per rank of 142 KB; 8 per rank of 16 MB
    ("interleaved_no_collective", IOR_HDF5, MPIIO_TEST),
    ("unaligned_requests", E3SM, SKEW),
    ("stripe_count", IMBALANCED, E3SM),
    ("ost_imbalance", IMBALANCED, E3SM),
    ("metadata_share", WHEEL / "dxt.darshan", BIG_READ),
    ("small_hdf5_chunks", None, DIAGONAL),
], ids=lambda x: x if isinstance(x, str) else (x.name[:24] if x else "-"))
def test_each_finding_fires_where_it_must_and_not_elsewhere(fid, fires, silent):
    if fires is not None:
        got = found(fires, fid)
        assert got, (fid, fires.name)
        assert all(f.quantity and f.value is not None and f.threshold is not None for f in got)
    assert not found(silent, fid), (fid, silent.name)


def test_every_finding_states_its_figure_and_threshold():
    for log in (E3SM, IMBALANCED, MPIIO_TEST, IOR_HDF5, WHEEL / "dxt.darshan"):
        for f in advice(log).findings:
            assert f.quantity and f.value is not None and f.threshold is not None, (log.name, f.id)
            assert f.to_json()["threshold"] == f.threshold


@pytest.mark.parametrize("log", sorted(SHARED.glob("*.darshan")), ids=lambda p: p.name[:30])
def test_every_shared_log_gives_findings_with_figures_and_a_configuration_the_runtime_accepts(tmp_path, log):
    """The configuration of each shared log, written as --config-out writes it, passes `iotame config check`
    (the runtime's validator); each setting answers a finding of the advice."""
    from iotame.config import check_config, save_config
    a = advice(log)
    cfg = save_config(a.config, tmp_path / "advice.json")
    assert check_config(cfg) == []
    ids = {f.id for f in a.findings}
    assert all(set(s.findings) <= ids for s in a.settings)
    assert all(f.quantity and f.threshold is not None for f in a.findings)
