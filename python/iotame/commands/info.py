"""`iotame info [--dir DIR] [--json]`: where the built parts are, the MPI implementation and the versions, and which
machine profile the runtime would use for a file in DIR."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.table import Table

from ..errors import UsageError
from ..info import gather_info
from ..render import console

NAME = "info"


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="paths of libiotame.so, iotame-kernel and iotame-config, MPI, HDF5, versions and "
                                  "the machine profile that applies",
                       description="Where libiotame.so and iotame-kernel are, the MPI implementation and the "
                                   "versions of iotame, MPI, HDF5 and Python; the directories the runtime searches "
                                   "for machine profiles and which profile it would use for a file in DIR, and why "
                                   "(docs/calibrate.md).")
    p.add_argument("--dir", type=Path, metavar="DIR",
                   help="the machine profile for a file in DIR (default: the current directory)")
    p.add_argument("--knowledge", type=Path, metavar="FILE",
                   help="a knowledge file (collective.knowledge): how many measurements of earlier jobs its "
                        "corrections of the profile rest on")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _present(part: dict) -> str:
    return f"{part['path']}  (from {part['from']})" + ("" if part["exists"] else "  MISSING")


def run(args: argparse.Namespace) -> int:
    if args.dir is not None and not args.dir.is_dir():
        raise UsageError(f"info: --dir {args.dir}: not a directory")
    info = gather_info(args.dir, args.knowledge)
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
    for row in _profile_rows(info["profile"]):
        t.add_row(*row)
    console().print(t)
    return 0


def _profile_rows(found: dict) -> list[tuple[str, str]]:
    """The table's rows on machine profiles: where the runtime looks, and what it would use for a file in DIR."""
    rows = [("profiles" if i == 0 else "", p["path"] + ("" if p["exists"] else "  (none)"))
            for i, p in enumerate(found["searched"])]
    rows.append(("profile", (found["used"] or "none") + f"  (for a file in {found['dir']})"))
    rows.append(("", found["reason"]))
    rows += [("skipped", tried["problem"]) for tried in found["considered"] if tried["problem"] is not None]
    basis = found.get("basis")
    if basis:
        fitted = ", ".join(f"{name} ({f['rows']} rows, cross-validated error {f['cv_median']:.0%})"
                           if isinstance(f.get("cv_median"), (int, float)) else name
                           for name, f in basis["fitted"].items())
        rows.append(("model", f"fitted to calibrate's measurements: {fitted}" if fitted else basis["note"]))
        c = basis["corrections"]
        if c is not None:
            rows.append(("corrections", f"{c['measurements']} measurement(s) of earlier jobs in {c['classes']} "
                                        f"class(es) of signatures ({c['knowledge']}" +
                         (f": {c['note']})" if c.get("note") else ")")))
    return rows
