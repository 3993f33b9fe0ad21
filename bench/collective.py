#!/usr/bin/env python3
"""Collective-I/O strategies side by side (runtime/src/collective, Orthrus: Zhang, Ou, Davis and Jiang): the
issue's table: noncontig with chunks of 64 B to 64 KiB, matrix with blocks of 4 KiB to 4 MiB and depths 4 to 128,
tileio and btio, at 2 ranks (all rows) and 4 ranks (a subset with a quarter of the data: 4 ranks busy-poll 2
cores), under

  default      no preload: the MPI library's own collective I/O (ROMIO) with its defaults
  passthrough  libiotame.so, collective.strategy passthrough (ROMIO again, through the wrappers)
  two_phase    even file domains among cb_nodes aggregators (ROMIO reports 1 on one machine)
  node_local   Orthrus core-first, virtual nodes of half the ranks (2 virtual nodes: 2 aggregators)
  target_aligned  Orthrus disk-first (one target: one aggregator)
  view_based   view-based collective I/O: 1 MiB blocks round robin to one aggregator per virtual node, views
               cached at the aggregators, no offset lists per call
  independent  each rank's part as ROMIO's independent call (data sieving), through the runtime
  auto         the Orthrus selector with its defaults (independent first, examination budget 0.05)
  auto_kb      auto starting from the knowledge file an untimed run of the same case wrote
  auto_model   auto with the machine profile of --profile (collective.profile): the cost model ranks the
               candidates; the report adds the model's accuracy (its predictions against the fixed strategies)
  cb_disable   ROMIO with romio_cb_write = romio_cb_read = disable (independent I/O with data sieving), set by
               the runtime's mpiio_hints; with cb_enable, ds_disable and cb_all (cb_config_list *:*, cb_nodes
               = ranks) the small hint sweep behind the "ROMIO best hint" column (its best median, named)

The report checks the issue's targets row by row: auto >= 0.95 x the best strategy and ROMIO's best hint,
>= 0.9 x default, >= 2 x default on chunks of 256 bytes or less.

Every trial is two jobs: the kernel writes (timed through MPI_File_sync by the kernel) and keeps its file
(--keep); its files are written back and evicted from the page cache (fdatasync + POSIX_FADV_DONTNEED, any
user; other processes' cached data stays); the kernel reads back and verifies (--skip-write). Within a repeat every case
runs every configuration in turn (round robin, the starting configuration rotating from repeat to repeat).
Medians over the repeats, min-max, ratios of medians to `default`.

The dynamic experiment: bench/collective_phases (built with the project, or compiled here with mpicc when
missing) makes one job whose call signature changes: 64-byte interleaved chunks, then 1 MiB chunks, then 64-byte
chunks again (each phase its own calls on its own region), under the same configurations and auto_t50 (auto with
threshold 0.5); per phase MB/s, and what the selector decided (signatures, winners, examination calls,
re-examinations, and call by call with collective.trace) from the statistics. The kernels with --no-dynamic took
31 minutes on 2 cores (3 repeats, 2 and 4 ranks; docs/reproductions/orthrus.md, run 4).

The library is copied once at the start (a rebuild during the run does not change it). Every run is kept with
--json; --table prints the tables of such a file again.

Usage: bench/collective.py [--repeat 3] [--ranks 2,4] [--cases ...] [--configs ...] [--profile P] [--dynamic-configs ...] [--no-dynamic]
                           [--dynamic-only] [--small] [--dir D] [--json F] [--out F.md]
       bench/collective.py --table F.json [--out F.md]
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import signal
import time
from collections import Counter
from pathlib import Path

from iotame.bench.caches import evict
from iotame.bench.execute import verified_job
from iotame.bench.baseline import BASELINE, base_name, copy_baseline, ratio_interval, with_baseline
from iotame.bench.memory import steady_memory
from iotame.bench.setting import Setting

ROOT = Path(__file__).resolve().parent.parent
PHASES = ROOT / "build" / "bench" / "collective_phases"
PHASES_SRC = ROOT / "bench" / "collective_phases.c"

# ---- the cases: the table, per rank count ----

MIB = 1048576
NONCONTIG = [16, 64, 256, 1024, 4096, 16384]                 # elmtcount: chunks of 64 B ... 64 KiB
MATRIX_BLOCKS = {"4K": 4096, "64K": 65536, "1M": MIB, "4M": 4 * MIB}
MATRIX_DEPTHS = [4, 32, 128]
MATRIX_MAX_CALL = 32 * MIB  # per rank and call: 1M x 128, 4M x 32 and 4M x 128 would be 128 to 512 MiB each


def size_name(n):
    return f"{n // MIB}M" if n >= MIB else f"{n // 1024}K" if n >= 1024 else f"{n}B"


CASE_NAMES = ([f"noncontig-{size_name(4 * e)}" for e in NONCONTIG]
              + [f"matrix-{b}-d{d}" for b, bs in MATRIX_BLOCKS.items() for d in MATRIX_DEPTHS
                 if bs * d <= MATRIX_MAX_CALL]
              + ["tileio", "btio"])
ALIASES = {"matrix": "matrix-64K-d4"}  # the case of runs 1 to 3
# 4 ranks oversubscribe the 2 cores (MPICH busy-polls: collective calls run up to 10 times slower), so by default
# they run a subset of the cases with a quarter of the data.
FOUR_RANK_CASES = ["noncontig-64B", "noncontig-256B", "noncontig-16K", "matrix-64K-d4", "matrix-1M-d32", "tileio",
                   "btio"]
VOLUME = {2: 128 * MIB, 4: 32 * MIB}  # bytes per phase (all ranks); other rank counts: 64 MiB per rank
SMALL_VOLUME = 4 * MIB


def case_spec(name, ranks, small=False, volume=0):
    """(processes, kernel, options, what it is) of a case at a rank count. Every case moves about VOLUME bytes per
    phase (or `volume`, --volume), so the rows differ in the pattern, not in how long the selector has to amortize
    its examination."""
    name = ALIASES.get(name, name)
    volume = SMALL_VOLUME if small else volume or VOLUME.get(ranks, 64 * MIB * ranks)
    if name.startswith("noncontig-"):
        e = next(e for e in NONCONTIG if name == f"noncontig-{size_name(4 * e)}")
        per = min(MIB, volume // ranks)  # bytes per rank and call
        veclen, loops = max(1, per // (4 * e)), max(1, volume // (ranks * per))
        return (ranks, "noncontig", ["--collective", "--elmtcount", str(e), "--veclen", str(veclen), "--loops", str(loops)],
                f"{4 * e}-byte chunks interleaved, {size_name(veclen * 4 * e)} per rank and call, {loops} calls")
    if name.startswith("matrix-"):
        _, b, d = name.split("-")
        block, depth = MATRIX_BLOCKS[b], int(d[1:])
        calls = max(4, volume // (ranks * block * depth))
        return (ranks, "matrix", ["--block-size", str(block), "--depth", str(depth), "--iterations", str(calls)],
                f"{b}iB blocks, depth {depth}, {size_name(block * depth)} per rank and call, {calls} calls")
    if name == "tileio":
        rows = max(1, volume // (ranks * 4096 * 8))
        return (ranks, "tileio", ["--sz-tile-x", "4096", "--sz-tile-y", str(rows)],
                f"one tile per rank of {rows} rows x 4096 elements of 8 bytes, one call per phase")
    if name == "btio":
        # needs a square number of processes: 2 -> 1 (4 would oversubscribe)
        np_ = 1 if ranks < 4 else 4
        cls, steps = ("S", 20) if small else ("A", 100) if np_ == 1 else ("W", 200)
        return (np_, "btio", ["--class", cls, "--steps", str(steps)],
                f"class {cls}, {steps // 5} dumps, {np_} rank{'s' if np_ > 1 else ''}")
    raise KeyError(name)


# name: the configuration's "defaults" section, or None for no preload at all. VNODE becomes the virtual node
# size: half the ranks, so every job has 2 virtual nodes (node_local gathers within each, exchanges nothing between).
CONFIGS = {
    "default": None,
    "passthrough": {"collective": {"strategy": "passthrough"}},
    "two_phase": {"collective": {"strategy": "two_phase", "virtual_node_size": "VNODE"}},
    "node_local": {"collective": {"strategy": "node_local", "virtual_node_size": "VNODE"}},
    "target_aligned": {"collective": {"strategy": "target_aligned", "virtual_node_size": "VNODE"}},
    "view_based": {"collective": {"strategy": "view_based", "virtual_node_size": "VNODE"}},
    "independent": {"collective": {"strategy": "independent"}},
    "auto": {"collective": {"strategy": "auto", "virtual_node_size": "VNODE"}},
    # auto starting from a knowledge file that an untimed run of the same case wrote (the next run of a job)
    "auto_kb": {"collective": {"strategy": "auto", "virtual_node_size": "VNODE", "knowledge": "KNOWLEDGE"}},
    # auto with the machine profile of --profile: the cost model's ranking (docs/design/cost-model.md)
    "auto_model": {"collective": {"strategy": "auto", "virtual_node_size": "VNODE", "profile": "PROFILE"}},
    # ROMIO's hints, set by the runtime's mpiio_hints (collective strategy passthrough): the small sweep behind the
    # "ROMIO best hint" column, with default (no hints) as its first member
    "cb_disable": {"mpiio_hints": {"romio_cb_write": "disable", "romio_cb_read": "disable"}},
    "cb_enable": {"mpiio_hints": {"romio_cb_write": "enable", "romio_cb_read": "enable"}},
    "ds_disable": {"mpiio_hints": {"romio_ds_write": "disable", "romio_ds_read": "disable"}},
    "cb_all": {"mpiio_hints": {"cb_config_list": "*:*", "cb_nodes": "NPROCS"}},
    "auto_t50": {"collective": {"strategy": "auto", "virtual_node_size": "VNODE", "threshold": 0.5}},
    # auto examining every candidate at once, as the paper's selector (no budget)
    "auto_b1": {"collective": {"strategy": "auto", "virtual_node_size": "VNODE", "exam_budget": 1}},
    # auto with the allocator's threshold set to 16 MiB: the default since run 16, so this differs from auto only
    # when a --baseline library from before is measured too (docs/runtime.md, "The memory allocator")
    "auto_m16": {"memory": {"malloc_threshold": 16777216},
                 "collective": {"strategy": "auto", "virtual_node_size": "VNODE"}},
}
STRATEGIES = ["passthrough", "two_phase", "node_local", "target_aligned", "view_based", "independent"]
HINTS = ["default", "cb_disable", "cb_enable", "ds_disable", "cb_all"]
KERNEL_CONFIGS = ["default", *STRATEGIES, "auto", "auto_kb", *HINTS[1:]]
DYNAMIC_CONFIGS = ["default", *STRATEGIES, "auto", "cb_disable", "auto_t50"]

# The dynamic experiment: bytes per rank and call, then CHUNK:CALLS per phase.
DYNAMIC = (1048576, ["64:48", "1048576:48", "64:48"])
DYNAMIC_SMALL = (65536, ["64:8", "65536:8", "64:8"])
PHASE_NAMES = ["A (64 B)", "B (1 MiB)", "A again"]
TRACE = 1000  # the dynamic experiment's auto runs record every call (collective.trace) of each signature

TIMEOUT = 600


LOCAL = Setting()


# ---- running ----

def drop_caches(work):
    """Writes back and evicts the files in `work` (the job's) from the page cache; whether it could. Other
    processes' cached data stays (docs/design/page-cache.md)."""
    return not evict([work]).errors


def environment(lib, config_path, stats):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}
    if config_path:
        env.update(LD_PRELOAD=str(lib), IOTAME_CONFIG=str(config_path), IOTAME_STATS=str(stats))
    return env


