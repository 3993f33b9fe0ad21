"""The `iotame` command line: parses arguments and dispatches to one module per command (iotame.commands)."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .commands import COMMANDS
from .commands.parser import build_parser as commands_parser, dispatch
from .errors import ConfigError, IotameError

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    return commands_parser(COMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI and returns its exit status (0 ok, 1 failure, 2 usage or configuration error,
    or the status of the command `iotame run` ran)."""
    try:
        return dispatch(COMMANDS, sys.argv[1:] if argv is None else argv)
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
