#!/usr/bin/env python3
"""`iotame bench` under the Open MPI build, for more processes than cores (docs/reproductions/characterization.md).

`iotame bench` launches `mpiexec -n N`: MPICH's, which busy-polls, so on this 2-core machine a job of 4 or 8 ranks
measures the ranks' spinning more than the I/O. This script runs the same command (same options, same table, the
same files in --out, the same plot) with the Open MPI build instead: `mpirun.openmpi --oversubscribe -n N`, the
kernel of build-openmpi/ (and its runtime, unless --no-preload), and the environment the other benches give Open
MPI as root. Nothing else changes: everything after the script's name is `iotame bench`'s own arguments.

Usage: bench/characterize.py KERNEL [iotame bench options]     e.g.
       bench/characterize.py spio --np 8 --no-preload --drop-caches --steady-memory --set total-size=512m ...
IOTAME_KERNEL and IOTAME_LIB, when set, still take precedence over the build-openmpi/ files.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from iotame import cli  # noqa: E402
from iotame.commands import bench as bench_command  # noqa: E402
from iotame.runner.base import LAUNCHERS, Mpiexec  # noqa: E402

BUILD = ROOT / "build-openmpi"
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


class OpenMpi(Mpiexec):
    """`mpirun.openmpi --oversubscribe -n N -x VAR … argv`: more ranks than cores, each yielding when idle."""

    name = "openmpi"

    def __init__(self):
        super().__init__("mpirun.openmpi", ["--oversubscribe"], forward_with_x=True)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    os.environ.update(OMPI_ENV)
    os.environ.setdefault("IOTAME_KERNEL", str(BUILD / "kernels" / "iotame-kernel"))
    os.environ.setdefault("IOTAME_LIB", str(BUILD / "runtime" / "libiotame.so"))
    LAUNCHERS[OpenMpi.name] = OpenMpi
    spec_of = bench_command._spec

    def spec(args, stem):
        s = spec_of(args, stem)
        s.launcher = OpenMpi.name
        return s

    bench_command._spec = spec
    return cli.main(["bench", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
