"""The collective-I/O engine end to end: every strategy against the MPI library as the oracle (random datatypes and
views, the collective kernels), the Orthrus selector (strategy auto), its decisions in the statistics, and the
knowledge file that carries them into the next run. Real mpiexec jobs with libiotame.so preloaded."""
import json
import os
import sys
from pathlib import Path

import pytest

from conftest import BUILD, KERNEL, TEST_PROGRAMS, collective_config, file_stats, sample, served, write_json

sys.path.insert(0, str(KERNEL.parent.parent.parent / "tests" / "mpi"))
from test_collective_kernels import (BTIO, LAYOUTS, MATRIX, NAMES, NONCONTIG, TILE,  # noqa: E402
                                     check_file, check_run, opt)

RANDOM = TEST_PROGRAMS / "random_collective"
EVERY_CALL = TEST_PROGRAMS / "every_call"
STRATEGIES = ["two_phase", "node_local", "target_aligned", "view_based"]

# Random cases per strategy: (ranks, cases, first case). 250 + 250 + 30 + 15 = 545 per strategy; 3 and 4 ranks
# oversubscribe the 2 cores (MPICH busy-polls), so they get fewer cases.
RANDOM_RUNS = [(1, 250, 0), (2, 250, 250), (3, 30, 500), (4, 15, 530)]
SEED = 20261122


def oversubscribed_sample(runs, values, k, salt):
    """Every run of 1 and 2 ranks with every value; of the runs of 3 and 4 ranks, whose jobs take 2 cores' busy-polling
    ranks in turns and cost most of these tests' time, a sample of k (each rank count and each value at least once:
    conftest.sample) that make test-all (IOTAME_FULL_MATRIX=1) takes whole."""
    cases = [run + (v,) for run in runs for v in values]
    return ([c for c in cases if c[0] <= 2] +
            sample([c for c in cases if c[0] > 2], k, salt, cover=(0, len(cases[0]) - 1)))




def random_run(job, n, cases, first, config, extra_env=None):
    stats = job.tmp / f"stats-{n}.json"
    p = job.run(n, [RANDOM, job.tmp, SEED, cases, first], preload=True, config=config, stats=stats,
                extra_env=extra_env, check=False, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout) == {"cases": cases, "calls": 4 * n * cases, "mismatches": 0}
    return file_stats(stats, "test.dat")


@pytest.mark.parametrize("n,cases,first,strategy", oversubscribed_sample(RANDOM_RUNS, STRATEGIES, 4, "random"))
def test_random_datatypes_match_the_library(job, strategy, n, cases, first):
    """Random nested file and memory datatypes, displacements and counts, write then read: test.dat through the
    strategy, ref.dat through the library; read buffers, statuses, file pointers and both files identical."""
    config = collective_config(job.tmp / "c.json", "*/test.dat", strategy=strategy)
    f = random_run(job, n, cases, first, config)
    calls = served(f)
    assert set(calls) == {strategy} and calls[strategy] > cases      # the strategy served them (not passed through)
    assert f["passthrough_reasons"] == {}


@pytest.mark.parametrize("n,cases,first,block", oversubscribed_sample([(2, 120, 4000), (3, 25, 4200), (4, 12, 4300)],
                                                                    [7, 64, 1000], 3, "small_blocks"))
def test_random_datatypes_through_small_view_based_blocks(job, block, n, cases, first):
    """view_based with blocks far smaller than the random cases' regions: every rank an aggregator (virtual nodes of
    one rank), each rank's part split over every aggregator's blocks, which each aggregator maps from the cached
    views block by block, or as a whole when a sparse part crosses many more of its blocks than it has extents."""
    config = collective_config(job.tmp / "c.json", "*/test.dat", strategy="view_based", block_size=block)
    f = random_run(job, n, cases, first, config)
    assert set(served(f)) == {"view_based"} and f["passthrough_reasons"] == {}
    assert f["strategies"]["view_based"]["offset_list_bytes"] == 0 and f["strategies"]["view_based"]["view_bytes"] > 0


