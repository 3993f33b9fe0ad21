"""`iotame report DIR`: an HTML page (DIR/index.html) with PNG plots of a study `iotame tune` ran."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..render import status
from ..report import make_report

NAME = "report"

__all__ = ["NAME", "add_parser", "run"]


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="HTML report with plots of a tuning directory",
                       description="Write DIR/index.html with PNG plots of the study in DIR (an `iotame tune "
                                   "--out` directory): the objective per trial with the best-so-far line, the "
                                   "effect of each parameter, and default against tuned per phase when the "
                                   "command printed a kernel result. Works on an unfinished study too.")
    p.add_argument("dir", metavar="DIR", type=Path)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with status(f"report: plotting {args.dir}"):
        page = make_report(args.dir)      # IotameError -> `iotame: report: ...`, exit 1
    print(page)
    return 0
