#!/usr/bin/env python3
"""Asynchronous staging measured side by side (runtime/src/stage; Isaila et al., "Latency Hiding File
I/O for Blue Gene Systems", CCGrid 2009, Figures 3-6): the same job without staging and with it, in turns within
each repeat, medians over the repeats.

  phases     the phases kernel (compute phases alternating with I/O phases in which every process writes its
             records, one file shared by all): record sizes x process counts x compute (0, and longer than the
             synchronous I/O of a phase: 1.5 x its median, measured first) on each device. Without staging the job
             runs as the user would run it (no preload on the real file system; on an emulated device the runtime
             with the device and nothing else). Reports the I/O time the application sees, the close time (where
             staging's final flush goes) and the job's total, against the targets: with compute >= I/O, staged I/O
             <= 10 % of the synchronous I/O and total <= 1.1 x (compute + close); with compute 0, throughput (bytes
             over I/O + close) >= 0.9 x without staging.
  btio       BT-IO (collective dumps between solver steps that sleep), as the paper's Figures 7-8: write time
             (through the kernel's final sync) and total time under the library's own collective I/O, the runtime's
             two_phase and view_based strategies, and staging.
  With --profile F, phases and btio also run staging.enabled "auto" deciding by the machine profile F (named in
  collective.profile), with the decision its statistics recorded; phases then adds a table of auto against staging
  off and always on.
  With --configs sync,node,aggregators (issue 37's table), phases (collective writes) and btio (a dump after every
  step) instead run those configurations side by side: sync = staging off, collective.strategy view_based (the
  synchronous collective write through the same aggregation); node = node-level staging; aggregators = aggregator
  caching (staging.collective "aggregators" under view_based). Compute 0, and 1.5 x sync's I/O phase (btio: write
  per dump) measured first. Columns: visible write, close, total, throughput, and the issue's targets. --hosts runs
  the jobs on the testbed's hosts (scripts/testbed up beforehand; Open MPI by default), --targets on emulated disks
  striped over that many targets.
  noncontig  Noncontig with 64-byte elements, collective writes, 2 ranks: ROMIO's own collective I/O under a grid
             of its hints (the best one is the reference) against staged writes that the flusher merges.
  patterns   Issue 32's table with our own kernels: millions of 4-byte and 64-byte pieces a call as many instances
             of a 16-chunk vector (noncontig --count, noncontiguous memory), a subarray view of 64-byte pieces
             (tileio), many small collective calls, IOR's 1 MiB and 4 KiB collective transfers, FLASH-IO's HDF5
             checkpoint; each row under romio (as the user runs it), romio_best (the best of romio_cb_write x
             romio_ds_write), write_through (the runtime, staging off), staged (and staged_profile with --profile),
             alternating within each repeat. Throughput = bytes over the kernel's write phase (through close), the
             staging statistics as reported, and with --instructions per piece and per call costs (perf stat).

Writes are timed as the kernels time them (phases: no sync, as the paper's application; btio and noncontig through
MPI_File_sync; patterns: through MPI_File_close, after MPI_File_sync except in IOR's rows); the page cache is
flushed (sync) between runs; free page reporting is held off as by every bench.
MPICH busy-polls: more than 2 processes use the Open MPI build (--mpi openmpi, mpirun --oversubscribe).

Usage: bench/staging.py phases [--mpi mpich] [--np 1,2] [--devices none,disk] [--sizes 1k,16k,64k,1m]
                               [--phase-mb 4] [--phases 3] [--profile F] [--repeat 3] [--json F] [--out F.md]
       bench/staging.py phases|btio --configs sync,node,aggregators [--hosts 2,4 [--per-host 1]] [--targets 4
                               --devices disk] [--layout interleaved] ...
       bench/staging.py btio|noncontig [--profile F] [--repeat 5] ...
       bench/staging.py patterns [--devices none,disk] [--rows R1,R2] [--nc-veclen V] [--tile-rows R] ...
                                 [--profile F] [--instructions] [--repeat 3]
       bench/staging.py --table F.json
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple, Optional

from iotame.bench.baseline import BASELINE, copy_baseline, ratio_interval
from iotame.bench.memory import steady_memory
from iotame.bench.setting import Setting

ROOT = Path(__file__).resolve().parent.parent
BUILDS = {"mpich": ROOT / "build", "openmpi": ROOT / "build-openmpi"}
TIMEOUT = 1800
KiB = 1024
NONCONTIG_HINTS = [{"romio_cb_write": cb, "romio_ds_write": ds, "cb_buffer_size": buf}
                   for cb in ("enable", "disable") for ds in ("enable", "disable") for buf in (4 << 20, 16 << 20)]


def size_of(text):
    units = {"k": KiB, "m": KiB * KiB, "g": KiB * KiB * KiB}
    return int(float(text[:-1]) * units[text[-1].lower()]) if text[-1].lower() in units else int(text)


def runtime_config(device, tmp, staged, hints=None, strategy=None, profile=None, preload=False):
    """The configuration of a run, or None: no preload at all (the real file system without staging, unless
    preload). staged: staging.enabled's value (False: not set), "auto" deciding by `profile` (collective.profile)."""
    d = {}
    if device != "none":
        d["emulate"] = {"device": device, "state": str(tmp / "device.state")}
    if staged:
        d["staging"] = {"enabled": staged}
    if profile:
        d["collective"] = {"profile": str(Path(profile).resolve())}
    if hints:
        d["mpiio_hints"] = hints
    if strategy:
        d["collective"] = {"strategy": strategy}
    return {"version": 1, "defaults": d} if d or preload else None


def run(a, np_, kernel_args, config, tmp, prefix=(), timeout=TIMEOUT, baseline=False):
    """One job in a fresh directory, launched where a.setting says (this machine or the testbed's hosts; without
    a.setting, this machine under a.mpi); the kernel's result and the statistics (None without preload). prefix
    goes before the launcher (a command that runs mpiexec, such as perf stat). A job that runs longer than timeout
    seconds is killed with its processes (subprocess.TimeoutExpired). baseline: the --baseline library is
    preloaded instead of the current one."""
    work = tmp / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}
    setting = getattr(a, "setting", None) or Setting(mpi=a.mpi)  # main sets a.setting; else this machine
    env.update(setting.env())
    stats = tmp / "stats.json"
    stats.unlink(missing_ok=True)
    if config:
        (tmp / "config.json").write_text(json.dumps(config))
        lib = tmp / ("libiotame-baseline.so" if baseline else "libiotame.so")
        env.update(LD_PRELOAD=str(lib), IOTAME_CONFIG=str(tmp / "config.json"),
                   IOTAME_STATS=str(stats))
    os.sync()
    argv = [*prefix] + setting.argv(np_, setting.kernel, *kernel_args)
    with subprocess.Popen(argv, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(p.pid)
            p.communicate()
            raise
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}:\n{err[-1500:]}")
    res = json.loads(out.strip().splitlines()[-1])
    if res.get("verified") is not True:
        raise RuntimeError(f"{' '.join(argv)}: data did not verify")
    st = json.loads(stats.read_text()) if config else None
    shutil.rmtree(work, ignore_errors=True)
    return res, st