@pytest.mark.parametrize("n", [1, 2, 3])
def test_random_datatypes_as_independent_calls(job, n):
    """The independent strategy hands each rank's part to the library's independent call: the same files,
    statuses and pointers as the collective call (byte-stream mode: it is the library's own datatype handling)."""
    config = collective_config(job.tmp / "c.json", "*/test.dat", strategy="independent")
    f = random_run(job, n, 150 if n < 3 else 20, 2000 * n, config, extra_env={"RANDOM_COLLECTIVE_BYTES": "1"})
    assert set(served(f)) == {"independent"} and f["passthrough_reasons"] == {}


@pytest.mark.parametrize("n", [1, 2])
def test_random_datatypes_under_the_selector(job, n):
    """Strategy auto switches between the library and our strategies on one file: files and buffers stay
    identical. The byte-stream mode keeps the library's calls away from ROMIO's own memory-datatype bugs."""
    config = collective_config(job.tmp / "c.json", "*/test.dat", strategy="auto", exam_calls=1, exam_budget=1,
                               candidates=["two_phase", "passthrough", "independent", "node_local", "target_aligned",
                                           "view_based"])
    f = random_run(job, n, 200, 1000 * n, config, extra_env={"RANDOM_COLLECTIVE_BYTES": "1"})
    assert len(served(f)) >= 2 and f["decisions"]


@pytest.mark.parametrize("n", [2, 3])
def test_random_datatypes_under_the_default_budget(job, n):
    """The default settings: the first calls go through the opening window (independent, no collective of ours),
    whose random calls change shape, so it is not measured and every later call is routed one by one."""
    config = collective_config(job.tmp / "c.json", "*/test.dat", strategy="auto")
    f = random_run(job, n, 60 if n < 3 else 15, 3000 * n, config, extra_env={"RANDOM_COLLECTIVE_BYTES": "1"})
    assert f["steady_windows_changed"] >= 1 and f["steady_calls"] >= 12 and f["passthrough_reasons"] == {}


PHASES = BUILD / "bench" / "collective_phases"


@pytest.mark.parametrize("n", [2, 3])
def test_steady_windows_whose_calls_change_stay_right(job, n):
    """Steady windows (at least 4 calls with exam_calls 1; longer when a gather costs more than the budget's share of
    the calls, as with 3 ranks on 2 cores) span the changes between phases of 64-byte and 4 KiB chunks: the window is
    served as it began, the data verify, and a window whose calls changed is not measured (the opening window of
    the first 4 calls of 64 bytes always is)."""
    config = collective_config(job.tmp / "c.json", strategy="auto", exam_calls=1)
    for mode in ("write", "read"):
        stats = job.tmp / f"{mode}.json"
        p = job.run(n, [PHASES, "phases.dat", mode, 65536, "64:7", "4096:9", "64:6"], preload=True, config=config,
                    stats=stats)
        assert json.loads(p.stdout)["verified"] is True
        f = file_stats(stats, "phases.dat")
        assert sum(served(f).values()) == 22 and f["passthrough_reasons"] == {}
        assert f["steady_calls"] >= 12 and f["steady_windows_changed"] >= 1 and f["steady_windows_measured"] >= 1


# ---- the collective kernels verify under every strategy and under the selector ----

KERNELS = [("matrix", MATRIX), ("noncontig", NONCONTIG + ["--collective"]),
           ("tileio", TILE + ["--nr-tiles-x", "1", "--nr-tiles-y", "2"]), ("btio", BTIO)]


def run_kernel(job, n, kernel, args, config):
    stats = job.tmp / "stats.json"
    res, _ = job.kernel(n, kernel, *args, "--keep", preload=True, config=config, stats=stats)
    size, phase_bytes, _ = LAYOUTS[kernel](n, args)
    check_run(res, kernel, n, phase_bytes)
    check_file(job.tmp / NAMES[kernel], size, opt(args, "--header-bytes", 0))
    return file_stats(stats, NAMES[kernel])


