"""The replay spec from Darshan logs (the real ones the darshan wheel ships) and from iotame statistics with a request
trace: what the spec makes the kernel do must add up to what the log's counters and DXT say."""
import json
from pathlib import Path

import pytest

darshan = pytest.importorskip("darshan")

from iotame.cli import main
from iotame.errors import LogError, UsageError
from iotame.replay.darshan_plan import SIZE_BINS, counter_sizes, file_records, read_log, size_bin
from iotame.replay.plan import Call, FilePlan, align_collectives, merge_runs, preload_ranges, to_spec
from iotame.replay.source import job_plan

from .fakes import make_stats

LOGS = Path(darshan.__file__).parent
DXT_LOG = LOGS / "examples/example_logs/ior_hdf5_example.darshan"
COUNTERS_LOG = next((LOGS / "examples/darshan-graph").glob("pq_app_readAB_writeC_*.darshan"))
ALL_LOGS = sorted(p for p in LOGS.rglob("*.darshan") if "noposix.darshan" not in p.name)


def _made(spec_file: dict, proc: int, ops: str) -> tuple[int, int]:
    """(calls, bytes) proc makes in ops according to the spec."""
    calls = nbytes = 0
    for e in spec_file["calls"][spec_file["procs"].index(proc)]:
        if e["op"] in ops:
            n = e.get("repeat", 1)
            calls += n
            nbytes += n * sum(r[1] * r[2] for r in e["at"])
    return calls, nbytes


def _pieces(spec_file: dict, proc: int, ops: str) -> list[tuple[int, int]]:
    out = []
    for e in spec_file["calls"][spec_file["procs"].index(proc)]:
        if e["op"] in ops:
            for i in range(e.get("repeat", 1)):
                for off, length, count, stride in e["at"]:
                    out += [(off + i * e.get("advance", 0) + k * stride, length) for k in range(count)]
    return out


def test_dxt_requests_are_replayed_in_order_with_their_offsets_and_lengths():
    log = read_log(DXT_LOG)
    spec = to_spec(job_plan(DXT_LOG))
    (f,) = spec["files"]
    assert f["api"] == "MPIIO" and f["procs"] == [0, 1, 2, 3] and spec["source"]["dxt"]
    for rec in log["records"]["DXT_MPIIO"]:
        segs = sorted((start, off, n) for off, n, start, _ in rec["write_segments"] + rec["read_segments"])
        want = [(off, n) for _, off, n in segs]
        got = []
        entries = f["calls"][f["procs"].index(rec["rank"])]
        for e in entries:
            for i in range(e.get("repeat", 1)):
                got += [(r[0] + i * e.get("advance", 0), r[1]) for r in e.get("at", [])]
        assert got == want
        # IOR opens the file again to read it back (17 opens by 4 processes): one reopen after the last write
        ops = [e["op"] for e in entries]
        assert ops.count("o") == 1 and "w" not in ops[ops.index("o"):] and "r" not in ops[:ops.index("o")]
    # the counters say every call was independent: no collective entry
    assert all(e["op"] in "wro" for proc in f["calls"] for e in proc)
    # every range read is preloaded or written before the reopen by some process
    written = []
    for proc in f["calls"]:
        upto = [e["op"] for e in proc].index("o")
        written += _pieces({"procs": [0], "calls": [proc[:upto]]}, 0, "wW")
    covered = []
    for lo, n in sorted(f["preload"] + written):
        if covered and lo <= covered[-1][1]:
            covered[-1][1] = max(covered[-1][1], lo + n)
        else:
            covered.append([lo, lo + n])
    for p in f["procs"]:
        for off, length in _pieces(f, p, "rR"):
            assert any(lo <= off and off + length <= hi for lo, hi in covered), (off, length)


