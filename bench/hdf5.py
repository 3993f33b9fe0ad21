#!/usr/bin/env python3
"""HDF5 properties applied by the runtime (runtime/src/hdf5; Behzad et al., SC13, H5Tuner) on the paper's kernels:
VPIC-IO, VORPAL-IO and GCRM-IO under the defaults and under a few hand-picked `hdf5` configurations (alignment,
chunk size, collective metadata), side by side.

Every run is two jobs under libiotame.so with the configuration: the kernel writes (timed through H5Fflush, i.e.
MPI_File_sync) and keeps its file; its files are written back and evicted from the page cache (any user; other processes' cached
data stays); the kernel reads back and verifies (--skip-write). Configurations alternate within each round
(A B C ... A B C ...). Prints every run, then per kernel the median MB/s of each configuration and its ratio to the
defaults, and checks that the statistics say each property was applied.

Usage: bench/hdf5.py [--runs 3] [--np 2] [--kernels vpicio,vorpalio,gcrmio] [--dir D] [--small] [--json F]
       bench/hdf5.py --table F      (the table of an earlier --json F)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from iotame.bench.caches import evict
from iotame.bench.memory import steady_memory

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "build" / "kernels" / "iotame-kernel"
LIB = ROOT / "build" / "runtime" / "libiotame.so"

# The paper's kernels, scaled to this machine (per rank: 64 MB, 58 MB, 59 MB); transfers as in the benchmarks.
KERNELS = {
    "vpicio": ["--particles", "2097152", "--collective"],
    "vorpalio": ["--block", "100x100x60", "--components", "3", "--steps", "4", "--collective"],
    "gcrmio": ["--cells", "65536", "--levels", "25"],
}
SMALL = {
    "vpicio": ["--particles", "65536", "--collective"],
    "vorpalio": ["--block", "20x20x12", "--steps", "2", "--collective"],
    "gcrmio": ["--cells", "2048", "--levels", "25"],
}
CONFIGS = {
    "defaults": {},
    "align 1M": {"alignment": 1048576, "alignment_threshold": 65536},
    "chunk 4M": {"chunk_bytes": 4194304},
    "coll md": {"coll_metadata_reads": True, "coll_metadata_writes": True},
    "align+md 4M": {"alignment": 1048576, "alignment_threshold": 65536, "meta_block_size": 4194304,
                    "coll_metadata_reads": True, "coll_metadata_writes": True},
}


def drop_caches(work):
    """Writes back and evicts the files in `work` (the job's) from the page cache; whether it could. Other
    processes' cached data stays (docs/design/page-cache.md)."""
    return not evict([work]).errors


def job(np_, kernel, args, config, stats, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=str(LIB), IOTAME_CONFIG=str(config), IOTAME_STATS=str(stats))
    p = subprocess.run(["mpiexec", "-n", str(np_), str(KERNEL), kernel, *args], env=env, cwd=cwd,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{kernel} {' '.join(args)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    res = json.loads(p.stdout)
    if res["verified"] is not True:
        raise RuntimeError(f"{kernel}: data did not verify: {res['errors'][:3]}")
    return res


def applied(stats):
    """What the statistics say was applied, and what not (first file with an hdf5 record)."""
    for f in json.loads(Path(stats).read_text())["files"]:
        if "hdf5" in f:
            h = f["hdf5"]
            chunks = {tuple(d["chunk"]) for d in h["datasets"].values() if "chunk" in d}
            return h["applied"], sorted(chunks), h["not_applied"]
    return {}, [], []


def table(runs, kernels):
    """Markdown: per kernel and configuration, median MB/s (min-max over the rounds) and the ratio of medians to
    the defaults."""
    lines = ["| kernel | MB written | configuration | write MB/s (min-max) | ratio | read MB/s (min-max) | ratio |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    for kernel in kernels:
        base = None
        for name in CONFIGS:
            mine = [x for x in runs if x["kernel"] == kernel and x["config"] == name]
            w, r = [x["write_mbs"] for x in mine], [x["read_mbs"] for x in mine]
            wm, rm = statistics.median(w), statistics.median(r)
            base = base or (wm, rm)
            lines.append(f"| {kernel} | {mine[0]['bytes'] / 1e6:.0f} | {name} | {wm:.0f} ({min(w):.0f}-{max(w):.0f}) | "
                         f"{wm / base[0]:.2f} | {rm:.0f} ({min(r):.0f}-{max(r):.0f}) | {rm / base[1]:.2f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--kernels", default="vpicio,vorpalio,gcrmio")
    ap.add_argument("--dir", default=str(ROOT / "build"), help="where the files go (default build/)")
    ap.add_argument("--small", action="store_true", help="tiny sizes: checks the script, measures nothing")
    ap.add_argument("--json", help="also write every run to this file")
    ap.add_argument("--table", help="print the table of a --json file of an earlier run, run nothing")
    args = ap.parse_args()
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    if args.table:
        print(table(json.loads(Path(args.table).read_text()), kernels))
        return 0
    sizes = SMALL if args.small else KERNELS
    runs, cold = [], True
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-hdf5-") as tmp, steady_memory() as memory:
        tmp = Path(tmp)
        print(memory, flush=True)
        for name, hdf5 in CONFIGS.items():
            cfg = {"version": 1, "defaults": {"hdf5": hdf5}} if hdf5 else {"version": 1}
            (tmp / f"{name.replace(' ', '_')}.json").write_text(json.dumps(cfg))
        for r in range(args.runs):
            for kernel in kernels:
                for name in CONFIGS:
                    config = tmp / f"{name.replace(' ', '_')}.json"
                    work = tmp / "run"
                    work.mkdir()
                    w = job(args.np, kernel, [*sizes[kernel], "--keep"], config, tmp / "w.json", work)
                    cold = drop_caches(work) and cold
                    rd = job(args.np, kernel, [*sizes[kernel], "--skip-write"], config, tmp / "r.json", work)
                    subprocess.run(["rm", "-rf", str(work)], check=True)
                    wmbs = next(p["mbs"] for p in w["phases"] if p["name"] == "write")
                    rmbs = next(p["mbs"] for p in rd["phases"] if p["name"] == "read")
                    props, chunks, missed = applied(tmp / "w.json")
                    runs.append({"round": r + 1, "kernel": kernel, "config": name, "write_mbs": wmbs,
                                 "read_mbs": rmbs, "applied": props, "chunks": chunks, "not_applied": missed,
                                 "bytes": next(p["bytes"] for p in w["phases"] if p["name"] == "write")})
                    print(f"round {r + 1} {kernel:9s} {name:12s} write {wmbs:8.1f} MB/s  read {rmbs:8.1f} MB/s"
                          f"{'  NOT APPLIED: ' + json.dumps(missed) if missed else ''}", flush=True)
    print(f"\n{args.np} ranks, {args.runs} rounds, medians; reads {'after dropping the page cache' if cold else 'FROM THE PAGE CACHE (not root)'}; {memory}")
    print(table(runs, kernels))
    print("\nconfigurations (defaults.hdf5):")
    for name, hdf5 in CONFIGS.items():
        chunks = sorted({c for x in runs if x["config"] == name for c in map(tuple, x["chunks"])})
        print(f"  {name:12s} {json.dumps(hdf5)}" + (f"  chunks: {len(chunks)} shapes, e.g. {list(chunks[0])}" if chunks else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
