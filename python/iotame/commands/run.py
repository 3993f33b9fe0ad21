"""`iotame run [--config F] [--stats F] [--quiet] -- CMD…`: CMD under the runtime, then its statistics."""
from __future__ import annotations

import argparse
import os
import sys

from ..config import load_config
from ..errors import UsageError
from ..paths import require_lib
from ..render import console, print_stats
from ..runner import ENV_CONFIG, run_command
from ..stats import summarize

NAME = "run"


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="run a command under the runtime and print its I/O statistics",
                       usage="iotame run [--config F] [--stats F] [--quiet] -- CMD...",
                       description="Run CMD (usually `mpiexec -n N app ...`) with libiotame.so preloaded, then "
                                   "print a summary of its I/O statistics on stderr. The exit status is CMD's. "
                                   f"Without --config, ${ENV_CONFIG} is used when set.")
    p.add_argument("--config", metavar="F", help="configuration file (validated before anything is launched)")
    p.add_argument("--stats", metavar="F", help="keep the statistics in F (default: a temporary file)")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print the statistics")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD", help="the command and its arguments")
    p.set_defaults(func=run)


def command_args(cmd: list[str]) -> list[str]:
    """The command after `--` (argparse keeps the `--` in a REMAINDER argument on some Python versions)."""
    return cmd[1:] if cmd and cmd[0] == "--" else cmd


def run(args: argparse.Namespace) -> int:
    cmd = command_args(args.cmd)
    if not cmd:
        raise UsageError("run: no command given (iotame run [options] -- CMD...)")
    config = args.config or os.environ.get(ENV_CONFIG) or None
    if config:
        load_config(config)          # ConfigError: every error printed, exit 2, nothing launched
    require_lib()                    # MissingFileError: exit 2, nothing launched
    try:
        result = run_command(cmd, config=config, stats_path=args.stats)
    except FileNotFoundError as e:
        print(f"iotame: run: cannot run {cmd[0]}: {e.strerror}", file=sys.stderr)
        return 127
    except PermissionError as e:
        print(f"iotame: run: cannot run {cmd[0]}: {e.strerror}", file=sys.stderr)
        return 126
    if result.stats is None:
        print(f"iotame: run: {result.stats_error}", file=sys.stderr)
    elif not args.quiet:
        print_stats(summarize(result.stats), console(stderr=True))
    return result.exit_status
