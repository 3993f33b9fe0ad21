"""`iotame bench KERNEL [--np N] [--set K=V …] [--sweep K=V1,V2,…] [--repeat R] [--config F] [--no-preload]
[--drop-caches] [--out DIR] [--json]` and `iotame bench fio [--dir D] [--size S] [--runtime T] [--out DIR]`."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..bench import (BenchSpec, bench_json, caches_dropped, get_kernel, load_fio, parse_set, parse_size,
                     parse_sweep, plan, plot_sweep, run_bench, run_fio, save_fio, summarize_phases)
from ..bench.memory import steady_memory
from ..config import load_config
from ..errors import UsageError
from ..render import console, fmt_mbs, phase_table
from ..stats import emulated_storage
from .argtypes import positive_int

NAME = "bench"
STDERR_TAIL = 20    # lines of a failed run's stderr shown
DEFAULT_NP, DEFAULT_REPEAT = 2, 3
FIO_SIZE, FIO_RUNTIME = "1g", 10
KERNEL_ONLY = ("np", "set_", "sweep", "repeat", "config", "no_preload", "drop_caches", "steady_memory", "timeout")
FIO_ONLY = ("dir", "size", "runtime")


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="run an I/O kernel repeatedly or over a sweep; fio for the device's limit",
                       usage="iotame bench KERNEL [--np N] [--set K=V ...] [--sweep K=V1,V2,...] [--repeat R] "
                             "[--config F] [--no-preload] [--drop-caches] [--out DIR] [--json]\n"
                             "       iotame bench fio [--dir D] [--size S] [--runtime T] [--out DIR] [--json]",
                       description="Run `mpiexec -n N iotame-kernel KERNEL options` R times (for each sweep "
                                   "value, interleaved) under the runtime and print median, min and max MB/s per "
                                   "phase; a sweep also draws a PNG. --set K=V gives the kernel -K V for ior's "
                                   "one-letter options, --K V otherwise; for a flag, V=1 adds it and V=0 leaves "
                                   "it out. Keys and values are checked against the kernel's option table "
                                   "before anything runs. `iotame bench fio` measures the device's limit with "
                                   "fio and O_DIRECT and stores it in --out, where sweep plots draw it. "
                                   "See docs/bench.md.")
    p.add_argument("kernel", metavar="KERNEL", help="a kernel of `iotame-kernel --list`, or fio")
    p.add_argument("--np", type=positive_int, metavar="N", help=f"MPI ranks (default {DEFAULT_NP})")
    p.add_argument("--set", action="append", default=[], metavar="K=V", dest="set_",
                   help="a kernel option (repeatable)")
    p.add_argument("--sweep", action="append", default=[], metavar="K=V1,V2,...",
                   help="run each value of a kernel option (repeatable: every combination)")
    p.add_argument("--repeat", type=positive_int, metavar="R", help=f"runs per value (default {DEFAULT_REPEAT})")
    p.add_argument("--config", metavar="F", help="runtime configuration for every run")
    p.add_argument("--no-preload", action="store_true", help="run without the runtime (no statistics)")
    p.add_argument("--drop-caches", nargs="?", const="files", default=False, choices=("files", "machine"),
                   help="run writes and reads as two jobs and keep the reads off the page cache in between: 'files' "
                        "(the default when given alone) evicts the write job's own files (any user); 'machine' "
                        "empties the whole machine's page cache (root; flushes other users' data too)")
    p.add_argument("--steady-memory", action="store_true",
                   help="a virtual machine that reports free pages to its host: reporting off while the runs go, "
                        "the free memory touched once, put back after (root; see docs/bench.md)")
    p.add_argument("--json", action="store_true", help="print every result as JSON")
    p.add_argument("--out", metavar="DIR", type=Path,
                   help="where results go (JSON lines, summary, statistics, plot; default "
                        "iotame-bench-KERNEL-DATE-TIME); fio: where fio.json goes (default: not stored)")
    p.add_argument("--timeout", type=float, metavar="S", help="stop a job after S seconds (counted as failed)")
    p.add_argument("--dir", metavar="D", type=Path, help="fio: directory of the test file (default: here)")
    p.add_argument("--size", metavar="S", help=f"fio: test file size (default {FIO_SIZE})")
    p.add_argument("--runtime", type=positive_int, metavar="T",
                   help=f"fio: at most T seconds per job (default {FIO_RUNTIME})")
    p.set_defaults(func=run)


def _given(args: argparse.Namespace, names) -> list[str]:
    return ["--" + n.rstrip("_").replace("_", "-") for n in names if getattr(args, n) not in (None, False, [])]


def run(args: argparse.Namespace) -> int:
    if args.kernel == "fio":
        wrong = _given(args, KERNEL_ONLY)
        if wrong:
            raise UsageError(f"bench fio: {', '.join(wrong)} applies to kernels, not fio")
        return run_fio_bench(args)
    wrong = _given(args, FIO_ONLY)
    if wrong:
        raise UsageError(f"bench {args.kernel}: {', '.join(wrong)} applies to `iotame bench fio` only")
    return run_kernel_bench(args)


def _report_failure(run, total: int) -> None:
    print(f"iotame: bench {run.kernel} run {run.number} of {total} failed: {run.error}", file=sys.stderr)
    for argv in (run.argv, run.read_argv):
        if argv:
            print(f"  command: {' '.join(argv)}", file=sys.stderr)
    lines = run.stderr.rstrip().splitlines()
    for line in lines[-STDERR_TAIL:]:
        print(f"  | {line}", file=sys.stderr)


def _spec(args: argparse.Namespace, stem: str) -> BenchSpec:
    """The benchmark asked for, checked against the kernel's option table (UsageError before anything runs)."""
    if args.config and args.no_preload:
        raise UsageError("bench: --config needs the runtime; drop --no-preload")
    kernel = get_kernel(args.kernel)
    settings, sweep = parse_set(args.set_), parse_sweep(args.sweep)
    kernel.check(settings, "--set")
    for key, values in sweep:
        kernel.check([(key, v) for v in values], "--sweep")
    spec = BenchSpec(kernel=kernel.name, nprocs=args.np or DEFAULT_NP, settings=settings, sweep=sweep,
                     repeat=args.repeat or DEFAULT_REPEAT, preload=not args.no_preload,
                     out=args.out or Path(f"iotame-bench-{stem}"),
                     timeout=args.timeout, drop_caches=args.drop_caches,
                     config=Path(args.config).resolve() if args.config else None)
    for trial in plan(spec):          # every combination makes a valid command line
        kernel.options(trial.settings)
        if spec.drop_caches:
            kernel.split(trial.settings)
    if args.config:
        load_config(args.config)      # ConfigError: exit 2, nothing launched
    return spec