def test_counters_only_collective_file_interleaves_the_processes():
    spec = to_spec(job_plan(COUNTERS_LOG))
    (c,) = [f for f in spec["files"] if f["name"] == "C"]
    assert c["api"] == "MPIIO" and c["procs"] == [0, 1, 2, 3]
    recs = {p: rows for p, _, rows in file_records(read_log(COUNTERS_LOG)).values()}
    (row,) = recs[c["path"]]
    per_proc = row["MPIIO_COLL_WRITES"] // 4
    pieces = []
    for p in c["procs"]:
        calls, _ = _made(c, p, "W")
        assert calls == per_proc
        pieces += _pieces(c, p, "W")
    assert sum(n for _, n in pieces) == row["MPIIO_BYTES_WRITTEN"]
    pieces.sort()
    assert pieces[0][0] == 0 and all(a + n == b for (a, n), (b, _) in zip(pieces, pieces[1:]))  # no hole, no overlap
    # B is read by ranks 0 and 2 through POSIX, each its own records
    (b,) = [f for f in spec["files"] if f["name"] == "B"]
    assert b["api"] == "POSIX" and b["procs"] == [0, 2] and b["preload"] == [[0, 5000]]


@pytest.mark.parametrize("log", ALL_LOGS, ids=lambda p: p.name[:40])
def test_every_shipped_log_gives_the_counters_calls_bytes_and_bins(log):
    spec = to_spec(job_plan(log))
    recs = {p: (prefix, rows) for p, prefix, rows in file_records(read_log(log)).values()}
    assert spec["nprocs"] == read_log(log)["job"]["nprocs"]
    for f in spec["files"]:
        prefix, rows = recs[f["path"]]
        for d, kind, word in (("w", "WRITE", "WRITTEN"), ("r", "READ", "READ")):
            want_bytes = sum(r[f"{prefix}_BYTES_{word}"] for r in rows)
            made = [_made(f, p, d + d.upper()) for p in f["procs"]]
            got_bytes = sum(b for _, b in made)
            assert abs(got_bytes - want_bytes) <= max(1, 0.05 * want_bytes), (f["path"], d)
            if prefix == "MPIIO":
                want_calls = sum(r[f"MPIIO_{k}_{kind}S"] for r in rows for k in ("INDEP", "COLL", "SPLIT", "NB"))
                got_calls = sum(c for c, _ in made)
            else:   # a POSIX call of the replay is one request per piece; requests of 0 bytes are not replayed
                want_calls = sum(r[f"POSIX_{kind}S"] for r in rows) - sum(r[f"POSIX_SIZE_{kind}_0_100"] for r in rows)
                got_calls = sum(len(_pieces(f, p, d)) for p in f["procs"]) - sum(
                    1 for p in f["procs"] for _, n in _pieces(f, p, d) if n <= 100)
            assert got_calls == want_calls, (f["path"], d)


def test_counter_sizes_fill_each_bin_and_keep_the_bytes():
    c = {"POSIX_SIZE_WRITE_1K_10K": 10, "POSIX_SIZE_WRITE_100K_1M": 4, "POSIX_ACCESS1_ACCESS": 4096,
         "POSIX_ACCESS1_COUNT": 6}
    sizes = counter_sizes(c, "POSIX", "w", 14, 6 * 4096 + 4 * 10000 + 4 * 1048576, [(4096, 6)])
    assert len(sizes) == 14
    assert sizes.count(4096) == 6
    bins = [size_bin(s) for s in sizes]
    assert bins.count(2) == 10 and bins.count(4) == 4       # 1K_10K, 100K_1M
    assert SIZE_BINS[size_bin(1 << 20)][0] == "100K_1M" and SIZE_BINS[size_bin((1 << 20) + 1)][0] == "1M_4M"


def test_merge_runs_folds_strided_pieces_and_joins_adjacent_ones():
    assert merge_runs([(0, 64), (128, 64), (256, 64), (384, 64)]) == [(0, 64, 4, 128)]
    assert merge_runs([(0, 64), (64, 64), (1000, 10)]) == [(0, 128, 1, 0), (1000, 10, 1, 0)]


def test_calls_that_repeat_at_a_constant_shift_become_one_entry():
    f = FilePlan("x", "/x", "MPIIO", [0], [[Call("W", [(i * 4096, 1024, 4, 2048)]) for i in range(8)] + [Call("s")]])
    (e, s) = to_spec_file(f)["calls"][0]
    assert e == {"op": "W", "at": [[0, 1024, 4, 2048]], "repeat": 8, "advance": 4096} and s == {"op": "s"}


