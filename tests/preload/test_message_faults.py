"""Faults in the runtime's own MPI messages (docs/reliability.md, "Faults in the runtime's messages"): the
collectives, point-to-point and one-sided calls the runtime makes itself fail or are delayed
(tests/faults/msgfaults.c, preloaded after libiotame.so; the application's and the MPI library's own calls are not
touched) x every collective strategy (fixed and auto) x staging off, per node, and (view_based) collective writes
cached at the aggregators x a throttle of one reader and one writer on and off x writing and reading, on
tests/mpi/programs/fault_job.c with 2 MPICH ranks.

A failed message is performed and then reported as MPI_ERR_OTHER to the chosen rank(s), at a chosen moment: the
first message of the job (in MPI_Init), the first after the program armed the faults on every rank or on rank 1
only, the third, every one from the first on; or rank 1 sleeps DELAY seconds before its first message with
runtime.hang_seconds 1. Each case asserts that the job ends within a bound; that every step of the program (each a
collective MPI-IO call) either succeeded on every rank or returned an error on every rank; that nothing failed
before the faults were armed; that a failed message was not swallowed (some step returned an error, or
fault.dat's statistics count a set-up message lost: the file given to the library, which reading at the first or every
message after arming, inside the open's set-up, must show); that reads returning success read the right values; that keep.dat (written before)
is the MPI library's, byte for byte, and so is fault.dat where every call succeeded (where some failed, the data of
every write that succeeded on every rank, and of everything synced before the fault); and, for a delay, that the
watchdog reported the wait, naming the runtime's own MPI call waited in (where the delayed call is a blocking one;
a delayed start, e.g. the selector's posted gather, leaves the other rank waiting in the library's own collective).

`make test` runs a sample (tests/conftest.py's sample(): every strategy and moment at least once, IOTAME_SAMPLE_SEED);
`make faults` runs every case (IOTAME_FULL_MATRIX=1). No timing is asserted beyond the hang bound."""
import itertools
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import LIBIOTAME, TEST_PROGRAMS, Job, sample
import test_fault_matrix as fault_matrix
from test_fault_matrix import CALLS, PROGRAM, STRATEGIES, case_config, part_intact

MSGFAULTS = TEST_PROGRAMS / "libiotame_msgfaults.so"
NPROCS = 2
HANG = 60          # seconds: a case still running then is a hang
DELAY = 3          # seconds a delayed message waits (runtime.hang_seconds is 1)
pytestmark = pytest.mark.skipif(not (LIBIOTAME.is_file() and MSGFAULTS.is_file() and PROGRAM.is_file()),
                                reason="needs libiotame.so, libiotame_msgfaults.so and fault_job (make setup)")

# when, as rule keys: arm=program counts messages only from the program's arming on (write: after call 0 is
# durable; read: before the file is opened again)
MOMENTS = {"init": "fail=MPI_ERR_OTHER,nth=1",
           "first": "fail=MPI_ERR_OTHER,arm=program,nth=1",
           "first-rank1": "fail=MPI_ERR_OTHER,arm=program,nth=1,rank=1",
           "third": "fail=MPI_ERR_OTHER,arm=program,nth=3",
           "always": "fail=MPI_ERR_OTHER,arm=program,count=0",
           "delay": f"delay={DELAY},arm=program,nth=1,rank=1"}
# read: the faults are armed before MPI_File_open, whose set-up takes these moments' first failed message; the file
# then goes to the library with the reason counted (SETUP_LOST) instead of an error at some step
OPEN_MOMENTS = ("first", "first-rank1", "always")
SETUP_LOST = "a message of the runtime's own failed while setting the file up"
REPORT = re.compile(r"^iotame: watchdog: rank \d+ .*$", re.M)
WATCHDOG = re.compile(r"^iotame: watchdog: rank \d+ .*the runtime's own (MPI_\w+)", re.M)
# calls that only start a message: a rank delayed in one is inside no labelled wait of its own, and the other rank
# waits in whatever comes next (the library's own collective, e.g. at close): the report names the MPI-IO call only
STARTS = ("iallreduce", "iallgather", "isend", "issend", "irecv", "fetch_and_op", "win_lock_all")


