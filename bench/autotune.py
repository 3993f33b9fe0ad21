#!/usr/bin/env python3
"""The tuner's evidence (H5Evolve: Behzad et al., "Taming Parallel I/O Complexity with Auto-Tuning", SC13): ground
truth from an exhaustive grid, then how many trials each sampler needs to come close to it.

1. Grid: on each kernel, every configuration of a reduced space (a few values of the settings that matter there,
   each also unset) is measured `--repeat` times, the configurations in a new random order in each round (so a drift
   of the machine hits them alike), as the tuner measures: under the runtime, writes made durable at close, the page
   cache dropped before each run (root). Each configuration's value is its median; the default is the configuration
   with everything unset, measured in the same rounds, so best / default is a side-by-side speedup.
2. Replay: each sampler (the tuner's own plug-ins, seeded) runs a study of `--trials` trials over the same space,
   the default first as in `iotame tune`, a trial's value being the grid's median for its configuration. Reported per
   sampler: the trials needed to reach 95 % of the grid's best (median and range over `--seeds` seeds; more than
   `--trials` when never), and best-so-far curves with their spread (plots written to --out).
3. With `--profile`: the tuner's recommendation per kernel (iotame.tune.recommend), from the default's statistics
   and a model run's kept with the grid: its grid value against the grid's best, and the default sampler's trials
   to 95 % with it enqueued after the default. `--live R` then measures the default, the recommendation and the
   grid's best again, side by side, R rounds.
Replaying measured values removes the noise of re-measuring from the comparison: it measures the samplers, given the
machine's answers.

Usage: bench/autotune.py [--kernels noncontig,flashio,madbench] [--repeat 3] [--seeds 5] [--trials 30]
                         [--profile PROFILE.json] [--out DIR] [--json F] [--table F.json] [--live R]
"""
from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

import optuna  # noqa: E402

from iotame.bench.memory import steady_memory  # noqa: E402
from iotame.config import save_config  # noqa: E402
from iotame.paths import kernel_path  # noqa: E402
from iotame.tune.measure import run_once  # noqa: E402
from iotame.tune.page_cache import PageCache  # noqa: E402
from iotame.tune.recommend import model_run_config, recommend  # noqa: E402
from iotame.tune.samplers import DEFAULT_SAMPLER, SAMPLERS, get_sampler  # noqa: E402
from iotame.tune.space import UNSET, Param, Space  # noqa: E402
from iotame.tune.study import quiet_optuna  # noqa: E402
from iotame.tune.workload import workload_from_stats  # noqa: E402

NPROCS = 2
TARGET = 0.95
KERNELS = {
    # Noncontig with 64-byte elements, collective: the collective path and ROMIO's write hints
    "noncontig": (["noncontig", "--elmtcount", "16", "--veclen", "65536", "--loops", "8", "--collective",
                   "--file", "{dir}/nc.dat"],
                  Space((Param("iotame", "collective", "strategy", ("two_phase", "view_based")),
                         Param("mpiio", "mpiio_hints", "romio_cb_write", ("enable", "disable")),
                         Param("mpiio", "mpiio_hints", "romio_ds_write", ("enable", "disable")),
                         Param("mpiio", "mpiio_hints", "cb_buffer_size", (1048576, 16777216))))),
    # FLASH-IO through HDF5 (independent transfers of small pieces by default, as the benchmark): transfer mode,
    # HDF5's sieve buffer and metadata aggregation, ROMIO's collective buffering
    "flashio": (["flashio", "--maxblocks", "20", "--file", "{dir}/f.h5"],
                Space((Param("hdf5", "hdf5", "transfer", ("collective", "independent")),
                       Param("hdf5", "hdf5", "sieve_buf_size", (65536, 4194304)),
                       Param("hdf5", "hdf5", "meta_block_size", (1048576,)),
                       Param("mpiio", "mpiio_hints", "romio_cb_write", ("enable", "disable"))))),
    # MADbench (file per process, MPI-IO): data sieving, throttling, staging
    "madbench": (["madbench", "--api", "mpiio", "--no-pix", "2048", "--no-bin", "8", "--file", "{dir}/mad.dat"],
                 Space((Param("mpiio", "mpiio_hints", "romio_ds_read", ("enable", "disable")),
                        Param("mpiio", "mpiio_hints", "romio_ds_write", ("enable", "disable")),
                        Param("iotame", "throttle", "readers", (1,)),
                        Param("iotame", "staging", "enabled", (True,))))),
}


