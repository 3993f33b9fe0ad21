"""Deaths (issue 36): one rank of a 2-rank MPICH job killed by SIGKILL at a chosen moment of the runtime's own work:
inside a throttle gate (holding it, or waiting for it), while the staging flusher writes, while a process holds a
record of the staging ring (its copy blocked half way by a missing page), during a posted gather of the selector,
and between two collective calls; also the node's first process killed in MPI_Init while its node segment is
still named in /dev/shm, and rank 0 killed inside the knowledge file's save, holding its lock. Each case asserts that
  (a) the job ends within END_BOUND seconds of the kill (the launcher ends the others) and no process of it is left;
  (b) what the ranks wrote and synced (MPI_File_sync, barrier, sync) before the kill is in the file byte for byte,
      and no byte of the file is anything but what a rank wrote there or zero;
  (c) the next job on the same files and configuration starts clean and passes: no shared-memory segment of the
      killed job left in /dev/shm, the gate and the staging area fresh (no bypass, no lost record), the emulated
      device's state and the knowledge file (valid JSON, unchanged) used as they are.
The program (tests/mpi/programs/deaths.c) marks each moment with a file; the test waits for it, and where the moment
is a state of the runtime it confirms it from /proc (wchan) before the kill. The draws (victim, marked iteration,
delay) come from SEED, printed with every failure. IOTAME_FULL_MATRIX=1 draws FULL_DRAWS per moment and runs
`between` under every fixed strategy; IOTAME_DEATHS_SEED changes the seed."""
import json
import os
import random
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import LIBIOTAME, TEST_PROGRAMS, write_json

DEATHS = TEST_PROGRAMS / "deaths"
pytestmark = pytest.mark.skipif(not (LIBIOTAME.is_file() and DEATHS.is_file()),
                                reason=f"needs {LIBIOTAME} and {DEATHS} (run make setup)")
SEED = int(os.environ.get("IOTAME_DEATHS_SEED", "20261128"))
FULL = os.environ.get("IOTAME_FULL_MATRIX") == "1"
FULL_DRAWS = 4
END_BOUND = 60      # seconds from the kill to the end of mpiexec
MOMENT_BOUND = 60   # seconds to reach a marked moment
MIB, CYCLE = 1 << 20, 16
STRATEGIES = ["passthrough", "independent", "two_phase", "node_local", "target_aligned", "view_based"]


@dataclass(frozen=True)
class Case:
    moment: str      # gate, flusher, ring, gather, between
    role: str        # gate: the victim holds the gate or waits for it; else ""
    victim: int
    mark: int        # iterations before the moment
    delay: float     # seconds after the mark before the moment is looked for
    strategy: str = "two_phase"
    draw: int = 0

    def id(self):
        return "-".join(filter(None, [self.moment, self.role, self.strategy if self.moment == "between" else "",
                                      f"draw{self.draw}"]))

    def __str__(self):
        return (f"{self.moment}{'-' + self.role if self.role else ''} victim={self.victim} mark={self.mark} "
                f"delay={self.delay:.3f} strategy={self.strategy} (IOTAME_DEATHS_SEED={SEED}, draw {self.draw})")


def draw_case(moment, role="", strategy="two_phase", draw=0):
    rng = random.Random(f"{SEED}/{moment}/{role}/{strategy}/{draw}")
    victim = rng.randrange(2)
    if moment == "flusher" and not FULL:
        victim = 0  # the flusher's own process: the sampled run kills the writer itself
    return Case(moment, role, victim, rng.randrange(3, 9), rng.uniform(0.0, 0.3), strategy, draw)


def cases():
    draws = range(FULL_DRAWS) if FULL else range(1)
    out = [draw_case("gate", role, draw=d) for role in ("holder", "waiter") for d in draws]
    out += [draw_case(m, draw=d) for m in ("flusher", "ring", "gather") for d in draws]
    out += [draw_case("between", strategy=s, draw=d) for s in (STRATEGIES if FULL else ["two_phase"]) for d in draws]
    return out


# ---- the job's files ----

def pattern(off, n):
    return bytes((i * 7 + 3) % 251 for i in range(off, off + n))


def block_of(case):
    return 64 * 1024 if case.moment in ("gather", "between") else 256 * 1024


