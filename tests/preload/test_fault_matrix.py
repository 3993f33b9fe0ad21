"""The fault matrix (docs/reliability.md): faults injected where storage fails (tests/faults/faults.c, preloaded
under the runtime and under the MPI library's own calls) x every collective strategy (fixed and auto) x staging on
and off x throttle on and off x writing and reading, on tests/mpi/programs/fault_job.c with 2 MPICH ranks.

Every case runs the program twice with the same fault: under the runtime, and under the MPI library alone (the
oracle, run once per fault). It asserts that the job ends in a bounded time without crashing; that nothing is
faulted or reported before the faults are armed; that every error class is one the fault can give (the library's
own for it, or MPI_ERR_IO); that no rank loses data silently (a rank whose part of a write is not in the file saw an
error at that call, or with staging by the file's close); that every read that returned success returned the
right values; that keep.dat (written before) and everything synced before the fault are intact; and that the
runtime's statistics count every error the program saw. A rule the library itself breaks for the same fault is not
asked of the runtime (the library is the oracle) and the case says so.

`make test` runs a sample of IOTAME_FAULT_SAMPLE cases (default 12) drawn with IOTAME_FAULT_SEED (default:
IOTAME_SAMPLE_SEED, else the day); `make faults` and `make test-all` run them all (IOTAME_FULL_MATRIX=1). No timing is asserted beyond the hang bound."""
import itertools
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import LIBIOTAME, SAMPLE_SEED, TEST_PROGRAMS, Job, write_json

PROGRAM = TEST_PROGRAMS / "fault_job"
FAULTS = TEST_PROGRAMS / "libiotame_faults.so"
BLOCK, BLOCKS, CALLS, NPROCS = 4096, 16, 4, 2
HANG = 30  # seconds: a case still running then is a hang


class Hang(Exception):
    """The job was still running after HANG seconds (its processes are killed)."""

# strategies that may hand the application's collective call to the library as it is (auto: when it chooses
# passthrough): where the library alone hangs on a fault, so do they
LIBRARY_SERVED = ("passthrough", "auto")
STRATEGIES = ["passthrough", "independent", "two_phase", "node_local", "target_aligned", "view_based", "auto"]
# (mode, op, fail): what fails and how; writes are armed after call 0 is durable, reads after the file is whole
FAULTS_TRIED = [("write", "write", f) for f in ("EIO", "ENOSPC", "EDQUOT", "EINTR", "short")] + [
    ("write", "sync", "EIO"), ("write", "truncate", "EIO"),
    ("read", "read", "EIO"), ("read", "read", "EINTR"), ("read", "read", "short"), ("read", "open", "EACCES"),
    ("read", "open", "EIO")]
# when: every matching call from the first on (a device that stays broken), the first on rank 1 only, the second
# on every rank, or each with probability 0.3
TRIGGERS = {"always": "count=0", "once-rank1": "rank=1", "second": "nth=2", "random": "prob=0.3,seed=7"}


def all_cases():
    """Staging off, on (per node), or "aggregators" (collective writes cached at view_based's aggregators: with
    view_based only, where it acts)."""
    return [(mode, op, fail, trigger, strategy, staging, throttle)
            for (mode, op, fail), trigger, strategy, staging, throttle in
            itertools.product(FAULTS_TRIED, TRIGGERS, STRATEGIES, (False, True, "aggregators"), (False, True))
            if staging != "aggregators" or strategy == "view_based"]


def chosen_cases(sample=12, always_only=False, salt=""):
    """The cases this run takes: all of them with IOTAME_FULL_MATRIX=1 (always_only: those of the `always` trigger),
    else IOTAME_FAULT_SAMPLE of them (default `sample`) drawn with IOTAME_FAULT_SEED (default: IOTAME_SAMPLE_SEED,
    else the day: conftest.SAMPLE_SEED) and salt."""
    cases = [c for c in all_cases() if not always_only or c[3] == "always"]
    if os.environ.get("IOTAME_FULL_MATRIX") == "1":
        return cases
    seed = (os.environ.get("IOTAME_FAULT_SEED") or SAMPLE_SEED) + salt
    return random.Random(seed).sample(cases, int(os.environ.get("IOTAME_FAULT_SAMPLE", str(sample))))


def case_id(case):
    mode, op, fail, trigger, strategy, staging, throttle = case
    staged = {True: ["staged"], "aggregators": ["cached"]}.get(staging, [])
    return "-".join([mode, op, fail, trigger, strategy] + staged + (["throttled"] if throttle else []))