def kill_tree(pid: int) -> None:
    """SIGKILL pid and every process below it (the launcher, hydra's proxies and the ranks, which put themselves
    in sessions of their own, so that killing a process group is not enough)."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += children.get(tree[-1], [])
    for p in tree:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stage_numbers(st):
    s = ((st or {}).get("modules") or {}).get("stage")
    if not s:
        return None
    f = s["flusher"]
    return {"flush_seconds": f["flush_seconds"], "overlapped_seconds": f["overlapped_seconds"],
            "extents_in": f["extents_in"], "writes_out": f["writes_out"], "blocked_seconds": s["blocked_seconds"]}


def stage_decision(st, name: str) -> Optional[str]:
    """Whether the file `name`'s writes were staged and why, as its statistics say ("staged: synchronous"), or
    None."""
    for f in (st or {}).get("files", []):
        d = f.get("stage")
        if (f["path"] == name or f["path"].endswith("/" + name)) and d:
            return f"{d['writes']}: {d['reason']}"
    return None


# ---- the experiments ----

# phases: without staging (no runtime on the real file system), on the real file system the runtime without staging
# (off: what the runtime costs by itself), staging always on, and with --profile staging auto
PHASES_CONFIGS = (("sync", False), ("off", False), ("staged", True), ("auto", "auto"))

def phases(a, tmp, data):
    for np_ in map(int, a.np.split(",")):
        for device in a.devices.split(","):
            for size in a.sizes.split(","):
                rs = size_of(size)
                records = max(1, int(a.phase_mb * KiB * KiB) // rs)
                base = ["phases", "--phases", a.phases, "--records", records, "--record-size", rs,
                        "--compute-mode", "sleep", "--layout", a.layout, "--file", "p.dat"]
                calib = [run(a, np_, base, runtime_config(device, tmp, False), tmp)[0]["application"]
                         for _ in range(3)]
                io_phase = statistics.median(statistics.median(c["io_phase_seconds"]) for c in calib)
                configs = [c for c in PHASES_CONFIGS if (a.profile or c[0] != "auto") and
                           (device == "none" or c[0] != "off")]
                for compute in (0.0, round(max(0.02, 1.5 * io_phase), 4)):
                    for rep in range(a.repeat):
                        for i in range(len(configs)):
                            name, staged = configs[(i + rep) % len(configs)]
                            config = runtime_config(device, tmp, staged, preload=name == "off",
                                                    profile=a.profile if staged == "auto" else None)
                            res, st = run(a, np_, base + ["--compute", compute], config, tmp)
                            app = res["application"]
                            r = {"experiment": "phases", "np": np_, "device": device, "record": rs,
                                 "compute_per_phase": compute, "staged": staged is True, "config": name,
                                 **{k: app[k] for k in (
                                     "bytes", "io_seconds", "close_seconds", "compute_seconds", "wall_seconds")},
                                 "stage": stage_numbers(st), "decision": stage_decision(st, "p.dat")}
                            data["runs"].append(r)
                            print(f"phases np {np_} {device} {size} compute {compute}: {name:6} io "
                                  f"{app['io_seconds']:.4f} close {app['close_seconds']:.4f} wall "
                                  f"{app['wall_seconds']:.4f}", file=sys.stderr, flush=True)
                            save(a, data)


BTIO_CONFIGS = ("library", "two_phase", "view_based", "staged")


def btio(a, tmp, data):
    args = ["btio", "--grid", a.grid, "--steps", a.steps, "--write-interval", 1, "--compute-seconds", a.compute,
            "--file", "bt.dat"]
    for np_ in map(int, a.np.split(",")):
        for device in a.devices.split(","):
            configs = BTIO_CONFIGS + (("auto",) if a.profile else ())
            for rep in range(a.repeat):
                for i in range(len(configs)):
                    name = configs[(i + rep) % len(configs)]
                    strategy = name if name in ("two_phase", "view_based") else None
                    staged = {"staged": True, "auto": "auto"}.get(name, False)
                    config = runtime_config(device, tmp, staged, strategy=strategy,
                                            profile=a.profile if name == "auto" else None)
                    t0 = time.monotonic()
                    res, st = run(a, np_, args, config, tmp)
                    total = time.monotonic() - t0
                    w = next(p for p in res["phases"] if p["name"] == "write")
                    data["runs"].append({"experiment": "btio", "np": np_, "device": device, "config": name,
                                         "write_seconds": w["seconds"], "total_seconds": total, "bytes": w["bytes"],
                                         "stage": stage_numbers(st), "decision": stage_decision(st, "bt.dat")})
                    print(f"btio np {np_} {device} {name}: write {w['seconds']:.3f} s, total {total:.2f} s",
                          file=sys.stderr, flush=True)
                    save(a, data)


def noncontig(a, tmp, data):
    args = ["noncontig", "--elmtcount", 16, "--veclen", a.veclen, "--loops", a.loops, "--collective",
            "--file", "nc.dat"]
    configs = [("hints", h) for h in NONCONTIG_HINTS] + [("staged", None)]
    for device in a.devices.split(","):
        for rep in range(a.repeat):
            for i in range(len(configs)):
                kind, hints = configs[(i + rep) % len(configs)]
                res, st = run(a, 2, args, runtime_config(device, tmp, kind == "staged", hints), tmp)
                w = next(p for p in res["phases"] if p["name"] == "write")
                data["runs"].append({"experiment": "noncontig", "np": 2, "device": device, "kind": kind,
                                     "hints": hints, "mbs": w["mbs"], "stage": stage_numbers(st)})
                print(f"noncontig {device} {kind} {hints or ''}: {w['mbs']:.1f} MB/s", file=sys.stderr, flush=True)
                save(a, data)


# ---- patterns: issue 32's table, our own kernels ----

PATTERN_HINTS = [{"romio_cb_write": cb, "romio_ds_write": ds} for cb in ("enable", "disable")
                 for ds in ("enable", "disable")]
PATTERN_ORDER = ("romio", "romio_best", "write_through", "staged", "staged_profile")


class PatternRow(NamedTuple):
    """A row of the table: the kernel's arguments, and the pieces and collective calls it writes over all ranks
    (None where HDF5 decides them), with how they were counted, and the bytes of one piece."""
    name: str
    args: list
    pieces: Optional[int]
    calls: Optional[int]
    how: str
    piece_bytes: Optional[int] = None


def pattern_rows(a, np_: int) -> list:
    """The rows at the sizes of the options: noncontig as many small vector instances per call (4-byte and 64-byte
    chunks, noncontiguous in memory and in the file), a subarray view of 64-byte pieces, many small collective
    calls, IOR's large and small contiguous collective transfers, FLASH-IO's HDF5 checkpoint."""
    v, v64, loops = a.nc_veclen, a.nc64_veclen, a.nc_loops
    for option, value in (("--nc-veclen", v), ("--nc64-veclen", v64)):
        if value % 16:
            raise SystemExit(f"{option} {value}: must be a multiple of 16 (each instance is a vector of 16 chunks)")
    nc = ["noncontig", "--collective", "--mem-noncontig", "--loops", loops, "--file", "nc.dat"]
    ior = ["ior", "-a", "mpiio", "-c", "-w", "-W", "-o", "ior.dat"]
    n = a.flash_cells
    transfers = {}
    for t, option, b in (("1m", "--ior-block", a.ior_block), ("4k", "--ior-block-4k", a.ior_block_4k)):
        try:
            transfers[t] = size_of(b) // size_of(t)
        except ValueError:
            raise SystemExit(f"{option} {b}: expected a size (bytes, or with a k, m or g suffix)") from None
        if transfers[t] < 1 or size_of(b) % size_of(t):
            raise SystemExit(f"{option} {b}: must be a multiple of the transfer size {t}")
    return [
        PatternRow("noncontig-4B-count", nc + ["--elmtcount", 1, "--veclen", v, "--count", v // 16],
                   np_ * loops * v, np_ * loops, f"{np_} ranks x {loops} calls x {v} chunks of 4 B", 4),
        PatternRow("noncontig-64B-count", nc + ["--elmtcount", 16, "--veclen", v64, "--count", v64 // 16],
                   np_ * loops * v64, np_ * loops, f"{np_} ranks x {loops} calls x {v64} chunks of 64 B", 64),
        PatternRow("tileio-subarray-64B", ["tileio", "--nr-tiles-x", np_, "--nr-tiles-y", 1, "--sz-element", 64,
                                           "--sz-tile-x", 1, "--sz-tile-y", a.tile_rows, "--file", "tile.dat"],
                   np_ * a.tile_rows, np_, f"{np_} ranks x 1 call x {a.tile_rows} rows of one 64 B element", 64),
        PatternRow("noncontig-small-calls", ["noncontig", "--collective", "--elmtcount", 16, "--veclen", 4,
                                             "--loops", a.small_loops, "--file", "nc.dat"],
                   np_ * a.small_loops * 4, np_ * a.small_loops,
                   f"{np_} ranks x {a.small_loops} calls x 4 chunks of 64 B", 64),
        PatternRow("ior-coll-1m", ior + ["-t", "1m", "-b", a.ior_block], np_ * transfers["1m"], np_ * transfers["1m"],
                   f"{np_} ranks x {transfers['1m']} transfers of 1 MiB", 1 << 20),
        PatternRow("ior-coll-4k", ior + ["-t", "4k", "-b", a.ior_block_4k], np_ * transfers["4k"],
                   np_ * transfers["4k"], f"{np_} ranks x {transfers['4k']} transfers of 4 KiB", 4096),
        PatternRow("flashio-checkpoint", ["flashio", "--collective", "--maxblocks", a.flash_maxblocks, "--nxb", n,
                                          "--nyb", n, "--nzb", n, "--file", "flash.h5"],
                   None, None, "HDF5 decides the pieces and calls"),
    ]


def pattern_configs(a, device: str, tmp: Path) -> list:
    """(name, hints, configuration) of every configuration a row runs under on device. romio is the job as the user
    runs it (runtime_config without staging); the hint settings go through the runtime's mpiio_hints (the best is
    romio_best); write_through loads the runtime with staging off, which on the real file system changes nothing."""
    out = [("romio", None, runtime_config(device, tmp, False))]
    out += [("romio_hints", h, runtime_config(device, tmp, False, h)) for h in PATTERN_HINTS]
    through = runtime_config(device, tmp, False) or {"version": 1, "defaults": {}}
    through["defaults"]["staging"] = {"enabled": False}
    out += [("write_through", None, through), ("staged", None, runtime_config(device, tmp, True))]
    if a.profile:
        staged = runtime_config(device, tmp, True)
        staged["defaults"]["collective"] = {"profile": str(Path(a.profile).resolve())}
        out.append(("staged_profile", None, staged))
    return out


def write_phases(res: dict) -> tuple:
    """Bytes and seconds of the kernel's write phases ("write", or FLASH-IO's "*_write"), as the kernel times them:
    every one here ends after MPI_File_close (noncontig, tileio and FLASH-IO's HDF5 flush also sync before it)."""
    ws = [p for p in res["phases"] if p["name"] == "write" or p["name"].endswith("_write")]
    return sum(p["bytes"] for p in ws), sum(p["seconds"] for p in ws)


def sync_close_seconds(st: Optional[dict]) -> Optional[float]:
    """The runtime's sync and close time of the job's files (per file the slowest rank's, summed), or None without
    the runtime."""
    if not st:
        return None
    total = 0.0
    for f in st.get("files") or []:
        for op in ("sync", "close"):
            total += ((f.get("ops") or {}).get(op) or {}).get("seconds", {}).get("max", 0.0)
    return total


def numeric_fields(d: Optional[dict], prefix: str = "") -> dict:
    """Every number in d (nested keys joined by dots; booleans and lists left out): the stage section's fields as
    the runtime reports them, whatever their names."""
    out = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict):
            out.update(numeric_fields(v, f"{prefix}{k}."))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[prefix + k] = v
    return out