@pytest.mark.parametrize("strategy", STRATEGIES + ["independent", "auto"])
@pytest.mark.parametrize("kernel,args", KERNELS, ids=[k for k, _ in KERNELS])
def test_kernels_verify(job, kernel, args, strategy):
    n = 1 if kernel == "btio" else 2         # btio needs a square number of ranks; 4 runs below
    f = run_kernel(job, n, kernel, args, collective_config(job.tmp / "c.json", strategy=strategy))
    assert f["passthrough_reasons"] == {}
    # every rank counts its own part, merged at the end: the bytes the strategies moved are the kernel's
    assert sum(v["bytes"] for v in f["strategies"].values()) == f["bytes_written"] + f["bytes_read"]
    if strategy != "auto":
        assert set(served(f)) == {strategy}
    else:
        assert sum(served(f).values()) > 0 and f["decisions"]


def test_view_based_sends_each_view_once_and_no_offset_lists(job):
    """The engine counts the offset/length lists it sends between ranks on every call, and view_based the views it
    sends once per MPI_File_set_view: twice the calls double two_phase's lists, while view_based's views (one per
    rank and pass, to the other rank's aggregator) stay the same and it sends no list at all."""
    def metadata(strategy, loops):
        args = ["--elmtcount", "16", "--veclen", "32", "--loops", str(loops), "--collective"]
        f = run_kernel(job, 2, "noncontig", args, collective_config(job.tmp / "c.json", strategy=strategy))
        assert f["passthrough_reasons"] == {}
        return f["strategies"][strategy]
    two, two_more = metadata("two_phase", 4), metadata("two_phase", 8)
    assert two["view_bytes"] == 0 and two["offset_list_bytes"] > 0
    assert two_more["offset_list_bytes"] == 2 * two["offset_list_bytes"]
    view, view_more = metadata("view_based", 4), metadata("view_based", 8)
    assert view["offset_list_bytes"] == 0 == view_more["offset_list_bytes"]
    assert view["view_bytes"] == view_more["view_bytes"] > 0
    assert view["calls"] == 8 and view_more["calls"] == 16
    # a filetype of one vector run: 15 int64s per view, each rank's sent to the other's aggregator, write and read
    assert view["view_bytes"] == 2 * 2 * 15 * 8


FOUR_RANKS = sample([(kernel, args, strategy, vnode) for kernel, args in (KERNELS[0], KERNELS[3])
                     for strategy, vnode in [("node_local", 2), ("two_phase", 1), ("view_based", 1), ("view_based", 2),
                                             ("auto", 2)]],
                    5, "four_ranks", cover=(0, 2, 3))


@pytest.mark.parametrize("kernel,args,strategy,vnode", FOUR_RANKS, ids=[f"{c[0]}-{c[2]}-{c[3]}" for c in FOUR_RANKS])
def test_kernels_verify_on_four_ranks(job, kernel, args, strategy, vnode):
    """Two virtual nodes of two ranks: node_local gathers within each node."""
    f = run_kernel(job, 4, kernel, args,
                   collective_config(job.tmp / "c.json", strategy=strategy, virtual_node_size=vnode))
    assert f["passthrough_reasons"] == {} and sum(served(f).values()) > 0


# ---- the selector: decisions, and the knowledge file ----

MATRIX_LONG = ["--rows", "64", "--cols", "512", "--depth", "4"]   # 16 write and 16 read calls of one signature
MATRIX_LONGER = ["--rows", "128", "--cols", "512", "--depth", "4"]  # 32 and 32: every candidate examined, transition calls too


def entries_of(knowledge):
    """The selector's entries in a parsed knowledge file: its "collective" section (docs/formats.md)."""
    return knowledge["modules"]["collective"]["entries"]


ALL = {"passthrough", "independent", "two_phase", "node_local", "target_aligned", "view_based"}