class Mpich:
    """How a case's job is launched: MPICH's mpiexec, 2 ranks, the default build (tests/openmpi has Open MPI's)."""
    program, faults, lib, nprocs = PROGRAM, FAULTS, LIBIOTAME, NPROCS

    @classmethod
    def command(cls, tmp: Path, ranks: dict, argv: list) -> tuple[list, dict]:
        cmd = ["mpiexec", "-n", str(cls.nprocs)]
        for k, v in ranks.items():
            cmd += ["-genv", k, str(v)]
        return cmd + [str(a) for a in argv], Job(tmp).env()


def run_job(tmp: Path, mode, op, fail, trigger, config=None, launcher=Mpich):
    """fault_job under the fault (and the runtime when config is given): (result, fault log lines, stats path)."""
    tmp.mkdir(parents=True, exist_ok=True)
    log, stats = tmp / "faults.log", tmp / "stats.json"
    ranks = {"IOTAME_FAULT": f"op={op},file=fault.dat,fail={fail},arm=program,log={log},{TRIGGERS[trigger]}",
             "LD_PRELOAD": f"{launcher.lib}:{launcher.faults}" if config else launcher.faults}
    if config:
        ranks.update(IOTAME_CONFIG=config, IOTAME_STATS=stats)
    cmd, env = launcher.command(tmp, ranks, [launcher.program, tmp, mode])
    try:
        p = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=HANG)
    except subprocess.TimeoutExpired as e:
        subprocess.run(["pkill", "-9", "-f", f"{launcher.program} {tmp} "], check=False)
        raise Hang(f"the job was still running after {HANG} s") from e
    assert p.returncode == 0 and p.stdout.strip().startswith("{"), \
        f"exit {p.returncode}\n{p.stdout}\n{p.stderr[-3000:]}"
    lines = [line for f in sorted(tmp.glob("faults.log.*")) for line in f.read_text().splitlines()]
    return json.loads(p.stdout.strip().splitlines()[-1]), lines, stats


def value_bytes(rank, call):
    """What rank's part of call holds: BLOCK*BLOCKS bytes of little-endian ints (fault_job's value())."""
    ints = BLOCK * BLOCKS // 4
    base = 1 + 100003 * (call + 16 * rank)
    return b"".join((base + j).to_bytes(4, "little") for j in range(ints))


def part_intact(data: bytes, rank, call, nprocs):
    """Whether rank's part of call is in the file (its blocks at their place in the interleaving)."""
    want = value_bytes(rank, call)
    for b in range(BLOCKS):
        at = ((call * BLOCKS + b) * nprocs + rank) * BLOCK
        if data[at:at + BLOCK] != want[b * BLOCK:(b + 1) * BLOCK]:
            return False
    return True


def violations(result, tmp: Path, mode, op, fail, staged=False):
    """The rules a run breaks, as (rule, what) pairs (an empty list: none)."""
    out = []
    steps, classes, cls = result["steps"], result["classes"], result["class"]
    own = {"ENOSPC": cls["no_space"], "EDQUOT": cls["quota"], "EACCES": cls["access"]}
    allowed = {cls["io"], own.get(fail, cls["io"])}
    armed_at = steps.index("write 1") if mode == "write" and "write 1" in steps else steps.index("open")
    for rank, row in enumerate(classes):
        if any(row[:armed_at]):
            out.append(("before", f"rank {rank}: an error before the faults were armed: {dict(zip(steps, row))}"))
        if {c for c in row if c} - allowed:
            out.append(("class", f"rank {rank}: error classes {sorted(set(row) - {0})} where the fault gives "
                                 f"{sorted(allowed)}"))
    if any(result["bad"]):
        out.append(("read", f"reads that returned success with wrong values, per rank: {result['bad']}"))
    keep = (tmp / "keep.dat").read_bytes() if (tmp / "keep.dat").exists() else b""
    n = result["nprocs"]
    if not all(part_intact(keep, r, c, n) for r in range(n) for c in range(CALLS)):
        out.append(("keep", "keep.dat (written and closed before the fault) differs"))
    data = (tmp / "fault.dat").read_bytes() if (tmp / "fault.dat").exists() else b""
    durable = range(1) if mode == "write" else range(CALLS)
    if not all(part_intact(data, r, c, n) for r in range(n) for c in durable):
        out.append(("durable", "fault.dat: data written and synced before the fault differs"))
    if mode == "write" and op == "write":
        for rank, row in enumerate(classes):
            for c in range(1, CALLS):
                step = f"write {c}"
                if step in steps and not part_intact(data, rank, c, n):
                    seen = row[steps.index(step):] if staged else [row[steps.index(step)]]
                    if not any(seen):
                        out.append(("lost", f"rank {rank}: its part of {step} is not in the file and it saw no error "
                                   f"{'by the close' if staged else 'at that call'}"))
    if op in ("sync", "truncate"):
        fired = {int(f.name.rsplit(".", 1)[1]) for f in tmp.glob("faults.log.*") if f.read_text().strip()}
        where = ["sync", "close"] if op == "sync" else ["set_size"]
        for rank in sorted(fired):
            row = classes[rank] if op == "sync" else [c for r in classes for c in r]
            names = steps if op == "sync" else steps * n
            if not any(c for s, c in zip(names, row) if s in where):
                out.append(("unreported", f"rank {rank}: its {op} failed and no error came back at "
                                          f"{' or '.join(where)}"))
    return out