def config_of(case, tmp):
    slow = {"device": "disk", "bandwidth_mbs": 10, "position_ms": 1, "seek_ms": 0, "state": str(tmp / "dev.state")}
    defaults = {
        # one writer at a time on the node; a request of 26 ms on the emulated disk, inside the gate
        "gate": {"throttle": {"writers": 1}, "emulate": slow},
        # a ring of 1 MiB on a 10 MB/s disk: the flusher writes nearly all the time, the writers wait for room
        "flusher": {"staging": {"enabled": True, "cache_mb": 1}, "emulate": slow},
        "ring": {"staging": {"enabled": True}},
        # a large staging area: its segment takes a while to set up, named in /dev/shm meanwhile
        "init": {"staging": {"enabled": True, "cache_mb": 1024}},
        # library candidates: their calls run in steady windows whose gathers stay posted between the calls
        "gather": {"collective": {"strategy": "auto", "candidates": ["passthrough", "independent"], "exam_calls": 1,
                                  "steady_windows": 1, "knowledge": str(tmp / "knowledge.json")}},
        "between": {"collective": {"strategy": case.strategy, "virtual_node_size": 1}},
    }[case.moment]
    return write_json(tmp / "c.json", {"version": 1, "defaults": defaults})


def markers(tmp):
    return [p for p in tmp.iterdir() if p.name.split(".")[0] in ("pid", "phase", "synced")]


def check_file(tmp, case, killed):
    """(b): the synced MiB of each rank exact; every other byte what a rank wrote there, or zero after a kill."""
    data = (tmp / "data.dat").read_bytes()
    assert data[:2 * MIB] == pattern(0, 2 * MIB), f"synced data damaged: {case}"
    rest, want = data[2 * MIB:], pattern(2 * MIB, len(data) - 2 * MIB)
    if killed:
        bad = [i for k in range(0, len(rest), 4096) if rest[k:k + 4096] != want[k:k + 4096]
               for i in range(k, min(k + 4096, len(rest))) if rest[i] not in (want[i], 0)]
        assert not bad, f"{len(bad)} bytes neither written nor zero, first at {2 * MIB + bad[0]}: {case}"
    else:
        assert len(data) == 2 * MIB + CYCLE * 2 * block_of(case) and rest == want, case


# ---- the processes ----

def wait_for(path, proc, case, what):
    t0 = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, f"the job ended before {what} (status {proc.returncode}): {case}"
        assert time.monotonic() - t0 < MOMENT_BOUND, f"{what} not reached in {MOMENT_BOUND} s: {case}"
        time.sleep(0.01)


def wchan(pid, tid=None):
    try:
        return Path(f"/proc/{pid}/task/{tid or pid}/wchan").read_text().strip()
    except OSError:
        return "gone"


def threads(pid):
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def job_processes(token):
    """Processes whose environment holds the job's token: mpiexec, its proxy, the ranks."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if token.encode() in (d / "environ").read_bytes():
                    found.append(int(d.name))
            except OSError:
                pass
    return found


def await_moment(case, pids, proc):
    """Waits until the runtime is where the case kills: returns what /proc showed (the victim, the other rank)."""
    victim, other = pids[case.victim], pids[1 - case.victim]
    naps = ("hrtimer_nanosleep", "do_nanosleep")  # a sleep (the emulated device's), by kernel version
    t0 = time.monotonic()
    while time.monotonic() - t0 < MOMENT_BOUND:
        assert proc.poll() is None, f"the job ended before the moment (status {proc.returncode}): {case}"
        if case.moment == "gate":
            # the holder sleeps in the emulated device inside the gate, the waiter on the gate's futex
            v, o = wchan(victim), wchan(other)
            holder, waiter = (v, o) if case.role == "holder" else (o, v)
            if holder in naps and waiter.startswith("futex"):
                return f"victim {v}, other {o}"
        elif case.moment == "flusher":
            # a thread of rank 0 that is not its first sleeps in the emulated device: the flusher's write
            flusher = [t for t in threads(pids[0]) if t != pids[0] and wchan(pids[0], t) in naps]
            if flusher:
                return f"flusher thread {flusher[0]} of rank 0 asleep in the emulated device"
        elif case.moment == "ring":
            v = wchan(victim)
            if v == "handle_userfault":
                return f"victim {v}"
        else:
            return f"victim {wchan(victim)}"  # between two collective calls: marked by the program itself
        time.sleep(0.001)
    pytest.fail(f"the moment was not seen in {MOMENT_BOUND} s: {case}")


class Run:
    """One job of the deaths program, started in its own session, its processes found by a token."""

    def __init__(self, job, case, iters, mark, stats, name):
        for m in markers(job.tmp):  # an earlier job's
            m.unlink()
        self.token = f"IOTAME_DEATHS_TOKEN={uuid.uuid4().hex}"
        env = job.env(preload=True, config=config_of(case, job.tmp), stats=stats,
                      extra={"IOTAME_DEATHS_TOKEN": self.token.split("=")[1]})
        self.out, self.err = open(job.tmp / f"{name}.out", "w+"), open(job.tmp / f"{name}.err", "w+")
        self.proc = subprocess.Popen(["mpiexec", "-n", "2", DEATHS, case.moment, job.tmp, str(iters), str(mark),
                                      str(case.victim)], env=env, cwd=job.tmp, stdout=self.out, stderr=self.err,
                                     start_new_session=True)

    def output(self):
        self.out.seek(0)
        self.err.seek(0)
        return self.out.read(), self.err.read()

    def end(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return None


def check_end(run, pids, seen, case):
    """(a): the job ends within END_BOUND of the kill, for a rank's death, and none of its processes is left."""
    status = run.end(END_BOUND)
    out, err = run.output()
    assert status is not None, f"the job did not end within {END_BOUND} s of the kill ({seen}): {case}\n{err}"
    assert status != 0, f"the job ended well after a kill ({seen}): {case}"
    # the launcher ended the job for a rank killed by SIGKILL (it may name the other rank, which it killed too),
    # not for another failure
    assert any(f"PID {pid} " in out for pid in pids) and "signal 9" in out, f"{case}\n{out}\n{err}"
    time.sleep(0.2)  # the launcher's last children are reaped
    left = job_processes(run.token)
    assert not left, f"processes of the killed job left: {left} ({seen}): {case}\n{err}"


