"""The command line's top-level parser over a set of command modules, and the dispatch to the one named: what
`iotame` does with its arguments, and what a command that runs another (advise --tune runs tune) does with that
command alone, so that both parse, print usage and exit alike."""
from __future__ import annotations

import argparse
from typing import Sequence

from .. import __version__

__all__ = ["build_parser", "dispatch"]


def build_parser(commands: Sequence) -> argparse.ArgumentParser:
    """The `iotame` parser with a subcommand per module of `commands` (each has add_parser(subparsers))."""
    p = argparse.ArgumentParser(prog="iotame",
                                description="Adaptive parallel I/O for MPI and HDF5 applications.")
    p.add_argument("--version", action="version", version=f"iotame {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands:
        command.add_parser(sub)
    return p


def dispatch(commands: Sequence, argv: Sequence[str]) -> int:
    """Parses `argv` (its first word names one of `commands`) and runs that command; returns its exit status, or
    argparse's (0 after --help or --version, 2 for a usage error). The command's errors propagate to the caller."""
    try:
        args = build_parser(commands).parse_args(list(argv))
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return args.func(args)
