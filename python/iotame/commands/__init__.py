"""One module per command of the CLI; each has add_parser(subparsers) and run(args) -> exit code."""
from . import advise, bench, calibrate, config, info, replay, report, run, stats, tune

COMMANDS = (info, config, run, stats, bench, tune, report, calibrate, advise, replay)

__all__ = ["COMMANDS"]
