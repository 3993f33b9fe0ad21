"""One module per command of the CLI; each has add_parser(subparsers) and run(args) -> exit code."""
from . import advise, bench, calibrate, config, info, report, run, stats, tune

COMMANDS = (info, config, run, stats, bench, tune, report, calibrate, advise)

__all__ = ["COMMANDS"]
