"""The job a study tunes: its process count, read from the launcher's options in CMD (`mpiexec -n N`, `-np N`,
`srun -n N`, `--ntasks=N`) or given with --np, and the launch templates that start a command given without a
launcher (`mpiexec -n N CMD` by default, or Slurm's `srun -n N CMD`)."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Sequence

from ..errors import UsageError
from ..runner import RUNTIME_VARS, Launcher, get_launcher

__all__ = ["LAUNCHER_PROGRAMS", "Srun", "TEMPLATES", "Job", "launcher_of", "nprocs_from_command", "program_index",
           "resolve_job", "study_name"]

LAUNCHER_PROGRAMS = ("mpiexec", "mpirun", "mpiexec.hydra", "mpiexec.mpich", "mpirun.mpich", "mpiexec.openmpi",
                     "mpirun.openmpi", "orterun", "prterun", "srun")
_COUNT_OPTIONS = ("-n", "-np", "--np", "--n", "-c", "--ntasks")       # followed by the count
_COUNT_JOINED = re.compile(r"(?:--ntasks|--np|-np|-n)=(\d+)$|-n(\d+)$")   # --ntasks=4, -n=4, srun's -n4
# Options of the common launchers that take a value (so the value is not mistaken for the program).
_VALUED = {"-host", "--host", "-hosts", "-f", "-hostfile", "--hostfile", "-machinefile", "-ppn", "-env", "-genv",
           "-x", "--map-by", "--bind-to", "-N", "--nodes", "-p", "--partition", "-t", "--time", "-A", "--account",
           "-wdir", "--wdir", "-launcher", "-bootstrap", "--mca", "-mca", "--cpus-per-task", "--mem"}


class Srun(Launcher):
    """Slurm: `srun -n N argv…` (srun exports the whole environment by default)."""

    name = "srun"
    program = "srun"

    def command(self, nprocs: int, argv: Sequence[str], env_names: Sequence[str] = ()) -> list[str]:
        return [self.program, "-n", str(int(nprocs)), *map(str, argv)]


def _template(name: str) -> Launcher:
    return Srun() if name == "srun" else get_launcher(name)


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


def resolve_job(cmd: Sequence[str], np: int | None = None, launcher: str | None = None) -> Job:
    """The job for CMD. With a launcher in CMD its count is read there (--np must agree when given). Without one,
    --np or --launcher wrap CMD in a launch template (`mpiexec -n N CMD`, `srun -n N CMD`); neither runs CMD as
    it is, one process (an MPI program started alone is a singleton)."""
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
    if np is None and launcher is None:
        return Job(tuple(cmd), 1, False)
    n = np if np is not None else 1
    return Job(tuple(_template(launcher or "mpiexec").command(n, cmd, env_names=RUNTIME_VARS)), n, True)


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
