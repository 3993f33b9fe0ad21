#!/usr/bin/env python3
"""The runtime's overhead: 1,000,000 independent 4 KiB MPI_File_write_at calls into the page cache (no sync),
without and with libiotame.so preloaded (statistics on; each call reaches the file system as one pwrite, which the
POSIX layer records), alternating A B A B ... in one run. With --baseline OLD/libiotame.so, that library runs too
(A B C A B C ...), to show what a change costs; --baseline-config F runs the baseline under the configuration F
(the same library by default: e.g. {"version": 1, "defaults": {"runtime": {"hang_seconds": 0}}} shows what the
watchdog costs). Prints each run's loop time, the medians and the ratios.
Usage: bench/overhead.py [--runs 7] [--writes N] [--dir D] [--baseline LIB] [--baseline-config F]"""
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


def one(preload, path, writes, stats, config=None):
    """preload: the library to preload, or None; config: IOTAME_CONFIG for it, or None."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}
    if preload:
        env.update(LD_PRELOAD=str(preload), IOTAME_STATS=str(stats))
    if preload and config:
        env["IOTAME_CONFIG"] = str(config)
    os.sync()  # the run before's dirty pages are written back now, not during this run's loop
    out = subprocess.run(["mpiexec", "-n", "1", str(PROGRAM), str(path), str(writes)], env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--writes", type=int, default=1_000_000)
    ap.add_argument("--dir", default=str(ROOT / "build"))
    ap.add_argument("--baseline", help="another libiotame.so (e.g. a build before a change), run side by side")
    ap.add_argument("--baseline-config", help="a configuration for the baseline's runs (default library: this one)")
    args = ap.parse_args()
    libs = {"plain": None, "iotame": LIB}
    if args.baseline or args.baseline_config:
        libs["baseline"] = Path(args.baseline).resolve() if args.baseline else LIB
    configs = {"baseline": Path(args.baseline_config).resolve()} if args.baseline_config else {}
    times = {name: [] for name in libs}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path, stats = Path(tmp) / "overhead.dat", Path(tmp) / "stats.json"
        one(None, path, 1000, stats)  # warm the page cache and the binaries
        for i in range(args.runs):
            for name, lib in libs.items():
                t = one(lib, path, args.writes, stats, configs.get(name))
                times[name].append(t)
                print(f"run {i + 1:2d} {name:8s} {t:8.3f} s  ({args.writes / t / 1e6:.2f} M writes/s)", flush=True)
    plain, wrapped = statistics.median(times["plain"]), statistics.median(times["iotame"])
    print(f"median plain {plain:.3f} s, with libiotame {wrapped:.3f} s: ratio {wrapped / plain:.4f} "
          f"({(wrapped / plain - 1) * 100:+.2f} %), {(wrapped - plain) / args.writes * 1e9:+.1f} ns per call")
    if "baseline" in libs:
        base = statistics.median(times["baseline"])
        print(f"median baseline {base:.3f} s: ratio to plain {base / plain:.4f}; libiotame to baseline "
              f"{wrapped / base:.4f} ({(wrapped - base) / args.writes * 1e9:+.1f} ns per call)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
