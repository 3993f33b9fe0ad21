"""What the tuner reports: a finished trial, the events its user interface hears, the result of a study, and the
error that stops one."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from optuna.trial import FrozenTrial, TrialState

from ..errors import IotameError
from .study import ATTR_ERROR, ATTR_REUSED, ATTR_SEED, is_default

__all__ = ["TuneError", "TrialRecord", "TuneEvents", "TuneResult"]


class TuneError(IotameError):
    """The study cannot go on (the default configuration fails, the command does no I/O, …)."""


@dataclass
class TrialRecord:
    """A finished trial as the tuner reports it."""

    number: int
    params: dict
    value: float | None
    error: str | None = None
    default: bool = False
    seed: str | None = None
    reused_from: int | None = None
    runs: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.value is not None

    @classmethod
    def from_frozen(cls, t: FrozenTrial) -> "TrialRecord":
        return cls(t.number, dict(t.params), t.value if t.state == TrialState.COMPLETE else None,
                   t.user_attrs.get(ATTR_ERROR), is_default(t), t.user_attrs.get(ATTR_SEED),
                   t.user_attrs.get(ATTR_REUSED), t.user_attrs.get("runs", []))


class TuneEvents:
    """What the tuner tells its user interface; every method does nothing by default."""

    def note(self, text: str) -> None: ...

    def search_started(self, done: int, total: int) -> None: ...

    def trial_done(self, record: TrialRecord, best: TrialRecord | None, done: int, total: int) -> None: ...

    def final_started(self, runs: int) -> None: ...

    def final_run(self, label: str, round_: int, value: float | None, error: str | None) -> None: ...

    def ablation_started(self, runs: int) -> None: ...

    def ablation_run(self, label: str, round_: int, value: float | None, error: str | None) -> None: ...


@dataclass
class TuneResult:
    summary: dict
    best_path: Path
    summary_path: Path
