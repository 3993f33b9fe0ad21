#!/usr/bin/env python3
"""Which sampler finds a good configuration in the fewest trials. ga, tpe, random and grid each tune the same cheap
real workload over the built-in space of the local file system, N trials, several seeds. The studies of one seed
run in lockstep, one trial each in turn, and every round also runs the default once, so that a slow drift of the
machine (other jobs) hits every sampler alike and each trial's value can be taken relative to the default measured
around it (median of the defaults of the 5 nearest rounds).

"Good" is relative to a reference: the best configurations any study saw are re-run alternately with the default
(--reference-repeat rounds); the reference is the best median ratio to the default. Per study: the first trial
whose ratio to the default is within 20, 10 and 5 % of the reference (N+1 when never), and what the study would
declare best after 10, 20 and N trials (its best measurement so far, no final re-run) re-run alternately with the
default, as a fraction of the reference: how good the found best really is. Medians over seeds per sampler.

Workload: `mpiexec -n 2 iotame-kernel noncontig --elmtcount 16 --veclen 16384 --collective` (64-byte elements),
or ior with 64-byte collective transfers when the noncontig kernel is missing. No knowledge base; the page cache
is not dropped unless --drop-caches.

Usage: bench/tuners.py [--trials 40] [--seeds 5] [--samplers ga,tpe,random,grid] [--out DIR]"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from iotame.config import save_config  # noqa: E402
from iotame.paths import kernel_path  # noqa: E402
from iotame.tune import TuneSpec, Tuner, builtin_space  # noqa: E402
from iotame.tune.measure import run_once  # noqa: E402
from iotame.tune.study import quiet_optuna  # noqa: E402

NPROCS = 2
LEVELS = (0.8, 0.9, 0.95)   # "good": within 20, 10 and 5 % of the reference
CHECKPOINTS = (10, 20)      # trials after which the declared best is re-run (and after the last)
WINDOW = 2          # rounds on each side whose default runs normalize a trial


def workload(tmp: Path) -> list[str]:
    kernel = str(kernel_path())
    names = subprocess.run([kernel, "--list"], capture_output=True, text=True).stdout.split()
    if "noncontig" in names:
        return ["mpiexec", "-n", str(NPROCS), kernel, "noncontig", "--elmtcount", "16", "--veclen", "16384",
                "--collective", "--file", str(tmp / "noncontig.dat")]
    return ["mpiexec", "-n", str(NPROCS), kernel, "ior", "-c", "-w", "-r", "-b", "64", "-t", "64", "-s", "4096",
            "-o", str(tmp / "ior.dat")]


def key(config: dict) -> str:
    return json.dumps(config.get("defaults") or {}, sort_keys=True)


def alternate(argv, configs: dict[str, Path], default: Path, rounds: int, where: Path) -> dict[str, float]:
    """Median over rounds of each configuration's value over the default's in the same round (D A B C D A B C)."""
    ratios: dict[str, list[float]] = {k: [] for k in configs}
    for r in range(rounds):
        d = run_once(argv, default, where / f"default-{r}", "io-bandwidth")
        for k, path in configs.items():
            o = run_once(argv, path, where / f"{path.stem}-{r}", "io-bandwidth")
            if d.ok and o.ok and d.value > 0:
                ratios[k].append(o.value / d.value)
    return {k: statistics.median(v) if v else 0.0 for k, v in ratios.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--samplers", default="ga,tpe,random,grid")
    ap.add_argument("--reference-top", type=int, default=6)
    ap.add_argument("--reference-repeat", type=int, default=5)
    ap.add_argument("--best-repeat", type=int, default=3)
    ap.add_argument("--drop-caches", action="store_true")
    ap.add_argument("--out", type=Path, help="keep the studies in DIR (default: a temporary directory)")
    args = ap.parse_args()
    quiet_optuna()
    samplers = args.samplers.split(",")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="iotame-tuners-") as tmpdir:
        base = args.out or Path(tmpdir)
        base.mkdir(parents=True, exist_ok=True)
        argv = workload(Path(tmpdir))
        default_cfg = save_config({"version": 1}, base / "default.json")
        print(f"workload: {' '.join(argv)}\n{args.trials} trials x {args.seeds} seeds x {', '.join(samplers)}, "
              f"in lockstep with a default run every round\nstudies in {base}"
              + ("" if args.out else " (temporary: removed at the end; --out DIR keeps them)"), flush=True)
        space = builtin_space("local", NPROCS)
        studies = []          # (sampler, seed, [(ratio to the default around it, config)], declared best config)
        for seed in range(1, args.seeds + 1):
            tuners = {}
            for s in samplers:
                spec = TuneSpec(argv=tuple(argv), nprocs=NPROCS, fs="local", space=space, out=base / f"{s}-{seed}",
                                study=f"{s}-{seed}", sampler=s, trials=args.trials, final_repeat=0, seed=seed,
                                drop_caches=args.drop_caches, knowledge=None)
                tuners[s] = Tuner(spec)
                tuners[s].start()
            defaults: list[float] = []
            trials: dict[str, list[tuple[int, float | None, dict]]] = {s: [] for s in samplers}
            for s, t in tuners.items():      # the default trials ran back to back just before round 0
                trials[s].append((0, t.default.value, {}))
            for r in range(args.trials - 1):
                d = run_once(argv, default_cfg, base / "defaults" / f"{seed}-{r}", "io-bandwidth")
                defaults.append(d.value if d.ok else float("nan"))
                for s, t in tuners.items():
                    rec = t.step()
                    if rec is not None:
                        cfg = t.study.trials[rec.number].user_attrs.get("config", {})
                        trials[s].append((r, rec.value, cfg))
            for s, t in tuners.items():
                summary = t.finish().summary
                norm = [(1.0, {})]               # the default trial: the default, by definition
                for r, value, cfg in trials[s][1:]:
                    near = [v for v in defaults[max(0, r - WINDOW):r + WINDOW + 1] if v == v]
                    norm.append(((value / statistics.median(near)) if value is not None and near else None, cfg))
                # what the study would have declared best after k trials: its best raw measurement so far
                declared = {}
                for k in CHECKPOINTS + (args.trials,):
                    done = [(v, cfg) for _, v, cfg in trials[s][:k] if v is not None]
                    declared[min(k, args.trials)] = max(done, key=lambda d: d[0])[1] if done else {}
                studies.append((s, seed, norm, declared))
                print(f"  {s}-{seed:<3d} best {summary['best']['objective']:7.1f} MB/s (trial "
                      f"{summary['best']['trial']:2d}), default {summary['default']['objective']:6.1f}  "
                      f"[{time.monotonic() - t0:5.0f} s]", flush=True)
            print(f"  seed {seed}: default median {statistics.median([v for v in defaults if v == v]):.1f} MB/s "
                  f"over {len(defaults)} rounds", flush=True)

        # the reference: the best configurations seen anywhere, re-run alternately with the default
        seen: dict[str, tuple[float, dict]] = {}
        for _, _, norm, _ in studies:
            for ratio, cfg in norm:
                if ratio is not None and cfg.get("defaults") and (key(cfg) not in seen or ratio > seen[key(cfg)][0]):
                    seen[key(cfg)] = (ratio, cfg)
        top = sorted(seen.values(), key=lambda v: -v[0])[:args.reference_top]
        ref_dir = base / "reference"
        ref_dir.mkdir(exist_ok=True)
        configs = {key(cfg): save_config({"version": 1, "defaults": cfg["defaults"]}, ref_dir / f"c{i}.json")
                   for i, (_, cfg) in enumerate(top)}
        ref = alternate(argv, configs, default_cfg, args.reference_repeat, ref_dir)
        ref[key({})] = 1.0                  # the default itself
        reference = max(ref.values())
        best_key = max(ref, key=ref.get)
        print(f"reference: {reference:.2f}x the default (median of {args.reference_repeat} alternating rounds): "
              f"{best_key}", flush=True)

        def worth(cfg: dict, name: str) -> float:
            """The true worth of a configuration: its median ratio to the default over alternating re-runs, as a
            fraction of the reference (cached by configuration)."""
            k = key(cfg)
            if k not in ref:
                path = save_config({"version": 1, "defaults": cfg["defaults"]}, ref_dir / f"best-{name}.json")
                ref.update(alternate(argv, {k: path}, default_cfg, args.best_repeat, ref_dir))
            return ref[k] / reference

        checks = sorted(set(CHECKPOINTS + (args.trials,)) & set(range(1, args.trials + 1)))
        rows: dict[str, list[tuple[list[int], list[float]]]] = {s: [] for s in samplers}
        for s, seed, norm, declared in studies:
            reach = [next((i + 1 for i, (ratio, _) in enumerate(norm)
                           if ratio is not None and ratio >= level * reference), args.trials + 1)
                     for level in LEVELS]
            worths = [worth(declared[k], f"{s}-{seed}-{k}") for k in checks]
            rows[s].append((reach, worths))
            print(f"  {s}-{seed:<3d} trials to " + ", ".join(
                f"{level:.0%}: {n if n <= args.trials else 'never'}" for level, n in zip(LEVELS, reach)) +
                "   declared best re-run after " + ", ".join(f"{k}: {w:.2f}" for k, w in zip(checks, worths)),
                flush=True)
        print(f"\nmedians over {args.seeds} seeds (never = {args.trials + 1}); reference {reference:.2f}x the default")
        head = "".join(f"{'trials to ' + format(level, '.0%'):>16s}" for level in LEVELS)
        head += "".join(f"{'best@' + str(k):>10s}" for k in checks)
        print(f"{'sampler':8s}{head}")
        for s in samplers:
            reach = [statistics.median(r[0][i] for r in rows[s]) for i in range(len(LEVELS))]
            worths = [statistics.median(r[1][i] for r in rows[s]) for i in range(len(checks))]
            print(f"{s:8s}" + "".join(f"{x:>16g}" for x in reach) + "".join(f"{w:>10.2f}" for w in worths))
        print("(trials to X: first trial measured within X of the reference, relative to the default runs around "
              "it;\n best@k: what the study would declare best after k trials, re-run alternately with the default,\n "
              f"as a fraction of the reference; total {time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