def job(argv, env, cwd, stats):
    """Runs one job; returns (result, statistics or None). RuntimeError on failure or unverified data."""
    return verified_job(argv, env, cwd, stats, TIMEOUT)


def selector(stats, op):
    """What the statistics say about the collective engine: the decisions of op's signatures (a kernel's write job
    also reads its file back, from the page cache), calls served by each strategy (all ops), pass-through reasons."""
    out = {"decisions": [], "strategies": {}, "passthrough_reasons": {}}
    for f in (stats or {}).get("files", []):
        for key in ("profile", "profile_refused"):  # the machine profile auto_model's cost model read, or why not
            if key in f and key not in out:
                out[key] = f[key]
        targets = f.get("storage_targets")  # what target_aligned aligned to, and why
        if targets and "storage_targets" not in out:
            out["storage_targets"] = targets
        for d in f.get("decisions") or []:
            if d["signature"]["op"] != op:
                continue
            out["decisions"].append({k: d.get(k) for k in ("signature", "strategy", "state", "throughputs", "calls",
                                                           "examination_calls", "reexaminations", "trace", "model")})
        for name, s in (f.get("strategies") or {}).items():
            o = out["strategies"].setdefault(name, {"calls": 0, "bytes": 0, "seconds": 0.0})
            for k in o:
                o[k] += s.get(k, 0)
        for reason, n in (f.get("passthrough_reasons") or {}).items():
            out["passthrough_reasons"][reason] = out["passthrough_reasons"].get(reason, 0) + n
    return out


