"""`iotame stats show F [--json]`: a statistics file as tables (or its summary as JSON)."""
from __future__ import annotations

import argparse
import json

from ..render import console, print_stats
from ..stats import load_stats, summarize

NAME = "stats"


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="statistics files", description="Statistics files (IOTAME_STATS).")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = actions.add_parser("show", help="print a statistics file",
                           description="Print the job summary and the per-file table of a statistics file.")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(func=show)


def show(args: argparse.Namespace) -> int:
    summary = summarize(load_stats(args.file))   # StatsError -> `iotame: ...`, exit 1
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print_stats(summary, console(), title=f"statistics {args.file}")
    return 0