def to_spec_file(f: FilePlan) -> dict:
    from iotame.replay.plan import JobPlan
    return to_spec(JobPlan(len(f.procs), {"kind": "test"}, [f]))["files"][0]


def test_preload_leaves_out_what_the_reader_can_see_written():
    f = FilePlan("x", "/x", "MPIIO", [0, 1],
                 [[Call("W", [(0, 64, 4, 128)]), Call("o"), Call("R", [(0, 64, 4, 128)]), Call("R", [(64, 64, 1, 0)]),
                   Call("R", [(1000, 10, 1, 0)])],
                  [Call("W", [(64, 64, 4, 128)]), Call("o"), Call("R", [(64, 64, 4, 128)])]])
    assert preload_ranges(f) == [[1000, 10]]        # after the reopen every process's writes are there
    g = FilePlan("x", "/x", "MPIIO", [0, 1],
                 [[Call("W", [(0, 64, 4, 128)]), Call("R", [(0, 64, 4, 128)]), Call("R", [(64, 64, 1, 0)])],
                  [Call("W", [(64, 64, 4, 128)]), Call("R", [(64, 64, 4, 128)])]])
    assert preload_ranges(g) == [[64, 64]]          # without one, only a process's own writes are


def test_collective_sequences_are_padded_or_made_independent():
    f = FilePlan("x", "/x", "MPIIO", [0, 1], [[Call("W", [(0, 8, 1, 0)]), Call("W", [(16, 8, 1, 0)])],
                                             [Call("W", [(8, 8, 1, 0)])]])
    align_collectives(f)
    assert [c.op for c in f.calls[1]] == ["W", "W"] and f.calls[1][1].at == []
    g = FilePlan("y", "/y", "MPIIO", [0, 1], [[Call("W", [(0, 8, 1, 0)]), Call("R", [(0, 8, 1, 0)])],
                                             [Call("R", [(8, 8, 1, 0)]), Call("W", [(8, 8, 1, 0)])]])
    align_collectives(g)
    assert [c.op for c in g.calls[0]] == ["w", "r"] and [c.op for c in g.calls[1]] == ["r", "w"]


def _stats_with_trace(tmp_path: Path, dropped=0) -> Path:
    calls0 = [{"op": "open", "t": 0.0, "d": 0.001, "bytes": 0, "at": []}]
    calls1 = list(calls0)
    reopen = [{"op": "close", "t": 0.15, "d": 0.001, "bytes": 0, "at": []},
              {"op": "open", "t": 0.16, "d": 0.001, "bytes": 0, "at": []}]
    for i in range(4):
        calls0.append({"op": "write_at_all", "t": 0.01 * (i + 1), "d": 0.001, "bytes": 256,
                       "at": [[i * 1024, 64, 4, 128]]})
        calls1.append({"op": "write_at_all", "t": 0.01 * (i + 1), "d": 0.001, "bytes": 256,
                       "at": [[i * 1024 + 64, 64, 4, 128]]})
    for c in (calls0, calls1):
        c.append({"op": "sync", "t": 0.1, "d": 0.001, "bytes": 0, "at": []})
        c.extend(reopen)
        c.append({"op": "read_at", "t": 0.2, "d": 0.001, "bytes": 512, "at": [[0, 512, 1, 0]]})
        c.append({"op": "write_shared", "t": 0.3, "d": 0.001, "bytes": 8, "at": None})
    stats = make_stats(path="/scratch/run/out.dat")
    stats["files"].append(dict(make_stats(path="/scratch/run/untraced.dat")["files"][0]))
    stats["files"][0]["trace"] = {"limit": 100, "procs": [0, 1], "dropped": [0, dropped], "calls": [calls0, calls1]}
    p = tmp_path / "stats.json"
    p.write_text(json.dumps(stats))
    return p


