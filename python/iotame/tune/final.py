"""The final re-run: measurements during a search are noisy, and the best trial is partly the luckiest one. The
best few configurations and the default are run again, alternately (D A B C D A B C …), and the best median of
these re-runs is declared best; the speedup compares it with the default's median of the same rounds, side by
side in one run."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from optuna.trial import FrozenTrial

import json

from ..config import save_config
from .measure import RunOutcome, better, run_once
from .page_cache import PageCache
from .race import NOISE_FLOOR, Entrant, max_runs, paired_interval as race_interval, race
from .records import TuneEvents
from .space import UNSET, Space, config_key, decode
from .spec import TuneSpec
from .workload import Workload, prune

__all__ = ["Candidate", "FinalResult", "run_final", "pick_candidates", "rerun_best", "race_entrants", "race_best"]


@dataclass
class Candidate:
    """A configuration in the final re-run: `label` (default, trial-0012), its trial and configuration file."""

    label: str
    trial: int | None
    config: Path
    params: dict = field(default_factory=dict)
    runs: list[RunOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.runs) and all(r.ok for r in self.runs)

    @property
    def median(self) -> float | None:
        return statistics.median(r.value for r in self.runs) if self.ok else None

    def to_json(self) -> dict:
        return {"label": self.label, "trial": self.trial, "config": str(self.config), "params": self.params,
                "ok": self.ok, "median": self.median, "values": [r.value for r in self.runs],
                "errors": [r.error for r in self.runs if r.error]}


@dataclass
class FinalResult:
    default: Candidate
    candidates: list[Candidate]
    best: Candidate           # the default itself when no candidate beat it
    rounds: int


def run_final(argv: Sequence[str], default: Candidate, candidates: list[Candidate], out: Path, objective: str,
              direction: str, rounds: int, on_run: Callable[[Candidate, int, RunOutcome], None] | None = None,
              **run_kw) -> FinalResult:
    """Runs default and candidates alternately for `rounds` rounds (a candidate that fails once is out)."""
    everyone = [default, *candidates]
    for r in range(rounds):
        for c in everyone:
            if c.runs and not c.ok:
                continue
            outcome = run_once(argv, c.config, out / c.label / f"run-{r + 1}", objective, **run_kw)
            c.runs.append(outcome)
            if on_run:
                on_run(c, r, outcome)
    best = default if default.ok else None
    for c in candidates:
        if c.ok and (best is None or better(c.median, best.median, direction)):
            best = c
    if best is None:        # everything failed, the default too: fall back to the default
        best = default
    return FinalResult(default, candidates, best, rounds)


def pick_candidates(complete: list[FrozenTrial], default: FrozenTrial, direction: str, top: int) -> list[FrozenTrial]:
    """The best `top` of the complete search trials, one per configuration and none the default's."""
    ranked = sorted(complete, key=lambda t: t.value, reverse=direction == "maximize")
    picked, seen = [], {config_key(default.user_attrs.get("config") or {})}
    for t in ranked:
        key = config_key(t.user_attrs.get("config") or {})
        if key not in seen:
            seen.add(key)
            picked.append(t)
        if len(picked) >= top:
            break
    return picked


def rerun_best(spec: TuneSpec, default: FrozenTrial, picked: list[FrozenTrial], events: TuneEvents,
               timeout: float | None, page_cache: PageCache) -> FinalResult | None:
    """The final re-run of `picked` beside the default, in out/final; None when there is nothing to re-run or no
    rounds are asked for."""
    rounds = spec.final.repeat
    if not picked or rounds < 1:
        return None
    final_dir = spec.out / "final"
    base = Candidate("default", default.number,
                     save_config(spec.space.layered({"version": 1, "meta": {"default": True}}),
                                 _mkdir(final_dir) / "default.json"),
                     dict(default.params))
    cands = [Candidate(f"trial-{t.number:04d}", t.number,          # (the trial may be another tuner's)
                       save_config(t.user_attrs["config"], _mkdir(final_dir / f"trial-{t.number:04d}") /
                                   "config.json"), dict(t.params)) for t in picked]
    events.final_started(rounds * (1 + len(cands)))

    def on_run(c: Candidate, r: int, outcome: RunOutcome) -> None:
        events.final_run(c.label, r, outcome.value, outcome.error)

    return run_final(spec.job.argv, base, cands, final_dir, spec.study.objective, spec.study.direction, rounds,
                     on_run=on_run, timeout=timeout, cwd=spec.runs.cwd, page_cache=page_cache)


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


# --- the race (iotame.tune.race): the final re-run and the ablation in one ----------------------------------------

def _set_only(point: dict) -> dict:
    return {k: v for k, v in point.items() if v != UNSET}


