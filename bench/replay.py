#!/usr/bin/env python3
"""Is a replay worth tuning on? Record a job's I/O with the runtime's request trace, replay it from that record,
tune on the replay, and apply the configuration found to the real job side by side with the default.

  1. the job once under the runtime with `trace.requests` (its statistics are the record);
  2. `iotame replay spec RECORD` and `iotame tune` on `iotame-kernel replay --from SPEC` (the tuner's own final
     re-run gives tuned/default on the replay);
  3. the real job, the default and best.json alternately for --rounds rounds, as the tuner measures (the same
     objective, written files durable at close, the page cache dropped before each run when root);
  4. tuned/default on the replay against tuned/default on the real job, and the spread of the real job's default
     runs ((max - min) / median), the noise the two ratios are compared within.

The job defaults to the demo's (`make demo`): ROMIO's noncontig pattern, 2 ranks, collective, 64-byte pieces.
    bench/replay.py [--trials 20] [--rounds 7] [--np 2] [--dir D] [--json F] [-- KERNEL-ARGS...]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from iotame.paths import require_kernel  # noqa: E402
from iotame.replay.plan import to_spec  # noqa: E402
from iotame.replay.source import job_plan  # noqa: E402
from iotame.runner import run_command  # noqa: E402
from iotame.tune.final import Candidate, run_final  # noqa: E402
from iotame.tune.page_cache import PageCache  # noqa: E402

DEMO_JOB = ["noncontig", "--elmtcount", "16", "--veclen", "65536", "--collective"]
OBJECTIVE = "io-bandwidth"


def durable(config: dict) -> dict:
    """The configuration as the tuner runs it: written files made durable at close."""
    out = json.loads(json.dumps(config))
    out.setdefault("defaults", {}).setdefault("posix", {})["sync_at_close"] = True
    return out


def record(job: list[str], work: Path) -> Path:
    trace = work / "trace.json"
    trace.write_text(json.dumps({"version": 1, "defaults": {"trace": {"requests": 100000}}}))
    stats = work / "record.json"
    result = run_command(job, config=trace, stats_path=stats, capture=True)
    if result.returncode != 0:
        sys.exit(f"bench/replay.py: recording failed: {result.stderr}")
    return stats


def tune_on_replay(spec: Path, np: int, data: Path, out: Path, trials: int) -> dict:
    cmd = [str(ROOT / ".venv/bin/iotame"), "tune", "--trials", str(trials), "--out", str(out), "--dir", str(data),
           "--no-knowledge", "--study", "replay", "--", "mpiexec", "-n", str(np), str(require_kernel()), "replay",
           "--from", str(spec), "--dir", str(data / "replay")]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads((out / "summary.json").read_text())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--dir", type=Path, default=None, help="where the files go (default: a temporary directory)")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("kernel_args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    kernel_args = a.kernel_args[1:] if a.kernel_args[:1] == ["--"] else (a.kernel_args or DEMO_JOB)
    work = Path(tempfile.mkdtemp(prefix="iotame-bench-replay-", dir=a.dir))
    data = work / "data"
    data.mkdir()
    job = ["mpiexec", "-n", str(a.np), str(require_kernel()), *kernel_args, "--file", str(data / "job.dat")]

    rec = record(job, work)
    spec = work / "spec.json"
    spec.write_text(json.dumps(to_spec(job_plan(rec))))
    summary = tune_on_replay(spec, a.np, data, work / "tune", a.trials)
    best = json.loads((work / "tune" / "best.json").read_text())

    configs = {"default": durable({"version": 1}), "tuned": durable(best)}
    paths = {}
    for label, cfg in configs.items():
        paths[label] = work / f"{label}.json"
        paths[label].write_text(json.dumps(cfg))
    default, tuned = Candidate("default", None, paths["default"]), Candidate("tuned", None, paths["tuned"])
    run_final(job, default, [tuned], work / "real", OBJECTIVE, "maximize", a.rounds,
              page_cache=PageCache(True))
    d_vals, t_vals = [r.value for r in default.runs], [r.value for r in tuned.runs]
    if None in d_vals or None in t_vals:
        sys.exit("bench/replay.py: a run of the real job failed (see " + str(work / "real") + ")")
    real_ratio = statistics.median(t / d for t, d in zip(t_vals, d_vals))
    noise = (max(d_vals) - min(d_vals)) / statistics.median(d_vals)
    replay_ratio = summary["best"]["objective"] / summary["default"]["objective"]
    result = {"job": kernel_args, "np": a.np, "trials": a.trials, "rounds": a.rounds, "best": best,
              "replay": {"default": summary["default"]["objective"], "tuned": summary["best"]["objective"],
                         "ratio": replay_ratio},
              "real": {"default": statistics.median(d_vals), "tuned": statistics.median(t_vals),
                       "ratio": real_ratio, "default_runs": d_vals, "tuned_runs": t_vals, "noise": noise}}
    print(f"| | default MB/s | tuned MB/s | tuned / default |\n| --- | --- | --- | --- |\n"
          f"| replay (tuner's final re-run) | {result['replay']['default']:.0f} | {result['replay']['tuned']:.0f} | "
          f"{replay_ratio:.2f} |\n"
          f"| real job, {a.rounds} rounds side by side (median of paired ratios) | {result['real']['default']:.0f} | "
          f"{result['real']['tuned']:.0f} | {real_ratio:.2f} |\n\n"
          f"spread of the real job's default runs: {noise:.0%}; the replay's gain holds on the real job "
          f"{'within' if abs(real_ratio - replay_ratio) <= noise * replay_ratio else 'beyond'} that noise")
    print("best.json:", json.dumps(best.get("defaults", {})))
    if a.json:
        a.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
