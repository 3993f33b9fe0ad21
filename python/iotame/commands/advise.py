"""`iotame advise LOG.darshan`: what a Darshan log says of a job's I/O, and a configuration answering it."""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from ..advise import advise as make_advice
from ..advise.render import print_advice
from ..advise.render_html import render_html
from ..advise.summary import MAX_FILES
from ..config import save_config
from ..errors import UsageError
from ..paths import require_kernel
from ..render import console, status
from ..replay.plan import spec_bytes, to_spec
from ..replay.source import job_plan
from . import tune
from .argtypes import positive_int
from .parser import dispatch

NAME = "advise"
DEFAULT_TUNE_TRIALS = 20
DEFAULT_REPLAY_BYTES = 1 << 30    # what a replay moves by default: a trial of seconds on one node


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="advice and a configuration from a Darshan log",
                       description="Read a Darshan log (pydarshan), summarize the job's I/O per file and for the job, "
                                   "list what the counters show to be wrong (each finding with its counters), and "
                                   "write a configuration for `iotame run` whose every setting answers a finding "
                                   "(docs/advise.md). Exit status 2 for a log that cannot be read.")
    p.add_argument("log", metavar="LOG", help="a Darshan log (.darshan)")
    p.add_argument("--json", action="store_true", help="print the advice as JSON (docs/advise.md)")
    p.add_argument("--config-out", metavar="FILE.json", help="write the configuration there")
    p.add_argument("--html", metavar="FILE.html",
                   help="also write the advice as one self-contained HTML page (job, files, figures, findings, "
                        "configuration)")
    p.add_argument("--profile", metavar="PROFILE.json",
                   help="machine profile (iotame calibrate) to predict the gains with; default: the one the runtime "
                        "finds for the current directory")
    p.add_argument("--top", type=positive_int, default=10, metavar="N",
                   help="file groups shown and given rules, those that matter first (default 10)")
    p.add_argument("--max-files", type=positive_int, default=MAX_FILES, metavar="N",
                   help=f"files analysed at most, the rest summed as skipped (default {MAX_FILES})")
    t = p.add_argument_group("tuning on a replay of the job (--tune)")
    t.add_argument("--tune", action="store_true",
                   help="then replay the job's I/O from the log (iotame-kernel replay) and tune on the replay: "
                        "`iotame tune -- LAUNCHER iotame-kernel replay --from SPEC`")
    t.add_argument("--out", metavar="DIR", help="the replay spec and the study (default: iotame-advise-LOGNAME)")
    t.add_argument("--trials", type=positive_int, default=DEFAULT_TUNE_TRIALS, metavar="N",
                   help=f"trials of the study (default {DEFAULT_TUNE_TRIALS})")
    t.add_argument("--nprocs", type=positive_int, default=None, metavar="N",
                   help="replay with N processes (default: the job's count)")
    t.add_argument("--scale", type=float, default=None, metavar="F",
                   help="replay this fraction of the calls (default: as much as --replay-bytes allows)")
    t.add_argument("--replay-bytes", type=positive_int, default=DEFAULT_REPLAY_BYTES, metavar="B",
                   help=f"bytes a replay may move when --scale is not given (default {DEFAULT_REPLAY_BYTES})")
    t.add_argument("--dir", metavar="D", help="where the replay's files go (default: OUT/data)")
    t.add_argument("--tune-options", default="", metavar="OPTS",
                   help="more options of iotame tune, as one string (e.g. \"--repeat 3 --sampler ga\")")
    t.add_argument("launcher", nargs="*", metavar="-- LAUNCHER",
                   help="how to start the replay (default: mpiexec -n NPROCS); with a launcher, the options go "
                        "before LOG")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.launcher and not args.tune:
        raise UsageError(f"advise: {args.launcher[0]}: a launcher is for --tune (iotame advise [options] LOG)")
    with status(f"advise: reading {args.log}") as st:
        advice = make_advice(args.log, top=args.top, profile=args.profile, max_files=args.max_files)
        if args.html:
            st.update(f"advise: writing {args.html}")
            _write_html(advice, args.html)
    if args.config_out:
        try:
            save_config(advice.config, args.config_out)
        except OSError as e:
            raise UsageError(f"cannot write {args.config_out}: {e.strerror or e}") from None
    if args.json:
        json.dump(advice.to_json(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_advice(advice, console(), args.config_out)
    return tune_on_replay(args, advice.config) if args.tune else 0


def _write_html(advice, path: str) -> None:
    try:
        Path(path).write_text(render_html(advice), encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def tune_on_replay(args: argparse.Namespace, config: dict) -> int:
    """The log as a replay spec in OUT, scaled to --replay-bytes unless --scale, and `iotame tune` on its replay,
    the advice's configuration (OUT/advice.json) its first trial after the default."""
    launcher = args.launcher
    if args.scale is not None and not 0 < args.scale <= 1:
        raise UsageError(f"advise: --scale must be in (0, 1], got {args.scale}")
    out = Path(args.out or f"iotame-advise-{Path(args.log).stem}")
    out.mkdir(parents=True, exist_ok=True)
    spec = to_spec(job_plan(args.log, nprocs=args.nprocs))
    spec_path = out / "replay.json"
    spec_path.write_text(json.dumps(spec))
    advice_path = save_config(config, out / "advice.json")
    total = spec_bytes(spec)
    scale = args.scale or (min(1.0, args.replay_bytes / total) if total else 1.0)
    data = Path(args.dir) if args.dir else out / "data"
    data.mkdir(parents=True, exist_ok=True)
    launcher = launcher or ["mpiexec", "-n", str(spec["nprocs"])]
    replay = [*launcher, str(require_kernel()), "replay", "--from", str(spec_path.resolve()), "--dir",
              str((data / "replay").resolve()), "--scale", f"{scale:.6g}"]
    err = console(stderr=True)
    err.print(f"iotame: advise: the replay of {args.log}: {spec_path} ({len(spec['files'])} files, "
              f"{total:,} bytes, scale {scale:.6g}); tuning on it")
    for note in spec["source"].get("notes", []):
        err.print(f"iotame: advise: replay: {note}")
    return dispatch((tune,), ["tune", "--trials", str(args.trials), "--out", str(out / "tune"), "--dir", str(data),
                              "--study", f"advise-{Path(args.log).stem}", "--first", str(advice_path),
                              *shlex.split(args.tune_options), "--", *replay])