def test_statistics_with_a_trace_become_a_spec(tmp_path):
    spec = to_spec(job_plan(_stats_with_trace(tmp_path)))
    assert spec["nprocs"] == 2 and spec["source"]["kind"] == "stats"
    (f,) = spec["files"]
    assert f["name"] == "out.dat" and f["procs"] == [0, 1] and f["api"] == "MPIIO"
    # the computation between calls (from the end of the open to the first write, then between writes) is kept
    assert f["calls"][0][0] == {"op": "W", "at": [[0, 64, 4, 128]], "repeat": 4, "advance": 1024, "gap": 0.009}
    assert f["calls"][1][0]["at"] == [[64, 64, 4, 128]]
    # a close and an open again are a reopen; the shared-pointer write is left out
    assert [e["op"] for e in f["calls"][0]] == ["W", "s", "o", "r"]
    assert f["preload"] == []          # the read comes after the reopen: both processes' writes are there
    assert any("shared file pointer" in n for n in spec["source"]["notes"])


def test_bad_sources_give_clear_errors(tmp_path, capsys):
    notjson = tmp_path / "x.darshan"
    notjson.write_bytes(b"\x00\x01 not a darshan log")
    with pytest.raises(LogError, match="x.darshan: not a Darshan log"):
        job_plan(notjson)
    spec = tmp_path / "spec.json"
    spec.write_text('{"replay": 1, "files": []}')
    with pytest.raises(UsageError, match="already a replay spec"):
        job_plan(spec)
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}')
    with pytest.raises(UsageError, match="neither iotame statistics"):
        job_plan(other)
    untraced = json.loads(_stats_with_trace(tmp_path).read_text())
    del untraced["files"][0]["trace"]
    (tmp_path / "u.json").write_text(json.dumps(untraced))
    with pytest.raises(UsageError, match="trace.requests"):
        job_plan(tmp_path / "u.json")
    assert main(["replay", "spec", str(notjson), "--out", str(tmp_path / "o.json")]) == 2
    assert "not a Darshan log" in capsys.readouterr().err and not (tmp_path / "o.json").exists()


def test_cli_writes_the_spec(tmp_path, capsys):
    out = tmp_path / "spec.json"
    assert main(["replay", "spec", str(DXT_LOG), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["replay"] == 1 and doc["nprocs"] == 4
    assert "4 processes, 1 files" in capsys.readouterr().err


def test_a_large_job_is_replayed_by_fewer_processes_with_the_same_calls_and_bytes():
    log = LOGS / "tests/input/sample.darshan"             # 2048 processes, collective 128 MiB writes
    spec = to_spec(job_plan(log, nprocs=2))
    assert spec["nprocs"] == 2 and spec["source"]["job_nprocs"] == 2048
    (f,) = spec["files"]
    (_, rows), = [(p, r) for p, _, r in file_records(read_log(log)).values() if p == f["path"]]
    collective = [_made(f, p, "W")[0] for p in (0, 1)]
    assert collective[0] == collective[1] == rows[0]["MPIIO_COLL_WRITES"] // 2
    # the few small independent writes beside the collective ones take the mean size of their bin
    assert sum(_made(f, p, "wW")[1] for p in (0, 1)) == pytest.approx(rows[0]["MPIIO_BYTES_WRITTEN"], rel=1e-6)
    assert any("replayed by 2" in n for n in spec["source"]["notes"])
    with pytest.raises(UsageError, match="a trace is replayed by the job's 2 processes"):
        job_plan(_stats_with_trace_path(), nprocs=4)


def _stats_with_trace_path() -> Path:
    import tempfile
    return _stats_with_trace(Path(tempfile.mkdtemp()))


def test_a_truncated_log_and_a_log_of_thousands_of_files(tmp_path, capsys):
    cut = tmp_path / "cut.darshan"
    cut.write_bytes(DXT_LOG.read_bytes()[:2000])
    assert main(["replay", "spec", str(cut), "--out", str(tmp_path / "o.json")]) == 2
    assert "cut.darshan" in capsys.readouterr().err and not (tmp_path / "o.json").exists()
    many = LOGS / "tests/input/sample-badost.darshan"           # 2048 files, one per process
    spec = to_spec(job_plan(many, max_files=100))
    assert len(spec["files"]) == 100
    skipped = [s for s in spec["source"]["skipped"] if "past the 100 files" in s["reason"]]
    assert len(skipped) == 2048 - 100 and all(s["bytes"] <= min(_made(f, f["procs"][0], "wW")[1] for f in
                                                                 spec["files"]) for s in skipped)