def start_killed(job, case, iters=-1):
    """The job to kill, and its ranks' pids once both are past MPI_Init."""
    run = Run(job, case, iters, case.mark, job.tmp / "killed.json", "killed")
    pid_files = [job.tmp / f"pid.{r}" for r in range(2)]
    try:
        for f in pid_files:
            wait_for(f, run.proc, case, f.name)
    except BaseException:
        stop(run)
        raise
    return run, [int(f.read_text()) for f in pid_files]


def stop(run):
    if run.proc.poll() is None:
        os.killpg(run.proc.pid, signal.SIGKILL)
        run.proc.wait()


def killed_run(job, case):
    """Runs the job until the case's moment, kills the victim; (a) checked. Returns the ranks' pids."""
    run, pids = start_killed(job, case)
    try:
        wait_for(job.tmp / "synced.0", run.proc, case, "synced.0")
        wait_for(job.tmp / f"phase.{case.victim}", run.proc, case, "the marked iteration")
        time.sleep(case.delay)
        seen = await_moment(case, pids, run.proc)
        os.kill(pids[case.victim], signal.SIGKILL)
        check_end(run, pids, seen, case)
        return pids
    finally:
        stop(run)


def next_run(job, case, name="next"):
    """(c): the next job on the same files and configuration, to its end."""
    stats = job.tmp / f"{name}.json"
    run = Run(job, case, CYCLE, -1, stats, stats.stem)
    status = run.end(120)
    out, err = run.output()
    assert status == 0, f"the next job failed (status {status}): {case}\n{out}\n{err}"
    assert json.loads(out.splitlines()[-1]) == {"iterations": CYCLE}, case
    return json.loads(stats.read_text())


# ---- the cases ----

@pytest.mark.parametrize("case", cases(), ids=Case.id)
def test_a_killed_rank_ends_the_job_keeps_synced_data_and_the_next_job_starts_clean(job, case):
    knowledge = job.tmp / "knowledge.json"
    if case.moment == "gather":
        # a run to its end first: its statistics show every call served in steady windows (whose gathers stay
        # posted from one window's end to the next), and it leaves the knowledge file the killed job reads
        first = next_run(job, case, "first")
        (f,) = [f for f in first["files"] if f["path"].endswith("data.dat")]
        assert f["steady_calls"] == CYCLE and f["steady_windows_measured"] >= 2, f
        before = knowledge.read_bytes()

    pids = killed_run(job, case)
    check_file(job.tmp, case, killed=True)
    left = [p.name for p in Path("/dev/shm").iterdir() if any(p.name.startswith(f"iotame-{pid}-") for pid in pids)]
    assert not left, f"shared-memory segments of the killed job left: {left}: {case}"
    if case.moment == "gather":
        assert knowledge.read_bytes() == before, f"the killed job changed the knowledge file: {case}"

    stats = next_run(job, case)
    check_file(job.tmp, case, killed=False)
    modules = stats["modules"]
    if case.moment == "gate":
        (t,) = modules["throttle"]["targets"]
        assert t["write"]["bypassed"] == 0 and t["write"]["max_inside"] == 1, (t, str(case))
        assert modules["emulate"]["unmodelled"] == 0 and modules["emulate"]["requests"] > 0, case
    if case.moment in ("flusher", "ring"):
        flusher = modules["stage"]["flusher"]
        assert flusher["lost_bytes"] == 0 and not flusher["lost"] and flusher["bytes_written"] > 0, (flusher, str(case))
        assert modules["stage"]["calls"] > 0, case
    if case.moment == "gather":
        assert json.loads(knowledge.read_text())["version"] == 2, case
        (f,) = [f for f in stats["files"] if f["path"].endswith("data.dat")]
        assert f["decisions"] and all(d["from_knowledge"] for d in f["decisions"]), (f["decisions"], str(case))
        assert "not saved" not in (job.tmp / "next.err").read_text(), case


