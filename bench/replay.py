#!/usr/bin/env python3
"""Is a replay worth tuning on? Record a job's I/O with the runtime's request trace, replay it from that record,
tune on the replay, and apply the configuration found to the real job side by side with the default.

  1. the job once under the runtime with `trace.requests` (its statistics are the record);
  2. `iotame replay spec RECORD` and `iotame tune` on `iotame-kernel replay --from SPEC` (the tuner's own final
     re-run gives tuned/default on the replay);
  3. the replay and the real job, each under the default and best.json, one after the other for --rounds rounds, as
     the tuner measures (the same objective, written files durable at close, the page cache dropped before each
     run when root);
  4. tuned/default per round on the replay and on the real job: the gain holds within the noise when each median
     lies inside the other's range of per-round ratios.

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
from iotame.tune.measure import run_once  # noqa: E402
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


def side_by_side(jobs: dict[str, list[str]], configs: dict[str, Path], out: Path, rounds: int) -> dict:
    """Every job under every configuration, one after the other in each round (A B C D A B C D ...), measured as
    the tuner measures: its objective, the page cache dropped before each run when root."""
    cache = PageCache(True)
    values = {name: {label: [] for label in configs} for name in jobs}
    for r in range(rounds):
        for name, argv in jobs.items():
            for label, config in configs.items():
                run = run_once(argv, config, out / name.replace(" ", "-") / label / f"run-{r + 1}", OBJECTIVE,
                               page_cache=cache)
                if run.value is None:
                    sys.exit(f"bench/replay.py: {name} under {label} failed: {run.error} (see {run.dir})")
                values[name][label].append(run.value)
    return values


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

    configs = {}
    for label, cfg in (("default", durable({"version": 1})), ("tuned", durable(best))):
        configs[label] = work / f"{label}.json"
        configs[label].write_text(json.dumps(cfg))
    replay = ["mpiexec", "-n", str(a.np), str(require_kernel()), "replay", "--from", str(spec), "--dir",
              str(data / "replay")]
    values = side_by_side({"replay": replay, "real job": job}, configs, work / "measure", a.rounds)
    result = {"job": kernel_args, "np": a.np, "trials": a.trials, "rounds": a.rounds, "best": best,
              "tuner": {"default": summary["default"]["objective"], "tuned": summary["best"]["objective"]}}
    print("| job | default MB/s | tuned MB/s | tuned / default: median (min - max) of the rounds |")
    print("| --- | --- | --- | --- |")
    for name, v in values.items():
        ratios = [t / d for t, d in zip(v["tuned"], v["default"])]
        result[name] = {**v, "ratios": ratios, "ratio": statistics.median(ratios)}
        print(f"| {name} | {statistics.median(v['default']):.0f} | {statistics.median(v['tuned']):.0f} | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f} - {max(ratios):.2f}) |")
    rep_, real = result["replay"], result["real job"]
    within = min(rep_["ratios"]) <= real["ratio"] <= max(rep_["ratios"]) and \
        min(real["ratios"]) <= rep_["ratio"] <= max(real["ratios"])
    print(f"\nthe gain found on the replay {'holds' if within else 'does not hold'} on the real job within the "
          f"noise (each median inside the other's range of per-round ratios)")
    print("best.json:", json.dumps(best.get("defaults", {})))
    if a.json:
        a.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
