#!/usr/bin/env python3
"""Learning across jobs (docs/design/fitted-model.md, "Every job corrects it"): a sequence of jobs that share one
knowledge file, each a new call signature of the same class, under `auto` with a machine profile whose fit is
deliberately wrong for one strategy (--perturb S=X adds X to that strategy's fitted log correction: -2 makes it
predicted 7.4 x faster than the fit says). The first job serves the wrong pick from the first call; the question is
how many jobs the corrections need before the best strategy serves the first call.

Per job: the strategy of each operation's first call (the decision's trace), whether the model's pick was trusted,
what the corrections rested on at the open, and the kernel's MB/s; the best fixed strategy of the case, from one
job per strategy and operation measured before the sequence (--fixed, median of --rounds), against which the first
calls are judged. The signature changes from job to job (the Matrix kernel's depth: rows per call), so no job
starts from an earlier job's winner: what carries over is the model's corrections alone.

Usage: bench/learning.py --profile P [--perturb view_based=-2] [--jobs 4] [--block-size 4k] [--depth 32]
                         [--fixed independent,passthrough,view_based] [--rounds 3] [--dir D] [--json F]
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
KERNEL = ROOT / "build" / "kernels" / "iotame-kernel"
LIB = ROOT / "build" / "runtime" / "libiotame.so"


def run_job(args, tmp, name, collective, depth):
    """One Matrix job (write, then read back) under the runtime: (kernel result, statistics)."""
    config, stats = tmp / f"{name}.json", tmp / f"{name}.stats.json"
    config.write_text(json.dumps({"version": 1, "defaults": {"collective": collective}}))
    env = dict(os.environ, IOTAME_CONFIG=str(config), IOTAME_STATS=str(stats))
    cmd = ["mpiexec", "-n", "2", "-genv", "LD_PRELOAD", str(LIB), str(KERNEL), "matrix", "--block-size",
           args.block_size, "--depth", str(depth), "--iterations", str(args.iterations),
           "--file", str(Path(args.dir) / "learning.dat")]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    line = next((x for x in p.stdout.splitlines() if x.startswith("{")), None)
    if p.returncode != 0 or line is None or not json.loads(line).get("verified"):
        sys.exit(f"learning: {name} failed (exit {p.returncode}): {p.stderr[-500:]}")
    return json.loads(line), json.loads(stats.read_text())


def mbs(result):
    return {ph["name"]: ph["mbs"] for ph in result["phases"]}


def first_calls(stats):
    """{op: (strategy of the first call, model's first, trusted, corrections' measurements)}."""
    out = {}
    for f in stats["files"]:
        coll = f.get("collective") or f
        for d in coll.get("decisions") or []:
            op = d["signature"]["op"]
            if op in out or not d.get("trace"):
                continue
            model = d.get("model") or {}
            corrections = (coll.get("profile") or {}).get("corrections") or {}
            out[op] = (d["trace"][0][0], model.get("first"), model.get("trusted"), corrections.get("measurements"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", required=True, type=Path)
    ap.add_argument("--perturb", default="view_based=-2")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--block-size", default="4k")
    ap.add_argument("--depth", type=int, default=32)
    ap.add_argument("--iterations", type=int, default=16)
    ap.add_argument("--fixed", default="independent,passthrough,two_phase,view_based")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=str(ROOT / "build"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    strategy, delta = args.perturb.split("=")
    profile = json.loads(args.profile.read_text())
    fit = ((profile.get("strategies") or {}).get("fit") or {}).get("strategies") or {}
    if strategy not in fit:
        sys.exit(f"learning: {args.profile} has no fit of {strategy} to perturb (iotame calibrate --np 2 measures it)")
    fit[strategy]["coef"][0] += float(delta)
    with tempfile.TemporaryDirectory(prefix="iotame-learning-") as t:
        tmp = Path(t)
        perturbed = tmp / "perturbed.json"
        perturbed.write_text(json.dumps(profile))
        fixed = {}
        for s in args.fixed.split(","):
            runs = [mbs(run_job(args, tmp, f"fixed-{s}", {"strategy": s}, args.depth)[0]) for _ in range(args.rounds)]
            fixed[s] = {op: statistics.median(r[op] for r in runs) for op in ("write", "read")}
            print(f"fixed {s:15s} write {fixed[s]['write']:8.1f} MB/s  read {fixed[s]['read']:8.1f} MB/s",
                  file=sys.stderr)
        best = {op: max(fixed, key=lambda s: fixed[s][op]) for op in ("write", "read")}
        knowledge = tmp / "knowledge.json"
        jobs = []
        for j in range(args.jobs):
            result, stats = run_job(args, tmp, f"job{j + 1}", {"strategy": "auto", "profile": str(perturbed),
                                                               "knowledge": str(knowledge), "trace": 4},
                                    args.depth + j)
            jobs.append({"job": j + 1, "depth": args.depth + j, "mbs": mbs(result), "first": first_calls(stats)})
        print(f"best fixed: write {best['write']}, read {best['read']} (medians of {args.rounds}); "
              f"perturbed: {args.perturb}")
        print("| job | depth | op | first call | model's first | trusted | corrections rest on | best? | MB/s |")
        print("| ---: | ---: | --- | --- | --- | --- | ---: | --- | ---: |")
        for job in jobs:
            for op in ("write", "read"):
                served, pick, trusted, measured = job["first"].get(op, ("-", "-", None, None))
                print(f"| {job['job']} | {job['depth']} | {op} | {served} | {pick} | {trusted} | {measured} | "
                      f"{'yes' if served == best[op] else 'no'} | {job['mbs'][op]:.1f} |")
        if args.json:
            args.json.write_text(json.dumps({"fixed": fixed, "best": best, "jobs": jobs,
                                             "knowledge": json.loads(knowledge.read_text())}, indent=1))


if __name__ == "__main__":
    main()
