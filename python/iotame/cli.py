"""The `iotame` command line: parses arguments and dispatches to one module per command (iotame.commands)."""
from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Sequence

from .commands import all_commands, command_modules
from .commands.parser import build_parser as commands_parser, dispatch
from .errors import ConfigError, IotameError

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    return commands_parser(all_commands())


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI and returns its exit status (0 ok, 1 failure, 2 usage or configuration error,
    or the status of the command `iotame run` ran)."""
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        status = dispatch(command_modules(argv), argv)
        sys.stdout.flush()           # a closed pipe shows here, inside the handlers below, not at exit
        return status
    except ConfigError as e:
        for line in e.errors:
            print(line, file=sys.stderr)
        return e.exit_code
    except IotameError as e:
        print(f"iotame: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        return _pipe_closed()


def _interrupted() -> int:
    """Ctrl-C: one line and exit 130 (128 + SIGINT), as a shell reports it; a second Ctrl-C while it prints is
    ignored, so that no traceback follows."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        print("iotame: interrupted", file=sys.stderr)
    except (OSError, ValueError):
        pass
    return 130


def _pipe_closed() -> int:
    """The reader of our output went away (`iotame stats show s.json | head`): no traceback, and none at exit
    when Python flushes stdout; 141 (128 + SIGPIPE), as a shell reports a command its pipe ended."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141


if __name__ == "__main__":
    sys.exit(main())
