"""The threaded parts of the runtime under ThreadSanitizer: a build with -fsanitize=thread (scripts/build_tsan.sh:
build-tsan/, the runtime and the test programs instrumented), then
 - every unit test labelled `threads` in tests/CMakeLists.txt (ctest -L threads: the environment ctest gives them,
   set there, halts at the first report with exit status 66);
 - MPICH jobs with build-tsan's libiotame.so preloaded behind libtsan (which must come first), where the stage
   module's flusher thread runs beside the application's threads. A job runs to its end (halt_on_error=0: the first
   report would hide the others) and the test fails on any report, listing them all.
MPICH is not instrumented: tests/tsan/suppressions.txt is for reports of its own (none so far). Every process also
gets UCX_MEM_EVENTS=no: UCX's memory hooks (libucm, loaded with MPICH's ch4:ucx) take a lock in a thread's exit
path where libtsan's thread state is gone, and the process dies with SIGSEGV inside libtsan (even an empty MPI
program does)."""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, iotame_vars, write_json

BUILD = ROOT / "build-tsan"
LIB = BUILD / "runtime" / "libiotame.so"
PROGRAMS = BUILD / "tests"
SUPPRESSIONS = Path(__file__).resolve().parent / "suppressions.txt"
JOB_TSAN = {"TSAN_OPTIONS": f"halt_on_error=0 exitcode=66 second_deadlock_stack=1 suppressions={SUPPRESSIONS}",
            "UCX_MEM_EVENTS": "no"}
STAGING = {"version": 1, "defaults": {"staging": {"enabled": True}}}
# Our variables and the sanitizer's must not leak into the jobs from the caller.
_DROP = ("IOTAME_", "LD_PRELOAD", "TSAN_OPTIONS", "UCX_MEM_EVENTS")


def _libtsan():
    p = subprocess.run(["gcc", "-print-file-name=libtsan.so"], capture_output=True, text=True)
    path = Path(p.stdout.strip())
    return path.resolve() if p.returncode == 0 and path.is_absolute() and path.exists() else None


LIBTSAN = _libtsan()
if LIBTSAN is None:
    pytest.skip("gcc has no libtsan.so (Debian: libtsan2, a dependency of libgcc-12-dev)", allow_module_level=True)


