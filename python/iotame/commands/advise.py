"""`iotame advise LOG.darshan`: what a Darshan log says of a job's I/O, and a configuration answering it."""
from __future__ import annotations

import argparse
import json
import sys

from ..advise import advise as make_advice
from ..advise.render import print_advice
from ..advise.summary import MAX_FILES
from ..config import save_config
from ..errors import UsageError
from ..render import console
from .argtypes import positive_int

NAME = "advise"


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="advice and a configuration from a Darshan log",
                       description="Read a Darshan log (pydarshan), summarize the job's I/O per file and for the job, "
                                   "list what the counters show to be wrong (each finding with its counters), and "
                                   "write a configuration for `iotame run` whose every setting answers a finding "
                                   "(docs/advise.md). Exit status 2 for a log that cannot be read.")
    p.add_argument("log", metavar="LOG", help="a Darshan log (.darshan)")
    p.add_argument("--json", action="store_true", help="print the advice as JSON (docs/advise.md)")
    p.add_argument("--config-out", metavar="FILE.json", help="write the configuration there")
    p.add_argument("--profile", metavar="PROFILE.json",
                   help="machine profile (iotame calibrate) to predict the gains with; default: the one the runtime "
                        "finds for the current directory")
    p.add_argument("--top", type=positive_int, default=10, metavar="N",
                   help="file groups shown and given rules, those that matter first (default 10)")
    p.add_argument("--max-files", type=positive_int, default=MAX_FILES, metavar="N",
                   help=f"files analysed at most, the rest summed as skipped (default {MAX_FILES})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    advice = make_advice(args.log, top=args.top, profile=args.profile, max_files=args.max_files)
    if args.config_out:
        try:
            save_config(advice["config"], args.config_out)
        except OSError as e:
            raise UsageError(f"cannot write {args.config_out}: {e.strerror or e}") from None
    if args.json:
        json.dump(advice, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_advice(advice, console(), args.config_out)
    return 0
