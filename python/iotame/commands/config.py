"""`iotame config check F…`: validates configuration files with the runtime's own validator (iotame-config)."""
from __future__ import annotations

import argparse
import sys

from ..config import check_configs

NAME = "config"


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="configuration files", description="Configuration files (IOTAME_CONFIG).")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = actions.add_parser("check", help="validate configuration files",
                           description="Validate configuration files with the runtime's rules; print every "
                                       "error, one per line. Exit status 1 if any file is invalid.")
    c.add_argument("files", nargs="+", metavar="FILE")
    c.set_defaults(func=check)


def check(args: argparse.Namespace) -> int:
    status = 0
    for f, errors in zip(args.files, check_configs(args.files)):
        if errors:
            status = 1
            for line in errors:
                print(line, file=sys.stderr)
        else:
            print(f"{f}: ok")
    return status
