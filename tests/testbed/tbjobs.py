"""What the testbed's test modules share: the testbed command, what `down` must leave, MPI jobs across the hosts
and the randomized differential job."""
import json
import os
import signal
import subprocess
import time
import warnings
from pathlib import Path

import pytest

from conftest import LIBIOTAME, ROOT, TEST_PROGRAMS, file_stats, write_json

TESTBED = ROOT / "scripts" / "testbed"
OMPI_BUILD = ROOT / "build-openmpi"
RUN = Path("/run/iotame-testbed")
CEPH_MOUNT = "/mnt/iotame-ceph"    # testbed up --fs ceph's default mount
SEED = 20261122
STRATEGIES = ["passthrough", "independent", "two_phase", "node_local", "target_aligned", "view_based", "auto"]
_OURS = ("IOTAME_", "LD_PRELOAD", "HYDRA_", "MPIR_CVAR_", "PMI_", "OMPI_", "UCX_")


def tb(*args, check=True, timeout=60):
    p = subprocess.run([str(TESTBED), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"testbed {' '.join(map(str, args))} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def root_view():
    """What the root namespace shows of the testbed: namespaces, links, mounts, files and processes (all must go
    at down)."""
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    mounts = Path("/proc/self/mountinfo").read_text()
    return {"netns": sorted(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()),
            "links": sorted(line.split(":")[1].strip() for line in links.splitlines()),
            "addresses": subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True).stdout.count("10.213."),
            "mounts": [m for m in mounts.splitlines() if "iotame-testbed" in m or "/run/netns/tb" in m],
            "files": [str(p) for p in (RUN, Path("/etc/netns/tb0"), Path("/etc/netns/tb-switch"), Path(CEPH_MOUNT))
                      if p.exists()],
            "processes": ours_running()}


def ours_running():
    """The testbed's processes in the machine's PID space: the CephFS's daemons and clients (their command lines
    name the cluster's directory in RUN) and the hosts' mount-namespace anchors."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            anchor = cmd == "sleep infinity" and os.readlink(d / "ns" / "mnt") != os.readlink("/proc/self/ns/mnt")
        except OSError:
            continue
        if str(RUN) in cmd or anchor:
            found.append(f"{d.name} {cmd}")
    return found


def assert_clean():
    v = root_view()
    assert not [n for n in v["netns"] if n.startswith("tb")], v
    assert not v["mounts"] and not v["files"] and not v["processes"] and v["addresses"] == 0, v
    assert not [line for line in v["links"] if line.startswith(("tb", "br0", "veth"))], v


# A rank blocked FUSE_STALL seconds in one FUSE request is taken for ceph-fuse's lost wake-up (docs/reliability.md,
# "The CephFS hang"): job() nudges it from the machine's own client, at most FUSE_NUDGES times per job, and records
# each in fuse_stalls.
FUSE_STALL = 10
FUSE_NUDGES = 3
fuse_stalls = []  # every stall nudged in this process, as fuse_stall() describes it
_SYSCALLS = {0: "read", 1: "write", 2: "open", 4: "stat", 5: "fstat", 17: "pread64", 18: "pwrite64", 19: "readv",
             20: "writev", 72: "fcntl", 74: "fsync", 75: "fdatasync", 77: "ftruncate", 257: "openat",
             262: "newfstatat", 295: "preadv", 296: "pwritev"}


def fuse_blocked(program):
    """The threads of the processes running program (argv[0]) that wait for a FUSE daemon's answer
    (request_wait_answer): [(pid, tid, system call, path of its descriptor or None)]."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if (d / "cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace") != program:
                continue
            for t in (d / "task").iterdir():
                if (t / "wchan").read_text() != "request_wait_answer":
                    continue
                call = (t / "syscall").read_text().split()
                name = _SYSCALLS.get(int(call[0]), f"system call {call[0]}") if call[0].isdigit() else "?"
                try:
                    path = os.readlink(d / "fd" / str(int(call[1], 16))).removesuffix(" (deleted)")
                except (OSError, IndexError, ValueError):
                    path = None
                found.append((int(d.name), int(t.name), name, path))
        except OSError:
            continue
    return found


def fuse_nudge(blocked):
    """A stat of each blocked call's file and of its directory's entries through the machine's own client: the
    metadata server answers with new capability grants, which wake a ceph-fuse waiter that missed its wake-up."""
    for _pid, _tid, _call, path in blocked:
        if not path or not path.startswith("/"):
            continue
        d = Path(path).parent
        for f in [Path(path), d, *(d.iterdir() if d.is_dir() else [])]:
            try:
                f.stat()
            except OSError:
                pass


def job(tmp, np, prog, per_host=None, openmpi=False, env=None, timeout=180):
    """`testbed mpiexec` from tmp. RATIONALE: MPICH 4.0.2 over UCX 1.13's TCP transport sometimes hangs in
    MPI_Finalize after the job's work (a rank flushing its endpoint to a peer already in the PMI barrier;
    docs/testbed.md, Limits). Once rank 0 has printed its result line (after every check of the program, and after
    the runtime wrote its statistics) the job gets 10 s to exit, then it is ended and the test goes on with what it
    printed (stdout up to its result: ending the launcher makes it print a termination banner).
    A rank blocked FUSE_STALL s in one request to a ceph-fuse is nudged (fuse_nudge), with a warning that names
    the process, the system call and the file, and recorded in fuse_stalls; a stall the nudges do not end runs into
    the timeout, and stderr then ends with the calls still blocked and the nudges. Returns (stdout, stderr,
    returncode or "finalize-hang" or "timeout")."""
    cmd = [str(TESTBED), "mpiexec", "-n", str(np)] + (["--per-host", str(per_host)] if per_host else [])
    cmd += (["--openmpi"] if openmpi else []) + ["--"] + [str(a) for a in prog]
    full = {k: v for k, v in os.environ.items() if not k.startswith(_OURS)}
    full.update(env or {})
    out, err = tmp / f"out-{time.monotonic_ns()}", tmp / f"err-{time.monotonic_ns()}"
    stalls = []
    with open(out, "w") as fo, open(err, "w") as fe:
        p = subprocess.Popen(cmd, cwd=tmp, env=full, stdout=fo, stderr=fe, start_new_session=True)
        deadline, result_at, result = time.monotonic() + timeout, None, ""
        blocked_since, looked = {}, 0.0
        while p.poll() is None and time.monotonic() < deadline:
            if result_at is None and out.read_text().strip().endswith("}"):
                result_at, result = time.monotonic(), out.read_text()
            if result_at is not None and time.monotonic() - result_at > 10:
                break
            now = time.monotonic()
            if now - looked >= 1:
                looked = now
                blocked = fuse_blocked(str(prog[0]))
                blocked_since = {b: blocked_since.get(b, now) for b in blocked}
                stuck = [b for b, since in blocked_since.items() if now - since >= FUSE_STALL]
                if stuck and len(stalls) < FUSE_NUDGES:
                    stalls += [fuse_stall(b, now - blocked_since[b]) for b in stuck]
                    fuse_nudge(stuck)
                    blocked_since = {}
                    for s in stalls[-len(stuck):]:
                        warnings.warn(s)
            time.sleep(0.05)
        fuse_stalls.extend(stalls)
        rc = p.poll()
        if rc is None:
            left = fuse_blocked(str(prog[0])) if result_at is None else []
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            rc = "finalize-hang" if result_at is not None else "timeout"
            if rc == "timeout":
                with open(err, "a") as fe:
                    fe.write("".join(f"\ntbjobs: still {fuse_stall(b, None)}" for b in left) +
                             "".join(f"\ntbjobs: nudged: {s}" for s in stalls))
            if rc == "finalize-hang":
                warnings.warn(f"{' '.join(cmd[1:4])} {Path(str(prog[0])).name}: ended after its result, in "
                              f"MPI_Finalize (MPICH over UCX TCP, docs/testbed.md)")
                return result, err.read_text(), rc
    return out.read_text(), err.read_text(), rc


def fuse_stall(blocked, seconds):
    pid, tid, call, path = blocked
    held = f" for {seconds:.0f} s" if seconds is not None else ""
    return (f"ceph-fuse stall: process {pid} (thread {tid}) blocked{held} in {call} on {path or 'an unknown file'}, "
            f"waiting for its FUSE daemon (ceph-fuse) to answer; docs/reliability.md, \"The CephFS hang\"")


def ok(rc):
    return rc == 0 or (rc == "finalize-hang")


def random_job(tmp, np, strategy, cases, first, per_host=None, openmpi=False, lib=LIBIOTAME,
               program=TEST_PROGRAMS / "random_collective", where=None, settings=None):
    """test.dat through the strategy (real nodes: no virtual_node_size), ref.dat through the library, both in
    where (default tmp); settings: more of the file's configuration (staging, throttle)."""
    config = write_json(tmp / "c.json", {"version": 1, "files": [
        {"match": "*/test.dat", "collective": {"strategy": strategy, "readahead": 0}, **(settings or {})}]})
    stats = tmp / "s.json"
    env = {"LD_PRELOAD": str(lib), "IOTAME_CONFIG": str(config), "IOTAME_STATS": str(stats)}
    if strategy in ("passthrough", "independent", "auto") and not openmpi:
        env["RANDOM_COLLECTIVE_BYTES"] = "1"  # where ROMIO serves test.dat's calls (random_collective's usage)
    if "staging" in (settings or {}):
        env["RANDOM_COLLECTIVE_SYNC"] = "1"  # MPI-IO's rule for seeing others' writes, which writing behind needs
    out, err, rc = job(tmp, np, [program, where or tmp, SEED, cases, first], per_host=per_host, openmpi=openmpi,
                       env=env)
    assert ok(rc), err[-3000:]
    assert json.loads(out) == {"cases": cases, "calls": 4 * np * cases, "mismatches": 0}
    return file_stats(stats, "test.dat")


# The Open MPI build the testbed's Open MPI jobs load (a fixture: test files import it by name).
@pytest.fixture(scope="module")
def ompi_build():
    if not Path("/usr/bin/mpirun.openmpi").exists():
        pytest.skip("Open MPI is not installed")
    p = subprocess.run([ROOT / "scripts" / "build_openmpi.sh", OMPI_BUILD], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return OMPI_BUILD
