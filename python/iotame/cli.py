"""The `iotame` command line: parses arguments and dispatches to one module per command (iotame.commands)."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from . import __version__
from .commands import COMMANDS
from .errors import ConfigError, IotameError

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="iotame",
                                description="Adaptive parallel I/O for MPI and HDF5 applications.")
    p.add_argument("--version", action="version", version=f"iotame {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI and returns its exit status (0 ok, 1 failure, 2 usage or configuration error,
    or the status of the command `iotame run` ran)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:          # --help, --version, usage errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        return args.func(args)
    except ConfigError as e:
        for line in e.errors:
            print(line, file=sys.stderr)
        return e.exit_code
    except IotameError as e:
        print(f"iotame: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("iotame: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