def key(point: dict) -> str:
    return json.dumps(point, sort_keys=True)


def grid(name: str, a, tmp: Path, cache: PageCache) -> dict:
    """Every configuration of the kernel's space, `repeat` rounds in shuffled order: {key: [values]}."""
    args, space = KERNELS[name]
    argv = ["mpiexec", "-n", str(NPROCS), str(kernel_path()), *[x.format(dir=tmp) for x in args]]
    points = [dict(zip(space.keys(), combo)) for combo in itertools.product(*(p.choices for p in space))]
    values: dict[str, list[float]] = {key(p): [] for p in points}
    kept = {"model_stats": _model_run(argv, a, tmp, cache)} if a.profile else {}
    order = random.Random(name)
    for r in range(a.repeat):
        order.shuffle(points)
        for i, p in enumerate(points):
            config = space.config(p)
            config.setdefault("defaults", {})["posix"] = {"sync_at_close": True}  # durable, as the tuner measures
            path = save_config(config, tmp / "config.json")
            o = run_once(argv, path, tmp / "run", "io-bandwidth", timeout=600, page_cache=cache)
            values[key(p)].append(o.value if o.value is not None else float("nan"))
            if r == 0 and p == space.default_point() and o.error is None:     # the workload, as the tuner sees it
                kept["default_stats"] = json.loads((tmp / "run" / "stats.json").read_text())
            print(f"{name} round {r + 1} {i + 1}/{len(points)}: {o.value if o.error is None else o.error}",
                  file=sys.stderr, flush=True)
    return {"argv": argv, "space": space.to_json(), "values": values, **kept}


def _model_run(argv: list, a, tmp: Path, cache: PageCache) -> dict | None:
    """The statistics of the tuner's model run (iotame.tune.recommend): the default with the cost model choosing
    the collective strategy, so that they hold its predicted seconds per strategy. None when the run failed."""
    config = model_run_config(a.profile)
    config["defaults"]["posix"] = {"sync_at_close": True}
    path = save_config(config, tmp / "model.json")
    o = run_once(argv, path, tmp / "model-run", "io-bandwidth", timeout=600, page_cache=cache)
    print(f"model run: {o.value if o.error is None else o.error}", file=sys.stderr, flush=True)
    return json.loads((tmp / "model-run" / "stats.json").read_text()) if o.error is None else None


def median(v):
    v = [x for x in v if x == x]
    return statistics.median(v) if v else float("nan")


def replay(space: Space, table: dict[str, float], sampler: str, seed: int, trials: int,
           first: dict | None = None) -> list[float]:
    """Best-so-far after each trial of a study whose values come from the grid's table (the default first, then
    the point `first` when given, as the tuner enqueues the model's recommendation)."""
    study = optuna.create_study(direction="maximize", sampler=get_sampler(sampler).create(space, seed))
    study.enqueue_trial(space.default_point())
    if first is not None:
        study.enqueue_trial(first)
    best, curve = float("-inf"), []
    for _ in range(trials):
        t = study.ask()
        p = {q.key: t.suggest_categorical(q.key, q.choices) for q in space}
        v = table.get(key(p), float("nan"))
        if v == v:
            study.tell(t, v)
            best = max(best, v)
        else:
            study.tell(t, state=optuna.trial.TrialState.FAIL)
        curve.append(best)
    return curve


def recommendation(g: dict, space: Space, profile: dict | None):
    """The tuner's recommendation for the kernel, computed offline from the grid's kept statistics (the default's
    and the model run's) in the grid's space; None without them."""
    if profile is None or not g.get("default_stats"):
        return None
    return recommend(workload_from_stats(g["default_stats"]), profile, space, profile_path=None,
                     default_stats=g["default_stats"], model_stats=g.get("model_stats"), durable=True)


def reach_of(curve: list[float], target: float, trials: int) -> int:
    return next((i + 1 for i, b in enumerate(curve) if b >= target), trials + 1)


