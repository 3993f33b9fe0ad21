"""(The tuner now ends with a race, iotame.tune.race, which weighs the settings in its own rounds; it reports them
in this module's shapes, Effect and AblationResult, and effect_line. ablate() below is the one-at-a-time ablation the
race replaced, kept as a library function for scripts.)

The ablation after the search: which settings of the best configuration carry its gain. The best configuration
and, for each of its settings, the best configuration without it (left to the system default) are run side by side,
in turns, `rounds` times. A setting's effect is the median over the rounds of the best's value against the value
without it in the same round (a drift of the machine hits both alike), and its interval runs from the least to the
largest of those paired ratios. A setting whose interval lies above the noise of the measurements is kept, one whose
interval lies below it is dropped; where the interval straddles the noise, more rounds of the best and the settings
still in doubt are run, up to twice `rounds`, after which the median decides and the effect is marked uncertain. So
best.json holds the few settings that matter, ranked by their measured effect. Where several settings are dropped at
once, the configuration without all of them is checked against the best one, side by side; if it loses more than the
noise (settings that matter only together), only the least effective one is dropped."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


from .measure import RunOutcome, ratio, run_once
from .noise import spread
from .space import UNSET, Space, decode

__all__ = ["NOISE_FLOOR", "Effect", "AblationResult", "ablate", "noise_of", "effect_line", "paired_interval"]

NOISE_FLOOR = 0.02  # below this the runs' own spread is taken as 2 %: a re-run rarely repeats closer than that


@dataclass
class Effect:
    """A setting of the best configuration and what it carries: how many times better the best configuration is than
    itself without the setting, minus one (0.14: +14 %; negative: the setting costs), with the interval of the
    paired rounds (low, high) and how many rounds measured it. None: the configuration without it failed."""

    key: str
    value: object
    effect: float | None
    kept: bool
    interval: tuple[float, float] | None = None
    rounds: int = 0
    uncertain: bool = False     # the interval still straddled the noise after the most rounds

    def to_json(self) -> dict:
        return {"setting": self.key, "value": self.value, "effect": self.effect, "kept": self.kept,
                "interval": None if self.interval is None else list(self.interval), "rounds": self.rounds,
                "uncertain": self.uncertain}


@dataclass
class AblationResult:
    point: dict                 # the best point with the dropped settings left unset
    effects: list[Effect]       # every setting of the best point, the largest effect first
    noise: float
    rounds: int                 # the most rounds any setting took (more than asked where intervals straddled)
    verified: bool | None = None  # several dropped at once: whether the reduced point held up (None: not needed)
    runs: dict = field(default_factory=dict)  # label -> values
    unsteady: float | None = None  # the best's own runs spread this much (more than max_noise): nothing was weighed

    @property
    def dropped(self) -> list[str]:
        return [e.key for e in self.effects if not e.kept]

    def to_json(self) -> dict:
        return {"noise": self.noise, "rounds": self.rounds, "verified": self.verified, "unsteady": self.unsteady,
                "effects": [e.to_json() for e in self.effects], "dropped": self.dropped, "runs": self.runs}

    def line(self) -> str:
        """What carries the gain, in one line (effect_line), or why nothing could be weighed."""
        if self.unsteady is not None:
            return (f"not weighed: the best configuration's own runs spread {self.unsteady * 100:.0f} % in the "
                    f"ablation (more than --max-noise), so no setting's removal can be told from luck; best.json "
                    f"keeps every setting")
        return effect_line(self.effects, self.noise)


def noise_of(*value_lists: list[float]) -> float:
    """The measurements' noise: the largest relative spread ((max - min) / median) of the given repeated runs, at
    least NOISE_FLOOR."""
    return max([NOISE_FLOOR, *(s for s in map(spread, value_lists) if s is not None)])


def paired_interval(best: dict[int, float], other: dict[int, float],
                    direction: str) -> tuple[float, tuple[float, float]] | None:
    """How many times better `best` is than `other`, minus one, from the rounds both were measured in (values by
    round): the median of the per-round ratios and their (least, largest). None without a common round."""
    ratios = [q for q in (ratio(best[r], other[r], direction) for r in sorted(best) if r in other) if q is not None]
    if not ratios:
        return None
    return statistics.median(ratios) - 1, (min(ratios) - 1, max(ratios) - 1)


def _percent(x: float) -> str:
    return f"{x * 100:+.0f}"


def effect_text(e: Effect) -> str:
    """`+14 % [+8, +20]`: the effect and its interval (none for one round)."""
    if e.effect is None:
        return "needed (fails without)"
    text = f"{_percent(e.effect)} %"
    if e.interval is not None and e.rounds > 1:
        text += f" [{_percent(e.interval[0])}, {_percent(e.interval[1])}]"
    return text + (" (uncertain)" if e.uncertain else "")


def effect_line(effects: list[Effect], noise: float) -> str:
    """`romio_ds_write=enable: +14 % [+8, +20], cb_buffer_size=2097152: +3 % [+2, +5], the rest: noise (< 2 %)`."""
    kept = [f"{e.key.split('.')[-1]}={e.value}: {effect_text(e)}" for e in effects if e.kept]
    rest = [e for e in effects if not e.kept]
    text = ", ".join(kept) if kept else "no setting above the noise"
    if rest:
        text += f", the rest ({', '.join(e.key.split('.')[-1] for e in rest)}): noise (< {noise * 100:.0f} %)"
    return text


def _keep_what_kept_ones_act_through(space: Space, point: dict, effects: list[Effect]) -> None:
    """A setting whose removal would leave a kept one unable to act is kept too (the kept one's effect needs it)."""
    kept = {e.key for e in effects if e.kept}
    for e in effects:
        if not e.kept and any(v == UNSET for k, v in space.canonical({**point, e.key: UNSET}).items() if k in kept):
            e.kept = True


def _paired_effect(best: dict[int, float], other: dict[int, float], direction: str) -> float | None:
    """The paired effect alone (paired_interval's median)."""
    m = paired_interval(best, other, direction)
    return None if m is None else m[0]


def _straddles(measured: tuple[float, tuple[float, float]] | None, noise: float) -> bool:
    """The paired interval has values on both sides of the noise: more rounds may tell."""
    return measured is not None and measured[1][0] < noise <= measured[1][1]


def ablate(argv, space: Space, point: dict, config_of: Callable[[dict, str], Path], out: Path, objective: str,
           direction: str, rounds: int, noise: float,
           on_run: Callable[[str, int, RunOutcome], None] | None = None, max_noise: float | None = None,
           **run_kw) -> AblationResult | None:
    """Measures each setting of `point` by its removal. config_of(point, label) writes the configuration file of a
    point. Returns None when a run of the best point fails (the ablation then keeps everything). When the best
    point's own runs spread more than max_noise (a job whose speed under that configuration jumps between runs),
    nothing is weighed: every setting is kept and the result says how much they spread (unsteady).
    Only the settings that can act in `point` are weighed (Space.canonical): the others are left unset first,
    and the removal of a setting others act through leaves them unset too."""
    point = space.canonical(point)
    keys = [p.key for p in space if point[p.key] != UNSET]
    points = {"best": point, **{f"without {k}": space.canonical({**point, k: UNSET}) for k in keys}}
    values: dict[str, dict[int, float]] = {label: {} for label in points}
    failed: set[str] = set()

    def measure_round(labels: list[str], r: int) -> None:
        for label in labels:
            if label in failed:
                continue
            safe = label.replace(" ", "-").replace(".", "_")
            o = run_once(argv, config_of(points[label], safe), out / safe / f"run-{r + 1}", objective, **run_kw)
            if on_run:
                on_run(label, r, o)
            if o.value is None:
                failed.add(label)
            else:
                values[label][r] = o.value

    def measured(k: str) -> tuple[float, tuple[float, float]] | None:
        label = f"without {k}"
        return None if label in failed else paired_interval(values["best"], values[label], direction)

    for r in range(rounds):
        measure_round(list(points), r)
    done = rounds
    while done < 2 * rounds and "best" not in failed:
        doubtful = [f"without {k}" for k in keys if _straddles(measured(k), noise)]
        if not doubtful:
            break
        measure_round(["best", *doubtful], done)
        done += 1
    if "best" in failed or not values["best"]:
        return None
    unsteady = spread(list(values["best"].values()))
    if max_noise is not None and unsteady is not None and unsteady > max_noise:
        effects = [Effect(k, decode(point[k]), None, True) for k in keys]
        return AblationResult(point, effects, noise, done, None, _by_label(values), unsteady)
    effects = []
    for k in keys:
        m = measured(k)     # a point that fails without the setting needs it
        effects.append(Effect(k, decode(point[k]), None if m is None else m[0], m is None or m[0] >= noise,
                              None if m is None else m[1], len(values[f"without {k}"]), _straddles(m, noise)))
    effects.sort(key=lambda e: float("inf") if e.effect is None else e.effect, reverse=True)
    _keep_what_kept_ones_act_through(space, point, effects)
    reduced = space.canonical({**point, **{e.key: UNSET for e in effects if not e.kept}})
    verified = None
    if sum(not e.kept for e in effects) > 1:
        points["reduced"] = reduced
        values["reduced"], values["best"] = {}, {}
        for r in range(rounds):
            measure_round(["best", "reduced"], done + r)
        loss = None if "reduced" in failed else _paired_effect(values["best"], values["reduced"], direction)
        verified = loss is not None and loss < noise
        if not verified:  # together they matter: drop only the least effective one
            weakest = min((e for e in effects if not e.kept), key=lambda e: e.effect)
            for e in effects:
                e.kept = e is not weakest
            reduced = space.canonical({**point, weakest.key: UNSET})
    return AblationResult(reduced, effects, noise, done, verified, _by_label(values))


def _by_label(values: dict[str, dict[int, float]]) -> dict[str, list[float]]:
    """label -> its values in round order (the summary's runs)."""
    return {label: [v[r] for r in sorted(v)] for label, v in values.items()}
