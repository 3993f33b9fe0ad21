"""`iotame tune [options] -- CMD…`: search the configuration space with real runs of CMD under the runtime."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..bandwidth import fmt_bandwidth
from ..bench.caches import CACHE_MODES
from ..calibrate.discover import find_profile
from ..config import load_config, save_config
from ..paths import require_lib
from ..render import console
from ..stats import OBJECTIVES, emulated_storage
from ..tune import (DEFAULT_SAMPLER, FILE_SYSTEMS, OBJECTIVE_UNITS, SAMPLERS, TEMPLATES, UNSET, FinalSpec,
                    RunSpec, SeedSpec, SpaceSpec, StudySpec, TrialRecord, Tuner, TuneEvents, TuneSpec, builtin_space,
                    default_knowledge_path, detect_fs, load_space, resolve_job, run_tune, study_name)
from ..tune.budget import Budget, StudyPlan, parse_budget
from ..tune.job import ENV_SRUN_MPI
from ..tune.noise import MAX_NOISE, NOISE_RUNS
from ..tune.recommend import Recommendation
from .run import command_args
from .argtypes import positive_int, count, seconds

NAME = "tune"
OBJECTIVE_NAMES = (*OBJECTIVES, "wall-time")
DEFAULT_TRIALS = 30


def add_parser(sub) -> None:
    p = sub.add_parser(
        NAME, help="search the configuration space with real runs; write the best configuration",
        usage="iotame tune [--space SPACE.toml] [--sampler ga|tpe|random|grid] [--trials N] [--repeat R] "
              "[--timeout S] [--jobs J] [--storage URL] [--study NAME] [--objective OBJ] [--out DIR] "
              "[--profile F] [--recommend [--json]] [options] -- CMD...",
        description="Run CMD (usually `mpiexec -n N app ...`) under the runtime again and again with the "
                    "configurations a sampler proposes, and keep the best. The first trial is always the system "
                    "default (the empty configuration). The best few are re-run beside the default at the end; "
                    "DIR gets best.json (a configuration for `iotame run --config`), summary.json (default, best, "
                    "speedup) and every trial's configuration, statistics and output. Interrupted studies resume "
                    "with the same --storage and --study. With a machine profile (iotame calibrate) the cost "
                    "model's recommendation is the first trial after the default; --recommend prints it after the "
                    "default's runs (3, to measure their spread), without searching. See docs/tuning.md.")
    p.add_argument("--space", metavar="SPACE.toml", help="search space (default: the built-in space of the file "
                                                         "system, every setting the runtime can tune)")
    p.add_argument("--sampler", choices=tuple(SAMPLERS), default=DEFAULT_SAMPLER,
                   help=f"search strategy (default {DEFAULT_SAMPLER}): " +
                        "; ".join(f"{n}: {c.summary}" for n, c in SAMPLERS.items()).replace("%", "%%"))
    p.add_argument("--trials", type=positive_int, default=DEFAULT_TRIALS, metavar="N",
                   help=f"trials in the study, the default trial included (default {DEFAULT_TRIALS})")
    p.add_argument("--repeat", type=positive_int, default=1, metavar="R",
                   help="runs per configuration, the median is its value (default 1)")
    p.add_argument("--final-top", type=count, default=3, metavar="K",
                   help="the best search configurations in the race at the end, beside the default and the best "
                        "one's reductions (default 3)")
    p.add_argument("--final-repeat", type=count, default=3, metavar="R",
                   help="the race's rounds before any configuration leaves it (default 3; at most 6 in all; 0: no "
                        "race, the best trial is declared best)")
    p.add_argument("--timeout", type=seconds, metavar="S",
                   help="stop a run after S seconds, the trial fails (default: 10 x the default's run, >= 60 s)")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="J",
                   help="trials at once (default 1; concurrent trials disturb each other's measurements)")
    p.add_argument("--storage", metavar="URL", help="optuna storage (default: sqlite:///DIR/study.sqlite; a "
                                                    "postgresql:// URL lets tuners on several nodes share a study)")
    p.add_argument("--study", metavar="NAME", help="study name (default: from the command)")
    p.add_argument("--objective", choices=OBJECTIVE_NAMES, default="io-bandwidth",
                   help="io-bandwidth (MB/s, maximize; default), io-time (s, minimize) from the statistics, or "
                        "wall-time (s, minimize) measured by the tuner")
    p.add_argument("--out", metavar="DIR", type=Path, help="output directory (default: iotame-tune-STUDY)")
    p.add_argument("--np", type=positive_int, metavar="N", help="process count, when CMD does not say it")
    p.add_argument("--launcher", choices=TEMPLATES, help="start CMD with this launcher (`mpiexec -n N CMD` or "
                                                         "`srun --mpi=P -n N CMD`) when CMD has none (default: "
                                                         "srun with SLURM_NTASKS inside a Slurm allocation, else "
                                                         "CMD alone)")
    p.add_argument("--srun-mpi", metavar="PLUGIN",
                   help=f"srun's --mpi plugin for the srun launcher (default: ${ENV_SRUN_MPI}, else pmi2 for "
                        "MPICH, pmix for Open MPI; `default`: the cluster's MpiDefault)")
    p.add_argument("--fs", choices=FILE_SYSTEMS, help="file system of the built-in space (default: detected "
                                                      "from --dir)")
    p.add_argument("--dir", metavar="DIR", type=Path, default=Path("."),
                   help="where the job does its I/O, for --fs detection (default: the current directory)")
    p.add_argument("--seed", type=int, metavar="N", help="sampler seed (default: random)")
    p.add_argument("--knowledge", metavar="PATH", type=Path,
                   help="knowledge base (default: $IOTAME_KNOWLEDGE, else ~/.cache/iotame/knowledge.sqlite)")
    p.add_argument("--no-knowledge", action="store_true", help="neither use nor update the knowledge base")
    p.add_argument("--base", metavar="F", type=Path,
                   help="a configuration every trial starts from, the default trial included: settings the search "
                        "keeps (an emulated device for an experiment, hints a site requires)")
    p.add_argument("--first", metavar="F", type=Path, action="append", default=[],
                   help="a configuration to try first, after the default (repeatable; e.g. iotame advise's): its "
                        "per-file rules and defaults as one set of defaults, the first rule's value winning; "
                        "settings outside the space are named and left out")
    p.add_argument("--no-durable", dest="durable", action="store_false",
                   help="do not make the job's written files durable at their close in the tuning runs (by default "
                        "every run syncs them, so that the objective measures the storage, not the page cache; "
                        "best.json does not keep it)")
    p.add_argument("--ablation-rounds", type=int, default=2, metavar="N",
                   help="kept for old scripts: the race at the end weighs every setting now (docs/tuning.md)")
    p.add_argument("--max-noise", type=float, default=MAX_NOISE, metavar="F",
                   help=f"stop before the search when the default's {NOISE_RUNS} runs spread more than F "
                        f"((max - min) / median; default {MAX_NOISE:g}): a job too short to measure gets advice, "
                        f"not a ranking of noise")
    p.add_argument("--budget", type=_budget, metavar="RUNS|MINUTES",
                   help="the most runs of the whole study (120), or minutes (30m; converted to runs at the default's "
                        "run time): the search gets fewer trials and the race fewer rounds to fit")
    p.add_argument("--cache", choices=CACHE_MODES, default="files",
                   help="keeping reads off the page cache: 'files' (default) writes back and evicts the files each "
                        "run's statistics list (any user; other processes' cached data stays); 'machine' empties "
                        "the whole machine's page cache before each run (root; flushes other users' data too); "
                        "'off' does nothing")
    p.add_argument("--no-drop-caches", action="store_const", dest="cache", const="off",
                   help="the same as --cache off")
    p.add_argument("--profile", metavar="F", type=Path,
                   help="machine profile of the cost model's recommendation (default: the one the runtime finds for "
                        "--dir: --base's collective.profile, $IOTAME_PROFILE, ~/.config/iotame/profiles)")
    p.add_argument("--recommend", action="store_true",
                   help="run the default (and, for collective calls, a model run), print the cost model's "
                        "recommended configuration with each setting's reason and the predicted gain, write it to "
                        "DIR/recommended.json; no search")
    p.add_argument("--json", action="store_true", help="with --recommend: print the recommended configuration "
                                                       "as JSON on stdout (a file for iotame run --config)")
    p.add_argument("--dry-run", action="store_true", help="print the job and the search space, run nothing")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress, only the result")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD", help="the command and its arguments")
    p.set_defaults(func=run)


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.1f} {unit}" if unit == "MB/s" else f"{value:.4f} {unit}"


def _fmt_mib(value: float | None, unit: str) -> str:
    """A value with MiB/s beside MB/s (iotame.bandwidth: one definition of a run's bandwidth)."""
    return fmt_bandwidth(value) if unit == "MB/s" and value is not None else _fmt(value, unit)


def _hints(params: dict) -> str:
    shown = [f"{k.split('.', 1)[-1]}={v}" for k, v in params.items() if v != UNSET]
    return " ".join(shown) or "(system default)"


class ConsoleEvents(TuneEvents):
    """Progress on stderr: a bar with the best so far on a terminal, one line per trial otherwise."""

    def __init__(self, unit: str, quiet: bool):
        self.err = console(stderr=True)
        self.unit, self.quiet = unit, quiet
        self.bar = self.err.is_terminal and not quiet
        self.progress: Progress | None = None
        self.task = None

    def note(self, text: str) -> None:
        out = self.progress.console if self.progress else self.err
        out.print(f"iotame: tune: {text}", markup=False, highlight=False)

    def _start(self, description: str, total: int, done: int = 0) -> None:
        self.stop()
        if not self.bar:
            return
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[best]}"), TimeElapsedColumn(), console=self.err)
        self.progress.start()
        self.task = self.progress.add_task(description, total=total, completed=done, best="")

    def stop(self) -> None:
        if self.progress:
            self.progress.stop()
            self.progress = None

    def search_started(self, done: int, total: int) -> None:
        self._start("trials", total, done)

    def trial_done(self, record: TrialRecord, best: TrialRecord | None, done: int, total: int) -> None:
        best_text = f"best {_fmt(best.value, self.unit)} (trial {best.number})" if best else ""
        if self.progress:
            self.progress.update(self.task, completed=done, best=best_text)
        if self.quiet:
            return
        what = "default" if record.default else _hints(record.params) + (f"  [{record.seed}]" if record.seed else "")
        if record.ok:
            result = _fmt(record.value, self.unit) + (f" (as trial {record.reused_from})"
                                                      if record.reused_from is not None else "")
        else:
            result = f"FAILED: {record.error}"
        line = f"trial {record.number} [{done}/{total}] {result}  {what}"
        if self.progress:
            self.progress.console.print(line, markup=False, highlight=False)
        else:
            self.err.print(f"{line}  | {best_text}", markup=False, highlight=False, soft_wrap=True)

    def final_started(self, runs: int) -> None:
        self._start("race", runs)
        if not self.quiet and not self.bar:
            self.err.print(f"race: at most {runs} runs, the default, the best few and their reductions in paired, "
                           f"rotated rounds, until the simplest as fast as the best is known", markup=False)

    def final_run(self, label: str, round_: int, value: float | None, error: str | None) -> None:
        if self.progress:
            self.progress.advance(self.task)
        elif not self.quiet:
            self.err.print(f"  round {round_ + 1} {label}: {_fmt(value, self.unit) if error is None else error}",
                           markup=False, highlight=False)

    def ablation_started(self, runs: int) -> None:
        self._start("ablation", runs)
        if not self.quiet and not self.bar:
            self.err.print(f"ablation: {runs} runs, the best configuration and it without each setting in turn",
                           markup=False)

    ablation_run = final_run


