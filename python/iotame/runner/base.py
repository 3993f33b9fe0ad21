"""Launchers: how an MPI job is started. A small base class; `mpiexec` is the default, Slurm's srun comes later."""
from __future__ import annotations

import shutil
from typing import Sequence

__all__ = ["Launcher", "Mpiexec", "LAUNCHERS", "get_launcher"]


class Launcher:
    """Builds the command line that starts `argv` on `nprocs` ranks.

    Subclasses set `name` (what users type) and `program`, and implement command(). `env_names` are the
    variables the ranks must see (LD_PRELOAD, IOTAME_*), for launchers that do not forward the environment.
    """

    name = ""
    program = ""

    def command(self, nprocs: int, argv: Sequence[str], env_names: Sequence[str] = ()) -> list[str]:
        raise NotImplementedError

    def available(self) -> bool:
        return shutil.which(self.program) is not None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.program!r})"


class Mpiexec(Launcher):
    """`mpiexec -n N [extra args] argv…`. MPICH's Hydra forwards the whole environment; Open MPI needs `-x NAME`."""

    name = "mpiexec"

    def __init__(self, program: str = "mpiexec", extra_args: Sequence[str] = (), forward_with_x: bool | None = None):
        self.program = program
        self.extra_args = list(extra_args)
        self._forward_with_x = forward_with_x

    def forwards_with_x(self) -> bool:
        if self._forward_with_x is None:
            from ..info import mpi_info  # detected once, lazily: it runs `mpiexec --version`
            self._forward_with_x = mpi_info().get("implementation") == "Open MPI"
        return self._forward_with_x

    def command(self, nprocs: int, argv: Sequence[str], env_names: Sequence[str] = ()) -> list[str]:
        forward = [a for n in env_names for a in ("-x", n)] if env_names and self.forwards_with_x() else []
        return [self.program, "-n", str(int(nprocs)), *forward, *self.extra_args, *map(str, argv)]


LAUNCHERS: dict[str, type[Launcher]] = {"mpiexec": Mpiexec}


def get_launcher(name: str = "mpiexec", **options) -> Launcher:
    """A launcher by name (see LAUNCHERS)."""
    try:
        return LAUNCHERS[name](**options)
    except KeyError:
        raise ValueError(f"unknown launcher {name!r} (expected one of: {', '.join(LAUNCHERS)})") from None