def analyse(data: dict, a) -> dict:
    out = {}
    profile = json.loads(Path(data["profile"]).read_text()) if data.get("profile") else None
    for name, g in data["grids"].items():
        space = Space.from_json(g["space"])
        table = {k: median(v) for k, v in g["values"].items()}
        best_key = max((k for k in table if table[k] == table[k]), key=table.get)
        default = table[key(space.default_point())]
        curves = {s: [replay(space, table, s, seed, a.trials) for seed in range(a.seeds)] for s in a.samplers}
        reach = {s: [reach_of(c, TARGET * table[best_key], a.trials) for c in cs] for s, cs in curves.items()}
        rec = recommendation(g, space, profile)
        model = None
        if rec is not None:
            point = rec.point(space)
            alone = table.get(key(point), float("nan"))
            seeded = None if point == space.default_point() else \
                [reach_of(replay(space, table, DEFAULT_SAMPLER, seed, a.trials, point), TARGET * table[best_key],
                          a.trials) for seed in range(a.seeds)]
            model = {"settings": {k: v for k, v in point.items() if v != UNSET}, "value": alone,
                     "of_best": alone / table[best_key], "gains": rec.gains, "left": rec.left,
                     "reach_with": seeded if seeded is not None else reach[DEFAULT_SAMPLER]
                     if DEFAULT_SAMPLER in reach else None}
        out[name] = {"configurations": len(table), "default": default, "best": table[best_key],
                     "best_point": {k: v for k, v in json.loads(best_key).items() if v != UNSET},
                     "speedup": table[best_key] / default, "reach": reach, "model": model,
                     "curves": {s: [[b / table[best_key] for b in c] for c in cs] for s, cs in curves.items()}}
    return out


def live(results: dict, a, tmp: Path, cache: PageCache) -> dict:
    """The default, the model's recommendation and the grid's best of each kernel measured again side by side:
    `--live` rounds, the three alternately in each, medians. {kernel: {label: median MB/s}}."""
    out = {}
    for name, r in results.items():
        args, space = KERNELS[name]
        argv = ["mpiexec", "-n", str(NPROCS), str(kernel_path()), *[x.format(dir=tmp) for x in args]]
        points = {"default": space.default_point(), "best": {**space.default_point(), **r["best_point"]}}
        if r.get("model"):
            points["model"] = {**space.default_point(), **r["model"]["settings"]}
        values: dict[str, list[float]] = {label: [] for label in points}
        for i in range(a.live):
            for label, p in points.items():
                config = space.config(p)
                config.setdefault("defaults", {})["posix"] = {"sync_at_close": True}
                o = run_once(argv, save_config(config, tmp / "config.json"), tmp / "run", "io-bandwidth",
                             timeout=600, page_cache=cache)
                values[label].append(o.value if o.value is not None else float("nan"))
                print(f"live {name} round {i + 1} {label}: {o.value if o.error is None else o.error}",
                      file=sys.stderr, flush=True)
        out[name] = {label: median(v) for label, v in values.items()}
    return out


def plot(results: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), squeeze=False)
    for ax, (name, r) in zip(axes[0], results.items()):
        for s, cs in r["curves"].items():
            x = range(1, len(cs[0]) + 1)
            cols = list(zip(*cs))
            ax.plot(x, [statistics.median(c) for c in cols], label=s)
            ax.fill_between(x, [min(c) for c in cols], [max(c) for c in cols], alpha=0.15)
        ax.axhline(TARGET, color="grey", linestyle=":")
        ax.set_title(f"{name} ({r['configurations']} configurations)")
        ax.set_xlabel("trials")
        ax.set_ylabel("best so far / grid's best")
        ax.set_ylim(0, 1.05)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "autotune.png", dpi=110)