def test_selector_examines_then_keeps_a_winner(job):
    """Which strategy wins depends on timing; what must hold does not: every candidate is examined, every call is
    served and counted, and the decisions say what was measured. (A small call's throughput is noisy, so a later
    re-examination may be running at the end.)"""
    f = run_kernel(job, 2, "matrix", MATRIX_LONGER,
                   collective_config(job.tmp / "c.json", strategy="auto", exam_budget=1))
    by_op = {d["signature"]["op"]: d for d in f["decisions"]}
    assert set(by_op) == {"write", "read"}
    for d in by_op.values():
        assert d["signature"] == {**d["signature"], "nprocs": 2, "bytes": 2 * 4 * 2048, "requests": 2 * 4}
        assert d["state"] in ("running", "examining") and d["calls"] == 32 and not d["from_knowledge"]
        assert 7 <= d["examination_calls"] <= 27   # each candidate's first call is a transition call, not measured
        assert set(d["throughputs"]) <= ALL and (d["strategy"] in ALL or d["state"] == "examining")
    assert set(served(f)) == ALL                                  # the first examination tries every candidate
    assert sum(served(f).values()) == 64                          # 32 writes and 32 reads (calls, not ranks)


def test_a_decision_counts_every_call_even_when_an_examination_starts_within_a_window(job):
    """A threshold of almost nothing makes every monitoring window deviate, so examinations start in the middle of
    windows of calls already served: those calls are the decision's too."""
    # Library candidates only, so that whichever wins serves in steady windows (an engine winner is measured call by
    # call), and steady windows of exam_calls calls, so that two deviating windows come well within the 32 calls.
    f = run_kernel(job, 2, "matrix", MATRIX_LONGER,
                   collective_config(job.tmp / "c.json", strategy="auto", exam_budget=1, threshold=1e-9,
                                     window_seconds=0, steady_windows=1, candidates=["passthrough", "independent"]))
    calls = {d["signature"]["op"]: d["calls"] for d in f["decisions"]}
    assert calls == {"write": 32, "read": 32} and sum(served(f).values()) == 64
    assert sum(d["reexaminations"] for d in f["decisions"]) > 0


def device_readahead(path):
    """What the kernel reads ahead on path's file system, read apart from the runtime: its disk's read_ahead_kb (a
    partition's disk's), else its backing device's; 0 when none."""
    dev = os.stat(path).st_dev
    ids = f"{os.major(dev)}:{os.minor(dev)}"
    for where in (f"/sys/dev/block/{ids}/queue", f"/sys/dev/block/{ids}/../queue", f"/sys/class/bdi/{ids}"):
        try:
            return int(Path(where, "read_ahead_kb").read_text()) * 1024
        except OSError:
            pass
    return 0


