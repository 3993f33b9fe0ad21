"""`iotame bench KERNEL [--np N] [--set K=V …] [--repeat R] [--config F] [--no-preload] [--json] [--out DIR]`."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..bench import KERNELS, BenchSpec, bench_json, get_kernel, parse_set, plan, run_bench, summarize_phases
from ..config import load_config
from ..errors import UsageError
from ..render import console, phase_table

NAME = "bench"
STDERR_TAIL = 20    # lines of a failed run's stderr shown


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="run an I/O kernel repeatedly and summarize its phases",
                       description="Run `mpiexec -n N iotame-kernel KERNEL options` R times under the runtime "
                                   "and print median, min and max MB/s per phase. --set K=V gives the kernel "
                                   "-K V for a one-letter K, --K V otherwise; for a flag, V=1 adds it and V=0 "
                                   "leaves it out (--set F=1 gives -F).")
    p.add_argument("kernel", metavar="KERNEL", help="one of: " + ", ".join(KERNELS))
    p.add_argument("--np", type=_positive, default=2, metavar="N", help="MPI ranks (default 2)")
    p.add_argument("--set", action="append", default=[], metavar="K=V", dest="set_",
                   help="a kernel option (repeatable)")
    p.add_argument("--repeat", type=_positive, default=3, metavar="R", help="runs (default 3)")
    p.add_argument("--config", metavar="F", help="runtime configuration for every run")
    p.add_argument("--no-preload", action="store_true", help="run without the runtime (no statistics)")
    p.add_argument("--json", action="store_true", help="print every result as JSON")
    p.add_argument("--out", metavar="DIR", type=Path, help="save results (JSON lines) and statistics in DIR")
    p.add_argument("--timeout", type=float, metavar="S", help="stop a run after S seconds (counted as failed)")
    p.set_defaults(func=run)


def _report_failure(run, total: int) -> None:
    print(f"iotame: bench {run.kernel} run {run.number} of {total} failed: {run.error}", file=sys.stderr)
    print(f"  command: {' '.join(run.argv)}", file=sys.stderr)
    lines = run.stderr.rstrip().splitlines()
    for line in lines[-STDERR_TAIL:]:
        print(f"  | {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.config and args.no_preload:
        raise UsageError("bench: --config needs the runtime; drop --no-preload")
    kernel = get_kernel(args.kernel)
    settings = parse_set(args.set_)
    kernel.options(settings)                # a bad flag value fails here, before anything runs
    if args.config:
        load_config(args.config)            # ConfigError: exit 2, nothing launched
    spec = BenchSpec(kernel=kernel.name, nprocs=args.np, settings=settings, repeat=args.repeat,
                     config=Path(args.config).resolve() if args.config else None, preload=not args.no_preload,
                     out=args.out, timeout=args.timeout)
    total = len(plan(spec))
    err = console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task(f"{kernel.name} on {args.np} ranks", total=total)

        def done(r):
            progress.advance(task)
            if not r.ok and err.is_terminal:
                progress.console.print(f"run {r.number} failed: {r.error}", markup=False)

        runs = run_bench(spec, on_done=done)
    for r in runs:
        if not r.ok:
            _report_failure(r, total)
    failed = sum(not r.ok for r in runs)
    if args.json:
        print(json.dumps(bench_json(spec, runs), indent=1))
    else:
        rows = summarize_phases(runs)
        title = f"{kernel.name}, {args.np} ranks, {total - failed} of {total} runs ok" + \
                ("" if spec.preload else ", without the runtime")
        if rows:
            console().print(phase_table(title, rows))
        else:
            print(f"{title}: no successful run")
    if spec.out is not None:
        print(f"results in {spec.out}", file=sys.stderr)
    return 1 if failed else 0