@pytest.fixture(scope="module")
def build():
    """Builds (or brings up to date) build-tsan/; a failed build fails every test here."""
    p = subprocess.run([ROOT / "scripts" / "build_tsan.sh", BUILD], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    return BUILD


def reports(text):
    """ThreadSanitizer's reports in a process's output, each from its WARNING line to its SUMMARY line."""
    return re.findall(r"^WARNING: ThreadSanitizer: .*?^SUMMARY: ThreadSanitizer: [^\n]*", text, re.M | re.S)


def fail_on_reports(p):
    """Fails the test when the job's output holds a report: the distinct summaries, then the first reports."""
    found = reports(p.stderr + p.stdout)
    if found:
        summaries = sorted({r.splitlines()[-1] for r in found})
        pytest.fail((f"{len(found)} ThreadSanitizer reports:\n" + "\n".join(summaries) + "\n\nthe first ones:\n" +
                     "\n\n".join(found[:3]))[:12000], pytrace=False)


def tsan_job(tmp, n, argv, config=None, stats=None, timeout=300):
    """`mpiexec -n N program args` with libtsan and build-tsan's libiotame.so preloaded into the ranks (not into
    mpiexec: -genv)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP)}
    ranks = dict(iotame_vars(False, config, stats), LD_PRELOAD=f"{LIBTSAN}:{LIB}", **JOB_TSAN)
    cmd = ["mpiexec", "-n", str(n)]
    for k, v in ranks.items():
        cmd += ["-genv", k, v]
    cmd += [str(a) for a in argv]
    return subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=timeout)


def last_json(p):
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else None


# ---- the layer itself ----

def test_the_runtime_and_the_programs_are_instrumented(build):
    for binary in (LIB, PROGRAMS / "test_throttle", PROGRAMS / "stage_threads"):
        undefined = subprocess.run(["nm", "-D", "--undefined-only", str(binary)], capture_output=True, text=True,
                                   check=True).stdout
        assert "__tsan_func_entry" in undefined, binary


def test_a_race_fails_a_test_of_this_layer(build, tmp_path):
    """A program with a data race, built as build-tsan builds, in the environment ctest gives the labelled unit
    tests: it must fail with ThreadSanitizer's exit status (the suppressions hide nothing of a program's own)."""
    src = tmp_path / "racy.c"
    src.write_text("#include <pthread.h>\nint x;\nstatic void *bump(void *a) { x++; return a; }\n"
                   "int main(void) { pthread_t t; pthread_create(&t, 0, bump, 0); x++; pthread_join(t, 0);"
                   " return x == 3; }\n")
    subprocess.run(["gcc", "-fsanitize=thread", "-g", "-O1", "-o", tmp_path / "racy", src, "-lpthread"], check=True)
    env = dict(os.environ, **dict(kv.split("=", 1) for kv in labelled_tests()["unit.test_throttle"]))
    p = subprocess.run([tmp_path / "racy"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 66 and "WARNING: ThreadSanitizer: data race" in p.stderr, (p.returncode, p.stderr)


def test_the_suppressions_name_nothing_of_ours():
    """Each suppression has its reason on the comment line above it, is of a narrow kind, and names no frame of
    libiotame or of a test program (races there are fixed, not suppressed)."""
    lines = SUPPRESSIONS.read_text().splitlines()
    programs = {p.stem for p in (ROOT / "tests").glob("*/**/*.c")}
    for i, line in enumerate(lines):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        kind, _, pattern = entry.partition(":")
        assert kind in ("race", "mutex", "deadlock", "signal", "thread"), entry
        assert i > 0 and lines[i - 1].lstrip().startswith("#"), f"no reason above {entry!r}"
        assert "iotame" not in pattern.lower() and pattern not in programs and not pattern.startswith("*"), entry


# ---- the unit tests labelled `threads` ----

def labelled_tests():
    """name -> ENVIRONMENT of every test labelled `threads` in build-tsan."""
    p = subprocess.run(["ctest", "--test-dir", str(BUILD), "-L", "threads", "--show-only=json-v1"],
                       capture_output=True, text=True, check=True)
    out = {}
    for t in json.loads(p.stdout)["tests"]:
        props = {q["name"]: q["value"] for q in t.get("properties", [])}
        out[t["name"]] = props.get("ENVIRONMENT", [])
    return out


def test_the_threaded_unit_tests_pass_under_tsan(build):
    tests = labelled_tests()
    assert "unit.test_throttle" in tests, tests  # the gate; the stage ring and flusher join with the label
    for name, env in tests.items():
        assert any(e.startswith("TSAN_OPTIONS=halt_on_error=1 exitcode=66") for e in env), (name, env)
    p = subprocess.run(["ctest", "--test-dir", str(BUILD), "-L", "threads", "--output-on-failure"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-12000:] + p.stderr[-2000:]
    assert f"0 tests failed out of {len(tests)}" in p.stdout, p.stdout[-3000:]


# ---- jobs with the runtime preloaded ----

@pytest.mark.parametrize("program", ["stage_check", "stage_threads"])
def test_the_flusher_beside_one_writer_per_rank_reports_nothing(build, tmp_path, program):
    """One application thread per rank (2 ranks) with staging and prefetch on, while the node's flusher thread
    writes behind and reads ahead: stage_check writes, reads back and asks the size through every call form;
    stage_threads opens, writes, syncs and closes its file 20 times."""
    config = write_json(tmp_path / "c.json", {"version": 1, "defaults": {"staging": {
        "enabled": True, "prefetch": True, "prefetch_kb": 64, "cache_mb": 8}}})
    args = ["raw", tmp_path / "f.dat"] if program == "stage_check" else [tmp_path, 1, 20]
    p = tsan_job(tmp_path, 2, [PROGRAMS / program, *args], config=config)
    fail_on_reports(p)
    assert p.returncode == 0, p.stderr[-3000:]
    result = last_json(p)
    assert result and result["mismatches"] == 0 and result.get("size_ok", True) is True, p.stdout
    assert result.get("errors", 0) == 0, p.stdout


def test_threads_opening_writing_and_closing_files_report_nothing(build, tmp_path):
    """tests/mpi/programs/stage_threads.c: 4 threads of MPI_THREAD_MULTIPLE open, set views, write, set atomicity,
    sync, get the size of and close different files at once, 20 times, with staging on; every value read back.
    One MPICH rank: with two, MPICH's ROMIO deadlocks by itself (each rank's process-wide ROMIO lock is held through
    a collective file call on one file while the other rank holds its own through another file's)."""
    p = tsan_job(tmp_path, 1, [PROGRAMS / "stage_threads", tmp_path, 4, 20], config=write_json(tmp_path / "c.json",
                                                                                               STAGING))
    fail_on_reports(p)
    assert p.returncode == 0, p.stderr[-3000:]
    assert last_json(p) == {"threads": 4, "iterations": 20, "mismatches": 0, "errors": 0}, p.stdout


@pytest.mark.parametrize("program", ["threaded_writes", "stage_threads"])
def test_the_request_trace_under_threads_reports_nothing(build, tmp_path, program):
    """The request trace (trace.requests) of calls made by several threads at once: threaded_writes (2 ranks, two
    threads writing one file) and stage_threads (threads opening, viewing, writing and closing their own files)."""
    trace = {"requests": 100}  # small: the limit is reached while the threads write
    stats = tmp_path / "stats.json"
    if program == "threaded_writes":
        n, args, config = 2, [tmp_path / "t.dat", 200], {"version": 1, "defaults": {"trace": trace}}
    else:
        n, args, config = 1, [tmp_path, 4, 20], {"version": 1, "defaults": dict(STAGING["defaults"], trace=trace)}
    p = tsan_job(tmp_path, n, [PROGRAMS / program, *args], config=write_json(tmp_path / "c.json", config),
                 stats=stats)
    fail_on_reports(p)
    assert p.returncode == 0, p.stderr[-3000:]
    traces = [f["trace"] for f in json.loads(stats.read_text())["files"] if "trace" in f]
    assert traces and all(len(calls) <= 100 for t in traces for calls in t["calls"])