def pattern_record(row: PatternRow, device: str, np_: int, name: str, hints, res: dict, st) -> dict:
    if st and st.get("config_error"):
        raise RuntimeError(f"{row.name} {name}: the runtime refused the configuration: {st['config_error']}")
    nbytes, seconds = write_phases(res)
    return {"experiment": "patterns", "np": np_, "device": device, "row": row.name, "config": name, "hints": hints,
            "args": list(map(str, row.args)), "pieces": row.pieces, "calls": row.calls, "how": row.how,
            "bytes": nbytes, "write_seconds": seconds, "mbs": nbytes / seconds / 1e6,
            "sync_close_seconds": sync_close_seconds(st),
            "stage": numeric_fields(((st or {}).get("modules") or {}).get("stage")) or None}


def perf_counts(text: str) -> dict:
    """instructions:u and task-clock (ms) from `perf stat -x,` output; None where perf could not count (a virtual
    machine without a PMU says <not supported>)."""
    got = {}
    for line in text.splitlines():
        f = line.split(",")
        if line.startswith("#") or len(f) < 3:
            continue
        try:
            got[f[2].split(":")[0]] = float(f[0])
        except ValueError:
            got[f[2].split(":")[0]] = None
    return {"instructions": got.get("instructions"), "task_clock_ms": got.get("task-clock")}


PATTERN_BASE = {"nc_veclen": 16, "nc64_veclen": 16, "nc_loops": 1, "tile_rows": 1, "small_loops": 1, "ior_block": "1m",
                "ior_block_4k": "4k", "flash_maxblocks": 2, "flash_cells": 1}


def pattern_counted(a, np_: int, row: PatternRow, base: PatternRow, device: str, name: str, hints, config,
                    tmp: Path) -> list:
    """The row and its base (the same kernel at its smallest size) once each under perf stat: the base's counts
    are what a job costs whatever its size (start-up, the staging area's set-up, MPI_Finalize)."""
    out, records = tmp / "perf.txt", []
    perf = ["perf", "stat", "-x,", "-o", str(out), "-e", "instructions:u,task-clock", "--"]
    for size, job in (("full", row), ("base", base)):
        try:
            res, st = run(a, np_, job.args, config, tmp, prefix=perf, timeout=a.job_timeout,
                          baseline=name.endswith(BASELINE))
        except subprocess.TimeoutExpired:
            print(f"patterns {device} {row.name} {name} counted ({size}): killed after {a.job_timeout:.0f} s",
                  file=sys.stderr, flush=True)
            return []
        records.append({**pattern_record(job, device, np_, name, hints, res, st), "row": row.name,
                        "experiment": "patterns_count", "size": size, **perf_counts(out.read_text())})
        print(f"patterns {device} {row.name} {name} counted ({size}): {records[-1]['instructions']} instructions, "
              f"{records[-1]['task_clock_ms']} ms CPU", file=sys.stderr, flush=True)
    return records


def pattern_drop(data: dict, device: str, row: PatternRow, name: str, hints: Optional[dict], why: str) -> None:
    """Leaves a configuration out of a row's remaining repeats: a hint setting that took more than --hint-cutoff
    times romio's time (it cannot be the best, and repeating it would cost minutes: collective buffering on 4 KiB
    calls), or any job killed after --job-timeout (staged writes of millions of pieces on the emulated disk)."""
    data.setdefault("dropped", []).append({"device": device, "row": row.name, "config": name, "hints": hints,
                                           "why": why})
    print(f"patterns {device} {row.name} {name} {hint_label(hints)}: left out ({why})", file=sys.stderr, flush=True)


