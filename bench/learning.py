#!/usr/bin/env python3
"""Learning across jobs (docs/design/fitted-model.md, "Every job corrects it"): a sequence of jobs that share one
knowledge file, each a new call signature of the same class, under `auto` with a machine profile whose fit is
deliberately wrong for one strategy (--perturb S=X adds X to that strategy's fitted log correction: -2 makes it
predicted 7.4 x faster than the fit says). The first job serves the wrong pick from the first call; the question is
how many jobs the corrections need before the best strategy serves the first call.

Per job: the strategy of each operation's first call (the decision's trace), how the model's pick served (trusted
alone, leading, deferred, a candidate explored before it, served on the class's measurements, or untrusted), what
the corrections rested on at the open, and the kernel's MB/s; the best fixed strategy of the case, from one job per
strategy and operation measured before the sequence (--fixed, median of --rounds), against which the first calls are
judged. The signature changes from job to job (the Matrix kernel's depth: rows per call), so no job starts from an
earlier job's winner: what carries over is the model's corrections alone.

Usage: bench/learning.py --profile P [--perturb view_based=-2] [--jobs 4] [--block-size 4k] [--depth 32]
                         [--fixed independent,passthrough,view_based] [--rounds 3] [--dir D] [--json F]
                         [--hosts N [--targets T] [--mpi openmpi]]

--perturb none keeps the profile as calibrated (a row it ranks wrongly as it is). --hosts runs the jobs on the
testbed's hosts (scripts/testbed up beforehand), --targets on emulated striped targets, as bench/collective.py does.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from iotame.bench.execute import verified_job  # noqa: E402
from iotame.bench.setting import Setting  # noqa: E402
from iotame.decisions import pick_way  # noqa: E402


def run_job(args, tmp, name, collective, depth):
    """One Matrix job (write, then read back) under the runtime: (kernel result, statistics)."""
    setting, config, stats = args.setting, tmp / f"{name}.json", tmp / f"{name}.stats.json"
    section = setting.section({"collective": collective}, setting.nprocs, tmp / "device.state")
    config.write_text(json.dumps({"version": 1, "defaults": section}))
    env = dict(os.environ, **setting.env(), LD_PRELOAD=str(setting.lib), IOTAME_CONFIG=str(config),
               IOTAME_STATS=str(stats))
    argv = setting.argv(setting.nprocs, setting.kernel, "matrix", "--block-size", args.block_size, "--depth", depth,
                        "--iterations", args.iterations, "--file", tmp / "learning.dat")
    try:
        return verified_job(argv, env, tmp, stats, 600)
    except RuntimeError as e:
        sys.exit(f"learning: {name} failed: {e}")


def mbs(result):
    return {ph["name"]: ph["mbs"] for ph in result["phases"]}


def first_calls(stats):
    """{op: (strategy of the first call, model's first, how the model's pick served, corrections' measurements)}."""
    out = {}
    for f in stats["files"]:
        coll = f.get("collective") or f
        for d in coll.get("decisions") or []:
            op = d["signature"]["op"]
            if op in out or not d.get("trace"):
                continue
            model = d.get("model") or {}
            corrections = (coll.get("profile") or {}).get("corrections") or {}
            how = pick_way(model) + (f" {model['explored']}" if model.get("explored") else "")
            out[op] = (d["trace"][0][0], model.get("first"), how, corrections.get("measurements"))
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
    ap.add_argument("--hosts", type=int, default=0)
    ap.add_argument("--targets", type=int, default=0)
    ap.add_argument("--mpi", choices=("mpich", "openmpi"))
    args = ap.parse_args()
    args.setting = Setting(args.hosts, 1, args.mpi, args.targets)
    profile = json.loads(args.profile.read_text())
    if args.perturb != "none":
        strategy, delta = args.perturb.split("=")
        fit = ((profile.get("strategies") or {}).get("fit") or {}).get("strategies") or {}
        if strategy not in fit:
            sys.exit(f"learning: {args.profile} has no fit of {strategy} to perturb (iotame calibrate measures it)")
        fit[strategy]["coef"][0] += float(delta)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="iotame-learning-") as t:
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
        print("| job | depth | op | first call | model's first | its way | corrections rest on | best? | MB/s |")
        print("| ---: | ---: | --- | --- | --- | --- | ---: | --- | ---: |")
        for job in jobs:
            for op in ("write", "read"):
                served, pick, how, measured = job["first"].get(op, ("-", "-", "-", None))
                print(f"| {job['job']} | {job['depth']} | {op} | {served} | {pick} | {how} | {measured} | "
                      f"{'yes' if served == best[op] else 'no'} | {job['mbs'][op]:.1f} |")
        if args.json:
            args.json.write_text(json.dumps({"fixed": fixed, "best": best, "jobs": jobs,
                                             "knowledge": json.loads(knowledge.read_text())}, indent=1))


if __name__ == "__main__":
    main()
