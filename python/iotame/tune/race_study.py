"""The race (iotame.tune.race) run for a study: its entrants from the search (the best few, the best's reductions),
their configuration files and runs in out/final, and its outcome in the shapes best.json and summary.json are
written from (a FinalResult whose `race` is the RaceResult, an AblationResult of the answer's settings)."""
from __future__ import annotations

import json

from optuna.trial import FrozenTrial

from ..config import save_config
from .ablation import AblationResult, Effect
from .final import Candidate, FinalResult, _mkdir
from .measure import run_once
from .page_cache import PageCache
from .race import NOISE_FLOOR, Entrant, max_runs, paired_interval as race_interval, race
from .records import TuneEvents
from .space import UNSET, Space, decode
from .spec import TuneSpec
from .workload import Workload, prune

__all__ = ["race_entrants", "race_best", "needed_point"]


def _set_only(point: dict) -> dict:
    return {k: v for k, v in point.items() if v != UNSET}


def race_entrants(full_space: Space, workload: Workload | None,
                  picked: list[FrozenTrial]) -> list[tuple[str, dict, int | None]]:
    """(label, canonical point, trial) of the race's entrants besides the default: the picked search trials, then the
    first (the search's best) without each of its settings, and without every setting that cannot act in this
    workload. Points that are the same configuration appear once, under their first label."""
    out, seen = [], {_point_key({})}          # the default is an entrant already
    cannot_act = set(full_space.keys()) - set(prune(full_space, workload).keys()) if workload is not None else set()

    def add(label: str, point: dict, trial: int | None) -> None:
        point = full_space.canonical(point)
        key = _point_key(_set_only(point))
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


def needed_point(lead: Entrant, entrants: list[Entrant], direction: str) -> dict | None:
    """`lead` without every setting whose removal was not clearly slower (the entrant without it ran, and its
    interval against `lead` reaches 1 within the noise floor); None when that leaves it as it is."""
    by_point = {_point_key(e.point): e for e in entrants if e.values}
    keep = {}
    for k, v in lead.point.items():
        other = by_point.get(_point_key({x: y for x, y in lead.point.items() if x != k}))
        m = None if other is None else race_interval(other.values, lead.values, direction)
        if m is None or m[2] * (1 + NOISE_FLOOR) < 1:      # not measured, or clearly needed
            keep[k] = v
    return keep if len(keep) < len(lead.point) else None


def _point_key(point: dict) -> str:
    return json.dumps(sorted(point.items()), default=str)


def _effects(answer: Entrant, lead: Entrant | None, entrants: list[Entrant], direction: str) -> list:
    """Each setting of the answer (kept) and of the search's best that the answer leaves out (dropped), with its
    measured effect: the answer against itself without the setting where the race ran that, else the search's
    best against itself without it (effect None: neither was run)."""
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
    most = max_runs(len(entrants), spec.final.max_rounds) + spec.final.max_rounds - rounds   # + a late entrant
    events.final_started(most if run_cap is None else min(most, run_cap))

    def run(e: Entrant, r: int) -> float | None:
        c = e.payload
        outcome = run_once(spec.job.argv, c.config, final_dir / c.label / f"run-{r + 1}", spec.study.objective,
                           timeout=timeout, cwd=spec.runs.cwd, page_cache=page_cache)
        c.runs.append(outcome)
        events.final_run(c.label, r, outcome.value, outcome.error)
        return outcome.value

    lead = next((e for e in entrants if picked and e.trial == picked[0].number), None)

    def late(now: list[Entrant]) -> list[Entrant]:
        point = needed_point(lead, now, spec.study.direction)
        if point is None or _point_key(point) in {_point_key(e.point) for e in now}:
            return []
        label = f"{lead.label}-needed"
        full = full_space.canonical(point)
        cfg = save_config(spec.space.layered(full_space.config(full, meta={"tool": "iotame tune", "race": label})),
                          _mkdir(final_dir / label) / "config.json")
        events.note(f"race: {label} joins: {lead.label} with only the settings whose removal was clearly slower "
                    f"({', '.join(k.split('.')[-1] for k in point) or 'none'})")
        return [Entrant(label, point, None, payload=Candidate(label, None, cfg, dict(full)))]

    result = race(entrants, base, run, spec.study.direction, min_rounds=rounds,
                  max_rounds=max(rounds, spec.final.max_rounds), run_cap=run_cap, tolerance=spec.final.tolerance,
                  late=late if lead is not None and lead.size > 1 else None)
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


