"""The request trace (setting trace.requests; docs/formats.md, file record key "trace"): real jobs under the runtime
whose calls are known from the program's documented layout (noncontig, ior, every_call), compared call by call."""
import json

import pytest

from conftest import KERNEL, TEST_PROGRAMS, served, write_json

EVERY_CALL = TEST_PROGRAMS / "every_call"


def traced(job, n, argv, requests=1000, config=None, name=None):
    """Runs argv on n ranks with every file traced (or under `config`); returns the file record whose path ends
    with name (the only one when None)."""
    stats = job.tmp / "stats.json"
    if config is None:
        config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {"trace": {"requests": requests}}})
    job.run(n, argv, preload=True, config=config, stats=stats)
    files = json.loads(stats.read_text())["files"]
    if name is not None:
        files = [f for f in files if f["path"].endswith(name)]
    (f,) = files
    return f


def check_shape(trace, n):
    """What every trace holds: every rank, its calls in time order, seconds that make sense, runs in file order."""
    assert trace["procs"] == list(range(n))
    assert len(trace["calls"]) == len(trace["dropped"]) == n
    for calls in trace["calls"]:
        starts = [c["t"] for c in calls]
        assert starts == sorted(starts) and starts[0] > 0
        for c in calls:
            assert c["d"] >= 0
            if c["at"]:
                assert c["bytes"] == sum(length * count for _, length, count, _ in c["at"])
                ends = [off + (count - 1) * stride + length for off, length, count, stride in c["at"]]
                assert all(ends[i] <= c["at"][i + 1][0] for i in range(len(ends) - 1))


def ops(calls):
    return [c["op"] for c in calls]


# ---- noncontig: ROMIO's pattern, chunk j of loop l of rank r at ((l*veclen + j)*nprocs + r)*chunk ----

def noncontig_expected(n, r, elmtcount, veclen, loops):
    chunk = elmtcount * 4
    region = n * veclen * chunk
    def at(l):
        if n == 1:  # the chunks touch: one piece
            return [[l * region, veclen * chunk, 1, veclen * chunk]]
        return [[l * region + r * chunk, chunk, veclen, n * chunk]]
    write = [("open", []), ("set_view", [])] + [("write_at_all", at(l)) for l in range(loops)] + \
        [("sync", []), ("close", [])]
    read = [("open", []), ("set_view", [])] + [("read_at_all", at(l)) for l in range(loops)] + [("close", [])]
    return write + read


@pytest.mark.parametrize("n,count", [(1, 1), (2, 1), (2, 64)])
def test_noncontig_collective_is_one_run_per_call(job, n, count):
    # ROMIO's noncontig: 65536 pieces of 64 bytes a call at a stride of 128 (2 ranks) are one run, also when the
    # call passes them as 64 instances of a smaller type
    elmtcount, veclen, loops = 16, 65536, 2
    f = traced(job, n, [KERNEL, "noncontig", "--collective", "--elmtcount", elmtcount, "--veclen",
        veclen, "--loops", loops, "--count", count, "--file", "nc.dat"])
    t = f["trace"]
    check_shape(t, n)
    assert t["limit"] == 1000 and t["dropped"] == [0] * n
    for r, calls in enumerate(t["calls"]):
        assert [(c["op"], c["at"]) for c in calls] == noncontig_expected(n, r, elmtcount, veclen, loops)
        assert [c["bytes"] for c in calls if c["at"]] == [veclen * elmtcount * 4] * 2 * loops


def test_a_small_limit_keeps_the_first_calls_and_counts_the_rest(job):
    f = traced(job, 2, [KERNEL, "noncontig", "--elmtcount", 16, "--veclen", 64,
                        "--loops", 4, "--collective", "--file", "nc.dat"], requests=5)
    t = f["trace"]
    check_shape(t, 2)
    total = len(noncontig_expected(2, 0, 16, 64, 4))  # 17 calls per rank
    assert t["limit"] == 5 and t["dropped"] == [total - 5] * 2
    for r, calls in enumerate(t["calls"]):
        assert [(c["op"], c["at"]) for c in calls] == noncontig_expected(2, r, 16, 64, 4)[:5]


