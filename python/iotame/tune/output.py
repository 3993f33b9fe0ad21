"""What a study leaves: best.json (the best configuration, its settings weighed by the ablation, with a meta section
saying how it was measured), summary.json (docs/tuning.md), and the workload's best configuration in the knowledge
base. The best is the final re-run's best median when the re-run measured it and the default, else the best search
trial."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable

import optuna
from optuna.trial import FrozenTrial, TrialState

from ..config import save_config
from .ablation import AblationResult, paired_interval
from .final import FinalResult
from .knowledge import KnowledgeBase
from .measure import OBJECTIVE_UNITS, ratio
from .records import TuneResult
from .space import UNSET, Space
from .spec import TuneSpec
from .study import ATTR_REUSED, counts, interrupted_numbers, is_default, role
from .workload import recorded_workload, signature

__all__ = ["SUMMARY_VERSION", "Best", "choose_best", "write_results", "write_stored_results"]

SUMMARY_VERSION = 1


@dataclass
class Best:
    """The study's best: its trial, its value and the default's (both from the final re-run when it measured them),
    the speedup and, from the final re-run's rounds, its least and largest ratio."""

    trial: FrozenTrial
    value: float | None
    default_value: float | None
    measured: str                 # how the values were measured, in words
    speedup: float
    interval: list[float] | None

    @property
    def is_default(self) -> bool:
        return is_default(self.trial)


def choose_best(trials: list[FrozenTrial], default: FrozenTrial, final: FinalResult | None, direction: str,
                best_trial: FrozenTrial) -> Best:
    """The best of the study: the final re-run's when it measured the best and the default, else `best_trial`
    (optuna's best, or the default when no trial completed)."""
    race = getattr(final, "race", None)
    if race is not None and race.no_gain:
        measured = (f"race: {race.rounds} paired rounds, {race.runs} runs ({race.stopped}); nothing beat the "
                    f"default beyond the noise")
        return Best(default, final.default.median, final.default.median, measured, 1.0, None)
    measured_both = final is not None and final.default.ok and final.best.ok
    if race is not None and measured_both:
        chosen = next(t for t in trials if t.number == final.best.trial)
        lo, hi = race.speedup[1], race.speedup[2]
        n = len(race.entrants) - 1
        measured = (f"race: the default and {n} configuration{'s' if n != 1 else ''} (the best few and their "
                    f"reductions), {race.rounds} paired rotated rounds, {race.runs} runs ({race.stopped}); "
                    f"medians, interval: 95 % t-interval of the paired ratios")
        return Best(chosen, final.best.median, final.default.median, measured,
                    ratio(final.best.median, final.default.median, direction), [lo, hi])
    if measured_both:
        number, value, default_value = final.best.trial, final.best.median, final.default.median
        n, r = len(final.candidates), final.rounds
        measured = f"final re-run: the default and the best {n} configuration{'s' if n > 1 else ''} " \
                   f"alternately, {r} round{'s' if r > 1 else ''}, medians"
    else:
        number, value, default_value = best_trial.number, best_trial.value, default.value
        measured = "search trials (no final re-run)" if final is None else \
            "search trials (the default failed in the final re-run)"
    chosen = next(t for t in trials if t.number == number)
    if is_default(chosen):
        return Best(chosen, value, default_value, measured, 1.0, None)
    interval = None
    if measured_both:
        paired = paired_interval(dict(enumerate(r.value for r in final.best.runs)),
                                 dict(enumerate(r.value for r in final.default.runs)), direction)
        interval = None if paired is None else [1 + paired[1][0], 1 + paired[1][1]]
    return Best(chosen, value, default_value, measured, ratio(value, default_value, direction), interval)


