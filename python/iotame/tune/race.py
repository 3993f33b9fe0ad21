"""The end of a study: a race for the simplest configuration that is as fast (as irace's or SMAC's intensification).

The entrants are the default, the best few search configurations, and reductions of the best one: it without each
of its settings, and it without every setting that cannot act in this workload (known from the default run's
statistics, iotame.tune.workload.prune). They run in paired, rotated rounds (round r starts at entrant r), so that a
drift of the machine hits every entrant alike. After `min_rounds`, each round compares every entrant with the best
(the best median) by the paired per-round ratios: an entrant whose interval (a t-interval of the mean log ratio,
95 %) lies below the best's by more than the noise floor is out; so is one with more settings than the best (and so
a worse median), which cannot become the answer while the best is in. A late entrant may join after `min_rounds`
(`late`) and counts once it has run as many rounds. The answer is the alive entrant with the fewest settings (ties:
the better median). The race stops when the answer is the best itself or its interval says it is at most
`tolerance` slower than the best, when nothing but the answer and the best is left, or at `max_rounds` / the run
cap. Where the answer's gain over the default has an interval that does not exclude 1, the answer is the default:
nothing beat it beyond the noise.

The race is pure apart from `run` (entrant, round -> value or None), so it is tested on a cheap objective."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable

from .measure import ratio

__all__ = ["NOISE_FLOOR", "TOLERANCE", "Entrant", "RaceResult", "race", "paired_interval", "max_runs"]

NOISE_FLOOR = 0.02   # two runs of one configuration rarely repeat closer than this
TOLERANCE = 0.05     # "as fast": an interval that says at most this much slower than the best

# two-sided 95 % quantiles of Student's t by degrees of freedom (1..30); beyond, the normal's
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


@dataclass
class Entrant:
    """A configuration in the race: `point` its settings (key -> value, unset ones absent), `values` its
    objective by round, `error` why it failed (it is then out), `out` why it left the race (None: still in)."""

    label: str
    point: dict
    trial: int | None = None
    values: dict[int, float] = field(default_factory=dict)
    error: str | None = None
    out: str | None = None
    payload: object = None          # the caller's (e.g. the configuration file)

    @property
    def size(self) -> int:
        return len(self.point)

    @property
    def alive(self) -> bool:
        return self.out is None and self.error is None

    @property
    def median(self) -> float | None:
        return statistics.median(self.values.values()) if self.values else None

    def to_json(self) -> dict:
        return {"label": self.label, "trial": self.trial, "params": dict(self.point), "median": self.median,
                "values": [self.values[r] for r in sorted(self.values)], "error": self.error, "out": self.out,
                "ok": self.error is None and bool(self.values)}


def paired_interval(a: dict[int, float], b: dict[int, float], direction: str) -> tuple[float, float, float] | None:
    """How many times better `a` is than `b` over the rounds both ran: (geometric mean ratio, low, high), the
    interval a 95 % t-interval of the mean log ratio (a single round: the ratio itself). None: no common round."""
    logs = [math.log(q) for q in (ratio(a[r], b[r], direction) for r in sorted(a) if r in b) if q]
    if not logs:
        return None
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), math.exp(mean), math.exp(mean)
    half = _T95[min(len(logs) - 2, len(_T95) - 1)] * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


@dataclass
class RaceResult:
    entrants: list[Entrant]
    default: Entrant
    best: Entrant                   # the best median at the end
    answer: Entrant                 # the simplest as fast as the best (the default when nothing beat it)
    rounds: int
    runs: int
    stopped: str                    # why the race ended, in words
    speedup: tuple[float, float, float] | None   # the answer against the default (mean, low, high)
    no_gain: bool                   # nothing beat the default beyond the noise

    def to_json(self) -> dict:
        return {"rounds": self.rounds, "runs": self.runs, "stopped": self.stopped, "best": self.best.label,
                "answer": self.answer.label, "no_gain": self.no_gain,
                "speedup": None if self.speedup is None else list(self.speedup),
                "entrants": [e.to_json() for e in self.entrants]}


def max_runs(n_entrants: int, max_rounds: int) -> int:
    """The most runs a race of `n_entrants` can make."""
    return n_entrants * max_rounds


def _better_median(a: Entrant, b: Entrant, direction: str) -> bool:
    return (a.median > b.median) if direction == "maximize" else (a.median < b.median)


def _leader(alive: list[Entrant], direction: str) -> Entrant:
    best = alive[0]
    for e in alive[1:]:
        if _better_median(e, best, direction):
            best = e
    return best


def _simplest(alive: list[Entrant], direction: str) -> Entrant:
    fewest = min(e.size for e in alive)
    return _leader([e for e in alive if e.size == fewest], direction)


def _eliminate(alive: list[Entrant], best: Entrant, direction: str) -> None:
    """Marks out the entrants clearly slower than `best`, and those with more settings than `best` (a worse median
    by its definition): neither can become the answer while `best` stays in, and `best` is never marked out."""
    for e in alive:
        if e is best:
            continue
        m = paired_interval(e.values, best.values, direction)
        if m is not None and m[2] * (1 + NOISE_FLOOR) < 1:
            e.out = f"slower than {best.label}: x{m[0]:.3f} [{m[1]:.3f}, {m[2]:.3f}]"
        elif e.size > best.size:
            e.out = f"more settings than {best.label}, the best, and a worse median"


def race(entrants: list[Entrant], default: Entrant, run: Callable[[Entrant, int], float | None], direction: str,
         min_rounds: int = 3, max_rounds: int = 6, run_cap: int | None = None, tolerance: float = TOLERANCE,
         late: Callable[[list[Entrant]], list[Entrant]] | None = None) -> RaceResult:
    """Races `entrants` (the default among them) in paired, rotated rounds; `run(entrant, round)` measures one run
    (None: it failed, and the entrant is out). The default runs every round (the speedup's reference) even when
    it is out of the answer. `run_cap` bounds the runs; a round is only started when it fits. `late(entrants)`,
    called once after `min_rounds`, may add entrants built from what was measured (e.g. the best without every
    setting whose removal was not clearly slower); an entrant is compared, and can leave or be the answer, only
    once it has run `min_rounds` rounds, and the race does not stop for an answer while one is still short."""
    assert default in entrants, "the default must be an entrant"
    runs = rounds = 0
    stopped = f"at the most rounds, {max_rounds}"
    previous = None

    def ready(e: Entrant) -> bool:
        return e.alive and len(e.values) >= min_rounds

    while rounds < max_rounds:
        racing = [e for e in entrants if e.error is None and (e.out is None or e is default)]
        if run_cap is not None and runs + len(racing) > run_cap:
            stopped = f"at the run cap of {run_cap} runs"
            break
        shift = rounds % len(racing)
        for e in racing[shift:] + racing[:shift]:       # rotated: no entrant always runs first
            value = run(e, rounds)
            runs += 1
            if value is None:
                e.error = e.error or "a run failed"
            else:
                e.values[rounds] = value
        rounds += 1
        if not any(e.alive for e in entrants):
            stopped = "every entrant failed"
            break
        if rounds < min_rounds or not any(ready(e) for e in entrants):
            continue
        if rounds == min_rounds and late is not None:
            entrants.extend(late(entrants))
        best = _leader([e for e in entrants if ready(e)], direction)
        _eliminate([e for e in entrants if ready(e)], best, direction)
        answer = _simplest([e for e in entrants if ready(e)], direction)
        if any(e.alive and not ready(e) for e in entrants):
            previous = None
            continue                                    # a late entrant still short of min_rounds
        m = paired_interval(answer.values, best.values, direction)
        if answer is best:
            stopped = "the simplest entrant still in is the best"
            break
        if m is not None and m[1] * (1 + tolerance) >= 1:
            stopped = f"{answer.label} is within {tolerance * 100:.0f} % of the best"
            break
        if {id(e) for e in entrants if e.alive} <= {id(answer), id(best)} and previous is answer:
            stopped = "only the simplest and the best are left"
            break
        previous = answer
    done = [e for e in entrants if ready(e)]
    best = _leader(done, direction) if done else default
    answer = _simplest(done, direction) if done else default
    speedup = paired_interval(answer.values, default.values, direction) if answer is not default else None
    no_gain = answer is default or speedup is None or speedup[1] <= 1
    if no_gain:
        answer, speedup = default, None
    return RaceResult(entrants, default, best, answer, rounds, runs, stopped, speedup, no_gain)
