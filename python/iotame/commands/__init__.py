"""One module per command of the CLI; each has add_parser(subparsers) and run(args) -> exit code."""
from . import bench, calibrate, config, info, replay, report, run, stats, tune

COMMANDS = (info, config, run, stats, bench, tune, report, calibrate, replay)

__all__ = ["COMMANDS"]