def phase(res, name):
    return next(p for p in res["phases"] if p["name"] == name)


def kernel_trial(case, ranks, config, small, tmp, lib, config_file, setting=LOCAL, volume=0):
    np_, kernel, args, _ = case_spec(case, ranks, small, volume)
    work = tmp / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    cfg = config_file(config, np_)
    base = setting.argv(np_, setting.kernel, kernel, *args)
    load = os.getloadavg()[0]
    w, ws = job(base + ["--keep"], environment(lib, cfg, tmp / "w.json"), work, tmp / "w.json")
    cold = drop_caches(work)
    r, rs = job(base + ["--skip-write"], environment(lib, cfg, tmp / "r.json"), work, tmp / "r.json")
    shutil.rmtree(work, ignore_errors=True)
    os.sync()  # the deletion's journal commit is not left to the next trial's sync
    return {"case": case, "ranks": ranks, "np": np_, "config": config, "load": load, "cold": cold,
            "bytes": phase(w, "write")["bytes"],
            "write_mbs": phase(w, "write")["mbs"], "read_mbs": phase(r, "read")["mbs"],
            "write_seconds": phase(w, "write")["seconds"], "read_seconds": phase(r, "read")["seconds"],
            "write_selector": selector(ws, "write"), "read_selector": selector(rs, "read")}


def dynamic_trial(config, spec, tmp, lib, config_file, program, setting=LOCAL):
    work = tmp / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    np_ = setting.nprocs
    cfg = config_file(config, np_, traced=True)
    per_call, phases = spec
    argv = lambda mode: setting.argv(np_, program, "phases.dat", mode, per_call, *phases)
    load = os.getloadavg()[0]
    w, ws = job(argv("write"), environment(lib, cfg, tmp / "w.json"), work, tmp / "w.json")
    cold = drop_caches(work)
    r, rs = job(argv("read"), environment(lib, cfg, tmp / "r.json"), work, tmp / "r.json")
    shutil.rmtree(work, ignore_errors=True)
    strip = lambda res: [{k: p[k] for k in ("chunk", "calls", "bytes", "seconds", "mbs", "call_seconds")}
                         for p in res["phases"]]
    return {"case": "dynamic", "config": config, "load": load, "cold": cold,
            "write_phases": strip(w), "read_phases": strip(r),
            "write_selector": selector(ws, "write"), "read_selector": selector(rs, "read")}


def phases_program(tmp):
    """The dynamic experiment's program: the build's, else compiled here."""
    if PHASES.exists() and PHASES.stat().st_mtime >= PHASES_SRC.stat().st_mtime:
        return PHASES
    out = tmp / "collective_phases"
    subprocess.run(["mpicc", "-O2", "-std=c11", "-o", str(out), str(PHASES_SRC)], check=True)
    return out


# ---- tables ----

def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(x):
    return "-" if x != x else f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def ratio(x, base):
    return "" if not base or x != x or base != base else f" ({x / base:.2f})"


def config_names(runs):
    seen = []
    for x in runs:
        if x["config"] not in seen:
            seen.append(x["config"])
    return [c for c in CONFIGS if c in seen] + [c for c in seen if c not in CONFIGS]


def rows(runs):
    """The (ranks, case) rows of the kernel runs, in table order; runs of before the rank column count as 2."""
    runs = [x for x in runs if x["case"] != "dynamic" and not x.get("failed")]
    order = {c: i for i, c in enumerate(CASE_NAMES + list(ALIASES))}
    keys = {(x.get("ranks", 2), x["case"]) for x in runs}
    return sorted(keys, key=lambda k: (k[0], order.get(k[1], len(order)), k[1]))


def figures(runs, ranks, case, op):
    """Configuration -> every run's MB/s of one row and operation."""
    out = {}
    for x in runs:
        if x["case"] == case and x.get("ranks", 2) == ranks and not x.get("failed"):
            out.setdefault(x["config"], []).append(x[f"{op}_mbs"])
    return out


def medians(runs, ranks, case, op):
    """Configuration -> median MB/s of one row and operation."""
    return {c: med(v) for c, v in figures(runs, ranks, case, op).items()}


def best_of(m, names):
    have = [c for c in names if c in m]
    return max(have, key=lambda c: m[c]) if have else None