def _budget(text: str) -> Budget:
    try:
        return parse_budget(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _space(args, fs: str, nprocs: int):
    if args.space:
        return load_space(args.space, fs=fs, nprocs=nprocs), f"{args.space}"
    return builtin_space(fs, nprocs), f"built-in ({fs})"


def _storage_label(out_dir: Path) -> str | None:
    """The emulated-storage label of the study's runs (the device is process-wide, the same in every trial): read
    from the first statistics file that loads."""
    for path in sorted(out_dir.glob("trials/*/run-*/stats.json")):
        try:
            return emulated_storage(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return None


def print_result(summary: dict, out_dir: Path) -> None:
    unit = summary["unit"]
    out = console()
    t = Table(title=f"iotame tune: {summary['study']}", title_justify="left")
    t.add_column("")
    t.add_column(summary["objective"], justify="right")
    t.add_column("trial", justify="right")
    t.add_column("configuration", overflow="fold")
    d, b = summary["default"], summary["best"]
    t.add_row("default", _fmt_mib(d["objective"], unit), str(d["trial"]), "(system default)")
    t.add_row("best", _fmt_mib(b["objective"], unit), str(b["trial"]),
              "(system default)" if b["is_default"] else _hints(b["params"]))
    out.print(t)
    speedup = summary.get("speedup")
    trials = summary["trials"]
    interval = summary.get("speedup_interval")
    out.print((f"speedup: {speedup:.2f}x" if speedup is not None else "speedup: -")
              + (f" [{interval[0]:.2f}, {interval[1]:.2f}] (95 % interval)" if interval else "")
              + f" ({summary['measured']})", markup=False, soft_wrap=True)
    if (summary.get("race") or {}).get("no_gain"):
        out.print("answer: the default (no configuration beat it beyond the noise); best.json is the empty "
                  "configuration", markup=False)
    ablation = summary.get("ablation")
    if ablation:
        out.print(f"what carries the gain (each setting's removal, side by side): {ablation['summary']}"
                  + ("" if ablation["verified"] in (None, True) else "; together they matter: one left out"),
                  markup=False, soft_wrap=True)
    out.print(f"trials: {trials['total']} ({trials['complete']} complete, {trials['failed']} failed, "
              f"{trials['reused']} reused); page cache {summary['page_cache']}; "
              f"{'writes made durable at close' if summary.get('durable') else 'writes not synced by the tuner'}",
              markup=False)
    label = _storage_label(out_dir)
    if label:
        out.print(label, markup=False, soft_wrap=True)
    out.print(f"best configuration: {summary['best_json']}\nsummary: {out_dir / 'summary.json'}\n"
              f"report: iotame report {out_dir}", markup=False)


def _tune_profile(args, base: dict | None) -> tuple[Path | None, str]:
    """The profile of the recommendation, and where it was looked for (the message without one)."""
    if args.profile:
        return args.profile, str(args.profile)
    setting = ((base or {}).get("defaults") or {}).get("collective", {}).get("profile")
    found, _ = find_profile(args.dir, setting)
    return found, f"{Path(args.dir).absolute()}"


def recommended_config(rec: Recommendation, spec: TuneSpec) -> dict:
    """The recommendation as a configuration for `iotame run --config`, its reasons and gains in `meta`."""
    meta = {"tool": "iotame tune --recommend", "study": spec.study.name, "command": list(spec.job.argv),
            "profile": rec.profile, "reasons": {f"{s.section}.{s.name}": s.reason for s in rec.settings},
            "predicted": rec.gains, "left": {w: y for w, y in rec.left}}
    if rec.message:
        meta["message"] = rec.message
    return spec.space.published(spec.space.layered(rec.config(meta)))


def print_recommendation(rec: Recommendation, path: Path) -> None:
    out = console()
    if rec.settings:
        t = Table(title="iotame tune --recommend: the cost model's configuration", title_justify="left")
        t.add_column("setting")
        t.add_column("value")
        t.add_column("reason", overflow="fold")
        for s in rec.settings:
            t.add_row(f"{s.section}.{s.name}", json.dumps(s.value) if not isinstance(s.value, str) else s.value,
                      s.reason)
        out.print(t)
    if rec.message:
        out.print(rec.message, markup=False, soft_wrap=True)
    for what, why in rec.left:
        out.print(f"not recommended: {what}: {why}", markup=False, soft_wrap=True)
    if rec.profile:
        out.print(f"profile: {rec.profile}\npredicted gain: {rec.gain_text()}", markup=False, soft_wrap=True)
    out.print(f"configuration: {path}", markup=False)


def _tune_recommend(spec: TuneSpec, events: "ConsoleEvents", as_json: bool) -> int:
    tuner = Tuner(spec, events)
    try:
        tuner.open()
        default = tuner.run_default()
        tuner.prepare(default, searching=False)  # the space; the recommendation, enqueued for a later tune
        rec = tuner.recommendation(default)
    finally:
        tuner.close()
        events.stop()
    config = recommended_config(rec, spec)
    path = save_config(config, spec.out / "recommended.json")
    if as_json:
        print(json.dumps(config, indent=1))
    else:
        print_recommendation(rec, path)
    return 0


def run(args: argparse.Namespace) -> int:
    cmd = command_args(args.cmd)
    job = resolve_job(cmd, args.np, args.launcher, args.srun_mpi)
    fs = args.fs or detect_fs(args.dir)
    space, source = _space(args, fs, job.nprocs)
    name = args.study or study_name(job)
    out_dir = args.out or Path(f"iotame-tune-{name}")
    err = console(stderr=True)
    if args.dry_run:
        print(f"command: {' '.join(job.argv)}\nprocesses: {job.nprocs}\nfile system: {fs}\nstudy: {name}\n"
              f"out: {out_dir}\nspace: {source}, {len(space)} parameters, {space.size()} configurations")
        if job.note:
            print(f"note: {job.note}")
        for line in space.describe():
            print(f"  {line}")
        for note in space.notes:
            print(f"  ({note})")
        return 0
    require_lib()
    if args.jobs > 1:
        err.print(f"iotame: tune: warning: {args.jobs} trials at once on one node disturb each other's "
                  "measurements", markup=False)
    knowledge = None if args.no_knowledge else (args.knowledge or default_knowledge_path())
    base = load_config(args.base) if args.base else None
    profile, where = _tune_profile(args, base)
    spec = TuneSpec(job=job, fs=fs, out=out_dir,
                    study=StudySpec(name, storage=args.storage, objective=args.objective, sampler=args.sampler,
                                    trials=args.trials, jobs=args.jobs, seed=args.seed),
                    space=SpaceSpec(space, source, base=base, durable=args.durable),
                    runs=RunSpec(repeat=args.repeat, timeout=args.timeout, drop_caches=args.cache,
                                 max_noise=args.max_noise),
                    final=FinalSpec(top=args.final_top, repeat=args.final_repeat,
                                    ablation_rounds=max(0, args.ablation_rounds)),
                    seeds=SeedSpec(first=tuple((str(f), load_config(f)) for f in args.first), knowledge=knowledge,
                                   profile=profile, where=where))
    events = ConsoleEvents(OBJECTIVE_UNITS[args.objective], args.quiet)
    if args.recommend:
        return _tune_recommend(spec, events, args.json)
    if not args.quiet:
        err.print(f"iotame: tune: study {name} in {spec.storage_url}: {args.trials} trials of "
                  f"`{' '.join(job.argv)}` ({job.nprocs} process{'es' if job.nprocs > 1 else ''}, {fs}), "
                  f"space {source}: {len(space)} parameters, sampler {args.sampler}", markup=False)
        for note in ([job.note] if job.note else []) + list(space.notes):
            events.note(note)
    plan = StudyPlan.of(args.trials, args.repeat, len(space), args.final_top, args.final_repeat,
                        FinalSpec.max_rounds)
    if not args.quiet:
        err.print(f"iotame: tune: {plan.describe()}" + (f"; --budget {args.budget}" if args.budget else ""),
                  markup=False, soft_wrap=True)
    try:
        result = run_tune(spec, events, plan, args.budget)
    finally:
        events.stop()
    print_result(result.summary, out_dir)
    return 0


__all__ = ["NAME", "add_parser", "run", "print_result", "ConsoleEvents"]
