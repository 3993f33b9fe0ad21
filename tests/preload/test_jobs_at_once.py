"""Several jobs at once on one node: started together, each with staging, a throttle of one reader and one writer
(so that its processes do queue at the gate) and strategy auto, all keeping the selector's knowledge in one file,
each running the randomized differential program on its own files. Each job must pass on its own, the shared
knowledge file must keep what every job learned, each job's statistics must count its own processes and files only
(the gates and the staging area are the job's own: a gate or a ring shared by accident would count the other job's
requests or write its records), and nothing may be left behind on the node. Real mpiexec jobs with libiotame.so
preloaded; no test asserts a timing."""
import fcntl
import json
import subprocess
from pathlib import Path

from conftest import TEST_PROGRAMS, write_json

RANDOM = TEST_PROGRAMS / "random_collective"
SHM = Path("/dev/shm")
# name: (processes, seed, cases). Different seeds and process counts: the jobs' call signatures differ. MPICH
# busy-polls: 5 processes on 2 cores at most, on files of a few kB.
JOBS = {"a": (2, 20261128, 30), "b": (2, 20261129, 30), "c": (1, 20261130, 30)}
# test.dat's reads may go to the library: memory types as packed bytes; sync-barrier-sync after each write, as
# MPI-IO requires for reading what other processes wrote (staging writes behind)
ENV = {"RANDOM_COLLECTIVE_BYTES": "1", "RANDOM_COLLECTIVE_SYNC": "1"}


def shared_config(path: Path, knowledge: Path) -> Path:
    """Every file throttled to one reader and one writer per node; test.dat staged in a small area and routed by
    the selector call by call (exam_budget 1, exam_calls 1: every signature decided or examined gets an entry),
    whose knowledge goes to `knowledge`."""
    collective = {"strategy": "auto", "exam_budget": 1, "exam_calls": 1, "virtual_node_size": 1, "readahead": 0,
                  "knowledge": str(knowledge)}
    return write_json(path, {"version": 1,
                             "defaults": {"staging": {"cache_mb": 1}, "throttle": {"readers": 1, "writers": 1}},
                             "files": [{"match": "*/test.dat", "staging": {"enabled": True},
                                        "collective": collective}]})


def iotame_segments() -> set[str]:
    """The names of the runtime's per-job segments in /dev/shm (/iotame-PID-RANDOM; not the emulated devices' state
    files, iotame-emulate-*, which are kept on purpose)."""
    return {p.name for p in SHM.glob("iotame-*") if not p.name.startswith("iotame-emulate-")}


def pid_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def run_at_once(job, config: Path, jobs: dict) -> dict:
    """Starts every job at once (mpiexec) and waits for them all: their statistics, by name."""
    procs = {}
    for name, (n, seed, cases) in jobs.items():
        (job.tmp / name).mkdir()
        cmd = ["mpiexec", "-n", str(n), str(RANDOM), str(job.tmp / name), str(seed), str(cases)]
        procs[name] = subprocess.Popen(cmd, env=job.env(True, config, job.tmp / f"{name}.stats.json", ENV),
                                       cwd=job.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return wait_for_all(procs, jobs, job.tmp)


def wait_for_all(procs: dict, jobs: dict, tmp: Path) -> dict:
    """Waits for the jobs started at once (procs: Popen by name, each job's statistics in tmp/NAME.stats.json):
    each passed its differential test alone and reported nothing about the knowledge file; their statistics."""
    outs = {name: p.communicate(timeout=600) for name, p in procs.items()}
    for name, p in procs.items():
        out, err = outs[name]
        n, _, cases = jobs[name]
        assert p.returncode == 0, f"job {name} exited {p.returncode}\n{out}\n{err[-3000:]}"
        assert json.loads(out) == {"cases": cases, "calls": 4 * n * cases, "mismatches": 0}, (name, err[-3000:])
        assert "knowledge" not in err, err[-3000:]  # nothing reported: no lock timed out, no file refused
    return {name: json.loads((tmp / f"{name}.stats.json").read_text()) for name in jobs}


def signatures(items: list) -> set[str]:
    return {json.dumps(i["signature"], sort_keys=True) for i in items}


def check_own_statistics(stats: dict, directory: Path, n: int) -> dict:
    """A job's statistics are about its processes and its files only, and its gates and staging area counted its
    own requests only."""
    assert stats["nprocs"] == n
    files = {f["path"]: f for f in stats["files"]}
    assert set(files) == {str(directory / "test.dat"), str(directory / "ref.dat")}
    test = files[str(directory / "test.dat")]
    assert test["ranks"] == n and test["passthrough_reasons"] == {} and test["decisions"]
    assert all(d["signature"]["nprocs"] == n for d in test["decisions"])
    # the throttle: every POSIX request of the job's files passed its gate, and the gate (in the job's node
    # segment) counted no other request; one process inside at a time
    throttle = stats["modules"]["throttle"]
    (target,) = throttle["targets"]
    for direction, posix in (("read", "reads"), ("write", "writes")):
        mine = sum(f["posix"][posix] for f in files.values())
        assert throttle[direction]["requests"] == target[direction]["requests"] == mine, direction
        assert target[direction]["max_inside"] == 1 and target[direction]["bypassed"] == 0
    # staging: the job's flusher (reading the job's area) wrote exactly what the job's processes staged, all of
    # it test.dat's
    stage = stats["modules"]["stage"]
    assert stage["calls"] > 0 and stage["bytes"] == stage["flusher"]["bytes_written"]
    assert stage["bytes"] + stage["written_through_bytes"] == test["bytes_written"]  # a write larger than the area
    assert stage["flusher"]["lost_bytes"] == 0 and stage["flusher"]["failed"] == []
    return test


def check_knowledge_of_all(knowledge: Path, tests: list) -> None:
    """The knowledge file holds one entry per signature any job decided or examined (tests: each job's test.dat
    statistics), and no other; each job decided some signature no other job had."""
    entries = json.loads(knowledge.read_text())["modules"]["collective"]["entries"]
    decided = [signatures(t["decisions"]) for t in tests]
    assert signatures(entries) == set().union(*decided)
    assert len(entries) == len(signatures(entries))
    for i, sigs in enumerate(decided):
        assert sigs - set().union(*(d for j, d in enumerate(decided) if j != i)), i


def check_nothing_left(knowledge: Path, before: set[str]) -> None:
    """No segment of the jobs' left in /dev/shm (before: the names there before they started; a name whose process
    still runs is another job's), no temporary file of a save (knowledge or statistics) nor partial statistics
    beside the files; the lock file stays (removing it would let a waiting save lock a file nobody else opens),
    unheld."""
    left = {s for s in iotame_segments() - before if not pid_alive(int(s.split("-")[1]))}
    assert not left, left
    stray = [p.name for p in knowledge.parent.rglob("*") if ".tmp" in p.name or ".partial" in p.name]
    assert not stray, stray
    assert sorted(p.name for p in knowledge.parent.glob(knowledge.name + "*")) == \
        [knowledge.name, knowledge.name + ".lock"]
    with open(f"{knowledge}.lock") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_jobs_at_once_share_a_knowledge_file_and_nothing_else(job):
    """Three jobs (2 + 2 + 1 processes) started at once, one knowledge file."""
    knowledge = job.tmp / "knowledge.json"
    before = iotame_segments()
    stats = run_at_once(job, shared_config(job.tmp / "c.json", knowledge), JOBS)
    tests = [check_own_statistics(stats[name], job.tmp / name, n) for name, (n, _, _) in JOBS.items()]
    check_knowledge_of_all(knowledge, tests)
    check_nothing_left(knowledge, before)
