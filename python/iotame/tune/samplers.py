"""Search strategies: small plug-ins that build an optuna sampler for a space.

    ga      H5Evolve (Behzad et al., SC13): a genetic algorithm, population 15, elitism, uniform crossover,
            15 % mutation. optuna's NSGA-II with one objective is exactly that: the next parents are the best
            of parents and children together (elitism), children come from uniform crossover of two
            tournament-selected parents (probability 0.9), and each gene mutates (is drawn afresh) with
            probability 0.15.
    tpe     Tree-structured Parzen estimator (multivariate, few random start-up trials).
    random  Uniform random sampling.
    grid    Every configuration of the space, in a random order; the study stops when the grid is exhausted.

The default is the one that reached a good configuration in the fewest trials in bench/tuners.py (docs/tuning.md).
"""
from __future__ import annotations

import warnings

import optuna

from .space import Space

__all__ = ["Sampler", "GeneticAlgorithm", "Tpe", "Random", "Grid", "SAMPLERS", "DEFAULT_SAMPLER", "get_sampler",
           "GA_POPULATION", "GA_MUTATION", "GA_CROSSOVER", "TPE_STARTUP"]

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
            return optuna.samplers.TPESampler(n_startup_trials=TPE_STARTUP, multivariate=True, seed=seed,
                                              constant_liar=True)


class Random(Sampler):
    name = "random"
    summary = "uniform random sampling"

    def create(self, space, seed=None):
        return optuna.samplers.RandomSampler(seed=seed)


class _AskTellGrid(optuna.samplers.GridSampler):
    """optuna's GridSampler stops a study from inside optimize() when the grid is done, which the ask-and-tell
    loop of the tuner cannot take; the tuner asks Grid.exhausted() instead."""

    def after_trial(self, study, trial, state, values):
        return None


class Grid(Sampler):
    name = "grid"
    summary = "every configuration of the space, in random order"

    def create(self, space, seed=None):
        return _AskTellGrid({p.key: p.choices for p in space}, seed=seed)

    def exhausted(self, sampler, study):
        return isinstance(sampler, optuna.samplers.GridSampler) and sampler.is_exhausted(study)


SAMPLERS: dict[str, type[Sampler]] = {s.name: s for s in (GeneticAlgorithm, Tpe, Random, Grid)}
DEFAULT_SAMPLER = "tpe"


def get_sampler(name: str) -> Sampler:
    try:
        return SAMPLERS[name]()
    except KeyError:
        raise ValueError(f"unknown sampler {name!r} (expected one of: {', '.join(SAMPLERS)})") from None