def patterns(a, tmp, data):
    np_ = int(a.np)
    rows = pattern_rows(a, np_)
    # the counted jobs: at --count-np ranks (1: no rank busy-polls while waiting for another), full size and base
    counted = {r.name: (r, b) for r, b in zip(pattern_rows(a, a.count_np), pattern_rows(
        argparse.Namespace(**{**vars(a), **PATTERN_BASE}), a.count_np))}
    if a.rows:
        names = a.rows.split(",")
        unknown = [n for n in names if n not in counted]
        if unknown:
            raise SystemExit(f"--rows: no row {', '.join(unknown)} (rows: {', '.join(counted)})")
        rows = [r for r in rows if r.name in names]
    for device in a.devices.split(","):
        configs = pattern_configs(a, device, tmp)
        if a.baseline:  # each configuration that loads the runtime also with the --baseline library, but the hint grid
            configs = [x for n, h, c in configs
                       for x in ([(n, h, c), (n + BASELINE, h, c)] if c and n != "romio_hints" else [(n, h, c)])]
        for row in rows:
            romio, dropped = None, set()  # romio's first run (job s, write s); (configuration, hints) left out
            for rep in range(a.repeat):
                for i in range(len(configs)):  # the first repeat starts with romio
                    name, hints, config = configs[(i + rep) % len(configs)]
                    if (name, hint_label(hints)) in dropped:
                        continue
                    # a hint setting's job may take romio's, with its write phase --hint-cutoff times as long
                    timeout = (max(10.0, romio[0] + (a.hint_cutoff - 1) * romio[1]) if hints and romio
                               else a.job_timeout)
                    t0 = time.monotonic()
                    try:
                        res, st = run(a, np_, row.args, config, tmp, timeout=timeout,
                                      baseline=name.endswith(BASELINE))
                    except subprocess.TimeoutExpired:
                        pattern_drop(data, device, row, name, hints, f"job killed after {timeout:.0f} s")
                        dropped.add((name, hint_label(hints)))
                        continue
                    r = pattern_record(row, device, np_, name, hints, res, st)
                    if name == "romio" and romio is None:
                        romio = (time.monotonic() - t0, r["write_seconds"])
                    data["runs"].append({**r, "repeat": rep + 1})
                    print(f"patterns {device} {row.name} {name} {hint_label(hints)}: {r['mbs']:.1f} MB/s, "
                          f"write {r['write_seconds']:.4f} s", file=sys.stderr, flush=True)
                    if hints and romio and r["write_seconds"] > a.hint_cutoff * romio[1]:
                        pattern_drop(data, device, row, name, hints, f"write {r['write_seconds']:.2f} s in one run")
                        dropped.add((name, hint_label(hints)))
                    save(a, data)
            if a.instructions:
                for name, hints, config in configs:
                    if name != "romio_hints" and (name, "") not in dropped:
                        data["runs"] += pattern_counted(a, a.count_np, *counted[row.name], device, name, hints,
                                                        config, tmp)
                        save(a, data)


def hint_label(hints: Optional[dict]) -> str:
    if not hints:
        return ""
    return ", ".join(f"{k.replace('romio_', '').replace('_write', '')}={v}" for k, v in hints.items())


def save(a, data):
    if a.json:
        Path(a.json).write_text(json.dumps(data))


# ---- issue 37: the synchronous collective write, node staging and aggregator caching side by side ----

# --configs: the defaults section of each (emulated storage added per run). sync is the synchronous collective write
# through the same aggregation as aggregators; node stages each process's part in its own node's area.
CACHING_CONFIGS = {
    "sync": {"staging": {"enabled": False}, "collective": {"strategy": "view_based"}},
    "node": {"staging": {"enabled": True, "collective": "node"}},
    "aggregators": {"staging": {"enabled": True, "collective": "aggregators"},
                    "collective": {"strategy": "view_based"}},
}


def caching_names(text: str) -> list:
    """--configs' names in order, sync first whether named or not (the reference of every ratio and target);
    ValueError naming an unknown one."""
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in CACHING_CONFIGS]
    if unknown:
        raise ValueError(f"--configs: unknown configuration {', '.join(unknown)} (expected some of "
                         f"{', '.join(CACHING_CONFIGS)})")
    return ["sync"] + [n for n in names if n != "sync"]


def host_layouts(hosts: str, per_host: str) -> list:
    """(hosts, ranks per host) of each --hosts value, --per-host one value for all or one per --hosts value;
    [(0, 0)] without --hosts (this machine). ValueError naming the option."""
    def ints(option, text):
        try:
            values = [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"{option} {text}: expected comma-separated integers") from None
        if not values or min(values) < 1:
            raise ValueError(f"{option} {text}: expected integers of at least 1")
        return values
    if not hosts:
        return [(0, 0)]
    h, k = ints("--hosts", hosts), ints("--per-host", per_host)
    if len(k) not in (1, len(h)):
        raise ValueError(f"--per-host {per_host}: one value, or one per --hosts value ({len(h)})")
    return list(zip(h, k * len(h) if len(k) == 1 else k))


def caching_arguments(a) -> list:
    """The configurations of issue 37's table ([]: the experiment's default runs), after checking the options that
    go with them; ValueError naming the option and what was expected."""
    if not a.configs:
        for option, value in (("--hosts", a.hosts), ("--targets", a.targets)):
            if value:
                raise ValueError(f"{option}: only with --configs")
        return []
    if a.experiment not in ("phases", "btio"):
        raise ValueError(f"--configs: for phases and btio only, not {a.experiment}")
    names = caching_names(a.configs)
    layouts = host_layouts(a.hosts, a.per_host)
    if a.targets and "," in a.devices:
        raise ValueError(f"--devices {a.devices}: one device with --targets (each target one such device)")
    if a.targets and a.devices == "none":
        raise ValueError("--targets: needs an emulated device in --devices (disk or raid5)")
    if a.experiment == "btio":
        for hosts, per_host in layouts:
            nprocs = [hosts * per_host] if hosts else [int(n) for n in a.np.split(",")]
            odd = [n for n in nprocs if round(n ** 0.5) ** 2 != n]
            if odd:
                raise ValueError(f"btio needs a square number of processes, not {odd[0]}"
                                 + (f" (--hosts {hosts} x --per-host {per_host})" if hosts else " (--np)"))
    return names


def testbed_link(needed: int) -> str:
    """The testbed's link rate ("1gbit"), after checking that it is up with at least `needed` hosts (SystemExit
    saying what to run otherwise)."""
    p = subprocess.run([str(ROOT / "scripts" / "testbed"), "status", "--json"], capture_output=True, text=True)
    try:
        status = json.loads(p.stdout)
    except ValueError:
        status = {}
    if not status.get("up") or len(status.get("hosts", [])) < needed:
        raise SystemExit(f"--hosts: the testbed must be up with {needed} hosts: scripts/testbed up --hosts {needed}")
    return status.get("rate") or "unshaped"


def caching_setting(a, hosts: int, per_host: int, device: str) -> Setting:
    return Setting(hosts, per_host or 1, a.mpi, a.targets, a.target_unit, device)


def caching_config(name: str, setting: Setting, device: str, nprocs: int, tmp: Path) -> dict:
    """The runtime configuration of configuration `name`: on setting's striped emulated targets (--targets), else
    on the emulated `device` of this machine, else on the real file system."""
    section = json.loads(json.dumps(CACHING_CONFIGS[name]))
    if setting.targets:
        section = setting.section(section, nprocs, tmp / "device.state")
    elif device != "none":
        section["emulate"] = {"device": device, "state": str(tmp / "device.state")}
    return {"version": 1, "defaults": section}


def caching_jobs(a, device: str):
    """(setting, process count) of every job shape: each --hosts layout on the testbed, else each --np here."""
    for hosts, per_host in host_layouts(a.hosts, a.per_host):
        setting = caching_setting(a, hosts, per_host, device)
        for np_ in [hosts * per_host] if hosts else map(int, a.np.split(",")):
            yield setting, np_


def write_op_seconds(st: Optional[dict], name: str) -> float:
    """The seconds the application spent in the write calls of file `name` (per function the slowest rank's,
    summed): what its writes cost it visibly."""
    total = 0.0
    for f in (st or {}).get("files", []):
        if f["path"] == name or f["path"].endswith("/" + name):
            total += sum(o.get("seconds", {}).get("max", 0.0) for op, o in (f.get("ops") or {}).items()
                         if op.startswith("write") or op.startswith("iwrite"))
    return total


def cached_at(st: Optional[dict], name: str) -> Optional[str]:
    """Where file `name`'s staged collective writes were cached, as its statistics say: "aggregators", "node:
    REASON" where aggregator caching was asked for and fell back, "node" where the flusher took extents otherwise
    (node staging notes nothing per file), None where nothing was staged."""
    for f in (st or {}).get("files", []):
        s = f.get("stage") or {}
        if (f["path"] == name or f["path"].endswith("/" + name)) and s.get("collective"):
            return s["collective"] + (f": {s['collective_reason']}" if s.get("collective_reason") else "")
    return "node" if (stage_numbers(st) or {}).get("extents_in") else None


