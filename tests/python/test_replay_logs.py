"""The replay spec of the real logs of ../shared/darshan-logs (issue 49): every MPI-IO log gives a spec the kernel
accepts (no offset below 0, a damaged process count replaced), Darshan 3.1's DXT MPI-IO records without offsets get
them from the POSIX trace or from the counters' pattern, and the inference is listed in source.notes."""
from pathlib import Path

import pytest

darshan = pytest.importorskip("darshan")

from iotame.replay.darshan_plan import derive_offsets, plan_from_darshan  # noqa: E402
from iotame.replay.plan import to_spec                                   # noqa: E402

SHARED = (Path(__file__).resolve().parents[2] / ".." / "shared" / "darshan-logs").resolve()
MPIIO_LOGS = [p for p in sorted(SHARED.glob("*.darshan"))
              if not p.name.startswith(("dlio_logs", "hdf5_diagonal"))]      # the two without MPI-IO
needs_shared = pytest.mark.skipif(not MPIIO_LOGS, reason=f"no logs in {SHARED}")


def offsets(spec):
    return [r[0] for f in spec["files"] for proc in f["calls"] for e in proc for r in e.get("at", [])]


@needs_shared
@pytest.mark.parametrize("log", MPIIO_LOGS, ids=lambda p: p.name[:40])
def test_every_mpiio_log_gives_a_spec_with_real_offsets(log):
    spec = to_spec(plan_from_darshan(log, nprocs=2))
    assert spec["nprocs"] == 2 and spec["files"]
    assert min(offsets(spec)) >= 0
    assert all(lo >= 0 and n > 0 for f in spec["files"] for lo, n in f["preload"])


@needs_shared
def test_darshan_3_1_offsets_come_from_the_posix_trace():
    log = SHARED / "release_logs__mpi-io-test-x86_64-3.1.6.darshan"
    spec = to_spec(plan_from_darshan(log))
    (f,) = spec["files"]
    assert sorted(offsets(spec)) == sorted([r * 16 * 2**20 for r in range(4)] * 2)
    assert any("no offsets (Darshan 3.1)" in n and "POSIX request" in n for n in spec["source"]["notes"])


def test_without_a_matching_posix_trace_offsets_follow_the_counters_pattern():
    seg = lambda n, t: [-1, n, t, t + 1]                                   # noqa: E731
    traced = [{"id": 1, "rank": r, "write_segments": [seg(100, 0), seg(100, 2)], "read_segments": []}
              for r in range(3)]
    notes = set()
    coll = derive_offsets(traced, [], {"w": True, "r": False}, notes)
    assert [[s[0] for s in rec["write_segments"]] for rec in coll] == [[0, 300], [100, 400], [200, 500]]
    indep = derive_offsets(traced, [], {"w": False, "r": False}, notes)
    assert [[s[0] for s in rec["write_segments"]] for rec in indep] == [[0, 100], [200, 300], [400, 500]]
    assert any("counters' pattern" in n for n in notes)
    assert traced[0]["write_segments"][0][0] == -1                         # the log's records are left as read


@needs_shared
def test_counters_only_sizes_keep_reads_and_writes_apart():
    """ior-HDF5 (format 3.41, counters only): 23 independent writes, 3 of them in the 0-100 B bin, 36 reads; the
    common access sizes are shared by both directions. Every request of the counters is made: the 0-100 B writes
    the common sizes left no bytes for are calls of 0 bytes, not dropped (the replay made 20 writes and an empty
    0-100 B bin)."""
    from iotame.replay.darshan_plan import size_bin
    log = next(SHARED.glob("ior_pnetcdf_hdf5__*.darshan"))
    spec = to_spec(plan_from_darshan(log, nprocs=2))
    (f,) = spec["files"]
    sizes = {"w": [], "r": []}
    for proc in f["calls"]:
        for e in proc:
            if e["op"] in "wrWR":
                sizes[e["op"].lower()] += [sum(r[1] * r[2] for r in e["at"])] * e.get("repeat", 1)
    assert (len(sizes["w"]), len(sizes["r"])) == (23, 36)
    assert sum(size_bin(n) == 0 for n in sizes["w"]) == 3 and sorted(sizes["w"])[:4] == [0, 0, 0, 101]
    (w0,) = [e for proc in f["calls"] for e in proc if e["op"] == "w" and e["at"][0][1] == 0]
    assert w0["at"] == [[w0["at"][0][0], 0, 1, 0]] and w0.get("repeat", 1) == 3
    assert sum(size_bin(n) == 0 for n in sizes["r"]) == 3


@needs_shared
def test_reads_of_no_bytes_are_calls_of_the_spec():
    """A DXT log of Python's imports: the reads of 0 bytes at the end of each .pyc file are calls of 0 bytes, so the
    spec's reads per file are the log's POSIX_READS (they were dropped)."""
    from iotame.replay.compare import counts_from_darshan_rows, spec_file_counts
    from iotame.replay.darshan_plan import file_records, read_log
    log = SHARED / "hdf5_diagonal_write_only__hdf5_diagonal_write_1_byte_dxt.darshan"
    spec = to_spec(plan_from_darshan(log))
    records = {path: counts_from_darshan_rows(rows, prefix) for path, prefix, rows in file_records(read_log(log)).values()}
    pyc = [f for f in spec["files"] if f["name"].endswith(".pyc")]
    empty = [e for f in pyc for proc in f["calls"] for e in proc if e["op"] == "r" and e["at"][0][1] == 0]
    assert pyc and empty and all(e["at"] == [[e["at"][0][0], 0, 1, 0]] for e in empty)
    for f in pyc:
        assert spec_file_counts(f).calls["r"] == records[f["path"]].calls["r"], f["path"]


@needs_shared
def test_counters_only_collective_calls_take_the_largest_sizes():
    """pytokio's VPIC-IO (2048 ranks, counters only): 12,288 collective reads and as many requests of 100 MB-1 GB;
    the collective calls are those (128 MiB each), the independent ones HDF5's small metadata reads (the collective
    calls had the smallest sizes: 512-byte collective reads)."""
    log = SHARED / "pytokio__sample-2.darshan"
    spec = to_spec(plan_from_darshan(log, nprocs=2))
    (f,) = spec["files"]
    sizes = {"R": [], "r": []}
    for proc in f["calls"]:
        for e in proc:
            if e["op"] in sizes:
                sizes[e["op"]] += [sum(r[1] * r[2] for r in e["at"])] * e.get("repeat", 1)
    assert len(sizes["R"]) == 12288 and min(sizes["R"]) > 100 << 20
    assert max(sizes["r"]) < 1024
    assert any("collective calls take the largest" in n for n in spec["source"]["notes"])
