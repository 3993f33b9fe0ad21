"""Search strategies: small plug-ins that build an optuna sampler for a space.

    ga      H5Evolve (Behzad et al., SC13): a genetic algorithm, population 15, elitism, uniform crossover,
            15 % mutation. optuna's NSGA-II with one objective is exactly that: the next parents are the best
            of parents and children together (elitism), children come from uniform crossover of two
            tournament-selected parents (probability 0.9), and each gene mutates (is drawn afresh) with
            probability 0.15.
    tpe     Tree-structured Parzen estimator (multivariate, few random start-up trials).
    random  Uniform random sampling.
    grid    Every configuration of the space once, in a seeded random order; the study stops when all are done.

The default is the one that reached a good configuration in the fewest trials in bench/tuners.py (docs/tuning.md).
"""
from __future__ import annotations

import math
import random
import warnings

import optuna

from .space import UNSET, Space

__all__ = ["Sampler", "GeneticAlgorithm", "Tpe", "Random", "Grid", "ShuffledGrid", "SAMPLERS", "DEFAULT_SAMPLER",
           "get_sampler", "GA_POPULATION", "GA_MUTATION", "GA_CROSSOVER", "TPE_STARTUP"]

GA_POPULATION = 15       # H5Evolve's population size
GA_MUTATION = 0.15       # H5Evolve's mutation rate
GA_CROSSOVER = 0.9
TPE_STARTUP = 5          # random trials before TPE models the results (optuna's default of 10 is half a budget)


class Sampler:
    """A search strategy: `name`, a one-line `summary`, and create() building the optuna sampler."""

    name = ""
    summary = ""

    def create(self, space: Space, seed: int | None = None) -> optuna.samplers.BaseSampler:
        raise NotImplementedError

    def exhausted(self, sampler: optuna.samplers.BaseSampler, study: optuna.Study) -> bool:
        """True when the strategy has nothing new to propose (the tuner then stops early)."""
        return False


class GeneticAlgorithm(Sampler):
    name = "ga"
    summary = f"genetic algorithm as in H5Evolve (population {GA_POPULATION}, elitism, crossover, " \
              f"{GA_MUTATION:.0%} mutation)"

    def create(self, space, seed=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.NSGAIISampler(population_size=GA_POPULATION, mutation_prob=GA_MUTATION,
                                                 crossover_prob=GA_CROSSOVER, swapping_prob=0.5, seed=seed)


class Tpe(Sampler):
    name = "tpe"
    summary = f"tree-structured Parzen estimator ({TPE_STARTUP} random trials first)"

    def create(self, space, seed=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            # group: the space is conditional (define-by-run), each group of parameters drawn together modelled alone
            return optuna.samplers.TPESampler(n_startup_trials=TPE_STARTUP, multivariate=True, group=True,
                                              seed=seed, constant_liar=True)


class Random(Sampler):
    name = "random"
    summary = "uniform random sampling"

    def create(self, space, seed=None):
        return optuna.samplers.RandomSampler(seed=seed)


class ShuffledGrid(optuna.samplers.BaseSampler):
    """Every point of a categorical space once, in a seeded random order.

    RATIONALE: optuna's GridSampler builds the whole grid in memory (the built-in space has millions of points,
    billions with HDF5 properties) and stops the study from inside optimize(), which the tuner's ask-and-tell
    loop cannot take. This one draws an unvisited point's index and decodes it (mixed radix); the points of every
    trial of the study, enqueued ones included, count as visited. Given a Space, only its points in which no
    parameter is set that cannot act are drawn (a trial's parameters that were not drawn count as unset).
    """

    def __init__(self, space: dict, seed: int | None = None, conditional: Space | None = None):
        self._keys = list(space)
        self._choices = [list(v) for v in space.values()]
        self._full = math.prod(len(c) for c in self._choices)
        self._space = conditional
        self._size = conditional.count_configurations() if conditional is not None else self._full
        self._rng = random.Random(seed)

    @property
    def size(self) -> int:
        return self._size

    def _index(self, params: dict) -> int | None:
        index = 0
        for key, choices in zip(self._keys, self._choices):
            value = params.get(key, UNSET if self._space is not None else None)
            if value not in choices:
                return None
            index = index * len(choices) + choices.index(value)
        return index

    def _point(self, index: int) -> dict:
        point = {}
        for key, choices in reversed(list(zip(self._keys, self._choices))):
            index, i = divmod(index, len(choices))
            point[key] = choices[i]
        return point

    def _distinct(self, index: int) -> bool:
        """Whether the point sets no parameter that cannot act (always, without a Space)."""
        return self._space is None or not self._space.inactive(self._point(index))

    def visited(self, study: optuna.Study) -> set[int]:
        seen = set()
        for t in study.get_trials(deepcopy=False):
            params = t.params or t.system_attrs.get("fixed_params") or {}
            if not params:
                continue        # a trial being sampled (a drawn point has at least one parameter)
            i = self._index(params)
            if i is not None:
                seen.add(i)
        return seen

    def infer_relative_search_space(self, study, trial):
        return {k: optuna.distributions.CategoricalDistribution(c) for k, c in zip(self._keys, self._choices)}

    def sample_relative(self, study, trial, search_space):
        if not search_space:
            return {}
        seen = self.visited(study)
        if len(seen) >= self._size:
            return self._point(self._rng.randrange(self._full))
        if len(seen) < self._size // 2:
            for _ in range(10000):     # rejection: distinct points are most of a space; else the list below
                i = self._rng.randrange(self._full)
                if i not in seen and self._distinct(i):
                    return self._point(i)
        return self._point(self._rng.choice([i for i in range(self._full) if i not in seen and self._distinct(i)]))

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._rng.choice(list(param_distribution.choices))

    def is_exhausted(self, study: optuna.Study) -> bool:
        return len(self.visited(study)) >= self._size


class Grid(Sampler):
    name = "grid"
    summary = "every configuration of the space once, in random order"

    def create(self, space, seed=None):
        return ShuffledGrid({p.key: p.choices for p in space}, seed=seed, conditional=space)

    def exhausted(self, sampler, study):
        return isinstance(sampler, ShuffledGrid) and sampler.is_exhausted(study)


SAMPLERS: dict[str, type[Sampler]] = {s.name: s for s in (GeneticAlgorithm, Tpe, Random, Grid)}
DEFAULT_SAMPLER = "tpe"


def get_sampler(name: str) -> Sampler:
    try:
        return SAMPLERS[name]()
    except KeyError:
        raise ValueError(f"unknown sampler {name!r} (expected one of: {', '.join(SAMPLERS)})") from None
