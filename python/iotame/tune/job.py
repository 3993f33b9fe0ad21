"""The job a study tunes: its process count, read from the launcher's options in CMD (`mpiexec -n N`, `-np N`,
`srun -n N`, `--ntasks=N`) or given with --np, and the launch templates that start a command given without a
launcher (`mpiexec -n N CMD` by default, or Slurm's `srun --mpi=PLUGIN -n N CMD`, also chosen by itself inside a
Slurm allocation)."""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Mapping, Sequence

from ..errors import UsageError
from ..runner import RUNTIME_VARS, Launcher, get_launcher

__all__ = ["LAUNCHER_PROGRAMS", "Srun", "TEMPLATES", "Job", "launcher_of", "nprocs_from_command", "program_index",
           "resolve_job", "study_name", "ENV_SRUN_MPI", "SRUN_MPI", "srun_mpi", "SlurmAllocation",
           "slurm_allocation", "hostlist_count"]

LAUNCHER_PROGRAMS = ("mpiexec", "mpirun", "mpiexec.hydra", "mpiexec.mpich", "mpirun.mpich", "mpiexec.openmpi",
                     "mpirun.openmpi", "orterun", "prterun", "srun")
_COUNT_OPTIONS = ("-n", "-np", "--np", "--n", "-c", "--ntasks")       # followed by the count
_COUNT_JOINED = re.compile(r"(?:--ntasks|--np|-np|-n)=(\d+)$|-n(\d+)$")   # --ntasks=4, -n=4, srun's -n4
# Options of the common launchers that take a value (so the value is not mistaken for the program).
_VALUED = {"-host", "--host", "-hosts", "-f", "-hostfile", "--hostfile", "-machinefile", "-ppn", "-env", "-genv",
           "-x", "--map-by", "--bind-to", "-N", "--nodes", "-p", "--partition", "-t", "--time", "-A", "--account",
           "-wdir", "--wdir", "-launcher", "-bootstrap", "--mca", "-mca", "--cpus-per-task", "--mem", "--mpi"}

ENV_SRUN_MPI = "IOTAME_SRUN_MPI"
# srun's --mpi plugin for the MPI a program is built with (docs/slurm.md). Debian's MPICH needs pmi2: under pmix or
# none each of its ranks starts alone, as a job of 1, without an error. Debian's Open MPI needs pmix.
SRUN_MPI = {"MPICH": "pmi2", "Open MPI": "pmix"}


