#!/usr/bin/env python3
"""auto against the fixed strategy it serves, on checkpoint files that see one collective call each (issue 20:
"auto must cost nothing measurable where there is nothing to choose"). Runs bench/collective_checkpoint (open,
set_view, seek, write_all, sync, close per file; noncontiguous in memory and file) under each configuration in turn
(A B A B ...), takes each job's median seconds per file, and prints the medians over the jobs and their ratio.

    bench/collective_checkpoint.py [--np 2] [--repeat 20] [--files 8] [--block 4096] [--blocks 256] [--dir D]
                                   [--lib build/runtime/libiotame.so] [--fixed independent[,passthrough,...]]
                                   [--profile PROFILE.json]

With --profile, `auto_model` (auto predicting with that machine profile, issue 31) runs too, and the summary gives
its ratio to the fixed strategy it served and to the best fixed strategy (the first of --fixed is the one plain
`auto` is compared with).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(args, lib, config, workdir):
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        cfg, stats = Path(tmp, "c.json"), Path(tmp, "s.json")
        cfg.write_text(json.dumps({"version": 1, "defaults": {"collective": config}}))
        env = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_")}
        env.update(LD_PRELOAD=str(lib), IOTAME_CONFIG=str(cfg), IOTAME_STATS=str(stats))
        out = subprocess.run(["mpiexec", "-n", str(args.np), str(ROOT / "build/bench/collective_checkpoint"), tmp,
                              str(args.block), str(args.blocks), str(args.files)],
                             env=env, capture_output=True, text=True, check=True).stdout
        served = {}
        for f in json.loads(stats.read_text())["files"]:
            for name, s in f.get("strategies", {}).items():
                served[name] = served.get(name, 0) + s["calls"]
        return json.loads(out)["median_seconds"], served


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--block", type=int, default=4096)
    p.add_argument("--blocks", type=int, default=256)
    p.add_argument("--dir", default=None, help="where the checkpoint files go (default: a temporary directory)")
    p.add_argument("--lib", default=str(ROOT / "build/runtime/libiotame.so"))
    p.add_argument("--fixed", default="independent",
                   help="the fixed strategies auto is compared with, comma-separated (the first: plain auto's)")
    p.add_argument("--profile", help="a machine profile: auto_model predicts with it")
    args = p.parse_args()
    fixed = args.fixed.split(",")
    configs = {"auto": {"strategy": "auto"}, **{f: {"strategy": f} for f in fixed}}
    if args.profile:
        configs["auto_model"] = {"strategy": "auto", "profile": str(Path(args.profile).resolve())}
    times = {name: [] for name in configs}
    served = {}
    for _ in range(args.repeat):
        for name, config in configs.items():
            seconds, s = run(args, args.lib, config, args.dir)
            times[name].append(seconds)
            served[name] = s
    med = {name: statistics.median(t) for name, t in times.items()}
    for name in configs:
        print(f"{name:>14}: median {med[name] * 1e3:8.3f} ms per file over {args.repeat} jobs "
              f"(jobs' medians {min(times[name]) * 1e3:.3f}-{max(times[name]) * 1e3:.3f} ms); served {served[name]}")
    print(f"auto / {fixed[0]}: {med['auto'] / med[fixed[0]]:.3f}")
    if args.profile:   # times: lower is better, so a ratio of times above 1 is slower
        best = min(fixed, key=med.get)
        mine = max(served["auto_model"], key=served["auto_model"].get)
        if mine in med:
            print(f"auto_model served {mine}: time / {mine} alone {med['auto_model'] / med[mine]:.3f}")
        print(f"auto_model time / best fixed ({best}): {med['auto_model'] / med[best]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