def stats_violations(result, stats: Path):
    """The runtime's statistics must count every error the program saw on fault.dat."""
    steps = result["steps"]
    first = steps.index("open")
    seen = sum(1 for row in result["classes"] for c in row[first:] if c)
    files = [f for f in json.loads(stats.read_text())["files"] if f["path"].endswith("/fault.dat")]
    counted = sum(o.get("errors", 0) for f in files for o in f["ops"].values())
    return [] if counted == seen else [f"statistics count {counted} errors on fault.dat, the program saw {seen}"]


def test_the_injector_fails_the_named_file_from_the_nth_call_and_logs_it(tmp_path):
    """The injector alone under a plain process: the second and third writes of b.txt fail with ENOSPC, a.txt's
    never; a malformed rule stops the process naming the key."""
    script = ("import os, sys\n"
              "a, b = (os.open(f'{sys.argv[1]}/{n}.txt', os.O_CREAT | os.O_WRONLY) for n in 'ab')\n"
              "for fd in (a, b, a, b, b, b):\n"
              "    try: os.write(fd, b'x'); print('ok')\n"
              "    except OSError as e: print(e.strerror)\n")
    env = dict(os.environ, LD_PRELOAD=str(FAULTS),
               IOTAME_FAULT=f"op=write,file=b.txt,fail=ENOSPC,nth=2,count=2,log={tmp_path}/log")
    p = subprocess.run([sys.executable, "-c", script, tmp_path], env=env, capture_output=True, text=True, timeout=60)
    assert p.stdout.split("\n")[:6] == ["ok", "ok", "ok", "No space left on device", "No space left on device", "ok"]
    assert [line.split()[0] for line in (tmp_path / "log.0").read_text().splitlines()] == ["op=write"] * 2
    env["IOTAME_FAULT"] = "op=write,when=2"
    p = subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "IOTAME_FAULT: when=2: expected one of op, file, fail" in p.stderr


_oracle: dict = {}


@pytest.fixture(scope="module")
def oracle_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("oracle")


def oracle(oracle_dir: Path, mode, op, fail, trigger, launcher=Mpich):
    """The MPI library's run of the same fault: the rules it breaks (cached per fault and launcher)."""
    key = (launcher.__name__, mode, op, fail, trigger)
    if key not in _oracle:
        tmp = oracle_dir / "-".join(key)
        try:
            result, _, _ = run_job(tmp, mode, op, fail, trigger, launcher=launcher)
            _oracle[key] = {rule for rule, _ in violations(result, tmp, mode, op, fail)}
        except Hang:
            _oracle[key] = {"hang"}
    return _oracle[key]


def case_config(tmp: Path, strategy, staging, throttle):
    rule = {"match": "*/fault.dat", "collective": {"strategy": strategy, "virtual_node_size": 1, "readahead": 0}}
    if staging:
        rule["staging"] = {"enabled": True, "collective": "aggregators" if staging == "aggregators" else "node"}
    if throttle:
        rule["throttle"] = {"writers": 1, "readers": 1}
    return write_json(tmp / "config.json", {"version": 1, "files": [rule]})


