"""The network part of a machine profile: `iotame-kernel netprobe` (kernels/netprobe.c) started through the tuner's
launchers (tune/job.py: `mpiexec -n N`, `srun` inside an allocation, or a launcher command given after `--`
such as `scripts/testbed mpiexec -n 4 --`), its JSON turned into the profile's `network` and `nodes` sections."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import IotameError, UsageError
from ..paths import kernel_path
from ..tune.job import Job, launcher_of, nprocs_from_command, resolve_job, slurm_allocation

__all__ = ["NETWORK_REPS", "network_job", "with_probe", "run_netprobe", "network_section", "nodes_section",
           "measure_network", "NOT_ASKED_NOTE", "check_point"]

NETWORK_REPS = {"full": 20, "quick": 5}     # timed rounds per point (the kernel reports medians)
NETWORK_WARMUP = 2
NOT_ASKED_NOTE = ("network not measured: give --np N (2 or more processes), --launcher, or a launcher after `--` "
                  "(inside a Slurm allocation srun is used by itself)")
PROBE_TIMEOUT = 600


def _calibrate_error(e: UsageError) -> UsageError:
    return UsageError(str(e).replace("tune:", "calibrate:", 1))


def network_job(launch: Sequence[str] = (), np: int | None = None, launcher: str | None = None,
                srun_plugin: str | None = None, reps: int = NETWORK_REPS["full"], program: str | Path | None = None,
                env: Mapping[str, str] | None = None) -> Job | None:
    """The netprobe job, or None when nothing asks for one (no --np, --launcher, launcher command, nor a Slurm
    allocation). `launch` is a launcher command the probe is appended to: one the tuner knows (`mpiexec -n 4`,
    `srun -n 4`) is resolved like `iotame tune`'s; another (`scripts/testbed mpiexec -n 4 --`) is used as it is,
    its count read after its first word or taken from --np."""
    launch = [str(a) for a in launch]
    if not launch and np is None and launcher is None and slurm_allocation(env) is None:
        return None
    probe = [str(program or kernel_path()), "netprobe", "--reps", str(reps), "--warmup", str(NETWORK_WARMUP)]
    if launch and launcher_of(launch) is None:
        if launcher is not None:
            raise UsageError(f"calibrate: --launcher {launcher} and a launcher command ({launch[0]} ...) "
                             f"both given; give one")
        found = nprocs_from_command(launch[1:]) if launcher_of(launch[1:]) else None
        if found is not None and np is not None and found != np:
            raise UsageError(f"calibrate: --np {np} disagrees with the launcher command's process count {found}")
        if found is None and np is None:
            raise UsageError(f"calibrate: cannot tell the process count from `{' '.join(launch[:4])}`: give --np N")
        return Job(tuple(launch + probe), found if found is not None else np, True)
    try:
        return resolve_job(launch + probe, np, launcher, srun_plugin, env)
    except UsageError as e:
        raise _calibrate_error(e) from None


def with_probe(job: Job, args: Sequence[str]) -> Job:
    """The network job's launch with another iotame-kernel kernel in place of netprobe: the same launcher, process
    count and iotame-kernel, then `args` (the kernel's name and its options)."""
    argv = list(job.argv)
    at = max((i for i, a in enumerate(argv) if a == "netprobe" and i > 0), default=None)
    if at is None:
        raise ValueError(f"not a network probe's job: {' '.join(argv[:6])}")
    return Job(tuple(argv[:at] + [str(a) for a in args]), job.nprocs, job.launched, job.note)


def run_netprobe(job: Job, timeout: int = PROBE_TIMEOUT) -> dict | str:
    """The probe's JSON result, or a note (str) saying why MPI or the kernel is not available. IotameError when the
    probe ran and failed."""
    program = job.argv[0]
    if shutil.which(program) is None:
        return f"network not measured: {program} not found (no MPI launcher available)"
    kernel = next((a for a in job.argv if Path(a).name == "iotame-kernel"), None)
    if kernel is not None and not Path(kernel).is_file():
        return f"network not measured: {kernel} is not built (make setup, or cmake --build build)"
    try:
        p = subprocess.run(list(job.argv), capture_output=True, text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        raise IotameError(f"calibrate: the network probe did not finish in {timeout} s: {' '.join(job.argv)}") \
            from None
    start = p.stdout.find("{")
    if p.returncode != 0 or start < 0:
        tail = " | ".join(p.stderr.strip().splitlines()[-3:])
        raise IotameError(f"calibrate: the network probe failed (exit status {p.returncode}): "
                          f"{' '.join(job.argv)}: {tail}")
    try:
        result = json.loads(p.stdout[start:].splitlines()[0])
    except (ValueError, IndexError):
        raise IotameError(f"calibrate: the network probe printed no JSON: {p.stdout[:200]!r}") from None
    if result.get("nprocs") != job.nprocs:
        raise IotameError(f"calibrate: the network probe ran as {result.get('nprocs')} process(es), not "
                          f"{job.nprocs} (under srun, give the plugin your MPI needs, e.g. --srun-mpi pmi2)")
    if result.get("verified") is not True:
        raise IotameError(f"calibrate: the network probe's messages arrived corrupted: {result.get('errors')}")
    return result


def _pair(section: dict | None) -> dict | None:
    """A ping-pong pair as the profile has it: latency (one-way us) of the smallest message, MB/s of the largest."""
    if section is None:
        return None
    points = sorted(section["points"])
    return {"latency_us": round(points[0][1], 3), "mbs": round(points[-1][2], 1), "ranks": section["ranks"],
            "points": [[size, round(us, 3), round(mbs, 1)] for size, us, mbs in points]}


def network_section(result: dict, job: Job) -> dict:
    """The profile's `network` section from the probe's result."""
    return {"intra": _pair(result["pingpong"]["intra"]), "inter": _pair(result["pingpong"]["inter"]),
            "allgather": [[p, b, round(us, 3)] for p, b, us in result["allgather"]],
            "alltoallv": [[p, b, round(us, 3)] for p, b, us in result["alltoallv"]],
            "launch": list(job.argv), "reps": result["params"]["reps"],
            "method": "iotame-kernel netprobe: medians after warm-up; latency one-way (half a round trip) of 8 B, "
                      "MB/s of 4 MiB ping-pong; collectives from a barrier to the slowest rank's return"}


def nodes_section(result: dict) -> dict:
    return {"count": result["nodes"]["count"], "processes_per_node": result["nodes"]["processes_per_node"]}


def measure_network(job: Job | None) -> tuple[dict | None, dict | None, str | None]:
    """(network section, nodes section, note): both None with a note when nothing asked for the network or MPI
    is not available."""
    if job is None:
        return None, None, NOT_ASKED_NOTE
    result = run_netprobe(job)
    if isinstance(result, str):
        return None, None, result
    return network_section(result, job), nodes_section(result), None


def check_point(profile: dict, job: Job | None, tolerance: float) -> tuple[list[dict], list[str], str | None]:
    """`--check`'s network point: the probe run again, the 4 MiB ping-pong MB/s between nodes (within one node
    when the profile has one node) judged against the profile's. (rows, layout problems, note)."""
    network = profile.get("network")
    if network is None:
        return [], [], None
    if job is None:
        return [], [], "network not re-checked: give --np N or a launcher, as when the profile was measured"
    result = run_netprobe(job)
    if isinstance(result, str):
        return [], [], result
    measured_nodes = nodes_section(result)
    problems = []
    if measured_nodes != profile["nodes"]:
        problems.append(f"nodes: the profile has {profile['nodes']['count']} node(s) x "
                        f"{profile['nodes']['processes_per_node']} process(es), the job has "
                        f"{measured_nodes['count']} x {measured_nodes['processes_per_node']}")
    kind = "inter" if network.get("inter") else "intra"
    expected, measured = network.get(kind), _pair(result["pingpong"][kind])
    if expected is None or measured is None:
        return [], problems, f"network not re-checked: the job has no {kind}-node pair"
    size = max(size for size, _, _ in measured["points"])
    ratio = measured["mbs"] / expected["mbs"] if expected["mbs"] else float("inf")
    row = {"point": f"network {kind}-node ping-pong", "request_bytes": size, "profile_mbs": expected["mbs"],
           "measured_mbs": measured["mbs"], "ratio": round(ratio, 3),
           "holds": 1 / (1 + tolerance) <= ratio <= 1 + tolerance}
    return [row], problems, None