def test_read_transitions_span_the_readahead(job):
    """A read candidate's first calls after another strategy's read what that one read ahead: they are transition
    calls, the readahead's worth (configured, else the file system's), and its examination measures as many after
    them; a write's transition is one call. Calls of 16 KiB here: a configured readahead of 4 calls makes the
    first candidate serve 4 + 4 calls before the next one's turn (1 + 3 without it)."""
    per_call = 2 * 4 * 2048
    f = run_kernel(job, 2, "matrix", MATRIX_LONGER,
                   collective_config(job.tmp / "c.json", strategy="auto", exam_budget=1, trace=64,
                                     readahead=4 * per_call))
    by_op = {d["signature"]["op"]: d for d in f["decisions"]}
    assert by_op["write"]["transition_calls"] == 1 and by_op["read"]["transition_calls"] == 4
    trace = [strategy for strategy, _ in by_op["read"]["trace"]]
    assert trace[:8] == ["independent"] * 8 and trace[8] != "independent"
    f = run_kernel(job, 2, "matrix", MATRIX_LONGER,
                   collective_config(job.tmp / "c.json", strategy="auto", exam_budget=1, readahead=None))
    ra = device_readahead(job.tmp / NAMES["matrix"])
    assert {d["signature"]["op"]: d["transition_calls"] for d in f["decisions"]} == \
        {"write": 1, "read": -(-ra // per_call) if ra > per_call else 1}


def test_library_candidates_are_examined_in_steady_windows(job):
    """A library candidate is examined as it runs when it wins: its examination calls are a steady window, with
    no collective of ours per call. With library candidates only and no budget limit (no opening window), only
    each signature's first call is routed one by one; the examinations (3 + 3 calls) and the winner's calls are
    all served in windows. (Before, both examinations ran call by call: 7 of 16 calls per signature.)"""
    f = run_kernel(job, 2, "matrix", MATRIX_LONG,
                   collective_config(job.tmp / "c.json", strategy="auto", exam_budget=1,
                                     candidates=["passthrough", "independent"]))
    assert f["steady_calls"] == 2 * 15 and f["steady_windows_changed"] == 0
    for d in f["decisions"]:
        assert d["calls"] == 16 and d["examination_calls"] >= 4  # 3, and 1 for a candidate clearly losing
        assert set(d["throughputs"]) == {"passthrough", "independent"} or d["reexaminations"] > 0


def test_a_budget_keeps_short_signatures_with_their_first_candidate(job):
    """A budget too small for 16 calls keeps the first candidate: it serves every call, all of them in steady
    windows (no collective of ours), and the decision counts every call, some of them as waiting. (Budget 0 here:
    whether 16 calls pay for an examination under the default 0.05 depends on how slow the unmeasured first call
    was, since its seconds count; test_select.c checks the credit's arithmetic exactly.) A long run earns the credit
    and examines the others (budget 0.25: a few calls of the best earn a turn whatever their timing, where the
    default's twenty-odd calls depend on how the machine's load spreads the calls' times)."""
    f = run_kernel(job, 2, "matrix", MATRIX_LONG, collective_config(job.tmp / "c.json", strategy="auto", exam_budget=0))
    assert served(f) == {"independent": 32} and f["steady_calls"] == 32  # no collective of ours per call
    assert f["steady_windows_changed"] == 0
    for d in f["decisions"]:  # every call counted, none spent on another candidate
        assert d["strategy"] == "independent" and d["calls"] == 16 and d["state"] == "examining"
        assert set(d["throughputs"]) == {"independent"} and d["deferred_calls"] > 0
    long = run_kernel(job, 2, "matrix", ["--rows", "6000", "--cols", "512", "--depth", "4"],
                      collective_config(job.tmp / "c.json", strategy="auto", exam_budget=0.25))
    assert len(served(long)) >= 2 and long["steady_calls"] > 0
    assert any(len(d["throughputs"]) > 1 for d in long["decisions"])  # another candidate measured


def test_the_opening_window_learns_the_signature_of_its_calls(job):
    """The signature gathered at the end of the opening window is the one the calls have when routed one by one
    (the paper's mode, exam_budget 1, has no opening window; budget 0 keeps every call in steady windows whatever the
    timing)."""
    opening = run_kernel(job, 2, "matrix", MATRIX_LONG,
                         collective_config(job.tmp / "a.json", strategy="auto", exam_budget=0))
    by_call = run_kernel(job, 2, "matrix", MATRIX_LONG,
                         collective_config(job.tmp / "b.json", strategy="auto", exam_budget=1))
    assert opening["steady_calls"] == 32 and by_call.get("steady_calls", 0) < 32
    assert sorted(json.dumps(d["signature"]) for d in opening["decisions"]) == \
        sorted(json.dumps(d["signature"]) for d in by_call["decisions"])


def test_knowledge_file_starts_the_next_run_with_the_winner(job):
    knowledge = job.tmp / "knowledge.json"  # 32 calls: without a budget limit, so that they are examined at once
    config = collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge), exam_budget=1)
    first = run_kernel(job, 2, "matrix", MATRIX_LONGER, config)
    saved = json.loads(knowledge.read_text())
    assert saved["version"] == 2
    assert sorted(e["signature"]["op"] for e in entries_of(saved)) == ["read", "write"]
    assert all(e["strategy"] in ALL for e in entries_of(saved))
    assert sorted(json.dumps(e["signature"]) for e in entries_of(saved)) == \
        sorted(json.dumps(d["signature"]) for d in first["decisions"])

    second = run_kernel(job, 2, "matrix", MATRIX_LONGER, config)
    winners = {e["signature"]["op"]: e["strategy"] for e in entries_of(saved)}
    for d in second["decisions"]:
        assert d["from_knowledge"] is True
        assert d["examination_calls"] == 0 or d["reexaminations"] > 0, d   # no examination unless it deviated
        if d["reexaminations"] == 0:
            assert d["strategy"] == winners[d["signature"]["op"]]
            assert set(served(second)) >= {d["strategy"]}
    # under the default budget too: a known signature opens no window, its winner serves from the first call
    third = run_kernel(job, 2, "matrix", MATRIX_LONGER,
                       collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge)))
    assert all(d["from_knowledge"] for d in third["decisions"])
    assert set(served(third)) <= set(winners.values()) | {d["strategy"] for d in third["decisions"]}