# ---- ior: segment s of rank r at s*N*b + r*b, transfers of t bytes in order ----

@pytest.mark.parametrize("collective", [True, False])
def test_ior_segmented_transfers(job, collective):
    n, b, t, s = 2, 65536, 16384, 3
    args = ["ior", "-a", "MPIIO", "-b", "64k", "-t", "16k", "-s", s, "-e", "-o", "ior.dat"]
    f = traced(job, n, [KERNEL, *args, *(["-c"] if collective else [])], name="ior.dat")
    tr = f["trace"]
    check_shape(tr, n)
    suffix = "_at_all" if collective else "_at"
    for r, calls in enumerate(tr["calls"]):
        runs = [[[seg * n * b + r * b + i * t, t, 1, t]] for seg in range(s) for i in range(b // t)]
        expected = [("open", [])] + [("write" + suffix, at) for at in runs] + [("sync", []), ("close", [])] + \
            [("open", [])] + [("read" + suffix, at) for at in runs] + [("close", [])]
        assert [(c["op"], c["at"]) for c in calls] == expected


# ---- every form of data call (tests/mpi/programs/every_call.c) ----

VARIANTS = [  # (write op, read op, offset kind): in the program's order; the _c forms under their plain names
    ("write_at", "read_at", "mine"), ("write_at_all", "read_at_all", "mine"), ("write", "read", "mine"),
    ("write_all", "read_all", "mine"), ("iwrite_at", "iread_at", "mine"), ("iwrite_at_all", "iread_at_all", "mine"),
    ("iwrite", "iread", "mine"), ("iwrite_all", "iread_all", "mine"),
    ("write_at_all_begin", "read_at_all_begin", "mine"), ("write_all_begin", "read_all_begin", "mine"),
    ("write_shared", "read_shared", None), ("iwrite_shared", "iread_shared", None),
    ("write_ordered", "read_ordered", None), ("write_ordered_begin", "read_ordered_begin", None),
    ("write_at", "read_at", "mine"), ("write_all", "read_all", "mine"), ("iwrite_at", "iread_at", "mine"),
    ("write_at_all_begin", "read_at_all_begin", "mine"), ("write_all", "read_all", "vector"),
]


def every_call_expected(n, r, block):
    def phase(write):
        out = []
        for v, (w, rd, kind) in enumerate(VARIANTS):
            region = v * n * block
            out.append(("set_view", [], 0))
            if kind == "vector":  # 64-byte pieces of the ranks interleaved through a vector view
                out.append(("set_view", [], 0))
                pieces = block // 64
                at = [[region + r * 64, 64, pieces, 64 * n]] if n > 1 else [[region, block, 1, block]]
            else:
                at = [[region + r * block, block, 1, block]] if kind else None
            out.append((w if write else rd, at, block))
        return out
    return [("open", [], 0)] + phase(True) + [("sync", [], 0), ("sync", [], 0)] + phase(False) + [("close", [], 0)]


SERVED_BY = {  # the trace shows the application's calls whoever serves them: the library, an engine, staging
    "library": {},
    "two_phase": {"collective": {"strategy": "two_phase", "virtual_node_size": 1, "readahead": 0}},
    "staging": {"staging": {"enabled": True}},
}


@pytest.mark.parametrize("n,served_by", [(1, "library"), (2, "library"), (2, "two_phase"), (2, "staging")])
def test_every_data_call_form_in_call_order(job, n, served_by):
    block = 256
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {"trace": {"requests": 1000},
                                                                        **SERVED_BY[served_by]}})
    f = traced(job, n, [EVERY_CALL, job.tmp / "e.dat", block], config=config)
    if served_by == "two_phase":
        assert served(f).get("two_phase", 0) > 0
    if served_by == "staging":
        assert f["stage"]["writes"] == "staged"
    t = f["trace"]
    check_shape(t, n)
    for r, calls in enumerate(t["calls"]):
        assert [(c["op"], c["at"], c["bytes"]) for c in calls] == every_call_expected(n, r, block)
        assert not any("at_truncated" in c for c in calls)


