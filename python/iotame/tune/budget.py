"""How many runs a study makes at most, announced before it starts, and `--budget RUNS|MINUTES`, which caps them.

A study is the default's runs (NOISE_RUNS, or --repeat if more), the search's trials (--repeat runs each) and the
race (at most its entrants times its most rounds; iotame.tune.race). A budget in minutes becomes a budget in runs
once the default's runs say how long one run takes. Within a budget the race keeps the runs its first rounds need
(the default and the best few, `repeat` rounds) and the search gets the rest."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .noise import NOISE_RUNS

__all__ = ["Budget", "StudyPlan", "parse_budget"]


@dataclass(frozen=True)
class Budget:
    """At most `runs` runs, or `minutes` of runs (one of the two)."""

    runs: int | None = None
    minutes: float | None = None

    def runs_for(self, seconds_per_run: float) -> int:
        """The budget in runs, at `seconds_per_run`."""
        if self.runs is not None:
            return self.runs
        return max(1, int(self.minutes * 60 / max(seconds_per_run, 1e-3)))

    def __str__(self) -> str:
        return f"{self.runs} runs" if self.runs is not None else f"{self.minutes:g} minutes"


def parse_budget(text: str) -> Budget:
    """'120' (runs), '30m' or '30min' (minutes). ValueError naming the accepted forms."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(m|min|minutes?)?\s*", text or "")
    if not m or (m.group(2) is None and "." in m.group(1)) or float(m.group(1)) <= 0:
        raise ValueError(f"--budget {text!r}: expected a number of runs (120) or of minutes (30m, 30min)")
    return Budget(minutes=float(m.group(1))) if m.group(2) else Budget(runs=int(m.group(1)))


@dataclass(frozen=True)
class StudyPlan:
    """The most runs of each part of a study."""

    default_runs: int
    trials: int
    repeat: int
    race_entrants: int          # the default, the best few, the best's reductions (at most)
    race_rounds: int
    race_min_rounds: int
    top: int

    @classmethod
    def of(cls, trials: int, repeat: int, space_size: int, top: int, min_rounds: int, max_rounds: int) -> "StudyPlan":
        entrants = 1 + top + space_size + 2 if min_rounds > 0 else 0   # + without each; only what acts; needed
        return cls(max(repeat, NOISE_RUNS), trials, repeat, entrants, max_rounds if min_rounds > 0 else 0,
                   min_rounds, top)

    @property
    def race_runs(self) -> int:
        return self.race_entrants * self.race_rounds

    @property
    def total(self) -> int:
        return self.default_runs + self.trials * self.repeat + self.race_runs

    def within(self, runs: int) -> tuple[int, int]:
        """(search trials, race run cap) that fit in `runs`: the race keeps its first rounds of the default and
        the best few, the search the rest, the race any runs the search leaves."""
        race_floor = (1 + self.top) * self.race_min_rounds
        trials = max(0, min(self.trials, (runs - self.default_runs - race_floor) // max(self.repeat, 1)))
        return trials, max(0, runs - self.default_runs - trials * self.repeat)

    def describe(self) -> str:
        return (f"at most {self.total} runs: the default {self.default_runs}, the search {self.trials} trials x "
                f"{self.repeat}, the race at most {self.race_entrants} configurations x {self.race_rounds} rounds")