def test_a_file_left_open_until_mpi_finalize_keeps_its_last_window_and_knowledge(job):
    """HDF5 closes a file the application left open inside MPI_Finalize, after the runtime has stopped: the window
    under way then and the knowledge are taken at MPI_Finalize (40 calls: windows of 12, 4 calls left over)."""
    knowledge = job.tmp / "knowledge.json"
    config = collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge))
    stats = job.tmp / "stats.json"
    p = job.run(2, [TEST_PROGRAMS / "h5_left_open", job.tmp / "open.h5", 40], preload=True, config=config,
                stats=stats, check=False, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    f = file_stats(stats, "open.h5")
    (d,) = [d for d in f["decisions"] if d["signature"]["op"] == "write"]
    assert d["calls"] == 40 and served(f) == {"independent": 40}   # every call, its first candidate
    (e,) = entries_of(json.loads(knowledge.read_text()))
    assert e["signature"] == d["signature"]


@pytest.mark.parametrize("winner", ["independent", "passthrough"])
def test_a_known_library_winner_serves_from_the_first_call(job, winner):
    """When the knowledge file names a library strategy for every known signature of an operation, its calls run in
    windows from the first one: no call is measured on its own, so no collective of ours until a window ends."""
    knowledge = job.tmp / "knowledge.json"
    config = collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge), exam_budget=0)
    run_kernel(job, 2, "matrix", MATRIX_LONG, config)
    saved = json.loads(knowledge.read_text())
    for e in entries_of(saved):
        e.pop("examination", None)
        e["strategy"] = winner
    knowledge.write_text(json.dumps(saved))
    second = run_kernel(job, 2, "matrix", MATRIX_LONG, config)
    assert all(d["from_knowledge"] and d["strategy"] == winner for d in second["decisions"])
    assert served(second) == {winner: 32}
    assert second["steady_calls"] == 32 and second["steady_windows_measured"] >= 2   # every call in a window
    assert sorted(d["calls"] for d in second["decisions"]) == [16, 16]  # (a window's end may start an examination)


def test_a_short_job_leaves_its_budget_to_the_next_run(job):
    """A job too short for its budget examines only the first candidate: the knowledge file keeps the signature
    undecided with the seconds the budget counts from, and the next run starts from them and adds its own (budget 0,
    so that no run can afford an examination whatever the timing)."""
    knowledge = job.tmp / "knowledge.json"
    config = collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge), exam_budget=0)
    run_kernel(job, 2, "matrix", MATRIX_LONG, config)
    first = entries_of(json.loads(knowledge.read_text()))
    assert sorted(e["signature"]["op"] for e in first) == ["read", "write"]
    for e in first:
        assert e["strategy"] is None and set(e["examination"]) == {"spent", "debt", "first"}
        assert e["examination"]["spent"] > 0 and set(e["throughputs"]) == {"independent"}
    second = run_kernel(job, 2, "matrix", MATRIX_LONG, config)
    assert all(d["from_knowledge"] and d["state"] == "examining" for d in second["decisions"])
    spent = {e["signature"]["op"]: e["examination"]["spent"] for e in first}
    for e in entries_of(json.loads(knowledge.read_text())):
        assert e["examination"]["spent"] > spent[e["signature"]["op"]]


def test_an_undecided_signature_starts_the_next_run_with_its_lead(job):
    """An unfinished examination's knowledge names the candidate the next run starts with ("first": the best of
    those it compared, else its first); with no credit for another turn (budget 0), the lead serves every call, in
    steady windows from the first one."""
    knowledge = job.tmp / "knowledge.json"
    config = collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge), exam_budget=0)
    run_kernel(job, 2, "matrix", MATRIX_LONG, config)
    saved = json.loads(knowledge.read_text())
    assert [e["examination"]["first"] for e in entries_of(saved)] == ["independent", "independent"]
    for e in entries_of(saved):
        e["examination"]["first"] = "passthrough"
    knowledge.write_text(json.dumps(saved))
    second = run_kernel(job, 2, "matrix", MATRIX_LONG, config)
    assert served(second) == {"passthrough": 32} and second["steady_calls"] == 32
    assert all(d["from_knowledge"] and d["strategy"] == "passthrough" for d in second["decisions"])
    assert [e["examination"]["first"] for e in entries_of(json.loads(knowledge.read_text()))] == ["passthrough"] * 2


