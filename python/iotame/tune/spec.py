"""What a study is given, grouped by the concern that reads it: the job, the study and its budget, the space and how
a trial's configuration becomes the run's, how each configuration is measured, the final re-run and the ablation,
and the configurations tried first."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

from .job import Job
from .measure import OBJECTIVE_DIRECTIONS
from .noise import MAX_NOISE
from .samplers import DEFAULT_SAMPLER
from .space import Space
from .study import normalize_url, sqlite_url

__all__ = ["StudySpec", "SpaceSpec", "RunSpec", "FinalSpec", "SeedSpec", "TuneSpec"]


@dataclass
class StudySpec:
    """The optuna study and its budget: `trials` is the study's total, whichever tuners run them."""

    name: str
    storage: str | None = None              # None: sqlite in the output directory's study.sqlite
    objective: str = "io-bandwidth"
    sampler: str = DEFAULT_SAMPLER
    trials: int = 30
    jobs: int = 1                           # trials at once in this tuner
    seed: int | None = None                 # the sampler's
    heartbeat: int | None = None            # seconds between heartbeats; None: $IOTAME_TUNE_HEARTBEAT, else 20

    @property
    def direction(self) -> str:
        return OBJECTIVE_DIRECTIONS[self.objective]


@dataclass
class SpaceSpec:
    """The space before the workload prunes it, and what every trial's configuration is layered on."""

    space: Space
    source: str = "built-in"
    base: dict | None = None                # settings every trial keeps (--base), the default trial included
    durable: bool = True                    # runs make written files durable at close (posix.sync_at_close)

    def layered(self, config: dict) -> dict:
        """The configuration a run uses: `config` over the base configuration (the base's defaults and rules, the
        trial's settings on top), and with `durable` the closes that make the data durable, so that the objective
        measures the storage rather than the page cache."""
        if not self.base and not self.durable:
            return config
        out = copy.deepcopy(self.base) if self.base else {"version": config.get("version", 1)}
        out.pop("meta", None)
        for section, values in (config.get("defaults") or {}).items():
            out.setdefault("defaults", {}).setdefault(section, {}).update(values)
        if self.durable:
            out.setdefault("defaults", {}).setdefault("posix", {})["sync_at_close"] = True
        if "meta" in config:
            out["meta"] = config["meta"]
        return out

    def published(self, config: dict) -> dict:
        """A run's configuration as the user gets it: without the tuner's own measuring device (durable closes),
        unless the base configuration asked for it."""
        if not self.durable or ((self.base or {}).get("defaults") or {}).get("posix", {}).get("sync_at_close"):
            return config
        out = copy.deepcopy(config)
        posix = (out.get("defaults") or {}).get("posix")
        if posix is not None:
            posix.pop("sync_at_close", None)
            if not posix:
                del out["defaults"]["posix"]
            if not out["defaults"]:
                del out["defaults"]
        return out


@dataclass
class RunSpec:
    """How each configuration is measured."""

    repeat: int = 1                         # runs per configuration, the median its value
    timeout: float | None = None            # None: a multiple of the default's slowest run (iotame.tune.tuner)
    drop_caches: str | bool = "files"     # page cache mode (iotame.tune.page_cache): files, machine, off
    max_noise: float = MAX_NOISE            # the default's runs spreading more stop the study (iotame.tune.noise)
    cwd: Path | None = None


@dataclass
class FinalSpec:
    """After the search: the best `top` and the default re-run side by side, then the best one's settings weighed."""

    top: int = 3
    repeat: int = 3                         # the race's first rounds before anything leaves it; 0: no race
    ablation_rounds: int = 2                # (the old ablation's rounds; the race replaces it)
    max_rounds: int = 6                     # the race's most rounds
    tolerance: float = 0.05                 # "as fast as the best": at most this much slower (iotame.tune.race)


@dataclass
class SeedSpec:
    """What is tried first after the default: the given configurations, the cost model's recommendation, the best
    configurations of similar workloads."""

    first: tuple[tuple[str, dict], ...] = ()  # (label, configuration) tried first (--first), in this order
    knowledge: Path | None = None           # None: no knowledge base
    profile: Path | None = None             # machine profile of the cost model's recommendation; None: none
    where: str = "the job's directory"      # where the profile was looked for (the message without one)


@dataclass
class TuneSpec:
    """Everything a study needs. `job.argv` is the command as run (launcher included); `fs` the file system the
    built-in space and the knowledge base's signatures are for; `out` the tuner's output directory."""

    job: Job
    fs: str
    out: Path
    study: StudySpec
    space: SpaceSpec
    runs: RunSpec = field(default_factory=RunSpec)
    final: FinalSpec = field(default_factory=FinalSpec)
    seeds: SeedSpec = field(default_factory=SeedSpec)

    @property
    def storage_url(self) -> str:
        return normalize_url(self.study.storage) if self.study.storage else sqlite_url(self.out / "study.sqlite")