class Hang(Exception):
    """The job was still running after HANG seconds (its processes are killed)."""


def all_cases():
    return [(mode, moment, strategy, staging, throttle)
            for mode, moment, strategy, staging, throttle in
            itertools.product(("write", "read"), MOMENTS, STRATEGIES, (False, True, "aggregators"), (False, True))
            if staging != "aggregators" or strategy == "view_based"]


def case_id(case):
    mode, moment, strategy, staging, throttle = case
    staged = {True: ["staged"], "aggregators": ["cached"]}.get(staging, [])
    return "-".join([mode, moment, strategy] + staged + (["throttled"] if throttle else []))


class Mpich(fault_matrix.Mpich):
    """The fault matrix's MPICH launcher, with the message injector (tests/openmpi has Open MPI's)."""
    msgfaults = MSGFAULTS


def run_job(tmp: Path, mode, rule=None, config=None, launcher=Mpich):
    """fault_job under the message faults and the runtime (rule given), or under the MPI library alone:
    (result, injection log lines, stderr)."""
    tmp.mkdir(parents=True, exist_ok=True)
    ranks = {}
    if rule:
        ranks = {"LD_PRELOAD": f"{launcher.lib}:{launcher.msgfaults}", "IOTAME_CONFIG": config,
                 "IOTAME_STATS": tmp / "stats.json", "IOTAME_MSGFAULT": f"op=mpi:any,{rule},log={tmp / 'faults.log'}"}
    cmd, env = launcher.command(tmp, ranks, [launcher.program, tmp, mode])
    p = subprocess.Popen(cmd, env=env, cwd=tmp, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=HANG)
    except subprocess.TimeoutExpired as e:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise Hang(f"the job was still running after {HANG} s") from e
    assert p.returncode == 0 and out.strip().startswith("{"), f"exit {p.returncode}\n{out}\n{err[-3000:]}"
    lines = [line for f in sorted(tmp.glob("faults.log.*")) for line in f.read_text().splitlines()]
    return json.loads(out.strip().splitlines()[-1]), lines, err


def message_config(tmp: Path, strategy, staging, throttle):
    """The fault matrix's configuration of a case, with the watchdog reporting after one second."""
    path = case_config(tmp, strategy, staging, throttle)
    config = json.loads(path.read_text())
    config["defaults"] = {"runtime": {"hang_seconds": 1}}
    path.write_text(json.dumps(config))
    return path


_plain: dict = {}


@pytest.fixture(scope="module")
def plain_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("plain")


def plain_files(plain_dir: Path, mode, launcher=Mpich):
    """keep.dat and fault.dat as the MPI library alone writes them, without faults (once per mode and launcher)."""
    key = (launcher.__name__, mode)
    if key not in _plain:
        tmp = plain_dir / "-".join(key)
        result, _, _ = run_job(tmp, mode, launcher=launcher)
        assert not any(c for row in result["classes"] for c in row), result
        _plain[key] = {name: (tmp / name).read_bytes() for name in ("keep.dat", "fault.dat")}
    return _plain[key]


def setup_lost(tmp: Path):
    """Whether fault.dat's statistics count a set-up message of the runtime's lost (the file given to the library)."""
    stats = json.loads((tmp / "stats.json").read_text())
    return any(SETUP_LOST in reason for f in stats["files"] if f["path"].endswith("fault.dat")
               for reason in f.get("passthrough_reasons") or {})