@pytest.mark.parametrize("spent", [0.0, 1e6])
def test_an_undecided_signature_is_examined_when_its_credit_affords_it(job, spent):
    """A knowledge entry not decided yet: without the credit for another candidate the first one serves the calls
    in windows (no call measured on its own); with it, the run examines the others call by call."""
    knowledge = job.tmp / "knowledge.json"
    run_kernel(job, 2, "matrix", MATRIX_LONG,
               collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge), exam_budget=0))
    saved = json.loads(knowledge.read_text())
    for e in entries_of(saved):
        assert e["strategy"] is None and e["throughputs"]["independent"] > 0
        e["examination"] = {"spent": spent, "debt": 0.0}
    knowledge.write_text(json.dumps(saved))
    f = run_kernel(job, 2, "matrix", MATRIX_LONG,
                   collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge)))
    if spent == 0:
        assert served(f) == {"independent": 32} and f["steady_calls"] == 32
    else:
        assert len(served(f)) > 1 and all(d["examination_calls"] > 3 for d in f["decisions"]), f["decisions"]


def test_a_broken_knowledge_file_is_reported_and_kept(job):
    knowledge = job.tmp / "knowledge.json"
    knowledge.write_text("{not json")
    config = collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge))
    stats = job.tmp / "stats.json"
    res, p = job.kernel(2, "matrix", *MATRIX_LONG, preload=True, config=config, stats=stats)
    assert res["verified"] is True
    assert all(not d["from_knowledge"] for d in file_stats(stats, NAMES["matrix"])["decisions"])
    assert knowledge.read_text() == "{not json"                              # nothing of the user's is lost
    assert f"knowledge file {knowledge}" in p.stderr and "not a knowledge file" in p.stderr


# ---- what the engine does not take passes through, counted; every call stays byte-identical ----

@pytest.mark.parametrize("strategy", ["two_phase", "view_based", "auto"])
def test_every_call_under_a_strategy_is_byte_identical(job, strategy):
    plain, routed, stats = job.tmp / "plain.dat", job.tmp / "routed.dat", job.tmp / "stats.json"
    job.run(2, [EVERY_CALL, plain, 1024])
    out = job.run(2, [EVERY_CALL, routed, 1024], preload=True, stats=stats,
                  config=collective_config(job.tmp / "c.json", strategy=strategy))
    assert json.loads(out.stdout)["errors"] == 0
    assert plain.read_bytes() == routed.read_bytes()
    f = file_stats(stats, "routed.dat")
    assert sum(served(f).values()) > 0
    reasons = f["passthrough_reasons"]
    assert any("split" in r for r in reasons) and any("nonblocking" in r for r in reasons), reasons


# ---- an I/O error inside a strategy ----

IO_ERROR = TEST_PROGRAMS / "io_error"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_an_io_error_reaches_every_rank_through_the_error_handler(job, strategy):
    """The second rank's data lies past a file-size limit: the library reports the failed write (to the rank whose
    write failed); through our strategies the aggregator's failure is returned on every rank, as MPI_ERR_IO, through
    the file's error handler, and the job goes on."""
    plain = json.loads(job.run(2, [IO_ERROR, job.tmp / "plain.dat"]).stdout)
    assert plain["failed"] >= 1 and plain["handler_calls"] == plain["failed"]
    config = collective_config(job.tmp / "c.json", strategy=strategy)
    routed = json.loads(job.run(2, [IO_ERROR, job.tmp / "routed.dat"], preload=True, config=config).stdout)
    assert routed["failed"] == 2 and routed["handler_calls"] == 2
    assert routed["classes"] == [routed["class_io"]] * 2
