"""`iotame replay spec SRC --out SPEC.json` and `iotame replay compare SRC [-- LAUNCHER...]`: a job's I/O from its
Darshan log or its iotame statistics (with a request trace) as the replay kernel's input, and how close the replay
comes to the job (docs/advise.md)."""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from rich.table import Table

from ..errors import UsageError
from .argtypes import byte_size
from ..render import console, status
from ..replay.check import DEFAULT_TOLERANCE, compare_replay
from ..replay.plan import to_spec
from ..replay.source import job_plan

NAME = "replay"


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="replay a job's I/O from its Darshan log or iotame statistics",
                       description="A job's I/O as input of `iotame-kernel replay` (docs/kernels.md), and the "
                                   "comparison of a replay with the job's record (docs/advise.md).")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = actions.add_parser("spec", help="write the replay spec of a Darshan log or statistics file",
                           description="Write the replay spec of SRC: a Darshan log (DXT when it has it, else "
                                       "counters) or an iotame statistics file with a request trace "
                                       "(trace.requests).")
    s.add_argument("source", metavar="SRC")
    s.add_argument("--out", "-o", metavar="SPEC", required=True, help="where to write the spec (JSON)")
    s.add_argument("--max-files", type=int, default=None, metavar="N",
                   help="replay the N files with the most bytes (default 1000); the rest are listed as skipped")
    s.add_argument("--nprocs", type=int, default=None, metavar="N",
                   help="replay a Darshan log's job with N processes (default: the job's count)")
    s.set_defaults(func=spec)
    c = actions.add_parser("compare", help="run the replay under the runtime and compare it with the job",
                           usage="iotame replay compare [--scale F] [--replay-bytes BYTES] [--tolerance T] [--nprocs N] [--dir D] [--stats F] "
                                 "[--json] SRC [-- LAUNCHER...]",
                           description="Run `LAUNCHER iotame-kernel replay --from SPEC` under the runtime with a "
                                       "request trace and compare, per file, bytes, calls, collective calls and "
                                       "requests per size bin with the job's record; exit status 1 when a judged "
                                       "value differs by more than the tolerance. LAUNCHER defaults to "
                                       "`mpiexec -n NPROCS` (the job's process count).")
    c.add_argument("source", metavar="SRC")
    c.add_argument("--scale", type=float, default=1.0, metavar="F",
                   help="replay this fraction of the calls (judged on the part of the job it replays)")
    c.add_argument("--replay-bytes", type=byte_size, default=None, metavar="BYTES",
                   help="most bytes the replay may write, preload included (e.g. 64m): the scale is lowered until "
                        "they fit; the replay refuses to start when even one call per file does not")
    c.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, metavar="T",
                   help=f"relative difference allowed per value (default {DEFAULT_TOLERANCE})")
    c.add_argument("--nprocs", type=int, default=None, metavar="N",
                   help="replay a Darshan log's job with N processes (default: the job's count)")
    c.add_argument("--dir", metavar="D", help="where the replay writes its files (default: a temporary directory)")
    c.add_argument("--stats", metavar="F", help="keep the replay's statistics in F")
    c.add_argument("--json", action="store_true", help="print the comparison as JSON")
    c.add_argument("launcher", nargs="*", metavar="LAUNCHER",
                   help="after --: how to start the replay (then the options go before SRC)")
    c.set_defaults(func=compare)


def _check_nprocs(nprocs: int | None) -> None:
    if nprocs is not None and nprocs < 1:
        raise UsageError(f"replay: --nprocs must be at least 1, got {nprocs}")


def spec(args: argparse.Namespace) -> int:
    if args.max_files is not None and args.max_files < 1:
        raise UsageError("replay spec: --max-files must be at least 1")
    _check_nprocs(args.nprocs)
    with status(f"replay spec: reading {args.source}"):
        doc = to_spec(job_plan(args.source, args.max_files, args.nprocs))
    Path(args.out).write_text(json.dumps(doc))
    calls = sum(e.get("repeat", 1) for f in doc["files"] for proc in f["calls"] for e in proc)
    print(f"iotame: replay spec {args.out}: {doc['nprocs']} processes, {len(doc['files'])} files, {calls} calls"
          + (f", {len(doc['source']['skipped'])} files skipped" if doc["source"].get("skipped") else ""),
          file=sys.stderr)
    for note in doc["source"].get("notes", []):
        print(f"iotame: replay spec: {note}", file=sys.stderr)
    return 0


def _print_comparison(result: dict) -> None:
    out = console()
    table = Table(title=f"replay of {Path(result['source']).name} ({result['nprocs']} processes, "
                        f"scale {result['scale']})")
    scaled = result.get("scaled") is not None
    cols = ("file", "value", *(("job x", "x") if scaled else ("job",)), "replay", "")
    for col in cols:
        table.add_column(col, justify="left" if col in ("file", "value", "") else "right")
    for r in result["rows"]:
        mark = ("ok" if r["ok"] else "DIFFERS") if r["judged"] else "(not judged)"
        factor = (f"{r['factor']:.3g}",) if scaled else ()
        table.add_row(r["file"], r["what"], f"{r['job']:,.0f}", *factor, f"{r['replay']:,.0f}", mark)
    out.print(table)
    shares = Table(title="share of the I/O time per file (not judged: another machine)")
    for col in ("file", "job", "replay"):
        shares.add_column(col, justify="left" if col == "file" else "right")
    for name, s in result["time_share"].items():
        shares.add_row(name, f"{s['job']:.0%}", f"{s['replay']:.0%}")
    out.print(shares)
    if scaled:
        out.print(f"scaled: {result['scaled']}")
    for note in result["notes"]:
        out.print(f"note: {note}")
    if result["skipped"]:
        out.print(f"skipped: {len(result['skipped'])} files (e.g. {result['skipped'][0]['path']}: "
                  f"{result['skipped'][0]['reason']})")
    bad = [r for r in result["rows"] if r["judged"] and not r["ok"]]
    part = "the part of the job it replayed" if scaled else "the job"
    verdict = (f"the replay matches {part} within {result['tolerance']:.0%}" if not bad else
               f"the replay differs beyond {result['tolerance']:.0%} in {len(bad)} values: " +
               "; ".join(f"{r['file']} {r['what']}" for r in bad[:5]))
    out.print(verdict)


def compare(args: argparse.Namespace) -> int:
    if not 0 < args.scale <= 1:
        raise UsageError(f"replay compare: --scale must be in (0, 1], got {args.scale}")
    _check_nprocs(args.nprocs)
    launcher = args.launcher
    with status(f"replay compare: reading {args.source}") as st:
        if not launcher:
            launcher = ["mpiexec", "-n", str(args.nprocs or job_plan(args.source).nprocs)]
        st.update(f"replay compare: replaying {args.source}")
        result = compare_replay(args.source, launcher, scale=args.scale, tolerance=args.tolerance,
                                workdir=args.dir, stats_out=args.stats, nprocs=args.nprocs,
                                replay_bytes=args.replay_bytes)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"iotame: replay compare: {shlex.join(launcher)} iotame-kernel replay", file=sys.stderr)
        _print_comparison(result)
    return 0 if result["ok"] else 1