def caching_record(a, experiment: str, setting: Setting, np_: int, device: str, name: str, compute: float,
                   rep: int, st, file: str, **fields) -> dict:
    """A run of issue 37's table: its job shape (with the testbed's link rate, a.link), configuration, compute,
    the measured fields, and what the staging statistics say."""
    if st and st.get("config_error"):
        raise RuntimeError(f"{experiment} {name}: the runtime refused the configuration: {st['config_error']}")
    return {"experiment": experiment, "hosts": setting.hosts, "per_host": setting.per_host, "np": np_,
            "device": device, "targets": setting.targets, "config": name, "compute_per_phase": compute,
            "link": a.link if setting.hosts else None, "repeat": rep + 1, **fields, "stage": stage_numbers(st),
            "cached_at": cached_at(st, file)}


def caching_rounds(a, names: list, job) -> None:
    """job(name, rep) for every configuration in every repeat, the first configuration rotating from repeat to
    repeat (side by side, alternating)."""
    for rep in range(a.repeat):
        for i in range(len(names)):
            job(names[(i + rep) % len(names)], rep)


def phases_caching(a, tmp, data, names):
    """phases, collective: per job shape and record size, the sync configuration's I/O phase measured first
    (compute 0, three runs), then every configuration with compute 0 and 1.5 x that per phase."""
    for device in a.devices.split(","):
        for setting, np_ in caching_jobs(a, device):
            for size in a.sizes.split(","):
                rs = size_of(size)
                records = max(1, int(a.phase_mb * KiB * KiB) // rs)
                base = ["phases", "--phases", a.phases, "--records", records, "--record-size", rs, "--collective",
                        "--compute-mode", "sleep", "--layout", a.layout, "--file", "p.dat"]
                sync = caching_config("sync", setting, device, np_, tmp)
                a.setting = setting
                calib = [run(a, np_, base, sync, tmp)[0]["application"] for _ in range(3)]
                io_phase = statistics.median(statistics.median(c["io_phase_seconds"]) for c in calib)
                for compute in (0.0, round(max(0.02, 1.5 * io_phase), 4)):
                    def job(name, rep):
                        res, st = run(a, np_, base + ["--compute", compute],
                                      caching_config(name, setting, device, np_, tmp), tmp)
                        app = res["application"]
                        data["runs"].append(caching_record(
                            a, "phases_caching", setting, np_, device, name, compute, rep, st, "p.dat", record=rs,
                            bytes=app["bytes"], write_seconds=app["io_seconds"], close_seconds=app["close_seconds"],
                            compute_seconds=app["compute_seconds"], total_seconds=app["wall_seconds"]))
                        print(f"phases {setting.hosts}x{setting.per_host} np {np_} {device} {size} compute "
                              f"{compute}: {name:11} write {app['io_seconds']:.4f} close {app['close_seconds']:.4f}"
                              f" total {app['wall_seconds']:.4f}", file=sys.stderr, flush=True)
                        save(a, data)
                    caching_rounds(a, names, job)


def btio_caching(a, tmp, data, names):
    """btio (a dump after every step): per job shape the sync configuration's write per dump measured first
    (compute 0, three runs), then every configuration with compute 0 and 1.5 x that per step. Visible write = the
    write calls (the statistics), close = sync + close; total = the kernel's write phase (compute excluded) + the
    compute."""
    for device in a.devices.split(","):
        for setting, np_ in caching_jobs(a, device):
            a.setting = setting
            args = ["btio", "--grid", a.grid, "--steps", a.steps, "--write-interval", 1, "--file", "bt.dat"]
            sync = caching_config("sync", setting, device, np_, tmp)
            per_dump = statistics.median(write_op_seconds(run(a, np_, args + ["--compute-seconds", 0], sync, tmp)[1],
                                                          "bt.dat") for _ in range(3)) / a.steps
            for compute in (0.0, round(max(0.02, 1.5 * per_dump), 4)):
                def job(name, rep):
                    res, st = run(a, np_, args + ["--compute-seconds", compute],
                                  caching_config(name, setting, device, np_, tmp), tmp)
                    w = next(p for p in res["phases"] if p["name"] == "write")
                    r = caching_record(a, "btio_caching", setting, np_, device, name, compute, rep, st, "bt.dat",
                                       record=a.grid, bytes=w["bytes"], write_seconds=write_op_seconds(st, "bt.dat"),
                                       close_seconds=sync_close_seconds(st), compute_seconds=compute * a.steps,
                                       total_seconds=w["seconds"] + compute * a.steps)
                    data["runs"].append(r)
                    print(f"btio {setting.hosts}x{setting.per_host} np {np_} {device} compute {compute}: {name:11} "
                          f"write {r['write_seconds']:.4f} close {r['close_seconds']:.4f} total "
                          f"{r['total_seconds']:.4f}", file=sys.stderr, flush=True)
                    save(a, data)
                caching_rounds(a, names, job)


# ---- the report ----

def med(xs):
    return statistics.median(xs) if xs else float("nan")


def phase_config(r: dict) -> str:
    """A phases run's configuration: sync, staged or auto (runs measured before auto say staged or not only)."""
    return r.get("config") or ("staged" if r["staged"] else "sync")


def decisions(rs: list) -> str:
    """The decisions auto's runs recorded, each once."""
    return ", ".join(dict.fromkeys(r.get("decision") or "none recorded" for r in rs))


def phases_auto_report(ph: list) -> list:
    """The phases runs with staging auto beside the synchronous and always-staged ones: the time the application
    sees (I/O + close) and throughput = bytes / that; auto / sync (the real file system's target: >= 0.97) and
    auto's gain over sync as a share of staging's (the emulated disk's: >= 0.9)."""
    if not any(phase_config(r) == "auto" for r in ph):
        return []
    out = ["", "Staging auto beside staging off (sync: without the runtime on the real file system; off: the runtime "
               "without staging, where measured) and always on (staged); I/O + close s = the time the application "
               "sees; throughput ratios are bytes / (I/O + close); share of staged's gain = (sync - auto) / (sync - "
               "staged) of the I/O + close seconds (— where staging gains nothing).", "",
           "| device | np | record | compute/phase s | sync I/O+close s | staged I/O+close s | auto I/O+close s | "
           "auto decision | auto / sync throughput | auto / off throughput | staged / sync throughput | "
           "share of staged's gain |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for key in sorted({(r["device"], r["np"], r["record"], r["compute_per_phase"]) for r in ph}):
        rs = [r for r in ph if (r["device"], r["np"], r["record"], r["compute_per_phase"]) == key]
        by = {name: [r for r in rs if phase_config(r) == name] for name in ("sync", "staged", "auto")}
        if not all(by.values()):
            continue
        off = [r for r in rs if phase_config(r) == "off"]
        t = {n: med([r["io_seconds"] + r["close_seconds"] for r in v]) for n, v in by.items()}
        tput = {n: med([r["bytes"] / (r["io_seconds"] + r["close_seconds"]) for r in v]) for n, v in by.items()}
        gain = t["sync"] - t["staged"]
        share = f"{(t['sync'] - t['auto']) / gain:.2f}" if gain > 0 else "—"
        rec = f"{key[2] // KiB} KiB" if key[2] < KiB * KiB else f"{key[2] // KiB // KiB} MiB"
        off_tput = med([r["bytes"] / (r["io_seconds"] + r["close_seconds"]) for r in off]) if off else None
        out.append(f"| {key[0]} | {key[1]} | {rec} | {key[3]:.3f} | {t['sync']:.4f} | {t['staged']:.4f} | "
                   f"{t['auto']:.4f} | {decisions(by['auto'])} | {tput['auto'] / tput['sync']:.3f} | "
                   f"{dash_or(off_tput and tput['auto'] / off_tput, '.3f')} | "
                   f"{tput['staged'] / tput['sync']:.3f} | {share} |")
    return out


def caching_medians(rs: list) -> dict:
    """Medians over a configuration's runs: visible write, close, total and compute seconds, and throughput (bytes
    over write + close, MB/s)."""
    m = {k: med([r[f"{k}_seconds"] for r in rs]) for k in ("write", "close", "total", "compute")}
    m["mbs"] = med([r["bytes"] / (r["write_seconds"] + r["close_seconds"]) / 1e6 for r in rs])
    return m


def caching_targets(sync: dict, m: dict) -> dict:
    """Issue 37's targets for a configuration's medians m against sync's (caching_medians), each True, False, or
    None where it does not apply: with compute at least sync's visible write, "write" (visible write <= 10 % of
    sync's) and "total" (total <= 1.1 x (compute + close)); with no compute, "throughput" (>= 0.9 x sync's)."""
    overlap = m["compute"] > 0 and m["compute"] >= sync["write"]
    return {"write": m["write"] <= 0.1 * sync["write"] if overlap else None,
            "total": m["total"] <= 1.1 * (m["compute"] + m["close"]) if overlap else None,
            "throughput": m["mbs"] >= 0.9 * sync["mbs"] if m["compute"] == 0 else None}


def targets_text(t: dict) -> str:
    """The targets that apply, each met (yes) or missed (NO)."""
    return ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in t.items() if v is not None) or "—"


def link_bits(link: Optional[str]) -> float:
    """A testbed link rate in tc's units ("1gbit", "100mbit") as bits per second, to order rows by it; 0 without
    one (this machine), infinite when unshaped or not understood."""
    if not link:
        return 0.0
    for unit, scale in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)):
        if link.endswith(unit):
            try:
                return float(link[:-len(unit)]) * scale
            except ValueError:
                break
    return float("inf")