def test_a_rank_killed_inside_the_knowledge_save_leaves_the_file_and_its_lock_to_the_next_job(job):
    """Rank 0 killed in the knowledge file's save at the end of a job, holding the file's lock (its write aside,
    knowledge.json.tmp.PID, held open by a FIFO the test puts there): the file is as it was, valid, and the next job
    reads it and saves its own knowledge under the same lock."""
    case = Case("gather", "save", 0, -1, 0.0)
    knowledge = job.tmp / "knowledge.json"
    next_run(job, case, "first")
    before = knowledge.read_bytes()
    run, pids = start_killed(job, case, iters=20 * CYCLE)
    fifo = job.tmp / f"knowledge.json.tmp.{pids[0]}"
    try:
        os.mkfifo(fifo)
        t0 = time.monotonic()
        while wchan(pids[0]) != "wait_for_partner":
            assert run.proc.poll() is None and time.monotonic() - t0 < MOMENT_BOUND, \
                f"rank 0 never opened {fifo} (status {run.proc.poll()})"
            time.sleep(0.005)
        os.kill(pids[0], signal.SIGKILL)
        check_end(run, pids, "rank 0 opening the knowledge file's write aside", case)
    finally:
        stop(run)
        fifo.unlink(missing_ok=True)
    assert knowledge.read_bytes() == before and json.loads(before)["version"] == 2
    stats = next_run(job, case)
    assert "not saved" not in (job.tmp / "next.err").read_text()
    (f,) = [f for f in stats["files"] if f["path"].endswith("data.dat")]
    assert f["decisions"] and all(d["from_knowledge"] for d in f["decisions"]), f["decisions"]
    assert json.loads(knowledge.read_text())["version"] == 2


def test_a_job_killed_while_it_sets_up_its_segment_leaves_it_to_the_next_job_which_removes_it(job):
    """The node's first process killed in MPI_Init between the creation of a node segment and its unlink (every
    process of the node has to map it first): the segment is left in /dev/shm, holding its memory; the node's first
    process of the next job removes it (its creator is gone) with a warning naming it, and stages as usual."""
    case = Case("init", "", 0, -1, 0.0)
    run = Run(job, case, -1, -1, job.tmp / "killed.json", "killed")
    try:
        t0, seen = time.monotonic(), None
        while seen is None:
            assert run.proc.poll() is None and time.monotonic() - t0 < MOMENT_BOUND, "no segment seen"
            names = [n.split("-") for n in os.listdir("/dev/shm") if n.startswith("iotame-")]
            creators = {int(p[1]) for p in names if len(p) == 3 and p[1].isdigit()}
            procs = job_processes(run.token) if creators else []  # mpiexec, its proxy and the ranks
            for pid in creators & set(procs):
                os.kill(pid, signal.SIGKILL)
                seen = (pid, next(f"iotame-{pid}-{p[2]}" for p in names if p[1] == str(pid)))
                break
        check_end(run, procs, f"creator of {seen[1]}", case)
    finally:
        stop(run)
    left = Path("/dev/shm") / seen[1]
    try:
        assert left.exists(), f"{left} was unlinked before the kill: the moment was missed"
        stats = next_run(job, case)
        assert not left.exists(), f"the next job left {left} in place"
        assert f"removed {left}" in (job.tmp / "next.err").read_text()
        assert stats["modules"]["stage"]["calls"] > 0
        check_file(job.tmp, case, killed=False)
    finally:
        left.unlink(missing_ok=True)
