"""What a study tries first, after the default and before the sampler's proposals: the configurations given with
--first, then the cost model's recommendation for the default's workload (with a machine profile), then up to 3 best
configurations of similar workloads from the knowledge base. Each is enqueued once, and only when it is neither the
default nor one already queued."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import optuna
from optuna.trial import FrozenTrial

from .knowledge import KnowledgeBase
from .page_cache import PageCache
from .recommend import DEFAULT_STRATEGY, MODEL_SEED, Recommendation, point_is_default, recommend_for_default
from .space import Space, config_key, flatten_rules
from .spec import TuneSpec
from .study import ATTR_SEED
from .workload import Workload, recorded_workload, signature

__all__ = ["KNOWN_SEEDS", "recommendation", "seed_study"]

KNOWN_SEEDS = 3           # best configurations of similar workloads tried first


def recommendation(study: optuna.Study, spec: TuneSpec, space: Space, default: FrozenTrial, timeout: float | None,
                   page_cache: PageCache) -> Recommendation:
    """The cost model's recommendation for the default's workload, made once per study (its model run in
    out/model-run) and kept in the study."""
    stored = study.user_attrs.get("recommendation")
    if stored is not None:
        return Recommendation.from_json(stored)
    runs = default.user_attrs.get("runs") or [{}]
    stats = Path(runs[0]["dir"]) / "stats.json" if runs[0].get("dir") else None
    base = spec.space.base or {}
    reference = (base.get("defaults") or {}).get("collective", {}).get("strategy", DEFAULT_STRATEGY)
    rec = recommend_for_default(spec.job.argv, spec.space.layered, spec.seeds.profile, space,
                                recorded_workload(default.user_attrs), stats, spec.out / "model-run",
                                durable=spec.space.durable, reference=reference, where=spec.seeds.where,
                                cwd=spec.runs.cwd, timeout=timeout, page_cache=page_cache)
    study.set_user_attr("recommendation", rec.to_json())
    return rec


def seed_study(study: optuna.Study, spec: TuneSpec, space: Space, workload: Workload,
               recommend: Callable[[], Recommendation], note: Callable[[str], None]) -> None:
    """Enqueues the first trials in `space` (pruned for `workload`) and marks the study seeded. `recommend` makes
    the recommendation (a model run) when it comes to its turn."""
    seen = {config_key({})}
    _seed_first(study, spec.seeds.first, space, seen, note)
    _seed_recommendation(study, recommend(), space, seen, note)
    if spec.seeds.knowledge is not None:
        _seed_known(study, spec.seeds.knowledge, signature(workload, spec.fs), space, seen, note)
    study.set_user_attr("seeded", True)


def _seed_first(study: optuna.Study, first: tuple[tuple[str, dict], ...], space: Space, seen: set,
                note: Callable[[str], None]) -> None:
    """The configurations given to try first (--first), each flattened to defaults and as the space's closest
    point; the settings the space cannot express are named, not silently lost."""
    for label, given in first:
        config = flatten_rules(given)
        point = space.point_from_config(config)
        key = config_key(space.config(point))
        outside = space.left_out(config)
        if outside:
            note(f"{label}: not in this space, left out of its trial: {', '.join(outside)}")
        if key in seen:
            note(f"{label}: its trial is the default or one already queued: not tried again")
            continue
        seen.add(key)
        study.enqueue_trial(point, user_attrs={ATTR_SEED: label})
        note(f"trying first the configuration of {label}")


def _seed_recommendation(study: optuna.Study, rec: Recommendation, space: Space, seen: set,
                         note: Callable[[str], None]) -> None:
    """The model's recommendation, unless it is the default."""
    if rec.message and not rec.settings:
        note(f"model: {rec.message}")
        return
    if point_is_default(rec, space):
        note("model: its recommendation is the default in this space: not tried again")
        return
    point = rec.point(space)
    seen.add(config_key(space.config(point)))
    study.enqueue_trial(point, user_attrs={ATTR_SEED: MODEL_SEED})
    shown = ", ".join(f"{s.section}.{s.name}={s.value}" for s in rec.settings)
    note(f"trying first the cost model's recommendation: {shown} (predicted: {rec.gain_text()})")


def _seed_known(study: optuna.Study, knowledge: Path, sig: dict, space: Space, seen: set,
                note: Callable[[str], None]) -> None:
    """The best configurations of similar workloads in the knowledge base."""
    try:
        known = KnowledgeBase(knowledge).lookup(sig, KNOWN_SEEDS)
    except Exception as e:       # a broken knowledge base must not stop a study
        note(f"knowledge base {knowledge} not used: {e}")
        return
    for k in known:
        point = space.point_from_config(k.config)
        key = config_key(space.config(point))
        if key in seen:
            continue
        seen.add(key)
        speed = f", {k.speedup:.2f}x" if k.speedup else ""
        study.enqueue_trial(point, user_attrs={ATTR_SEED: f"knowledge base: study {k.study}{speed}"})
        note(f"trying first the best configuration of a similar workload (study {k.study}{speed})")