def caching_report(runs: list) -> list:
    """The table of issue 37 per experiment: per job shape, record size (phases) or grid (btio), compute and
    configuration the medians, the ratios to sync and the targets (for every configuration but sync)."""
    out = []
    for experiment, unit in (("phases_caching", "record"), ("btio_caching", "grid")):
        rs = [r for r in runs if r["experiment"] == experiment]
        if not rs:
            continue
        what = ("phases, collective writes (compute/phase: seconds before each I/O phase; write = the I/O phases as "
                "the kernel times them, max over ranks)" if experiment == "phases_caching" else
                "BT-IO (a dump after every step; compute/phase: seconds per step; write = the write calls, close = "
                "sync + close (the verification read's close included), from the statistics: per function the "
                "slowest rank's time)")
        out += ["", f"{what}; total = open to close; MB/s = bytes / (write + close); targets (issue 37, all but "
                    "sync): with compute >= sync's write, write <= 0.1 x sync's and total <= 1.1 x (compute + close); "
                    "with compute 0, MB/s >= 0.9 x sync's.", "",
                f"| hosts x ranks | device | {unit} | compute/phase s | configuration | write s | close s | total s | "
                "MB/s | write / sync | total / (compute + close) | MB/s / sync | targets |",
                "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        def row_key(r):
            return (link_bits(r.get("link")), r.get("link") or "", r["hosts"], r["per_host"], r["np"], r["device"],
                    r["targets"], r["record"], r["compute_per_phase"])
        for key in sorted({row_key(r) for r in rs}):
            mine = [r for r in rs if row_key(r) == key]
            names = list(dict.fromkeys(r["config"] for r in mine))
            m = {n: caching_medians([r for r in mine if r["config"] == n]) for n in names}
            link, key = key[1], key[2:]
            shape = (f"{key[0]} x {key[1]}" + (f" ({link})" if link else "")) if key[0] else f"local, np {key[2]}"
            device = f"{key[3]} x {key[4]}" if key[4] else key[3]
            size = key[5] if unit == "grid" else (f"{key[5] // KiB} KiB" if key[5] < KiB * KiB
                                                  else f"{key[5] // KiB // KiB} MiB")
            for n in CACHING_CONFIGS:
                if n not in m:
                    continue
                c, s = m[n], m.get("sync")
                ratio = c["total"] / (c["compute"] + c["close"]) if c["compute"] else None
                cells = [f"{c['write']:.4f}", f"{c['close']:.4f}", f"{c['total']:.3f}", f"{c['mbs']:.1f}",
                         f"{c['write'] / s['write']:.3f}" if s else "—", dash_or(ratio, ".3f"),
                         f"{c['mbs'] / s['mbs']:.2f}" if s else "—",
                         targets_text(caching_targets(s, c)) if s and n != "sync" else "—"]
                out.append(f"| {shape} | {device} | {size} | {key[6]:.3f} | {n} | " + " | ".join(cells) + " |")
        where = Counter(f"{r['config']}: {r.get('cached_at') or 'not staged'}" for r in rs)
        out += ["", "Where the collective writes were cached, as the statistics say (runs): "
                + "; ".join(f"{k} ({v})" for k, v in sorted(where.items())) + "."]
    return out


def report(data):
    runs, out = data["runs"], [f"Measured {data['date']}, {data['mpi']}; medians of {data['repeat']} repeats."]
    ph = [r for r in runs if r["experiment"] == "phases"]
    if ph:
        out += ["", "| device | np | record | compute/phase s | sync I/O s | staged I/O s | staged/sync I/O | "
                    "staged close s | staged total s | total / (compute + close) | throughput staged/sync |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        keys = sorted({(r["device"], r["np"], r["record"], r["compute_per_phase"]) for r in ph})
        for key in keys:
            rs = [r for r in ph if (r["device"], r["np"], r["record"], r["compute_per_phase"]) == key]
            s = [r for r in rs if phase_config(r) == "staged"]
            y = [r for r in rs if phase_config(r) == "sync"]
            io_s, io_y = med([r["io_seconds"] for r in s]), med([r["io_seconds"] for r in y])
            close_s, wall_s = med([r["close_seconds"] for r in s]), med([r["wall_seconds"] for r in s])
            comp = med([r["compute_seconds"] for r in s])
            tput = med([r["bytes"] / (r["io_seconds"] + r["close_seconds"]) for r in s]) / \
                med([r["bytes"] / (r["io_seconds"] + r["close_seconds"]) for r in y])
            rec = f"{key[2] // KiB} KiB" if key[2] < KiB * KiB else f"{key[2] // KiB // KiB} MiB"
            out.append(f"| {key[0]} | {key[1]} | {rec} | {key[3]:.3f} | {io_y:.4f} | {io_s:.4f} | "
                       f"{io_s / io_y:.3f} | {close_s:.4f} | {wall_s:.3f} | "
                       f"{wall_s / (comp + close_s) if comp else float('nan'):.3f} | {tput:.2f} |")
    out += phases_auto_report(ph)
    out += caching_report(runs)
    bt = [r for r in runs if r["experiment"] == "btio"]
    if bt:
        out += ["", "| device | np | configuration | write s | write / library's | job s (launch included) |",
                "| --- | ---: | --- | ---: | ---: | ---: |"]
        for key in sorted({(r["device"], r["np"]) for r in bt}):
            rs = [r for r in bt if (r["device"], r["np"]) == key]
            lib = med([r["write_seconds"] for r in rs if r["config"] == "library"])
            for name in BTIO_CONFIGS + ("auto",):
                if not any(r["config"] == name for r in rs):
                    continue
                w = med([r["write_seconds"] for r in rs if r["config"] == name])
                t = med([r["total_seconds"] for r in rs if r["config"] == name])
                label = name if name != "auto" else f"auto ({decisions([r for r in rs if r['config'] == name])})"
                out.append(f"| {key[0]} | {key[1]} | {label} | {w:.3f} | {w / lib:.3f} | {t:.2f} |")
    nc = [r for r in runs if r["experiment"] == "noncontig"]
    if nc:
        out += ["", "| device | configuration | write MB/s (median) |", "| --- | --- | ---: |"]
        for device in sorted({r["device"] for r in nc}):
            rs = [r for r in nc if r["device"] == device]
            by = {}
            for r in rs:
                name = "staged" if r["kind"] == "staged" else ", ".join(f"{k}={v}" for k, v in r["hints"].items())
                by.setdefault(name, []).append(r["mbs"])
            for name, v in sorted(by.items(), key=lambda kv: -med(kv[1])):
                out.append(f"| {device} | {name} | {med(v):.1f} |")
            best = max(med(v) for n, v in by.items() if n != "staged")
            out.append(f"| {device} | **staged / best ROMIO hints** | **{med(by['staged']) / best:.2f}** |")
    patterns = [r for r in runs if r["experiment"] == "patterns"]
    if patterns:
        out += pattern_report(patterns, data.get("dropped", [])) + dropped_report(data.get("dropped", []))
        if data.get("baseline"):
            out += pattern_baseline_report(patterns, data["baseline"])
    return "\n".join(out) + "\n"


def pattern_cells(runs: list) -> dict:
    """Per (device, row): per configuration the medians over its runs (MB/s, write s, sync+close s, the stage
    fields) and the runs' count; romio_best is the hint setting of the highest median MB/s, named in "hints"."""
    groups = {}
    for r in runs:
        name = r["config"] if r["config"] != "romio_hints" else "romio_hints: " + hint_label(r["hints"])
        groups.setdefault((r["device"], r["row"]), {}).setdefault(name, []).append(r)
    cells = {}
    for key, by in groups.items():
        m = {}
        for name, rs in by.items():
            closes = [r["sync_close_seconds"] for r in rs if r["sync_close_seconds"] is not None]
            fields = sorted({k for r in rs for k in (r["stage"] or {})})
            m[name] = {"mbs": med([r["mbs"] for r in rs]), "seconds": med([r["write_seconds"] for r in rs]),
                       "sync_close": med(closes) if closes else None, "runs": len(rs), "np": rs[0]["np"],
                       "pieces": rs[0]["pieces"], "calls": rs[0]["calls"], "how": rs[0]["how"],
                       "stage": {k: med([r["stage"][k] for r in rs if k in (r["stage"] or {})]) for k in fields}}
        hinted = {n: v for n, v in m.items() if n.startswith("romio_hints: ")}
        if hinted:
            best = max(hinted, key=lambda n: hinted[n]["mbs"])
            m["romio_best"] = {**hinted[best], "hints": best[len("romio_hints: "):]}
        cells[key] = m
    return cells


def pattern_ratio(m: dict, name: str, ref: str) -> str:
    """Throughput of name over ref (higher: name better), or a dash."""
    if name == ref or name not in m or ref not in m:
        return "—"
    return f"{m[name]['mbs'] / m[ref]['mbs']:.2f}"


def dash_or(x: Optional[float], spec: str) -> str:
    return "—" if x is None else format(x, spec)


def pattern_report(runs: list, dropped: list = ()) -> list:
    """The lines of the patterns experiment's tables: per device the throughputs and ratios (a configuration whose
    every job was killed: a line saying so), the staging statistics, then the counted jobs (--instructions)."""
    out = []
    killed = {(d["device"], d["row"], d["config"]): d["why"] for d in dropped if not d.get("hints")}
    cells = pattern_cells([r for r in runs if r["experiment"] == "patterns"])
    rows = list(dict.fromkeys(r["row"] for r in runs))
    for device in dict.fromkeys(k[0] for k in cells):
        out += ["", f"Device `{device}`: MB/s = bytes / visible write s (the kernel's write phase, through "
                    "MPI_File_close); sync+close s from the runtime's statistics; µs/piece = write s / pieces per "
                    "rank; ratios are throughputs (above 1: this configuration faster).", "",
                "| row | configuration | MB/s | visible write s | sync+close s | µs/piece | / write_through "
                "| / romio | / romio_best |",
                "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for row in rows:
            m = cells.get((device, row))
            if not m:
                continue
            for name in PATTERN_ORDER:
                if name not in m and (device, row, name) in killed:
                    out.append(f"| {row} | {name} | {killed[(device, row, name)]} |" + " — |" * 6)
                if name not in m:
                    continue
                c = m[name]
                label = f"romio_best ({c['hints']})" if name == "romio_best" else name
                per_piece = c["seconds"] / (c["pieces"] / c["np"]) * 1e6 if c["pieces"] else None
                cols = [row, label, f"{c['mbs']:.1f}", f"{c['seconds']:.4f}", dash_or(c["sync_close"], ".4f"),
                        dash_or(per_piece, ".3f")]
                cols += [pattern_ratio(m, name, ref) for ref in ("write_through", "romio", "romio_best")]
                if name.startswith("staged"):
                    cols[6:] = [f"**{x}**" if x != "—" else x for x in cols[6:]]
                out.append("| " + " | ".join(cols) + " |")
        stats = [(row, name, cells[(device, row)][name]["stage"]) for row in rows for name in PATTERN_ORDER
                 if (device, row) in cells and name in cells[(device, row)] and cells[(device, row)][name]["stage"]]
        if stats:
            out += ["", f"Staging statistics on `{device}` (medians; fields that are 0 in every run left out):", "",
                    "| row | configuration | statistics |", "| --- | --- | --- |"]
            for row, name, st in stats:
                text = ", ".join(f"{k} {v:.4g}" for k, v in st.items() if v) or "all 0"
                out.append(f"| {row} | {name} | {text} |")
    out += instruction_report([r for r in runs if r["experiment"] == "patterns_count"])
    return out


def pattern_baseline_report(runs: list, baseline: dict) -> list:
    """Each configuration run with the current and the --baseline library: the ratio of medians of the visible write
    seconds (below 1: faster now) and its 90 % paired bootstrap interval, per device and row."""
    out = ["", f"Against the baseline library ({baseline['path']}, sha256 {baseline['sha256'][:12]}), side by side in "
               "the same rounds: visible write s now / baseline.", "",
           "| device | row | configuration | now / baseline |", "| --- | --- | --- | ---: |"]
    def by_repeat(device, row, name):
        return {r["repeat"]: r["write_seconds"] for r in runs
                if (r["device"], r["row"], r["config"]) == (device, row, name)}
    for device, row, name in dict.fromkeys((r["device"], r["row"], r["config"]) for r in runs):
        old = by_repeat(device, row, name + BASELINE)
        if old:
            x, lo, hi = ratio_interval(by_repeat(device, row, name), old)
            out.append(f"| {device} | {row} | {name} | {x:.2f} [{lo:.2f}-{hi:.2f}] |")
    return out


def dropped_report(dropped: list) -> list:
    """The configurations left out of a row's repeats after one run."""
    if not dropped:
        return []
    return ["", "Left out after one run (a hint setting more than --hint-cutoff times romio's time, any job over "
                "--job-timeout): " + "; ".join(
                    f"{d['device']} {d['row']} " + (f"({hint_label(d['hints'])})" if d.get("hints") else d["config"])
                    + f": {d['why']}" for d in dropped) + "."]


def pattern_marginal(full: dict, base: dict, ref_full: dict, ref_base: dict, field: str, unit: str) -> Optional[float]:
    """What one more piece (unit "pieces") or call ("calls") costs in field under this configuration beyond what it
    costs under the reference: the difference of the two configurations' increments from the base job to the full
    one, over the increment of the unit. None where a count is missing."""
    values = [full[field], base[field], ref_full[field], ref_base[field]]
    units = full[unit], base[unit]
    if any(v is None for v in values + list(units)) or units[0] == units[1]:
        return None
    return ((values[0] - values[1]) - (values[2] - values[3])) / (units[0] - units[1])


def instruction_report(runs: list) -> list:
    """Per row and device, the counted jobs' instructions and CPU time, and what a piece (a call, for rows of at most
    16 pieces a call) costs beyond romio (whole jobs: the read-back is counted too, and at more than one rank MPI's
    busy-polling)."""
    if not runs:
        return []
    out = ["", "Instructions (user space) and CPU time (task-clock, ms) of whole jobs under `perf stat`, each "
               "configuration once at the row's size (full) and once at its smallest (base); Δ = what one more piece "
               "or call costs beyond romio (the full - base increments' difference over the pieces' or calls' "
               "increment), over all ranks; — where perf cannot count (no PMU) or the row has no such unit.", "",
           "| device | row | pieces | configuration | instructions full / base | CPU ms full / base | Δ instr/piece | "
           "Δ CPU µs/piece | Δ instr/call | Δ CPU µs/call |",
           "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    by = {(r["device"], r["row"], r["config"], r["size"]): r for r in runs}
    for (device, row, name, size), full in by.items():
        base, ref, ref_base = (by.get((device, row, name, "base")), by.get((device, row, "romio", "full")),
                               by.get((device, row, "romio", "base")))
        if size != "full" or not base:
            continue
        cells = []
        for unit in ("pieces", "calls"):
            for field, scale, spec in (("instructions", 1, ".0f"), ("task_clock_ms", 1e3, ".2f")):
                few = full["pieces"] is not None and full["calls"] and full["pieces"] <= 16 * full["calls"]
                m = (pattern_marginal(full, base, ref, ref_base, field, unit)
                     if ref and ref_base and name != "romio" and (unit == "pieces" or few) else None)
                cells.append(dash_or(None if m is None else m * scale, spec))
        counts = [f"{dash_or(full[f], spec)} / {dash_or(base[f], spec)}"
                  for f, spec in (("instructions", ".4g"), ("task_clock_ms", ".1f"))]
        out.append(f"| {device} | {row} | {full['how']} | {name} | {' | '.join(counts)} | {' | '.join(cells)} |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiment", nargs="?", choices=("phases", "btio", "noncontig", "patterns"))
    ap.add_argument("--mpi", choices=sorted(BUILDS), help="the MPI build (default mpich; openmpi with --hosts)")
    ap.add_argument("--configs", help="phases and btio: issue 37's table instead of the default runs: some of "
                                      + ",".join(CACHING_CONFIGS) + " side by side (sync always; phases collective)")
    ap.add_argument("--hosts", help="with --configs: run on the testbed's first N hosts (scripts/testbed up --hosts "
                                    "N beforehand), comma-separated to run several counts; replaces --np")
    ap.add_argument("--per-host", default="1", dest="per_host",
                    help="ranks per testbed host: one value, or one per --hosts value (default 1)")
    ap.add_argument("--targets", type=int, default=0, help="with --configs: files striped over this many emulated "
                    "targets of the one device of --devices (emulate.targets); 0: --devices as they are")
    ap.add_argument("--target-unit", type=int, default=65536, dest="target_unit",
                    help="stripe unit of the emulated targets (default 65536)")
    ap.add_argument("--np", help="process counts (default 1,2; patterns: one count, default 2)")
    ap.add_argument("--devices", default="none,disk")
    ap.add_argument("--sizes", default="1k,16k,64k,1m")
    ap.add_argument("--phase-mb", type=float, default=4, dest="phase_mb", help="MiB each process writes per phase")
    ap.add_argument("--phases", type=int, default=3)
    ap.add_argument("--layout", default="contiguous", choices=("contiguous", "interleaved"))
    ap.add_argument("--grid", type=int, default=48)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--compute", type=float, default=0.2, help="btio: seconds per solver step")
    ap.add_argument("--veclen", type=int, default=4096)
    ap.add_argument("--loops", type=int, default=32)
    ap.add_argument("--rows", help="patterns: the rows to run, comma-separated (default all)")
    ap.add_argument("--nc-veclen", type=int, default=1048576, dest="nc_veclen",
                    help="patterns: V, the 4-byte chunks of a noncontig-4B-count call (16 a datatype instance)")
    ap.add_argument("--nc64-veclen", type=int, default=524288, dest="nc64_veclen",
                    help="patterns: the 64-byte chunks of a noncontig-64B-count call (16 a datatype instance)")
    ap.add_argument("--nc-loops", type=int, default=2, dest="nc_loops", help="patterns: calls of the noncontig rows")
    ap.add_argument("--tile-rows", type=int, default=1048576, dest="tile_rows",
                    help="patterns: R, the 64-byte pieces of each process's tile")
    ap.add_argument("--small-loops", type=int, default=32768, dest="small_loops",
                    help="patterns: the calls of noncontig-small-calls")
    ap.add_argument("--ior-block", default="1g", dest="ior_block", help="patterns: -b of ior-coll-1m")
    ap.add_argument("--ior-block-4k", default="128m", dest="ior_block_4k", help="patterns: -b of ior-coll-4k")
    ap.add_argument("--flash-maxblocks", type=int, default=100, dest="flash_maxblocks",
                    help="patterns: FLASH-IO's --maxblocks")
    ap.add_argument("--flash-cells", type=int, default=16, dest="flash_cells",
                    help="patterns: FLASH-IO's --nxb, --nyb and --nzb")
    ap.add_argument("--profile", help="a machine profile: patterns adds staged_profile (staged with "
                                      "collective.profile naming it), phases and btio add auto (staging.enabled "
                                      "auto deciding by it)")
    ap.add_argument("--hint-cutoff", type=float, default=10, dest="hint_cutoff",
                    help="patterns: a hint setting whose write phase is slower than this many times romio's (its "
                         "job killed when longer than romio's by as much) is left out of the row's remaining repeats")
    ap.add_argument("--job-timeout", type=float, default=120, dest="job_timeout",
                    help="patterns: a job running longer is killed, its configuration left out of the row's repeats")
    ap.add_argument("--count-np", type=int, default=1, dest="count_np",
                    help="patterns: ranks of the --instructions jobs (default 1: MPICH busy-polls while a rank waits "
                         "for another, which whole-job counts would measure)")
    ap.add_argument("--instructions", action="store_true",
                    help="patterns: each configuration once more under perf stat (instructions, CPU time)")
    ap.add_argument("--baseline", help="patterns: another libiotame.so (say, of the commit before a change): every "
                    "configuration that loads the runtime, but the hint grid, also runs with it, named NAME@baseline, "
                    "in the same rounds, and the report gives the ratios of medians")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", help="where the runs' files go (default: a temporary directory)")
    ap.add_argument("--json", help="write every run here")
    ap.add_argument("--out", help="write the report here (Markdown)")
    ap.add_argument("--table", help="print the report of an earlier --json file")
    a = ap.parse_args()
    if a.table:
        text = report(json.loads(Path(a.table).read_text()))
    else:
        if not a.experiment:
            ap.error("name an experiment (phases, btio, noncontig, patterns) or --table")
        a.np = a.np or ("2" if a.experiment == "patterns" else "1,2")
        if a.experiment == "patterns":
            if not a.np.isdigit():
                ap.error(f"--np {a.np}: patterns runs at one process count")
            pattern_rows(a, int(a.np))  # the sizes' errors before anything runs
        if a.profile and not Path(a.profile).exists():
            ap.error(f"--profile {a.profile}: no such file or directory")
        if a.baseline and a.experiment != "patterns":
            ap.error("--baseline: patterns only")
        try:
            names = caching_arguments(a)
        except ValueError as e:
            ap.error(str(e))
        a.mpi = a.mpi or ("openmpi" if a.hosts else "mpich")
        a.setting = caching_setting(a, 0, 1, "none")  # the default experiments' (the caching ones set their own)
        a.link = testbed_link(max(h for h, _ in host_layouts(a.hosts, a.per_host))) if a.hosts else None
        data = {"date": time.strftime("%Y-%m-%d %H:%M"), "mpi": a.mpi, "repeat": a.repeat,
                "args": {k: v for k, v in vars(a).items() if k != "setting"}, "argv": sys.argv[1:], "runs": []}
        with tempfile.TemporaryDirectory(dir=a.dir, prefix="bench-staging-") as tmp, steady_memory() as memory:
            tmp = Path(tmp)
            data["memory"] = memory
            shutil.copy2(BUILDS[a.mpi] / "runtime" / "libiotame.so", tmp / "libiotame.so")
            if a.baseline:
                data["baseline"] = copy_baseline(a.baseline, tmp / "libiotame-baseline.so")
            if names:
                {"phases": phases_caching, "btio": btio_caching}[a.experiment](a, tmp, data, names)
            else:
                {"phases": phases, "btio": btio, "noncontig": noncontig, "patterns": patterns}[a.experiment](
                    a, tmp, data)
        text = report(data)
    if a.out:
        Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
