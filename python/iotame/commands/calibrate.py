"""`iotame calibrate --dir DIR [--out PROFILE.json] [--quick] [--streams N] [--json] [LAUNCH]` (without --out, into
the user's profile directory, where the runtime finds it: calibrate/discover.py) and
`iotame calibrate --dir DIR --check PROFILE.json [--tolerance T] [--json] [LAUNCH]`, LAUNCH being the tuner's
`--np N`, `--launcher mpiexec|srun`, `--srun-mpi PLUGIN` or a launcher command after `--`, and
`iotame calibrate --refit PROFILE.json [--json]` (the model's fit to the profile's strategy measurements, again)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from rich import box
from rich.table import Table

from ..bench.caches import CACHE_MODES, MACHINE_WARNING
from ..calibrate import (DEFAULT_STREAMS, DEFAULT_TOLERANCE, FULL, QUICK, ProfileError, calibrate, check_profile,
                         fit_report, fit_strategies, load_profile, network_job, profile_json, save_profile,
                         stream_counts)
from ..calibrate.discover import ENV_PROFILE, default_profile_path, user_profile_dir
from ..calibrate.network import NETWORK_REPS
from ..calibrate.strategies import STRATEGIES, median_mbs
from ..tune.job import ENV_SRUN_MPI, TEMPLATES
from .argtypes import positive_int
from .run import command_args
from ..errors import UsageError
from ..render import console, fmt_bytes, fmt_mbs

NAME = "calibrate"


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0 (0.5: within a factor 1.5), got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0 (0.5: within a factor 1.5), got {text!r}")
    return value


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="measure the machine's storage, memory and network into a machine profile, or "
                                  "check one",
                       usage="iotame calibrate --dir DIR [--out PROFILE.json] [--quick] [--streams N] "
                             "[--no-strategies] [--json] [--np N] [--launcher L] [-- LAUNCHER...]\n"
                             "       iotame calibrate --dir DIR --check PROFILE.json [--tolerance T] [--json] "
                             "[--np N] [--launcher L] [-- LAUNCHER...]\n"
                             "       iotame calibrate --refit PROFILE.json [--json]",
                       description="Measure, with fio on files in DIR, durable write and cache-dropped read "
                                   "throughput against request size (sequential and scattered), against 1, 2, 4, "
                                   "8 and 16 concurrent streams (--streams), how much write-back absorbs, and the "
                                   "memory copy bandwidth, and write them as a machine profile keyed by DIR's file system, "
                                   "by default into $XDG_CONFIG_HOME/iotame/profiles (~/.config/iotame/profiles), "
                                   "where the runtime finds it. "
                                   "--check re-measures two storage points (and one network point) and exits 1 "
                                   "when the profile no longer holds, and reports the model's cross-validated "
                                   "error per strategy from the profile's fit. --refit fits the model to the "
                                   "profile's strategy measurements again and rewrites the profile. "
                                   "With --np, --launcher, a launcher command after -- (e.g. -- mpiexec -n 4), "
                                   "or inside a Slurm allocation, it also runs iotame-kernel netprobe: ping-pong "
                                   "latency and bandwidth within and between nodes, allgather and alltoallv times, "
                                   "and then, with the same processes, iotame-kernel sigprobe under each collective "
                                   "strategy: write and read times of synthetic collective call signatures. "
                                   "See docs/calibrate.md.")
    p.add_argument("--dir", type=Path, metavar="DIR",
                   help="a directory on the file system to calibrate (scratch files are removed after); needed "
                        "except with --refit")
    p.add_argument("--out", type=Path, metavar="PROFILE.json",
                   help="where the profile goes (default: $XDG_CONFIG_HOME/iotame/profiles/TYPE-MAJOR_MINOR.json, "
                        "on a striping file system TYPE-MAJOR_MINOR-TARGETSxUNIT.json, where the runtime finds it)")
    p.add_argument("--config", type=Path, metavar="CFG.json",
                   help="measure the emulated storage of this configuration's defaults.emulate (one target; the "
                        "profile takes its targets and target_unit) instead of DIR's own (docs/emulate.md); needs "
                        "--out")
    p.add_argument("--streams", type=positive_int, metavar="N", default=DEFAULT_STREAMS,
                   help=f"the most concurrent streams measured: 1, 2, 4, ... below N, and N (default "
                        f"{DEFAULT_STREAMS}; the processes per node of the jobs whose throttle predicts from it)")
    p.add_argument("--cache", choices=CACHE_MODES, default="files",
                   help="keeping reads off the page cache: 'files' (default) writes back and evicts calibration's "
                        "own scratch files (any user; other processes' cached data stays); 'machine' empties the "
                        "whole machine's page cache before each read (root; flushes other users' data too); 'off' "
                        "does neither (reads may come from memory)")
    p.add_argument("--quick", action="store_true", help="fewer request sizes and smaller files (seconds, coarse)")
    p.add_argument("--no-strategies", action="store_true",
                   help="leave out the collective strategies' measurement (iotame-kernel sigprobe under each "
                        "strategy, with the network's processes)")
    p.add_argument("--check", type=Path, metavar="PROFILE.json",
                   help="re-measure two points and say whether this profile still holds (exit status 0 or 1)")
    p.add_argument("--refit", type=Path, metavar="PROFILE.json",
                   help="fit the cost model to this profile's measured strategy calls again (after a change of the "
                        "model) and rewrite its strategies.fit in place; measures nothing")
    p.add_argument("--tolerance", type=_tolerance, metavar="T",
                   help=f"--check: a point holds within a factor 1+T either way (default {DEFAULT_TOLERANCE})")
    p.add_argument("--json", action="store_true", help="print the profile (or the check) as JSON")
    p.add_argument("--np", type=positive_int, metavar="N",
                   help="network: processes of the probe (`mpiexec -n N`), when the launcher command does not say it")
    p.add_argument("--launcher", choices=TEMPLATES, help="network: start the probe with this launcher (default: "
                                                         "srun inside a Slurm allocation, else mpiexec with --np)")
    p.add_argument("--srun-mpi", metavar="PLUGIN",
                   help=f"network: srun's --mpi plugin (default: ${ENV_SRUN_MPI}, else pmi2 for MPICH, pmix for "
                        "Open MPI)")
    p.add_argument("launch", nargs=argparse.REMAINDER, metavar="LAUNCHER",
                   help="network: a launcher command the probe is appended to, after -- (`mpiexec -n 4`, "
                        "`scripts/testbed mpiexec -n 4 --`)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.refit:
        if args.check or args.out or args.config or args.quick or args.dir or args.tolerance is not None or \
                args.launch or args.np or args.launcher or args.srun_mpi or args.streams != DEFAULT_STREAMS or \
                args.no_strategies:
            raise UsageError("calibrate: --refit rewrites an existing profile's fit and measures nothing; give only "
                             "--refit PROFILE.json [--json]")
        return _refit(args)
    if args.dir is None:
        raise UsageError("calibrate: give --dir DIR, the file system to measure (or --refit PROFILE.json)")
    if args.check and (args.out or args.quick or args.streams != DEFAULT_STREAMS or args.no_strategies):
        raise UsageError("calibrate: --check re-measures an existing profile; drop --out, --quick, --streams and "
                         "--no-strategies")
    if args.config and args.check:
        raise UsageError("calibrate: --config applies to a measurement (--out), not to --check")
    if args.config and not args.out:
        raise UsageError("calibrate: --config measures emulated storage: give --out PROFILE.json (in the default "
                         "place the runtime would take it for DIR's real file system)")
    if args.tolerance is not None and not args.check:
        raise UsageError("calibrate: --tolerance applies to --check only")
    if not args.check and not args.out and user_profile_dir() is None:
        raise UsageError("calibrate: neither XDG_CONFIG_HOME nor HOME is set: give --out PROFILE.json")
    if not args.dir.is_dir():
        raise UsageError(f"calibrate: --dir {args.dir}: not a directory")
    job = network_job(command_args(args.launch or []), args.np, args.launcher, args.srun_mpi,
                      reps=NETWORK_REPS["quick" if args.quick or args.check else "full"])
    return _check(args, job) if args.check else _measure(args, job)


def _found_note() -> str:
    """Whether the runtime will find a profile written to the default place (docs/calibrate.md)."""
    named = os.environ.get(ENV_PROFILE)
    if named:
        return f" (but {ENV_PROFILE}={named} is set: the runtime looks there instead)"
    return " (the runtime finds it there for files on this file system, unless collective.profile names another)"


def _step_reporter(status):
    return lambda text: status.update(f"calibrate: {text}")


def _measure(args: argparse.Namespace, job) -> int:
    err = console(stderr=True)
    if args.cache == "machine":
        print(f"iotame: calibrate: warning: {MACHINE_WARNING}", file=sys.stderr)
    with err.status("calibrate") as status:
        settings = replace(QUICK if args.quick else FULL, streams=stream_counts(args.streams))
        profile = calibrate(args.dir, settings, quick=args.quick, on_step=_step_reporter(status), drop=args.cache,
                            network_job=job, emulate=args.config, strategies=not args.no_strategies)
    path = save_profile(profile, args.out or default_profile_path(profile))
    if args.json:
        print(profile_json(profile))
    else:
        _print_profile(profile)
    for note in profile["notes"]:
        print(f"iotame: calibrate: {note}", file=sys.stderr)
    print(f"profile in {path}" + ("" if args.out else _found_note()), file=sys.stderr)
    return 0


def _curve_table(profile: dict) -> Table:
    st = profile["storage"]
    t = Table(title=f"storage MB/s (writes durable, reads from {st['reads_from']})", title_justify="left")
    t.add_column("request bytes", justify="right")
    for direction in ("write", "read"):
        for pattern in ("sequential", "scattered"):
            t.add_column(f"{direction} {pattern}", justify="right")
    sizes = sorted({x for d in ("write", "read") for p in ("sequential", "scattered") for x, _ in st[d][p]})
    for size in sizes:
        cells = []
        for direction in ("write", "read"):
            for pattern in ("sequential", "scattered"):
                mbs = dict(map(tuple, st[direction][pattern])).get(size)
                cells.append("-" if mbs is None else fmt_mbs(mbs))
        t.add_row(fmt_bytes(size), *cells)
    return t


def _print_profile(profile: dict) -> None:
    fs, st = profile["filesystem"], profile["storage"]
    out = console()
    out.print(f"machine profile of {fs['path']}: {fs['type']} (magic {fs['magic']}, device {fs['device']}), "
              f"{fs['targets']} target(s), stripe unit {fs['stripe_unit']:,} B", markup=False, soft_wrap=True)
    out.print(_curve_table(profile))
    t = Table(title="streams MB/s", title_justify="left")
    for col in ("streams", "write", "read"):
        t.add_column(col, justify="right")
    reads = dict(map(tuple, st["streams"]["read"]))
    for count, mbs in st["streams"]["write"]:
        t.add_row(str(count), fmt_mbs(mbs), fmt_mbs(reads[count]) if count in reads else "-")
    out.print(t)
    wb = st["write_back"]
    t = Table(title="write-back and memory", title_justify="left")
    for col in ("absorbed bytes", "absorbed MB/s", "memory copy MB/s"):
        t.add_column(col, justify="right")
    t.add_row(fmt_bytes(wb["absorbed_bytes"]), fmt_mbs(wb["absorbed_mbs"]), fmt_mbs(profile["memory"]["copy_mbs"]))
    out.print(t)
    if profile.get("network"):
        out.print(_network_table(profile))
    if profile.get("strategies"):
        out.print(_strategies_table(profile))


def _size(n: int) -> str:
    """64 B, 16 KiB, 4 MiB (powers of two by their binary unit, others in bytes)."""
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n:,} B"


def _network_table(profile: dict) -> Table:
    net, nodes = profile["network"], profile["nodes"]
    t = Table(title=f"network ({nodes['count']} node(s) x {nodes['processes_per_node']} process(es))",
              title_justify="left")
    for col in ("measure", "processes", "bytes", "time us", "MB/s"):
        t.add_column(col, justify="right" if col != "measure" else "left")
    for kind in ("intra", "inter"):
        pair = net.get(kind)
        if pair is None:
            t.add_row(f"ping-pong {kind}-node", "-", "-", "-", "-")
            continue
        for size, us, mbs in pair.get("points", []):
            t.add_row(f"ping-pong {kind}-node", "2", fmt_bytes(size), f"{us:,.2f}", fmt_mbs(mbs))
    for name in ("allgather", "alltoallv"):
        for procs, nbytes, us in net[name]:
            t.add_row(name, str(procs), fmt_bytes(nbytes) + (" per pair" if name == "alltoallv" else " per rank"),
                      f"{us:,.2f}", "-")
    return t


# strategy names broken where a narrow terminal may break them
_HEADERS = {"passthrough": "pass-\nthrough", "independent": "inde-\npendent", "two_phase": "two\nphase",
            "node_local": "node\nlocal", "target_aligned": "target\naligned", "view_based": "view\nbased"}


def _strategies_table(profile: dict) -> Table:
    """Signatures x strategies: MB/s of the median call, the fastest of each signature in bold."""
    section = profile["strategies"]
    rows = section["measured"]
    names = [s for s in STRATEGIES if any(r["strategy"] == s for r in rows)]
    first = rows[0] if rows else {"nprocs": 0, "nodes": 0}
    t = Table(title=f"strategies: MB/s of the median call, {first['nprocs']} processes on {first['nodes']} node(s) "
                    f"({section['seconds']:,.0f} s)", title_justify="left", caption_justify="left",
              caption="several pieces per process: interleaved; one: contiguous", box=box.SIMPLE_HEAD,
              show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    for col in ("op", "pieces x size", "calls"):
        t.add_column(col, justify="left" if col == "op" else "right", no_wrap=True)
    for name in names:
        t.add_column(_HEADERS.get(name, name), justify="right")
    signatures: dict[tuple, dict[str, float]] = {}
    for r in rows:
        key = (r["op"], r["interleaved"], r["piece"], r["pieces"], r["calls"])
        signatures.setdefault(key, {})[r["strategy"]] = median_mbs(r)
    for key in sorted(signatures, key=lambda k: (k[0] != "write", not k[1], k[2], k[4])):
        op, interleaved, piece, pieces, calls = key
        cells = signatures[key]
        best = max(cells.values())
        t.add_row(op, f"{pieces:,} x {_size(piece)}", str(calls),
                  *("-" if n not in cells else
                    (f"[bold]{cells[n]:,.0f}[/bold]" if cells[n] == best else f"{cells[n]:,.0f}") for n in names))
    return t


def _check(args: argparse.Namespace, job) -> int:
    profile = load_profile(args.check)
    tolerance = DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance
    err = console(stderr=True)
    with err.status("calibrate --check") as status:
        result = check_profile(profile, args.dir, tolerance, on_step=_step_reporter(status), network_job=job,
                               drop=args.cache)
    result["profile"] = str(args.check)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        out = console()
        verdict = "holds" if result["holds"] else "does NOT hold"
        out.print(f"profile {args.check} {verdict} on {args.dir} (tolerance: within a factor {1 + tolerance:g})",
                  markup=False, soft_wrap=True)
        t = Table()
        for col, justify in (("point", "left"), ("request bytes", "right"), ("profile MB/s", "right"),
                             ("measured MB/s", "right"), ("ratio", "right"), ("holds", "left")):
            t.add_column(col, justify=justify)
        for p in result["points"]:
            t.add_row(p["point"], fmt_bytes(p["request_bytes"]), fmt_mbs(p["profile_mbs"]),
                      fmt_mbs(p["measured_mbs"]), f"{p['ratio']:.2f}", "yes" if p["holds"] else "no")
        out.print(t)
        if result["strategies"] is not None:
            out.print(_fit_table(result["strategies"]))
    for problem in result["identity"]:
        print(f"iotame: calibrate --check: another file system: {problem}", file=sys.stderr)
    for problem in result["layout"]:
        print(f"iotame: calibrate --check: another node layout: {problem}", file=sys.stderr)
    if result.get("network_note"):
        print(f"iotame: calibrate --check: {result['network_note']}", file=sys.stderr)
    if result["reads_from"] != "storage":
        print("iotame: calibrate --check: page cache not dropped (not root): reads came from the page cache",
              file=sys.stderr)
    return 0 if result["holds"] else 1


def _fit_table(report: list[dict]) -> Table:
    """The fit's cross-validated relative error per strategy (check.fit_report's rows), and what a handle's first
    call adds to a steady one."""
    t = Table(title="model fit: cross-validated error", title_justify="left")
    for col, justify in (("strategy", "left"), ("rows", "right"), ("cv median", "right"), ("cv max", "right"),
                         ("first call adds (write / read)", "right")):
        t.add_column(col, justify=justify)
    for r in report:
        setup = " / ".join(f"{1e3 * r['setup'][op]:.1f} ms" if op in r["setup"] else "-" for op in ("write", "read"))
        if r["cv_median"] is None:
            t.add_row(r["strategy"], str(r["rows"]), "too few rows", "-", "-")
        else:
            t.add_row(r["strategy"], str(r["rows"]), f"{100 * r['cv_median']:.1f} %", f"{100 * r['cv_max']:.1f} %",
                      setup)
    return t


def _refit(args: argparse.Namespace) -> int:
    profile = load_profile(args.refit)
    if not (profile.get("strategies") or {}).get("measured"):
        raise ProfileError([f"iotame: profile {args.refit}: strategies.measured: expected the strategies' measured "
                            "calls (a version 2 profile calibrated with them), got none"])
    try:
        profile["strategies"]["fit"] = fit_strategies(profile)
    except ValueError as e:
        raise ProfileError([f"iotame: profile {args.refit}: {e}"]) from None
    save_profile(profile, args.refit)
    report = fit_report(profile)
    if args.json:
        print(json.dumps({"profile": str(args.refit), "strategies": report}, indent=1))
    else:
        console().print(_fit_table(report))
    print(f"fit rewritten in {args.refit}", file=sys.stderr)
    return 0
