"""`iotame info [--json]`: where the built parts are, the MPI implementation and the versions."""
from __future__ import annotations

import argparse
import json

from rich.table import Table

from ..info import gather_info
from ..render import console

NAME = "info"


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="paths of libiotame.so, iotame-kernel and iotame-config, MPI, HDF5 and versions",
                       description="Where libiotame.so and iotame-kernel are, the MPI implementation and the "
                                   "versions of iotame, MPI, HDF5 and Python.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _present(part: dict) -> str:
    return f"{part['path']}  (from {part['from']})" + ("" if part["exists"] else "  MISSING")


def run(args: argparse.Namespace) -> int:
    info = gather_info()
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    t = Table(title=f"iotame {info['iotame_version']}", title_justify="left", show_header=False)
    t.add_column("what")
    t.add_column("value", overflow="fold")
    mpi, hdf5 = info["mpi"], info["hdf5"]
    rt = info["runtime"]
    t.add_row("package", info["package"])
    t.add_row("runtime", rt["source"] + (f": {rt['prefix']}" if rt["prefix"] else "")
              + ("" if info["libiotame"]["exists"] else "  (make setup in a checkout, or cmake --install and "
                                                        "IOTAME_PREFIX: docs/runtime.md)"))
    t.add_row("libiotame.so", _present(info["libiotame"]))
    t.add_row("iotame-kernel", _present(info["kernel"]))
    t.add_row("iotame-config", _present(info["config_tool"]))
    t.add_row("settings", _present(info["settings"]))
    t.add_row("MPI", f"{mpi['implementation']} {mpi['version']}" if mpi["implementation"] else "not found")
    t.add_row("mpiexec", mpi["mpiexec"] or "not found")
    t.add_row("HDF5", hdf5["version"] or "not found")
    t.add_row("Python", f"{info['python']['version']} ({info['python']['executable']})")
    console().print(t)
    return 0
