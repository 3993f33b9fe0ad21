"""`iotame report DIR | STATS.json`: an HTML page with plots of a study `iotame tune` ran (DIR/index.html), or of
one run from its statistics file (STATS.html beside it, or --out)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from ..render import status

NAME = "report"

__all__ = ["NAME", "add_parser", "run"]


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="HTML report with plots of a tuning directory or of one run's statistics",
                       description="For a directory (an `iotame tune --out` directory): write DIR/index.html with "
                                   "PNG plots of its study: the objective per trial with the best-so-far line, the "
                                   "effect of each parameter, and default against tuned per phase when the "
                                   "command printed a kernel result; works on an unfinished study too. For a "
                                   "statistics file (IOTAME_STATS, iotame run --stats): write one page for the "
                                   "run: per file and layer bytes and time, request-size histograms, time per "
                                   "rank, and what each module of the runtime decided and why.")
    p.add_argument("path", metavar="DIR|STATS.json", type=Path)
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="with a statistics file: the page to write (default: STATS.html beside it)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.path.is_file():
        from ..report.run_page import make_run_page
        with status(f"report: {args.path}"):
            page = make_run_page(args.path, args.out)
    else:
        if args.out is not None:
            raise UsageError("report: --out is for a statistics file; a study's page is DIR/index.html")
        from ..report import make_report
        with status(f"report: plotting {args.path}"):
            page = make_report(args.path)      # IotameError -> `iotame: report: ...`, exit 1
    print(page)
    return 0
