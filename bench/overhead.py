#!/usr/bin/env python3
"""The runtime's overhead: 1,000,000 independent 4 KiB MPI_File_write_at calls into the page cache (no sync),
without and with libiotame.so preloaded (statistics on), alternating A B A B ... in one run.
Prints each run's loop time, the medians and the ratio. Usage: bench/overhead.py [--runs 7] [--writes N] [--dir D]"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "build" / "bench" / "overhead_writes"
LIB = ROOT / "build" / "runtime" / "libiotame.so"


def one(preload, path, writes, stats):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}
    if preload:
        env.update(LD_PRELOAD=str(LIB), IOTAME_STATS=str(stats))
    out = subprocess.run(["mpiexec", "-n", "1", str(PROGRAM), str(path), str(writes)], env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--writes", type=int, default=1_000_000)
    ap.add_argument("--dir", default=str(ROOT / "build"))
    args = ap.parse_args()
    times = {"plain": [], "iotame": []}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path, stats = Path(tmp) / "overhead.dat", Path(tmp) / "stats.json"
        one(False, path, 1000, stats)  # warm the page cache and the binaries
        for i in range(args.runs):
            for name in ("plain", "iotame"):
                t = one(name == "iotame", path, args.writes, stats)
                times[name].append(t)
                print(f"run {i + 1:2d} {name:7s} {t:8.3f} s  ({args.writes / t / 1e6:.2f} M writes/s)", flush=True)
    plain, wrapped = statistics.median(times["plain"]), statistics.median(times["iotame"])
    print(f"median plain {plain:.3f} s, with libiotame {wrapped:.3f} s: ratio {wrapped / plain:.4f} "
          f"({(wrapped / plain - 1) * 100:+.2f} %), {(wrapped - plain) / args.writes * 1e9:+.1f} ns per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