# ---- off ----

def test_no_trace_when_off_or_for_files_no_rule_traces(job):
    argv = [KERNEL, "noncontig", "--elmtcount", 4, "--veclen", 8, "--loops", 1, "--file", "nc.dat"]
    f = traced(job, 2, argv, config=write_json(job.tmp / "none.json", {"version": 1, "defaults": {}}))
    assert "trace" not in f and f["ops"]["write_at"]["count"] == 2
    f = traced(job, 2, argv, requests=0)
    assert "trace" not in f
    rules = {"version": 1, "defaults": {"trace": {"requests": 0}},
             "files": [{"match": "*.other", "trace": {"requests": 10}}]}
    f = traced(job, 2, argv, config=write_json(job.tmp / "rules.json", rules))
    assert "trace" not in f
    rules["files"].append({"match": "nc.dat", "trace": {"requests": 3}})
    f = traced(job, 2, argv, config=write_json(job.tmp / "rules.json", rules))
    assert f["trace"]["limit"] == 3 and ops(f["trace"]["calls"][1]) == ["open", "set_view", "write_at"]


def test_a_negative_limit_is_a_configuration_error(job):
    config = write_json(job.tmp / "bad.json", {"version": 1, "defaults": {"trace": {"requests": -1}}})
    p = job.run(1, [EVERY_CALL, job.tmp / "e.dat", 64], preload=True, config=config, check=False)
    assert p.returncode != 0 and "trace.requests" in p.stderr


# ---- extents past the cap, the file pointer in etypes, set_size (tests/mpi/programs/trace_calls.c) ----

def test_irregular_extents_are_cut_at_4096_runs_and_pointers_count_in_etypes(job):
    pieces = 3 * 5000  # 5000 runs of three 8-byte pieces at a stride of 40, one every 96 bytes
    stats = job.tmp / "stats.json"
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {"trace": {"requests": 100}}})
    job.run(2, [TEST_PROGRAMS / "trace_calls", job.tmp / "tc", pieces], preload=True, config=config, stats=stats)
    files = {f["path"].rsplit(".", 1)[1]: f for f in json.loads(stats.read_text())["files"]}
    assert sorted(files) == ["0", "1"]
    for rank, f in files.items():
        t = f["trace"]
        assert t["procs"] == [int(rank)] and t["dropped"] == [0]  # one rank per file
        calls = t["calls"][0]
        assert ops(calls) == ["open", "set_size", "set_view", "write_at_all", "set_view", "write", "write", "sync",
                              "close"]
        big = calls[3]
        assert big["bytes"] == pieces * 8 and big["at_truncated"] is True
        assert big["at"] == [[k * 96, 8, 3, 40] for k in range(4096)]
        assert [c["at"] for c in calls[5:7]] == [[[120, 16, 1, 16]], [[136, 16, 1, 16]]]
        assert not any("at_truncated" in c for c in calls if c is not big)


def test_threads_of_one_process_are_all_counted(job):
    # MPI_THREAD_MULTIPLE: two threads per rank write 300 times each at once; the limit cuts in the middle
    stats = job.tmp / "stats.json"
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {"trace": {"requests": 500}}})
    job.run(2, [TEST_PROGRAMS / "threaded_writes", job.tmp / "t.dat", 300], preload=True, config=config, stats=stats)
    (f,) = json.loads(stats.read_text())["files"]
    t = f["trace"]
    assert t["procs"] == [0, 1]
    for r, calls in enumerate(t["calls"]):
        assert len(calls) == 500 and t["dropped"][r] == 2 + 600 - 500  # open, 600 writes, close
        assert calls[0]["op"] == "open" and set(ops(calls[1:])) == {"write_at"}
        offsets = [c["at"][0][0] for c in calls[1:]]
        assert len(set(offsets)) == len(offsets)
        assert all(((o // 512) // 2) % 2 == r for o in offsets)  # this rank's offsets only
