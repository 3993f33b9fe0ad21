"""What the end of a study works with: the search's best few configurations (pick_candidates), each configuration's
runs at the end (Candidate), and their outcome (FinalResult, whose `race` is the race's result when there was one).
The runs themselves are the race's (iotame.tune.race, iotame.tune.race_study)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from optuna.trial import FrozenTrial

from .measure import RunOutcome
from .space import config_key

__all__ = ["Candidate", "FinalResult", "pick_candidates"]


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


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p

