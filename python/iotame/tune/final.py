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

from ..config import save_config
from .measure import RunOutcome, better, run_once
from .page_cache import PageCache
from .records import TuneEvents
from .space import config_key
from .spec import TuneSpec

__all__ = ["Candidate", "FinalResult", "run_final", "pick_candidates", "rerun_best"]


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