def srun_mpi(choice: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The --mpi plugin srun gets: `choice` (tune --srun-mpi), else $IOTAME_SRUN_MPI, else SRUN_MPI's entry for
    the MPI implementation `iotame info` detects. None (no --mpi: the cluster's MpiDefault) for "default", or when
    the implementation is not known."""
    env = os.environ if env is None else env
    value = choice or env.get(ENV_SRUN_MPI, "").strip()
    if not value:
        from ..info import mpi_info  # runs `mpichversion` or `mpiexec --version`, once
        return SRUN_MPI.get(mpi_info().get("implementation"))
    if not re.fullmatch(r"[\w.-]+", value):
        raise UsageError(f"srun --mpi plugin {value!r}: expected a plugin name such as pmi2, pmix, none, or default "
                         f"(from --srun-mpi or ${ENV_SRUN_MPI})")
    return None if value == "default" else value


class Srun(Launcher):
    """Slurm: `srun [--mpi=PLUGIN] -n N argv…` (srun exports the whole environment by default, LD_PRELOAD and
    IOTAME_* included). `mpi` None leaves the plugin to the cluster's MpiDefault."""

    name = "srun"
    program = "srun"

    def __init__(self, mpi: str | None = None):
        self.mpi = mpi

    def command(self, nprocs: int, argv: Sequence[str], env_names: Sequence[str] = ()) -> list[str]:
        mpi = [f"--mpi={self.mpi}"] if self.mpi else []
        return [self.program, *mpi, "-n", str(int(nprocs)), *map(str, argv)]


def _template(name: str, srun_plugin: str | None, env: Mapping[str, str] | None) -> Launcher:
    return Srun(srun_mpi(srun_plugin, env)) if name == "srun" else get_launcher(name)


_HOSTLIST_PART = re.compile(r"([^,\[]*)(?:\[([^\]]*)\])?([^,\[]*)")


def hostlist_count(nodelist: str) -> int:
    """The number of hosts in a Slurm hostlist: `vm` 1, `n[01-04,07],gpu1` 6 (one bracket per name, as Slurm
    prints them)."""
    count, pos = 0, 0
    text = nodelist.strip()
    while pos < len(text):
        m = _HOSTLIST_PART.match(text, pos)
        if m.group(2) is None:
            count += 1
        else:
            for r in m.group(2).split(","):
                lo, _, hi = r.partition("-")
                count += int(hi) - int(lo) + 1 if hi else 1
        pos = m.end() + 1       # past the comma
    return count


@dataclass(frozen=True)
class SlurmAllocation:
    """The Slurm job a command runs inside (salloc, sbatch), from its environment."""

    job_id: str
    ntasks: int
    nodes: int | None
    nodelist: str

    def describe(self) -> str:
        nodes = "" if self.nodes is None else f" on {self.nodes} node{'s' if self.nodes != 1 else ''}"
        return f"Slurm job {self.job_id} ({self.ntasks} task{'s' if self.ntasks != 1 else ''}{nodes}" + \
            (f": {self.nodelist})" if self.nodelist else ")")


def slurm_allocation(env: Mapping[str, str] | None = None) -> SlurmAllocation | None:
    """The allocation when SLURM_JOB_ID and SLURM_NTASKS are set (inside salloc, or sbatch with -n), else None.
    The node count is SLURM_JOB_NUM_NODES, else counted in SLURM_JOB_NODELIST."""
    env = os.environ if env is None else env
    job_id, ntasks = env.get("SLURM_JOB_ID", "").strip(), env.get("SLURM_NTASKS", "").strip()
    if not job_id or not ntasks:
        return None
    if not ntasks.isdigit() or int(ntasks) < 1:
        raise UsageError(f"SLURM_NTASKS={ntasks!r} in Slurm job {job_id}: expected a positive task count")
    nodelist = env.get("SLURM_JOB_NODELIST", "").strip()
    nodes = env.get("SLURM_JOB_NUM_NODES", "").strip()
    try:
        count = int(nodes) if nodes.isdigit() else (hostlist_count(nodelist) if nodelist else None)
    except ValueError:
        count = None            # a hostlist this parser does not know: the note goes without the count
    return SlurmAllocation(job_id, int(ntasks), count, nodelist)


TEMPLATES = ("mpiexec", "srun")


def launcher_of(cmd: Sequence[str]) -> str | None:
    """The launcher program CMD starts with (`mpiexec`, `srun`, …), or None."""
    if not cmd:
        return None
    name = PurePath(cmd[0]).name
    return name if name in LAUNCHER_PROGRAMS else None


def nprocs_from_command(cmd: Sequence[str]) -> int | None:
    """The process count in a launcher's options (None when CMD has no launcher or no count). The options are
    read up to the program; `-n 2 -n 3` takes the last, as the launchers do."""
    return _scan(cmd)[0]


def program_index(cmd: Sequence[str]) -> int:
    """Where the program is in CMD: 0 without a launcher, else the first word after the launcher's options."""
    return _scan(cmd)[1]


def _scan(cmd: Sequence[str]) -> tuple[int | None, int]:
    if launcher_of(cmd) is None:
        return None, 0
    srun = launcher_of(cmd) == "srun"
    counts = tuple(o for o in _COUNT_OPTIONS if not (srun and o == "-c"))     # srun -c: CPUs per task
    valued = _VALUED | ({"-c"} if srun else set())
    found, i = None, 1
    while i < len(cmd):
        a = str(cmd[i])
        if a in counts and i + 1 < len(cmd):
            if not re.fullmatch(r"\d+", str(cmd[i + 1])):
                return None, min(i + 2, len(cmd) - 1)
            found, i = int(cmd[i + 1]), i + 2
            continue
        m = _COUNT_JOINED.match(a)
        if m:
            found = int(m.group(1) or m.group(2))
        elif a in valued:
            i += 1
        elif not a.startswith("-"):
            break                       # the program
        i += 1
    return found, min(i, len(cmd) - 1)


@dataclass(frozen=True)
class Job:
    """What a trial runs: `argv` (a launcher's command line, or the command alone) on `nprocs` processes."""

    argv: tuple[str, ...]
    nprocs: int
    launched: bool          # argv starts with a launcher
    note: str = ""          # how the launcher was chosen, when iotame chose it by itself


def resolve_job(cmd: Sequence[str], np: int | None = None, launcher: str | None = None,
                srun_plugin: str | None = None, env: Mapping[str, str] | None = None) -> Job:
    """The job for CMD. With a launcher in CMD its count is read there (--np must agree when given). Without one,
    --np or --launcher wrap CMD in a launch template (`mpiexec -n N CMD`, `srun --mpi=P -n N CMD`; srun's N
    defaults to the allocation's SLURM_NTASKS); neither, inside a Slurm allocation, is the srun template with
    SLURM_NTASKS processes (a note says so); neither, outside one, runs CMD as it is, one process (an MPI program
    started alone is a singleton). `srun_plugin` and `env` go to srun_mpi and slurm_allocation."""
    cmd = [str(a) for a in cmd]
    if not cmd:
        raise UsageError("tune: no command given (iotame tune [options] -- CMD...)")
    if launcher is not None and launcher not in TEMPLATES:
        raise UsageError(f"tune: unknown launcher {launcher!r} (expected one of: {', '.join(TEMPLATES)})")
    own = launcher_of(cmd)
    if own is not None:
        found = nprocs_from_command(cmd)
        if found is None and np is None:
            raise UsageError(f"tune: cannot tell the process count from `{' '.join(cmd[:4])} ...`: give --np N")
        if found is not None and np is not None and found != np:
            raise UsageError(f"tune: --np {np} disagrees with the command's process count {found}")
        return Job(tuple(cmd), found if found is not None else np, True)
    alloc = slurm_allocation(env) if np is None and launcher in (None, "srun") else None
    note = ""
    if np is None and launcher is None:
        if alloc is None:
            return Job(tuple(cmd), 1, False)
        launcher = "srun"
        note = f"inside {alloc.describe()}: each run is an srun step of {alloc.ntasks} tasks"
    n = np if np is not None else (alloc.ntasks if alloc else 1)
    argv = _template(launcher or "mpiexec", srun_plugin, env).command(n, cmd, env_names=RUNTIME_VARS)
    return Job(tuple(argv), n, True, note)


def study_name(job: Job) -> str:
    """A study name for a job: program, first argument when it is a word (a kernel's name), process count and a
    short hash of the whole command, so that the same command resumes the same study: `iotame-kernel-ior-np2-1a2b3c`."""
    argv = list(job.argv)
    i = program_index(argv)
    parts = [PurePath(argv[i]).name]
    if i + 1 < len(argv) and re.fullmatch(r"[A-Za-z][\w-]{0,30}", argv[i + 1]):
        parts.append(argv[i + 1])
    digest = hashlib.sha1(json.dumps(argv).encode()).hexdigest()[:6]
    return "-".join([*parts, f"np{job.nprocs}", digest])