def kernel_tables(runs):
    """Per operation one table: every configuration but the hint sweep's, then ROMIO's best hint setting (the
    sweep's best median, named)."""
    configs = [c for c in config_names(runs) if c == "default" or c not in HINTS]
    sweep = [c for c in HINTS if any(x["config"] == c for x in runs)]
    out = []
    for op in ("write", "read"):
        out.append(f"**{op}** (MB/s, median; in parentheses the ratio of medians to `default`)\n")
        head = configs + (["ROMIO best hint"] if len(sweep) > 1 else [])
        out.append("| ranks | case | MB | " + " | ".join(head) + " |")
        out.append("| ---: | --- | ---: | " + " | ".join("---:" for _ in head) + " |")
        for ranks, case in rows(runs):
            m = medians(runs, ranks, case, op)
            base = m.get("default", float("nan"))
            cells = [fmt(m[c]) + ("" if c == "default" else ratio(m[c], base)) if c in m else "-" for c in configs]
            if len(sweep) > 1:
                h = best_of(m, sweep)
                cells.append(f"{fmt(m[h])}{ratio(m[h], base)} {h}")
            mine = next(x for x in runs if x["case"] == case and x.get("ranks", 2) == ranks and not x.get("failed"))
            np_note = "" if mine.get("np", ranks) == ranks else f" ({mine['np']} rank)"
            out.append(f"| {ranks} | {case}{np_note} | {mine['bytes'] / 1e6:.0f} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def by_repeat(runs, ranks, case, op, config):
    """Repeat -> MB/s of one cell."""
    return {x.get("repeat", i): x[f"{op}_mbs"] for i, x in enumerate(runs)
            if x["case"] == case and x.get("ranks", 2) == ranks and x["config"] == config and not x.get("failed")}


def baseline_table(runs):
    """Every configuration run with the current library and the --baseline one: the ratio of medians current /
    baseline, its 90 % paired bootstrap interval, per row and operation."""
    pairs = [c for c in config_names(runs) if c + BASELINE in config_names(runs)]
    out = ["| ranks | case | op | " + " | ".join(f"{c} / {c}{BASELINE}" for c in pairs) + " |",
           "| ---: | --- | --- |" + " ---: |" * len(pairs)]
    for ranks, case in rows(runs):
        for op in ("write", "read"):
            cells = []
            for c in pairs:
                r, lo, hi = ratio_interval(by_repeat(runs, ranks, case, op, c),
                                           by_repeat(runs, ranks, case, op, c + BASELINE))
                cells.append(f"{r:.2f} [{lo:.2f}-{hi:.2f}]")
            out.append(f"| {ranks} | {case} | {op} | " + " | ".join(cells) + " |")
    return "\n".join(out) if pairs else ""


def target_table(runs, auto="auto"):
    """The issue's targets, row by row: auto against the best single strategy and ROMIO's best hint (>= 0.95), the
    default (>= 0.9; >= 2 on noncontig chunks of 256 bytes or less). A cell is the ratio of medians, its 90 % paired
    bootstrap interval, and a mark when below the target: ** the whole interval is below (a miss beyond this
    machine's noise), ~ the interval reaches the target (a miss within the noise). Returns the table and the counts
    met, missed beyond the noise, missed within it."""
    out = [f"| ranks | case | op | {auto} / best strategy (which) | {auto} / ROMIO best hint (which) | {auto} / default |",
           "| ---: | --- | --- | ---: | ---: | ---: |"]
    counts = Counter()
    for ranks, case in rows(runs):
        for op in ("write", "read"):
            m = medians(runs, ranks, case, op)
            if auto not in m or "default" not in m:
                continue
            cells = []
            small = case in ("noncontig-64B", "noncontig-256B")
            mine = by_repeat(runs, ranks, case, op, auto)
            for ref, goal in ((best_of(m, STRATEGIES), 0.95), (best_of(m, HINTS), 0.95), ("default", 2.0 if small else 0.9)):
                if ref is None:
                    cells.append("-")
                    continue
                r, lo, hi = ratio_interval(mine, by_repeat(runs, ranks, case, op, ref))
                verdict = "met" if r >= goal else "missed" if hi < goal else "noise"
                counts[verdict] += 1
                mark = {"met": "", "missed": "**", "noise": "~"}[verdict]
                interval = f" [{lo:.2f}-{hi:.2f}]" if lo == lo else ""
                cells.append(f"{r:.2f}{mark}{interval}" + ("" if ref == "default" else f" ({ref})"))
            out.append(f"| {ranks} | {case} | {op} | " + " | ".join(cells) + " |")
    return "\n".join(out), counts


def range_table(runs):
    out = ["| ranks | case | configuration | n | write MB/s median (min-max) | read MB/s median (min-max) |",
           "| ---: | --- | --- | ---: | ---: | ---: |"]
    for ranks, case in rows(runs):
        for c in config_names(runs):
            mine = [x for x in runs if x["case"] == case and x.get("ranks", 2) == ranks and x["config"] == c
                    and not x.get("failed")]
            if not mine:
                continue
            w, r = [x["write_mbs"] for x in mine], [x["read_mbs"] for x in mine]
            out.append(f"| {ranks} | {case} | {c} | {len(mine)} | {fmt(med(w))} ({fmt(min(w))}-{fmt(max(w))}) | "
                       f"{fmt(med(r))} ({fmt(min(r))}-{fmt(max(r))}) |")
    return "\n".join(out)


def sig_label(sig):
    per = sig["bytes"] / sig["requests"] if sig.get("requests") else 0
    size = f"{per / 1048576:.0f} MiB" if per >= 1048576 else f"{per / 1024:.0f} KiB" if per >= 1024 else f"{per:.0f} B"
    return f"{sig['op']} {sig['bytes'] / 1048576:.2f} MiB/call in {sig['requests']} pieces of {size}, gap {sig['gap']}"


def selector_table(runs, case, config="auto"):
    """The auto runs of a case: per signature, the winners over the repeats, examination calls, re-examinations."""
    mine = [x for x in runs if x["case"] == case and x["config"] == config and not x.get("failed")]
    groups = {}
    for x in mine:
        for side in ("write_selector", "read_selector"):
            for d in x[side]["decisions"]:
                key = json.dumps(d["signature"], sort_keys=True)
                groups.setdefault(key, []).append(d)
    if not groups:
        return ""
    out = ["| signature | calls | winner (runs) | examination calls | re-examinations | MB/s in its last examination (median over runs) |",
           "| --- | ---: | --- | ---: | ---: | --- |"]
    for key, ds in groups.items():
        sig = json.loads(key)
        winners = Counter(d["strategy"] or "none yet (re-examining at the end)" for d in ds)
        tp = {}
        for d in ds:
            for s, v in (d["throughputs"] or {}).items():
                tp.setdefault(s, []).append(v)
        tps = ", ".join(f"{s} {fmt(med(v))}" for s, v in tp.items())
        ex, re_ = [d["examination_calls"] for d in ds], [d["reexaminations"] for d in ds]
        out.append(f"| {sig_label(sig)} | {med([d['calls'] for d in ds]):.0f} | "
                   + ", ".join(f"{w} {n}/{len(ds)}" for w, n in winners.most_common())
                   + f" | {med(ex):.0f} ({min(ex)}-{max(ex)}) | {med(re_):.0f} ({min(re_)}-{max(re_)}) | {tps} |")
    return "\n".join(out)


def selector_summary(runs, config="auto"):
    """Per row and operation: the winners of the auto runs' signatures (winner x runs), median examination calls
    and re-examinations, calls served by each strategy (all runs)."""
    out = ["| ranks | case | op | winners | examination calls | re-examinations | calls served |",
           "| ---: | --- | --- | --- | ---: | ---: | --- |"]
    for ranks, case in rows(runs):
        mine = [x for x in runs if x["case"] == case and x.get("ranks", 2) == ranks and x["config"] == config
                and not x.get("failed")]
        for op in ("write", "read") if mine else ():
            ds = [d for x in mine for d in x[f"{op}_selector"]["decisions"]]
            wins = Counter(d["strategy"] or "none" for d in ds)
            served = Counter()
            for x in mine:
                for st, o in x[f"{op}_selector"]["strategies"].items():
                    served[st] += o["calls"]
            ex, re_ = [d["examination_calls"] for d in ds], [d["reexaminations"] for d in ds]
            out.append(f"| {ranks} | {case} | {op} | " + ", ".join(f"{w} x{n}" for w, n in wins.most_common())
                       + f" | {fmt(med(ex))} | {fmt(med(re_))} | "
                       + ", ".join(f"{st} {n}" for st, n in served.most_common()) + " |")
    return "\n".join(out)


def strategy_calls(runs, case, config="auto"):
    """Calls served by each strategy in the auto runs (summed over the repeats), writes and reads."""
    mine = [x for x in runs if x["case"] == case and x["config"] == config and not x.get("failed")]
    parts = []
    for side in ("write", "read"):
        total = Counter()
        for x in mine:
            for s, o in x[f"{side}_selector"]["strategies"].items():
                total[s] += o["calls"]
        if total:
            parts.append(f"{side}: " + ", ".join(f"{s} {n}" for s, n in total.most_common()))
    return "; ".join(parts)


def warmup_table(runs, names):
    """Per fixed configuration and phase: mean MB/s of the first 3 calls / of the others (median over the runs)."""
    fixed = [c for c in config_names(runs) if not c.startswith("auto")]
    cols = [f"{op} {n}" for op in ("write", "read") for n in names]
    out = ["| configuration | " + " | ".join(cols) + " |", "| --- | " + " | ".join("---:" for _ in cols) + " |"]
    for c in fixed:
        cells = []
        for op in ("write", "read"):
            for k in range(len(names)):
                first, rest = [], []
                for x in runs:
                    if x["config"] != c:
                        continue
                    ph = x[f"{op}_phases"][k]
                    per = ph["bytes"] / ph["calls"] / 1e6
                    cs = [t for t in ph["call_seconds"] if t > 0]
                    if len(cs) > 3:
                        first.append(statistics.mean(per / t for t in cs[:3]))
                        rest.append(statistics.mean(per / t for t in cs[3:]))
                cells.append(f"{fmt(med(first))} / {fmt(med(rest))}")
        out.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def dynamic_tables(runs):
    runs = [x for x in runs if x["case"] == "dynamic" and not x.get("failed")]
    if not runs:
        return ""
    configs = config_names(runs)
    nph = len(runs[0]["write_phases"])
    names = PHASE_NAMES if nph == len(PHASE_NAMES) else [f"phase {k + 1}" for k in range(nph)]
    out = []
    for op in ("write", "read"):
        def per(c, k):
            xs = [x for x in runs if x["config"] == c]
            if k is None:  # the whole job: bytes over the sum of the phases' seconds
                return med([sum(p["bytes"] for p in x[f"{op}_phases"]) / sum(p["seconds"] for p in x[f"{op}_phases"]) / 1e6
                            for x in xs])
            return med([x[f"{op}_phases"][k]["mbs"] for x in xs])
        out.append(f"**{op}** (MB/s, median; ratio to `default`)\n")
        out.append("| configuration | " + " | ".join(names) + " | whole job |")
        out.append("| --- | " + " | ".join("---:" for _ in names) + " | ---: |")
        for c in configs:
            cells = []
            for k in list(range(nph)) + [None]:
                v, base = per(c, k), per("default", k)
                cells.append(fmt(v) + ("" if c == "default" else ratio(v, base)))
            out.append(f"| {c} | " + " | ".join(cells) + " |")
        fixed = [c for c in configs if c in STRATEGIES]
        for a in (c for c in configs if c.startswith("auto")):
            if not fixed:
                break
            cells = []
            for k in list(range(nph)) + [None]:
                best = max(fixed, key=lambda c: per(c, k))
                cells.append(f"{per(a, k) / per(best, k):.2f} of {best}")
            out.append(f"| {a} / best fixed strategy | " + " | ".join(cells) + " |")
        out.append("")
    out += ["Warm-up: mean MB/s of each phase's first 3 calls / of its other calls (the call alone), median over the "
            "runs:\n", warmup_table(runs, names), ""]
    for a in (c for c in configs if c.startswith("auto")):
        sel = selector_table(runs, "dynamic", a)
        if sel:
            out += [f"Selector decisions ({a}), from the statistics of every run:\n", sel, "",
                    f"Calls served by each strategy under {a} (all runs): {strategy_calls(runs, 'dynamic', a)}", ""]
            tr = traces(runs, a)
            if tr:
                out += [f"Call by call in the first {a} run (collective.trace; pt passthrough, tp two_phase, nl "
                        "node_local, ta target_aligned, vb view_based; strategy x calls (mean MB/s)); A and A again share one "
                        "signature:\n", tr, ""]
    return "\n".join(out)


# ---- the cost model (auto_model) ----

MODEL = "auto_model"
# the fixed configuration each of the model's strategies is measured by (passthrough: the library's own, `default`)
MEASURED_BY = {"passthrough": "default", **{c: c for c in STRATEGIES if c != "passthrough"}}


def main_decision(decisions):
    """The decision with a model whose signature covers most of the phase's bytes (bytes per call x calls)."""
    ds = [d for d in decisions if d.get("model")]
    return max(ds, key=lambda d: d["signature"]["bytes"] * (d.get("calls") or 0), default=None)


def predicted_mbs(runs, ranks, case, op):
    """Strategy -> the model's MB/s for one row and operation (the main decision's bytes per call over its
    predicted seconds per call, median over the auto_model runs)."""
    out = {}
    for x in runs:
        if x["case"] != case or x.get("ranks", 2) != ranks or x["config"] != MODEL or x.get("failed"):
            continue
        d = main_decision(x[f"{op}_selector"]["decisions"])
        for name, seconds in (d["model"].get("predicted_s") or {}).items() if d else ():
            if seconds and seconds > 0:
                out.setdefault(name, []).append(d["signature"]["bytes"] / seconds / 1e6)
    return {name: med(v) for name, v in out.items()}


def model_rows(runs):
    """Per row and operation: (ranks, case, op, {strategy: (predicted MB/s, measured MB/s, relative error)}, the
    model's fastest, the measured fastest, whether the two fastest measured differ beyond their ranges: the
    second's fastest run slower than the first's slowest), for the rows an auto_model run has predictions for."""
    out = []
    for ranks, case in rows(runs):
        for op in ("write", "read"):
            pred, runs_of = predicted_mbs(runs, ranks, case, op), figures(runs, ranks, case, op)
            meas = {c: med(v) for c, v in runs_of.items()}
            cells = {s: (pred[s], meas[c], pred[s] / meas[c] - 1) for s, c in MEASURED_BY.items()
                     if s in pred and c in meas and meas[c] > 0}
            if cells:
                first = max(cells, key=lambda s: cells[s][0])
                ranked = sorted(cells, key=lambda s: -cells[s][1])
                apart = len(ranked) > 1 and max(runs_of[MEASURED_BY[ranked[1]]]) < min(runs_of[MEASURED_BY[ranked[0]]])
                out.append((ranks, case, op, cells, first, ranked[0], apart))
    return out


def model_table(runs):
    """The model's accuracy: per row and operation and strategy the predicted MB/s, the measured MB/s of the
    strategy's fixed configuration in the same run and the relative error; whether the model's fastest is the
    measured fastest; then per strategy the median and worst relative error (in magnitude)."""
    mrows = model_rows(runs)
    if not mrows:
        return ""
    names = [s for s in MEASURED_BY if any(s in r[3] for r in mrows)]
    out = ["| ranks | case | op | " + " | ".join(f"{s} ({MEASURED_BY[s]})" for s in names)
           + " | fastest: model / measured |", "| ---: | --- | --- |" + " ---: |" * len(names) + " --- |"]
    errors = {s: [] for s in names}
    for ranks, case, op, cells, first, best, _ in mrows:
        texts = []
        for s in names:
            if s not in cells:
                texts.append("-")
                continue
            pred, meas, err = cells[s]
            errors[s].append(abs(err))
            texts.append(f"{fmt(pred)} / {fmt(meas)} ({err:+.0%})")
        verdict = f"{first} / {best}" + (" (match)" if first == best else " (**differ**)")
        out.append(f"| {ranks} | {case} | {op} | " + " | ".join(texts) + f" | {verdict} |")
    matched = sum(r[4] == r[5] for r in mrows)
    apart = [r for r in mrows if r[6]]
    out += ["", "| strategy | median relative error | worst |", "| --- | ---: | ---: |"]
    out += [f"| {s} | {med(e):.0%} | {max(e):.0%} |" for s, e in errors.items() if e]
    out += ["", f"The model's fastest is the measured fastest in {matched} of {len(mrows)} row-operations; in "
                f"{sum(r[4] == r[5] for r in apart)} of the {len(apart)} where the two fastest differ beyond their "
                f"ranges (the second's fastest run slower than the first's slowest)."]
    return "\n".join(out)


def geomean(xs):
    xs = [x for x in xs if x == x and x > 0]
    return math.exp(statistics.mean(math.log(x) for x in xs)) if xs else float("nan")


def goals_summary(runs, autos=("auto", MODEL)):
    """Per rank count: for each auto configuration, the row-operations where its median is at least 0.95 x the best
    fixed strategy's, and the geometric mean over the Matrix rows of its median / default's, writes and reads."""
    autos = [a for a in autos if any(x["config"] == a for x in runs)]
    out = ["| ranks | configuration | within 5 % of the best fixed strategy | Matrix: geometric mean / default, "
           "write | read |", "| ---: | --- | ---: | ---: | ---: |"]
    for ranks in sorted({r for r, _ in rows(runs)}):
        cases = [c for r, c in rows(runs) if r == ranks]
        for a in autos:
            met = total = 0
            ratios = {"write": [], "read": []}
            for case in cases:
                for op in ("write", "read"):
                    m = medians(runs, ranks, case, op)
                    best = best_of(m, STRATEGIES)
                    if a not in m or best is None:
                        continue
                    total += 1
                    met += m[a] >= 0.95 * m[best]
                    if case.startswith("matrix-") and m.get("default"):
                        ratios[op].append(m[a] / m["default"])
            n = len(ratios["write"])
            out.append(f"| {ranks} | {a} | {met} of {total} | {geomean(ratios['write']):.2f} ({n} rows) | "
                       f"{geomean(ratios['read']):.2f} |")
    return "\n".join(out) if len(out) > 2 else ""


def profile_line(runs):
    """Which machine profile auto_model's runs read (the statistics' collective.profile), or why it was refused."""
    seen = Counter()
    for x in runs:
        if x["config"] == MODEL and not x.get("failed"):
            for side in ("write_selector", "read_selector"):
                sel = x.get(side) or {}
                if "profile_refused" in sel:
                    seen[f"REFUSED: {sel['profile_refused']}"] += 1
                elif sel.get("profile"):
                    seen[f"{sel['profile'].get('path')} (found by {sel['profile'].get('found_by')})"] += 1
    return "; ".join(f"{k} ({n} jobs)" for k, n in seen.most_common()) or "none reported in the statistics"


def report(data):
    runs, meta = data["runs"], data["meta"]
    loads = [x["load"] for x in runs if "load" in x]
    cold = all(x.get("cold") for x in runs)
    failed = [x for x in runs if x.get("failed")]
    lines = [f"{meta.get('repeat')} repeats, interleaved; medians. libiotame.so sha256 {meta.get('lib_sha256', '?')[:12]} "
             f"(commit {meta.get('commit', '?')}{', runtime/ modified in the work tree' if meta.get('runtime_dirty') else ''}); "
             f"load average (1 min) at the trials' starts {min(loads):.1f} to {max(loads):.1f}, median {med(loads):.1f}; "
             + ("reads after dropping the page cache" if cold else "READS FROM THE PAGE CACHE (not root)")
             + (f"; {meta['memory']}." if meta.get("memory") else "."), ""]
    st = meta.get("setting") or {}
    if st.get("hosts") or st.get("targets"):
        lines[-1:-1] = [("Setting: " + (f"{st['hosts']} testbed hosts x {st['per_host']} ranks, {st['mpi']}" if
                                        st.get("hosts") else "one machine")
                         + (f"; {st['targets']} emulated {st['device']} targets, {st['target_unit'] // 1024} KiB "
                            f"stripes (every configuration, default included)" if st.get("targets") else "") + "."), ""]
    if any(x["case"] != "dynamic" for x in runs):
        cases = [f"{c} at {r} ranks: {case_spec(c, r, meta.get('small'), meta.get('volume', 0))[3]}" for r, c in rows(runs)]
        lines += ["### Kernels", "", "Cases: " + "; ".join(cases) + ".", "", kernel_tables(runs)]
        for auto in ("auto", "auto_kb", MODEL):
            if any(x["config"] == auto for x in runs):
                table, n = target_table(runs, auto)
                lines += [f"Targets for `{auto}` (ratio of medians [90 % paired bootstrap interval]; the targets: 0.95 "
                          f"of the best strategy and of ROMIO's best hint, 0.9 of the default, 2 of the default on "
                          f"chunks of 256 bytes or less): {n['met']} of {sum(n.values())} met; {n['missed']} missed "
                          f"beyond this machine's noise (**: the whole interval below the target), {n['noise']} "
                          f"missed within it (~: the interval reaches the target).\n", table, ""]
        if meta.get("baseline"):
            lines += [f"Against the baseline library ({meta['baseline']['path']}, sha256 "
                      f"{meta['baseline']['sha256'][:12]}), side by side in the same rounds:", "",
                      baseline_table(runs), ""]
        goals = goals_summary(runs)
        if goals:
            lines += ["Summary (ratios of medians):", "", goals, ""]
        accuracy = model_table(runs)
        if any(x["config"] == MODEL for x in runs):
            lines += [f"Machine profile of `{MODEL}`: {profile_line(runs)}.", ""]
        if accuracy:
            lines += ["The model's accuracy: predicted MB/s (the call's bytes over the predicted seconds per call of "
                      f"the `{MODEL}` decision covering most of the phase's bytes, median over the runs) / measured "
                      "MB/s of the strategy's fixed configuration (in parentheses) in the same run (relative error):",
                      "", accuracy, ""]
        for auto in ("auto", MODEL):
            if any(x["config"] == auto for x in runs):
                lines += [f"What `{auto}` decided (winners per signature over the repeats, from the statistics):", "",
                          selector_summary(runs, auto), ""]
        lines += ["Ranges:", "", range_table(runs), ""]
        reasons = Counter()
        for x in runs:
            for side in ("write_selector", "read_selector"):
                reasons.update((x.get(side) or {}).get("passthrough_reasons", {}))
        lines.append("Pass-through reasons in the statistics: " + (json.dumps(dict(reasons)) if reasons else "none") + "\n")
    if any(x["case"] == "dynamic" for x in runs):
        lines += ["### Dynamic: one job, the signature changes (64 B chunks, 1 MiB chunks, 64 B chunks again)", "",
                  dynamic_tables(runs)]
    if failed:
        lines += ["Failed trials:", ""] + [f"- {x['case']} ({x.get('ranks', '')} ranks) {x['config']}: {x['error'][:300]}"
                                           for x in failed]
    return "\n".join(lines)


# ---- main ----

def traces(runs, config):
    """What the selector did, call by call, in the first run of config (collective.trace): per signature, runs of
    the same strategy as strategy x calls (mean MB/s of those calls)."""
    mine = [x for x in runs if x["case"] == "dynamic" and x["config"] == config and not x.get("failed")]
    if not mine:
        return ""
    short = {"passthrough": "pt", "two_phase": "tp", "node_local": "nl", "target_aligned": "ta", "view_based": "vb",
             "independent": "in"}
    out = []
    for side in ("write_selector", "read_selector"):
        for d in mine[0][side]["decisions"]:
            t = d.get("trace") or []
            segs = []
            for strat, mbs in t:
                if segs and segs[-1][0] == strat:
                    segs[-1][1].append(mbs)
                else:
                    segs.append([strat, [mbs]])
            text = " ".join(f"{short.get(a, a)}x{len(v)} ({statistics.mean(v):.0f})" for a, v in segs)
            out.append(f"- {sig_label(d['signature'])}: {text}")
    return "\n".join(out)


def config_writer(tmp, setting=LOCAL, profile=None):
    """config_file(name, nprocs, traced=False) -> the path of that configuration for a job of nprocs ranks (None for
    no preload), written on first use; `profile` is the machine profile auto_model names."""
    made = {}

    def config_file(name, nprocs, traced=False):
        section = setting.section(json.loads(json.dumps(CONFIGS[base_name(name)])), nprocs, tmp / "device.state")
        if section is None:
            return None
        key = (name, nprocs, traced)
        if key not in made:
            coll = section.get("collective", {})
            if coll.get("knowledge") == "KNOWLEDGE":
                coll["knowledge"] = str(tmp / f"knowledge-{name}.json")  # one per library
            if coll.get("profile") == "PROFILE":
                coll["profile"] = str(Path(profile).resolve())
            if traced and coll.get("strategy") == "auto":
                coll["trace"] = TRACE
            hints = section.get("mpiio_hints", {})
            if hints.get("cb_nodes") == "NPROCS":
                hints["cb_nodes"] = nprocs
            made[key] = tmp / f"{name}-{nprocs}{'-traced' if traced else ''}.json"
            made[key].write_text(json.dumps({"version": 1, "defaults": section}))
        return made[key]
    return config_file


def main():
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))  # the temporary directory is removed on the way out
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ranks", default="2,4", help="comma-separated rank counts (default 2,4)")
    ap.add_argument("--cases", help="comma-separated, of: " + ", ".join(CASE_NAMES) + " (default: all at 2 ranks, "
                    + ", ".join(FOUR_RANK_CASES) + " at 4)")
    ap.add_argument("--configs", help="for the kernels, comma-separated, of: " + ", ".join(CONFIGS)
                    + " (default: " + ",".join(KERNEL_CONFIGS) + ", and auto_model with --profile)")
    ap.add_argument("--profile", help="a machine profile (iotame calibrate): auto_model's collective.profile")
    ap.add_argument("--dynamic-configs", default=",".join(DYNAMIC_CONFIGS), help="for the dynamic experiment")
    ap.add_argument("--no-dynamic", action="store_true", help="skip the dynamic experiment")
    ap.add_argument("--dynamic-only", action="store_true", help="only the dynamic experiment")
    ap.add_argument("--small", action="store_true", help="tiny sizes: checks the script, measures nothing")
    ap.add_argument("--dir", default=str(ROOT / "build"), help="where the files go (default build/)")
    ap.add_argument("--json", help="also write every run to this file")
    ap.add_argument("--out", help="also write the markdown tables to this file")
    ap.add_argument("--table", help="print the tables of an earlier --json file, run nothing")
    ap.add_argument("--hosts", type=int, default=0, help="run on the testbed's first HOSTS hosts (scripts/testbed up "
                    "--hosts N beforehand): node_local's nodes are real; replaces --ranks by HOSTS x --per-host")
    ap.add_argument("--per-host", type=int, default=1, help="ranks per testbed host (default 1)")
    ap.add_argument("--mpi", choices=("mpich", "openmpi"), help="the MPI (default: mpich, but the Open MPI build, which "
                    "yields when idle, on more than 2 testbed ranks)")
    ap.add_argument("--targets", type=int, default=0, help="emulated storage: files striped over this many emulated "
                    "disks (emulate.targets), every configuration on them; 0 (default): the real file system")
    ap.add_argument("--target-unit", type=int, default=65536, help="stripe unit of the emulated targets (default "
                    "65536, the PVFS2 stripes of Orthrus' experiments)")
    ap.add_argument("--device", default="disk", help="emulated device preset of each target (default disk)")
    ap.add_argument("--volume", type=int, default=0, help="MiB per phase, all ranks together, instead of the "
                    "cases' defaults (emulated disks are slow)")
    ap.add_argument("--baseline", help="another libiotame.so (say, of the commit before a change): every "
                    "configuration that preloads the library also runs with it, named NAME@baseline, in the same "
                    "rounds, so a change is measured side by side")
    args = ap.parse_args()
    if args.table:
        text = report(json.loads(Path(args.table).read_text()))
        print(text)
        if args.out:
            Path(args.out).write_text(text + "\n")
        return 0
    try:
        ranks = [int(r) for r in args.ranks.split(",") if r.strip()]
    except ValueError:
        ap.error(f"--ranks {args.ranks}: expected comma-separated integers")
    if args.hosts:
        ranks = [args.hosts * args.per_host]
    volume = args.volume * MIB
    setting = Setting(args.hosts, args.per_host, args.mpi, args.targets, args.target_unit, args.device)
    if setting.mpi == "openmpi" and not args.hosts:
        ap.error("--mpi openmpi: only on the testbed (--hosts)")
    if setting.mpi == "openmpi" and not args.no_dynamic:
        ap.error("the dynamic experiment runs under MPICH: add --no-dynamic or --mpi mpich")
    explicit = [ALIASES.get(c.strip(), c.strip()) for c in (args.cases or "").split(",") if c.strip()]
    for c in explicit:
        if c not in CASE_NAMES:
            ap.error(f"unknown case {c}")
    rowlist = [] if args.dynamic_only else [
        (r, c) for r in ranks for c in (explicit or (FOUR_RANK_CASES if r >= 4 else CASE_NAMES))]
    configs = args.configs or ",".join(KERNEL_CONFIGS + (["auto_model"] if args.profile else []))
    names = [c.strip() for c in configs.split(",") if c.strip()]
    dnames = [] if args.no_dynamic else [c.strip() for c in args.dynamic_configs.split(",") if c.strip()]
    if args.baseline and not Path(args.baseline).is_file():
        ap.error(f"--baseline {args.baseline}: no such file (expected a libiotame.so)")
    for lst in (names, dnames):
        for c in lst:
            if c not in CONFIGS:
                ap.error(f"unknown configuration {c}")
        if args.baseline:
            lst[:] = with_baseline(lst, lambda c: CONFIGS[c] is not None)
        if lst and "default" not in lst:
            lst.insert(0, "default")  # the reference of every ratio
    if "auto_model" in names + dnames and not args.profile:
        ap.error("auto_model needs --profile PROFILE.json (a machine profile, iotame calibrate)")
    if args.profile and not Path(args.profile).is_file():
        ap.error(f"--profile {args.profile}: no such file (expected a machine profile, iotame calibrate --out)")
    for f in (setting.kernel, setting.lib):
        if not f.exists():
            print(f"{f} is missing: run make setup", file=sys.stderr)
            return 1
    meta = {"volume": volume, "setting": setting.to_json(), "profile": args.profile, "repeat": args.repeat, "rows": rowlist, "configs": names,
            "dynamic_configs": dnames, "small": args.small, "started": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": sys.argv[1:]}
    try:
        meta["commit"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                        text=True).stdout.strip()
        meta["runtime_dirty"] = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "runtime/"],
                                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        pass
    runs = []
    t_start = time.time()
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-collective-") as tmp, steady_memory() as memory:
        tmp = Path(tmp)
        meta["memory"] = memory
        print(memory, flush=True)
        lib = tmp / "libiotame.so"
        shutil.copy2(setting.lib, lib)
        libs = {False: lib, True: tmp / "libiotame-baseline.so"}
        if args.baseline:
            meta["baseline"] = copy_baseline(args.baseline, libs[True])
        meta["lib_sha256"] = hashlib.sha256(lib.read_bytes()).hexdigest()
        meta["lib_mtime"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(setting.lib.stat().st_mtime))
        config_file = config_writer(tmp, setting, args.profile)
        program = phases_program(tmp) if dnames else None
        spec = DYNAMIC_SMALL if args.small else DYNAMIC
        print(f"libiotame.so {meta['lib_sha256'][:12]} (built {meta['lib_mtime']}), commit {meta.get('commit')}"
              f"{' with runtime/ modified' if meta.get('runtime_dirty') else ''}; {len(rowlist)} rows x "
              f"{len(names)} configurations x {args.repeat} repeats", flush=True)
        for kb in ("auto_kb", "auto_kb" + BASELINE):  # the untimed run that writes the knowledge auto_kb starts from
            for r, case in rowlist if kb in names else []:
                kernel_trial(case, r, kb, args.small, tmp, libs[kb.endswith(BASELINE)], config_file, setting, volume)
        for rep in range(args.repeat):
            order = names[rep % len(names):] + names[:rep % len(names)]
            todo = [((r, c), n) for r, c in rowlist for n in order]
            if program:
                todo += [((2, "dynamic"), n) for n in dnames[rep % len(dnames):] + dnames[:rep % len(dnames)]]
            for (r, case), name in todo:
                t0 = time.time()
                try:
                    if case == "dynamic":
                        x = dynamic_trial(name, spec, tmp, libs[name.endswith(BASELINE)], config_file, program,
                                          setting)
                        line = ("write " + " ".join(f"{p['mbs']:7.1f}" for p in x["write_phases"]) +
                                "  read " + " ".join(f"{p['mbs']:7.1f}" for p in x["read_phases"]))
                    else:
                        x = kernel_trial(case, r, name, args.small, tmp, libs[name.endswith(BASELINE)], config_file,
                                         setting, volume)
                        line = f"write {x['write_mbs']:8.1f} MB/s  read {x['read_mbs']:8.1f} MB/s"
                    if name.startswith("auto"):
                        wins = [f"{d['signature']['op']}:{d['strategy']}" + (f"(re-exam {d['reexaminations']})" if d['reexaminations'] else "")
                                + (f"(model {d['model']['first']})" if d.get("model") else "")
                                for s in ("write_selector", "read_selector") for d in x[s]["decisions"]]
                        line += "  " + " ".join(wins)
                except RuntimeError as e:
                    x = {"case": case, "ranks": r, "config": name, "failed": True, "error": str(e)}
                    line = "FAILED: " + str(e).splitlines()[0]
                x["repeat"] = rep + 1
                runs.append(x)
                print(f"repeat {rep + 1} {r} {case:15s} {name:15s} {line}  [{time.time() - t0:.1f} s, load {os.getloadavg()[0]:.1f}]",
                      flush=True)
    meta["seconds"] = round(time.time() - t_start, 1)
    data = {"meta": meta, "runs": runs}
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))
    text = report(data)
    print(f"\n{len(runs)} trials in {meta['seconds']:.0f} s\n")
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 1 if any(x.get("failed") for x in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