def _title(spec: BenchSpec, runs) -> str:
    failed = sum(not r.ok for r in runs)
    title = f"{spec.kernel}, {spec.nprocs} ranks, {len(runs) - failed} of {len(runs)} runs ok"
    title += "" if spec.preload else ", without the runtime"
    dropped = caches_dropped(runs)
    if dropped is not None:
        title += ", page cache dropped before reads" if dropped else ", page cache NOT dropped"
    return title


def run_kernel_bench(args: argparse.Namespace) -> int:
    stem = f"{args.kernel}-{time.strftime('%Y%m%d-%H%M%S')}"
    spec = _spec(args, stem)
    total = len(plan(spec))
    err = console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task(f"{spec.kernel} on {spec.nprocs} ranks", total=total)

        def done(r):
            progress.advance(task)
            if not r.ok and err.is_terminal:
                progress.console.print(f"run {r.number} failed: {r.error}", markup=False, soft_wrap=True)
            elif not err.is_terminal:      # a log: one line per run, as the bar would show it
                print(f"iotame: bench: run {r.number}/{total} " + ("ok" if r.ok else f"failed: {r.error}"),
                      file=sys.stderr, flush=True)

        def warn(message):
            progress.console.print(f"iotame: bench: {message}", markup=False, soft_wrap=True)

        with steady_memory() if args.steady_memory else contextlib.nullcontext(None) as memory:
            if memory:
                warn(memory)
            runs = run_bench(spec, on_done=done, on_warning=warn, stem=stem)
    for r in runs:
        if not r.ok:
            _report_failure(r, total)
    rows = summarize_phases(runs)
    summary = bench_json(spec, runs)
    label = next(filter(None, (emulated_storage(r.stats or r.read_stats) for r in runs)), None)
    if label:
        summary["storage"] = label
    if memory:
        summary["memory"] = memory
    if args.json:
        print(json.dumps(summary, indent=1))
    elif rows:
        out = console()
        out.print(_title(spec, runs), markup=False, soft_wrap=True)   # above the table: a title would wrap
        if label:
            out.print(label, markup=False, soft_wrap=True)
        out.print(phase_table("", rows))
    else:
        print(f"{_title(spec, runs)}: no successful run")
    del summary["runs"]
    (spec.out / f"{stem}.summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    if spec.sweep and rows:
        png = plot_sweep(rows, spec.sweep, spec.out / f"{stem}.png", fio=load_fio(spec.out), title=_title(spec, runs))
        print(f"plot: {png}", file=sys.stderr)
    print(f"results in {spec.out}", file=sys.stderr)
    return 1 if any(not r.ok for r in runs) else 0


def run_fio_bench(args: argparse.Namespace) -> int:
    try:
        size = parse_size(args.size or FIO_SIZE)
    except ValueError:
        raise UsageError(f"bench fio: --size {args.size}: expected a size (4096, 64m, 1g)") from None
    if size < 1 << 20:
        raise UsageError(f"bench fio: --size {args.size}: at least 1m (the sequential jobs use 1 MiB requests)")
    directory = args.dir or Path(os.getcwd())
    with console(stderr=True).status(f"fio on {directory}"):
        result = run_fio(directory, size, args.runtime or FIO_RUNTIME)
    path = save_fio(result, args.out) if args.out else None
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "raw"}, indent=1))
    else:
        t = Table()
        for col, justify in (("test", "left"), ("MB/s", "right"), ("IOPS", "right")):
            t.add_column(col, justify=justify)
        for row in result["results"]:
            t.add_row(row["label"], fmt_mbs(row["mbs"]), f"{row['iops']:.0f}")
        out = console()
        out.print(f"fio on {result['dir']} ({result['fstype'] or '?'}, O_DIRECT, {size:,} byte file)",
                  markup=False, soft_wrap=True)
        out.print(t)
    if result["fstype"] in ("tmpfs", "ramfs"):
        print(f"iotame: bench fio: {result['dir']} is on {result['fstype']}: these are memory speeds, "
              "not a storage device's", file=sys.stderr)
    print(f"stored in {path}" if path else "not stored (give --out DIR to keep it beside benchmark results)",
          file=sys.stderr)
    return 0