def report(results: dict, data: dict) -> str:
    lines = [f"Measured {data['date']}, MPICH, {NPROCS} processes; grid: medians of {data['repeat']} rounds; replay: "
             f"{data['seeds']} seeds, {data['trials']} trials.", "",
             "| kernel | configurations | default MB/s | grid's best MB/s | speedup | best configuration |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for name, r in results.items():
        cfg = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in r["best_point"].items()) or "(the default)"
        lines.append(f"| {name} | {r['configurations']} | {r['default']:.1f} | {r['best']:.1f} | "
                     f"{r['speedup']:.2f} | {cfg} |")
    lines += ["", f"Trials to reach {TARGET:.0%} of the grid's best (median [min-max] over seeds; "
                  f"{data['trials'] + 1} = not within {data['trials']}):", "",
              "| sampler | " + " | ".join(results) + " |", "| --- |" + " ---: |" * len(results)]
    for s in data["samplers"]:
        cells = []
        for r in results.values():
            v = r["reach"][s]
            cells.append(f"{statistics.median(v):g} [{min(v)}-{max(v)}]")
        lines.append(f"| {s}{' (default)' if s == DEFAULT_SAMPLER else ''} | " + " | ".join(cells) + " |")
    if any(r.get("model") for r in results.values()):
        lines += ["", f"The model's recommendation (profile {data.get('profile')}), from the default's and the model "
                      f"run's statistics, in the grid's space; trials to {TARGET:.0%} with {DEFAULT_SAMPLER}, "
                      f"without and with it enqueued after the default (median [min-max]):", "",
                  "| kernel | recommendation | MB/s | / grid's best | predicted | without | with |",
                  "| --- | --- | ---: | ---: | --- | ---: | ---: |"]
        for name, r in results.items():
            m = r.get("model")
            if not m:
                continue
            cfg = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in m["settings"].items()) or "(the default)"
            gains = "; ".join(f"{k}: {'not predicted' if g is None else f'{g:.2f}x'}" for k, g in m["gains"].items())
            cells = [f"{statistics.median(v):g} [{min(v)}-{max(v)}]" if v else "-"
                     for v in (r["reach"].get(DEFAULT_SAMPLER), m["reach_with"])]
            lines.append(f"| {name} | {cfg} | {m['value']:.1f} | {m['of_best']:.2f} | {gains or '-'} | "
                         + " | ".join(cells) + " |")
    if data.get("live"):
        lines += ["", f"Live, side by side ({data['live_rounds']} rounds, the three alternately, medians):", "",
                  "| kernel | default MB/s | recommendation MB/s | / default | grid's best MB/s | / default |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for name, v in data["live"].items():
            m = v.get("model", float("nan"))
            lines.append(f"| {name} | {v['default']:.1f} | {m:.1f} | {m / v['default']:.2f} | {v['best']:.1f} | "
                         f"{v['best'] / v['default']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    ap.add_argument("--out", type=Path, default=Path("autotune-out"), help="where the plot goes")
    ap.add_argument("--json", help="write the grids' measurements here")
    ap.add_argument("--table", help="analyse an earlier --json file instead of measuring")
    ap.add_argument("--live", type=int, default=0, metavar="R",
                    help="after the analysis, measure the default, the recommendation and the grid's best again "
                         "side by side, R rounds")
    ap.add_argument("--profile", type=Path, help="machine profile (iotame calibrate): keep a model run's statistics "
                                                 "per kernel and replay the tuner's recommendation")
    a = ap.parse_args()
    a.samplers = a.samplers.split(",")
    quiet_optuna()
    if a.table:
        data = json.loads(Path(a.table).read_text())
    else:
        data = {"date": time.strftime("%Y-%m-%d %H:%M"), "repeat": a.repeat, "grids": {},
                "profile": str(a.profile) if a.profile else None}
        cache = PageCache(enabled=True)
        with tempfile.TemporaryDirectory(prefix="bench-autotune-") as tmp, steady_memory() as memory:
            data["memory"] = memory
            for name in a.kernels.split(","):
                data["grids"][name] = grid(name, a, Path(tmp), cache)
                if a.json:
                    Path(a.json).write_text(json.dumps(data))
        data["page_cache"] = cache.status
    data.update(seeds=a.seeds, trials=a.trials, samplers=a.samplers)
    results = analyse(data, a)
    if a.live:
        with tempfile.TemporaryDirectory(prefix="bench-autotune-") as tmp, steady_memory():
            data.update(live=live(results, a, Path(tmp), PageCache(enabled=True)), live_rounds=a.live)
    a.out.mkdir(parents=True, exist_ok=True)
    plot(results, a.out)
    text = report(results, data)
    (a.out / "autotune.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