def violations(result, tmp: Path, mode, moment, plain, injected):
    """The rules a run breaks (an empty list: none)."""
    out = []
    lost = setup_lost(tmp)
    steps, classes, n = result["steps"], result["classes"], result["nprocs"]
    armed_at = steps.index("write 1") if mode == "write" else steps.index("open")
    for s, step in enumerate(steps):
        failed = [r for r in range(n) if classes[r][s]]
        if failed and len(failed) != n:
            out.append(f"{step}: an error on ranks {failed} only (classes {[row[s] for row in classes]})")
        if failed and s < armed_at and moment != "init":
            out.append(f"{step}: an error before the faults were armed")
    if moment not in ("init", "delay") and injected and not lost and not any(c for row in classes
                                                                              for c in row[armed_at:]):
        out.append(f"{injected} messages of the runtime failed inside the program's steps, no step returned an "
                   f"error and the statistics count no set-up message lost (swallowed)")
    if mode == "read" and moment in OPEN_MOMENTS and injected and not lost:
        out.append(f"the open's set-up lost a message and fault.dat's passthrough_reasons do not say \"{SETUP_LOST}\"")
    if any(result["bad"]):
        out.append(f"reads that returned success with wrong values, per rank: {result['bad']}")
    files = {name: (tmp / name).read_bytes() if (tmp / name).exists() else b"" for name in plain}
    if files["keep.dat"] != plain["keep.dat"] and not any(c for row in classes for c in row[:3]):
        out.append("keep.dat differs from the MPI library's")
    if not any(c for row in classes for c in row):
        if files["fault.dat"] != plain["fault.dat"]:
            out.append("every call succeeded and fault.dat differs from the MPI library's")
    elif mode == "write" and "open" in steps and not any(row[steps.index("open")] for row in classes):
        data, done = files["fault.dat"], not any(row[steps.index("close")] for row in classes)
        for c in range(CALLS):
            step = f"write {c}"
            ok = step in steps and not any(row[steps.index(step)] for row in classes)
            if (c == 0 or (ok and done)) and not all(part_intact(data, r, c, n) for r in range(n)):
                out.append(f"fault.dat: the data of {step}, which succeeded on every rank, is not in the file")
    return out


def check_case(case, tmp_path: Path, plain_dir: Path, launcher=Mpich):
    """Runs one case under the runtime and fails the test with every rule it breaks."""
    mode, moment, strategy, staging, throttle = case
    plain = plain_files(plain_dir, mode, launcher)
    tmp = tmp_path / "job"
    try:
        result, lines, err = run_job(tmp, mode, MOMENTS[moment], message_config(tmp_path, strategy, staging, throttle),
                                     launcher)
    except Hang as e:
        pytest.fail(f"{case_id(case)}: {e}", pytrace=False)
    broken = violations(result, tmp, mode, moment, plain, len(lines))
    if moment == "delay" and lines:
        delayed = lines[0].split()[0][3:]
        if not REPORT.search(err):
            broken.append(f"rank 1 delayed its {delayed} by {DELAY} s inside a step and the watchdog reported nothing")
        elif delayed not in STARTS and not WATCHDOG.search(err):
            broken.append(f"rank 1 delayed its {delayed} by {DELAY} s and the watchdog named no MPI call of the "
                          f"runtime's")
    assert not broken, (f"{case_id(case)}: {len(lines)} faults injected\n" + "\n".join(broken) +
                        f"\nresult: {json.dumps(result)}\nfaults: {lines[:6]}\nstderr: {err[-2000:]}")


@pytest.mark.parametrize("case", sample(all_cases(), 8, "test_message_fault", cover=(1, 2)), ids=case_id)
def test_message_fault(case, tmp_path, plain_dir):
    check_case(case, tmp_path, plain_dir)


def test_the_injector_faults_only_the_runtimes_messages(tmp_path):
    """Under the injector alone (no runtime) the program's own collectives and the library's (ROMIO's) are never
    faulted even with every message failing; a malformed rule stops the process naming the key."""
    env = Job(tmp_path).env(extra={"LD_PRELOAD": str(MSGFAULTS), "IOTAME_MSGFAULT":
                                   f"op=mpi:any,fail=MPI_ERR_OTHER,count=0,log={tmp_path}/log"})
    p = subprocess.run(["mpiexec", "-n", str(NPROCS), str(PROGRAM), str(tmp_path), "write"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=HANG)
    assert p.returncode == 0, p.stderr[-2000:]
    assert not any(c for row in json.loads(p.stdout)["classes"] for c in row)
    assert not [f for f in tmp_path.glob("log.*") if f.read_text()]
    env["IOTAME_MSGFAULT"] = "op=mpi:allreduce,when=2"
    p = subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "IOTAME_MSGFAULT: when=2: expected one of op, fail" in p.stderr