def check_case(case, tmp_path: Path, oracle_dir: Path, launcher=Mpich):
    """Runs one case under the runtime and fails the test with every rule it breaks that the library keeps."""
    mode, op, fail, trigger, strategy, staging, throttle = case
    library = oracle(oracle_dir, mode, op, fail, trigger, launcher)
    if "hang" in library and strategy in LIBRARY_SERVED:
        pytest.skip(f"the MPI library alone hangs on this fault, and {strategy} hands it the call")
    tmp = tmp_path / "job"
    try:
        result, lines, stats = run_job(tmp, mode, op, fail, trigger, case_config(tmp_path, strategy, staging, throttle),
                                       launcher)
    except Hang as e:
        pytest.fail(f"{case_id(case)}: {e}" + (" (the library alone hangs too)" if "hang" in library else ""),
                    pytrace=False)
    found = violations(result, tmp, mode, op, fail, bool(staging))
    broken = [what for rule, what in found if rule not in library] + stats_violations(result, stats)
    waived = [what for rule, what in found if rule in library]
    assert not broken, (f"{case_id(case)}: {len(lines)} faults injected\n" + "\n".join(broken) +
                        "".join(f"\n(the library breaks it too: {what})" for what in waived) +
                        f"\nresult: {json.dumps(result)}\nfaults: {lines[:6]}")


@pytest.mark.parametrize("case", chosen_cases(), ids=case_id)
def test_fault(case, tmp_path, oracle_dir):
    check_case(case, tmp_path, oracle_dir)


SOAK_MINUTES = float(os.environ.get("IOTAME_SOAK_MINUTES", "0"))
RANDOM = TEST_PROGRAMS / "random_collective"


def soak_differential(tmp: Path, rng: random.Random):
    """The randomized differential program with short transfers injected on test.dat at random (the library and
    the runtime must both finish them): 0 mismatches, or the failure as a string."""
    strategy = rng.choice(STRATEGIES)
    rule = {"match": "*/test.dat", "collective": {"strategy": strategy, "virtual_node_size": 1, "readahead": 0}}
    if rng.random() < 0.5:
        rule["staging"] = {"enabled": True}
    if rng.random() < 0.5:
        rule["throttle"] = {"writers": 1, "readers": 1}
    config = write_json(tmp / "config.json", {"version": 1, "files": [rule]})
    op, seed = rng.choice(["write", "read"]), rng.randrange(1 << 30)
    env = Job(tmp).env(config=config, extra={"IOTAME_FAULT": f"op={op},file=test.dat,fail=short,prob=0.3,seed={seed}",
                                             "RANDOM_COLLECTIVE_BYTES": "1", "RANDOM_COLLECTIVE_SYNC": "1"})
    cmd = ["mpiexec", "-n", str(NPROCS), "-genv", "LD_PRELOAD", f"{LIBIOTAME}:{FAULTS}", str(RANDOM), str(tmp),
           str(seed), "10", "0"]
    name = f"differential {strategy} {sorted(rule)} short {op} seed {seed}"
    try:
        p = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=HANG * 4)
    except subprocess.TimeoutExpired:
        subprocess.run(["pkill", "-9", "-f", f"{RANDOM} {tmp} "], check=False)
        return name, f"hang after {HANG * 4} s"
    ok = p.returncode == 0 and '"mismatches": 0' in p.stdout
    return name, None if ok else f"exit {p.returncode}: {p.stdout[-300:]} {p.stderr[-600:]}"


@pytest.mark.skipif(SOAK_MINUTES <= 0, reason="the soak runs with IOTAME_SOAK_MINUTES set (make soak)")
def test_soak(tmp_path, oracle_dir):
    """For IOTAME_SOAK_MINUTES: matrix cases drawn at random with fresh seeds for the random trigger, and the
    differential program under random short transfers, one after the other; prints the counts."""
    import time
    rng, deadline = random.Random(os.environ.get("IOTAME_FAULT_SEED")), time.monotonic() + SOAK_MINUTES * 60
    # cases = passed + failed + library hangs (skipped: the library alone hangs on that fault)
    counts, failures = {"cases": 0, "passed": 0, "failed": 0, "library hangs": 0, "differential": 0}, []
    while time.monotonic() < deadline:
        tmp = tmp_path / str(counts["cases"])
        tmp.mkdir()
        counts["cases"] += 1
        if counts["cases"] % 2:
            counts["differential"] += 1
            name, failure = soak_differential(tmp, rng)
        else:
            case = rng.choice(all_cases())
            TRIGGERS["random"] = f"prob={rng.choice([0.1, 0.3, 0.6])},seed={rng.randrange(1 << 30)}"
            _oracle.clear()  # the random trigger's seed changed
            name, failure = case_id(case) + " " + TRIGGERS["random"], None
            try:
                check_case(case, tmp, oracle_dir)
            except pytest.skip.Exception:
                counts["library hangs"] += 1
                continue
            except (AssertionError, pytest.fail.Exception) as e:
                failure = str(e)[:2000]
        counts["failed" if failure else "passed"] += 1
        if failure:
            failures.append(f"{name}: {failure}")
    print("\nsoak:", json.dumps(counts), *failures, sep="\n")
    assert not failures