def write_results(spec: TuneSpec, study: optuna.Study, spaces: tuple[Space, Space], default: FrozenTrial,
                  final: FinalResult | None, best: Best, ablation: AblationResult | None, page_cache: str,
                  timeout: float | None, note: Callable[[str], None]) -> TuneResult:
    """best.json, summary.json and the knowledge base's record. `spaces` is the full space and the one searched;
    `page_cache` and `timeout` say how the runs were measured."""
    full_space, space = spaces
    trials = study.get_trials(deepcopy=False)
    interrupted = set(interrupted_numbers(study))
    chosen = best.trial
    config = dict(chosen.user_attrs.get("config") or {"version": 1})
    params = {k: v for k, v in full_space.canonical(chosen.params).items() if v != UNSET}
    if ablation is not None:
        config = spec.space.layered(full_space.config(ablation.point))
        params = {k: v for k, v in ablation.point.items() if v != UNSET}
    s = spec.study
    config["meta"] = {"tool": "iotame tune", "study": s.name, "trial": chosen.number,
                      "objective": s.objective, "value": best.value, "default_value": best.default_value,
                      "speedup": best.speedup, "command": list(spec.job.argv), "default": best.is_default,
                      "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if ablation is not None:
        config["meta"]["settings"] = [e.to_json() for e in ablation.effects if e.kept]   # each with its effect
    config = spec.space.published(config)
    best_path = save_config(config, spec.out / "best.json")
    w = recorded_workload(default.user_attrs)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    summary: dict[str, Any] = {
        "version": SUMMARY_VERSION, "study": s.name, "storage": spec.storage_url,
        "objective": s.objective, "direction": s.direction, "unit": OBJECTIVE_UNITS[s.objective],
        "command": list(spec.job.argv), "nprocs": spec.job.nprocs, "fs": spec.fs, "sampler": s.sampler,
        "space": {"source": spec.space.source, "size": space.size(), "params": space.describe(),
                  "notes": list(space.notes)},
        "trials": {"total": len([t for t in trials if counts(t, interrupted)]),
                   "complete": len(complete),
                   "failed": len([t for t in trials if t.state == TrialState.FAIL and counts(t, interrupted)]),
                   "interrupted": len([t for t in trials if t.number in interrupted and role(t) is None]),
                   "reused": len([t for t in trials if ATTR_REUSED in t.user_attrs]),
                   "repeat": spec.runs.repeat},
        "default": {"trial": default.number, "objective": best.default_value, "search_objective": default.value},
        "best": {"trial": chosen.number, "objective": best.value, "search_objective": chosen.value,
                 "params": params,
                 "config": {k: v for k, v in config.items() if k != "meta"}, "is_default": best.is_default},
        "speedup": best.speedup, "speedup_interval": best.interval, "measured": best.measured,
        "final": [c.to_json() for c in ([final.default, *final.candidates] if final else [])],
        "race": None if getattr(final, "race", None) is None else final.race.to_json(),
        "ablation": None if ablation is None else {**ablation.to_json(), "summary": ablation.line()},
        "durable": spec.space.durable,
        "page_cache": page_cache, "timeout": timeout,
        "workload": w.to_json() if w else None,
        "recommendation": study.user_attrs.get("recommendation"),
        "best_json": str(best_path),
    }
    summary_path = spec.out / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=1) + "\n")
    if spec.seeds.knowledge is not None and w is not None:
        try:
            KnowledgeBase(spec.seeds.knowledge).record(
                signature(w, spec.fs), config, study=s.name, objective=s.objective, command=spec.job.argv,
                default_value=best.default_value, best_value=best.value, speedup=best.speedup)
        except Exception as e:
            note(f"knowledge base {spec.seeds.knowledge} not updated: {e}")
    return TuneResult(summary, best_path, summary_path)


def write_stored_results(spec: TuneSpec, stored: dict, note: Callable[[str], None]) -> TuneResult:
    """best.json and summary.json of a final re-run another tuner did (kept in the study), in this tuner's out."""
    best_path = save_config(stored["best"], spec.out / "best.json")
    summary = dict(stored["summary"], best_json=str(best_path),
                   final_by={"out": stored.get("out"), "trial": stored.get("trial")})
    summary_path = spec.out / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=1) + "\n")
    note(f"the final re-run was done by another tuner (trial {stored.get('trial')}); its runs are in "
         f"{stored.get('out')}")
    return TuneResult(summary, best_path, summary_path)