def race_entrants(full_space: Space, workload: Workload | None, picked: list[FrozenTrial]) -> list[tuple[str, dict, int | None]]:
    """(label, canonical point, trial) of the race's entrants besides the default: the picked search trials, then the
    first (the search's best) without each of its settings, and without every setting that cannot act in this
    workload. Points that are the same configuration appear once, under their first label."""
    out, seen = [], {config_key({})}
    cannot_act = set(full_space.keys()) - set(prune(full_space, workload).keys()) if workload is not None else set()

    def add(label: str, point: dict, trial: int | None) -> None:
        point = full_space.canonical(point)
        key = json.dumps(sorted(_set_only(point).items()), default=str)
        if key not in seen:
            seen.add(key)
            out.append((label, point, trial))
    for t in picked:
        add(f"trial-{t.number:04d}", t.params, t.number)
    if picked:
        lead = picked[0]
        point = full_space.canonical(lead.params)
        acting_out = [k for k in _set_only(point) if k in cannot_act]
        if acting_out:
            add(f"trial-{lead.number:04d}-acting", {**point, **{k: UNSET for k in acting_out}}, None)
        for k in _set_only(point):
            add(f"trial-{lead.number:04d}-without-{k.split('.')[-1]}", {**point, k: UNSET}, None)
    return out


def _point_key(point: dict) -> str:
    return json.dumps(sorted(point.items()), default=str)


def _effects(answer: Entrant, lead: Entrant | None, entrants: list[Entrant], direction: str) -> list:
    """Each setting of the answer (kept) and of the search's best that the answer leaves out (dropped), with its
    measured effect: the answer against itself without the setting where the race ran that, else the search's
    best against itself without it (effect None: neither was run)."""
    from .ablation import Effect
    by_point = {_point_key(e.point): e for e in entrants if e.values}

    def without(base: Entrant | None, key: str) -> Entrant | None:
        if base is None or key not in base.point:
            return None
        return by_point.get(_point_key({k: v for k, v in base.point.items() if k != key}))

    def effect_of(key: str, value, kept: bool) -> Effect:
        base = answer if without(answer, key) is not None else lead
        other = without(base, key)
        m = None if other is None else race_interval(base.values, other.values, direction)
        return Effect(key, decode(value), None if m is None else m[0] - 1, kept,
                      None if m is None else (m[1] - 1, m[2] - 1),
                      0 if other is None else len(set(base.values) & set(other.values)))
    effects = [effect_of(k, v, True) for k, v in answer.point.items()]
    if lead is not None:
        effects += [effect_of(k, v, False) for k, v in lead.point.items() if k not in answer.point]
    effects.sort(key=lambda e: (not e.kept, -(e.effect if e.effect is not None else float("inf"))))
    return effects


def race_best(spec: TuneSpec, full_space: Space, workload: Workload | None, default: FrozenTrial,
              picked: list[FrozenTrial], events: TuneEvents, timeout: float | None, page_cache: PageCache,
              run_cap: int | None = None):
    """The race of the default, `picked` and the reductions of the first, in out/final. Returns (FinalResult,
    AblationResult or None, RaceResult), the first two in the shapes best.json and summary.json are written from;
    None when no rounds are asked for or there is nothing to race."""
    from .ablation import AblationResult
    rounds = spec.final.repeat
    if not picked or rounds < 1:
        return None
    final_dir = spec.out / "final"
    default_cfg = save_config(spec.space.layered({"version": 1, "meta": {"default": True}}),
                              _mkdir(final_dir) / "default.json")
    base = Entrant("default", {}, default.number, payload=Candidate("default", default.number, default_cfg,
                                                                    dict(default.params)))
    entrants = [base]
    for label, point, trial in race_entrants(full_space, workload, picked):
        cfg = save_config(spec.space.layered(full_space.config(point, meta={"tool": "iotame tune", "race": label})),
                          _mkdir(final_dir / label) / "config.json")
        entrants.append(Entrant(label, _set_only(point), trial, payload=Candidate(label, trial, cfg, dict(point))))
    most = max_runs(len(entrants), spec.final.max_rounds)
    events.final_started(most if run_cap is None else min(most, run_cap))

    def run(e: Entrant, r: int) -> float | None:
        c = e.payload
        outcome = run_once(spec.job.argv, c.config, final_dir / c.label / f"run-{r + 1}", spec.study.objective,
                           timeout=timeout, cwd=spec.runs.cwd, page_cache=page_cache)
        c.runs.append(outcome)
        events.final_run(c.label, r, outcome.value, outcome.error)
        return outcome.value

    result = race(entrants, base, run, spec.study.direction, min_rounds=rounds,
                  max_rounds=max(rounds, spec.final.max_rounds), run_cap=run_cap, tolerance=spec.final.tolerance)
    lead = next((e for e in entrants if picked and e.trial == picked[0].number), None)
    answer = result.answer
    answer_c = answer.payload
    if answer_c.trial is None:           # a reduction: best.json is written from the ablation's point below
        answer_c.trial = lead.trial if lead is not None else default.number
    final = FinalResult(base.payload, [e.payload for e in entrants[1:]], answer_c, result.rounds)
    final.race = result
    ablation = None
    if not result.no_gain:
        full_point = full_space.canonical(answer.point)
        ablation = AblationResult(full_point, _effects(answer, lead, entrants, spec.study.direction),
                                  NOISE_FLOOR, result.rounds, None,
                                  {e.label: [e.values[r] for r in sorted(e.values)] for e in entrants})
    return final, ablation, result


