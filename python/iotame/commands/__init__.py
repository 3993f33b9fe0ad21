"""One module per command of the CLI; each has add_parser(subparsers) and run(args) -> exit code."""
from . import bench, config, info, run, stats, tune

COMMANDS = (info, config, run, stats, bench, tune)

__all__ = ["COMMANDS"]
