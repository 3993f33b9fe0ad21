"""One module per command of the CLI; each has add_parser(subparsers) and run(args) -> exit code."""
from . import bench, config, info, run, stats

COMMANDS = (info, config, run, stats, bench)

__all__ = ["COMMANDS"]
