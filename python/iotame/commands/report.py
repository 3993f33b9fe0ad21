"""`iotame report DIR | STATS.json | PROFILE.json`: an HTML page with plots of a study `iotame tune` ran
(DIR/index.html), of one run from its statistics file, or of a machine profile `iotame calibrate` wrote (FILE.html
beside the file, or --out)."""
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
                                   "rank, and what each module of the runtime decided and why. For a machine "
                                   "profile (iotame calibrate --out): its storage and network curves and the "
                                   "strategies' measured calls.")
    p.add_argument("path", metavar="DIR|STATS.json|PROFILE.json", type=Path)
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="with a statistics file or a profile: the page to write (default: FILE.html beside it)")
    p.set_defaults(func=run)


def _profile_or_none(path: Path) -> dict | None:
    """The machine profile in `path` (checked as calibrate's loader checks it), or None when the file is not one
    (statistics, read and checked by the run page)."""
    import json
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    from ..report.profile_page import is_profile
    if not is_profile(obj):
        return None
    from ..calibrate import load_profile
    return load_profile(path)         # a bad profile: the file, the key and what was expected


def run(args: argparse.Namespace) -> int:
    if args.path.is_file():
        profile = _profile_or_none(args.path)
        with status(f"report: {args.path}"):
            if profile is not None:
                from ..report.profile_page import make_profile_page
                page = make_profile_page(args.path, profile, args.out)
            else:
                from ..report.run_page import make_run_page
                page = make_run_page(args.path, args.out)
    else:
        if args.out is not None:
            raise UsageError("report: --out is for a statistics file; a study's page is DIR/index.html")
        from ..report import make_report
        with status(f"report: plotting {args.path}"):
            page = make_report(args.path)      # IotameError -> `iotame: report: ...`, exit 1
    print(page)
    return 0
