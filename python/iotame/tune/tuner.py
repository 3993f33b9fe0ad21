"""The tuning loop: measure the default, search the space with real runs, re-run the best few beside the default,
and write the best configuration and a summary.

    1. the default trial (every parameter unset: the empty configuration) runs first in every study; its
       statistics describe the workload, which prunes the space and finds similar workloads in the knowledge base
    2. with a machine profile, the cost model's recommendation for the workload (iotame.tune.recommend) is
       enqueued as the next trial, then up to 3 best configurations of similar workloads
    3. the sampler proposes the rest; a configuration measured before is not run again (its value is reused)
    4. the best few and the default are re-run alternately; the best median wins (iotame.tune.final)
    5. best.json, summary.json, and the workload's best configuration in the knowledge base

A failed or timed-out trial is told to optuna as FAIL and so can never be best. An interrupted study resumes
where it stopped (same storage and study name): trials a killed tuner left running are marked failed and do not
count against --trials, and the default is run again only if the study has none.

Several tuners may run one study at once (a PostgreSQL storage shared by nodes; docs/design/shared-study.md):
the default, each configuration and the final re-run are measured once, by the tuner that claims them (Claims),
while the others wait for the result; --trials is the study's total, whoever runs the trials.
"""
from __future__ import annotations

import copy
import datetime
import hashlib
import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from ..config import save_config
from ..errors import IotameError, UsageError
from .ablation import AblationResult, ablate, noise_of, paired_interval
from .final import Candidate, FinalResult, run_final
from .knowledge import KnowledgeBase
from .measure import OBJECTIVE_DIRECTIONS, OBJECTIVE_UNITS, better, measure, ratio
from .noise import MAX_NOISE, NOISE_RUNS, too_noisy
from .page_cache import PageCache
from .recommend import DEFAULT_STRATEGY, MODEL_SEED, Recommendation, point_is_default, recommend_for_default
from .samplers import DEFAULT_SAMPLER, get_sampler
from .space import UNSET, Space, apply_base, flatten_rules
from .study import (ATTR_DEFAULT, ATTR_ERROR, ATTR_REUSED, ATTR_ROLE, ATTR_SEED, ATTR_TUNER, Claims, Heartbeat, counts,
                    counted_trials, fail_interrupted, heartbeat_seconds, interrupted_numbers, is_default,
                    mark_interrupted, normalize_url, open_study, role, sqlite_url, tuner_id)
from .workload import Workload, prune, signature, workload_from_stats

__all__ = ["TuneSpec", "TuneEvents", "TrialRecord", "TuneResult", "TuneError", "Tuner", "run_tune",
           "TIMEOUT_FACTOR", "TIMEOUT_MIN"]

TIMEOUT_FACTOR = 10      # without --timeout, a run may take this many times the default's slowest run …
TIMEOUT_MIN = 60.0       # … and at least this many seconds
SUMMARY_VERSION = 1
POLL_SECONDS = 5          # how often a tuner waiting for another one's trial looks at the study


class TuneError(IotameError):
    """The study cannot go on (the default configuration fails, the command does no I/O, …)."""


@dataclass
class TuneSpec:
    """Everything a study needs. `argv` is the command as run (launcher included); `space` is the space before
    the workload prunes it."""

    argv: tuple[str, ...]
    nprocs: int
    fs: str
    space: Space
    out: Path
    study: str
    storage: str | None = None              # None: sqlite in out/study.sqlite
    objective: str = "io-bandwidth"
    sampler: str = DEFAULT_SAMPLER
    trials: int = 30
    repeat: int = 1
    timeout: float | None = None            # None: TIMEOUT_FACTOR x the default's slowest run
    jobs: int = 1
    final_top: int = 3
    final_repeat: int = 3
    seed: int | None = None
    drop_caches: bool = True
    knowledge: Path | None = None           # None: no knowledge base
    cwd: Path | None = None
    space_source: str = "built-in"
    base: dict | None = None                # settings every trial keeps (--base), the default trial included
    durable: bool = True                    # runs make written files durable at close (posix.sync_at_close)
    ablation_rounds: int = 2                # 0: best.json keeps every setting of the best trial
    max_noise: float = MAX_NOISE            # the default's runs spreading more stop the study (iotame.tune.noise)
    heartbeat: int | None = None            # seconds between heartbeats; None: $IOTAME_TUNE_HEARTBEAT, else 20
    profile: Path | None = None             # machine profile of the cost model's recommendation; None: none
    where: str = "the job's directory"      # where the profile was looked for (the message without one)
    first: tuple[tuple[str, dict], ...] = ()  # (label, configuration) tried first (--first), in this order

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

    @property
    def direction(self) -> str:
        return OBJECTIVE_DIRECTIONS[self.objective]

    @property
    def storage_url(self) -> str:
        return normalize_url(self.storage) if self.storage else sqlite_url(self.out / "study.sqlite")


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


def _config_key(config: dict) -> str:
    return json.dumps(config.get("defaults") or {}, sort_keys=True)


class Tuner:
    def __init__(self, spec: TuneSpec, events: TuneEvents | None = None):
        self.spec = spec
        self.events = events or TuneEvents()
        self.direction = spec.direction
        self.page_cache = PageCache(spec.drop_caches, self.events.note)
        self.lock = threading.Lock()
        self.best: TrialRecord | None = None
        self.timeout = spec.timeout
        self.stop = threading.Event()
        self.full_space = apply_base(spec.space, spec.base)   # what can act depends on the base's settings too
        self.space = self.full_space
        self.study: optuna.Study | None = None
        self.default: FrozenTrial | None = None
        self.sampler_plugin = get_sampler(spec.sampler)
        self.heartbeat: Heartbeat | None = None
        self.claims: Claims | None = None
        self.interval = spec.heartbeat or heartbeat_seconds()
        self.poll = min(POLL_SECONDS, self.interval)
        self._noted: set[str] = set()
        self._last_check = 0.0
        self._token = random.getrandbits(31)      # this tuner in claims that belong to no trial

    # --- the study -----------------------------------------------------------------------------------------

    def open(self) -> optuna.Study:
        spec = self.spec
        spec.out.mkdir(parents=True, exist_ok=True)
        study = open_study(spec.storage_url, spec.study, self.direction, spec.objective, heartbeat=self.interval)
        stored = study.user_attrs.get("space_full")
        if stored is None:
            study.set_user_attr("space_full", self.full_space.to_json())
            study.set_user_attr("command", list(spec.argv))
        elif Space.from_json(stored).to_json() != self.full_space.to_json():
            raise UsageError(f"tune: study {spec.study} was started with another search space (or file system, "
                             f"or process count); give a new --study, or the same options as before")
        self.study = study
        self.claims = Claims(study)
        self.heartbeat = Heartbeat(study, self.interval)
        lost = fail_interrupted(study)
        if lost:
            self.events.note(f"resuming study {spec.study}: trial{'s' if len(lost) > 1 else ''} "
                             f"{', '.join(map(str, lost))} of a stopped tuner marked failed")
        (spec.out / "study.json").write_text(json.dumps({
            "storage": spec.storage_url, "study": spec.study, "objective": spec.objective,
            "direction": self.direction, "unit": OBJECTIVE_UNITS[spec.objective], "command": list(spec.argv),
            "nprocs": spec.nprocs, "fs": spec.fs}, indent=1) + "\n")
        skip = set(interrupted_numbers(study))
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            if counts(t, skip):
                self._remember(t)
        return study

    def close(self) -> None:
        """Stops the heartbeats (the trials still held, if any, then go stale and are failed by others)."""
        if self.heartbeat is not None:
            self.heartbeat.close()
            self.heartbeat = None

    def _remember(self, t: FrozenTrial) -> None:
        rec = TrialRecord.from_frozen(t)
        if rec.ok and (self.best is None or better(rec.value, self.best.value, self.direction)):
            self.best = rec

    def _note_once(self, key: str, text: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.events.note(text)

    def _check(self) -> None:
        """Fails the trials of stopped tuners, at most once per poll interval (every waiting loop calls it)."""
        now = time.monotonic()
        if now - self._last_check < self.poll:
            return
        self._last_check = now
        lost = fail_interrupted(self.study)
        if lost:
            self.events.note(f"trial{'s' if len(lost) > 1 else ''} {', '.join(map(str, lost))} of a stopped "
                             f"tuner marked failed; {'their' if len(lost) > 1 else 'its'} budget is free again")

    def _wait(self) -> None:
        self.stop.wait(self.poll)
        self._check()

    def _trial(self, number: int) -> FrozenTrial | None:
        for t in self.study.get_trials(deepcopy=False):
            if t.number == number:
                return t
        return None

    def _dead(self, t: FrozenTrial | None) -> bool:
        """A trial that holds nothing: gone, interrupted (its tuner stopped) or released."""
        return t is None or role(t) == "released" or \
            (t.state == TrialState.FAIL and t.number in set(interrupted_numbers(self.study)))

    # --- trials held by this tuner ---------------------------------------------------------------------------

    def _hold(self, trial: optuna.Trial) -> optuna.Trial:
        self.heartbeat.hold(trial)
        return trial

    def _new_trial(self, user_attrs: dict, fixed_params: dict | None = None) -> optuna.Trial:
        """A RUNNING trial created with its attributes in one write (so no tuner ever sees it without them)."""
        frozen = optuna.trial.FrozenTrial(
            number=-1, state=TrialState.RUNNING, value=None, datetime_start=datetime.datetime.now(),
            datetime_complete=None, params={}, distributions={}, user_attrs={**user_attrs, ATTR_TUNER: tuner_id()},
            system_attrs={"fixed_params": fixed_params} if fixed_params is not None else {},
            intermediate_values={}, trial_id=-1)
        trial_id = self.study._storage.create_new_trial(self.study._study_id, template_trial=frozen)
        return self._hold(optuna.Trial(self.study, trial_id))

    def _release(self, trial: optuna.Trial, why: str) -> None:
        """Gives back a trial this tuner will not run: failed, with role "released", never counted. An enqueued
        configuration it had popped goes back into the queue."""
        fixed = self.study._storage.get_trial(trial._trial_id).system_attrs.get("fixed_params")
        if fixed and not trial.user_attrs.get(ATTR_DEFAULT) and role(trial) is None:
            attrs = {k: v for k, v in trial.user_attrs.items() if k == ATTR_SEED}
            self.study.enqueue_trial(fixed, user_attrs=attrs, skip_if_exists=False)
        trial.set_user_attr(ATTR_ROLE, "released")
        trial.set_user_attr(ATTR_ERROR, f"not run: {why}")
        self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
        self.heartbeat.drop(trial.number)

    def _default_trial(self) -> FrozenTrial | None:
        done = [t for t in self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if is_default(t) and role(t) is None]
        return done[-1] if done else None

    # --- one trial -----------------------------------------------------------------------------------------

    def _reserve(self) -> optuna.Trial | None:
        """Asks for the next trial if the budget allows (under the lock: parallel workers must not overshoot).
        Tuners sharing the study may ask at the same moment: a trial is run only if fewer than --trials counted
        trials have lower numbers (the storage numbers trials in the order it creates them), else released."""
        with self.lock:
            if self.stop.is_set() or counted_trials(self.study) >= self.spec.trials:
                return None
            if self.sampler_plugin.exhausted(self.study.sampler, self.study):
                return None
            trial = self._hold(self.study.ask())
            skip = set(interrupted_numbers(self.study))
            below = sum(1 for t in self.study.get_trials(deepcopy=False)
                        if t.number < trial.number and counts(t, skip))
            if below >= self.spec.trials:
                self._release(trial, "the budget was spent by trials asked at the same time")
                return None
            return trial

    def _others_running(self) -> list[int]:
        """Search and default trials other tuners are running (they may still fail and free their budget)."""
        mine = self.heartbeat.numbers()
        return [t.number for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                if t.number not in mine and role(t) is None]

    def _measured_as(self, trial: optuna.Trial, config: dict) -> FrozenTrial | None:
        """The trial that measured `config`, or None when this one is to measure it. A configuration is measured
        once in the study: a finished trial with the same configuration is reused; else the first trial to claim
        it measures it and the others wait for its result (a claim whose trial was interrupted passes on)."""
        key = _config_key(config)
        claim = "config:" + hashlib.sha1(key.encode()).hexdigest()
        while True:
            skip = set(interrupted_numbers(self.study))
            for t in self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)):
                if t.number != trial.number and counts(t, skip) and ATTR_REUSED not in t.user_attrs \
                        and _config_key(t.user_attrs.get("config") or {}) == key:
                    return t
            owner = self.claims.claim(claim, trial.number)
            if owner == trial.number:
                return None
            o = self._trial(owner)
            if self._dead(o):
                if self.claims.steal(claim, owner, trial.number):
                    return None
                continue
            if o.state != TrialState.RUNNING:
                self._wait()        # finished: found as such by the loop above once visible
                continue
            self._note_once(f"config:{trial.number}", f"trial {trial.number}: trial {owner} (another tuner) is "
                                                      f"measuring the same configuration: waiting for its result")
            self._wait()
            if self.stop.is_set():
                raise KeyboardInterrupt

    def _run(self, trial: optuna.Trial) -> TrialRecord:
        spec = self.spec
        default = bool(trial.user_attrs.get(ATTR_DEFAULT))
        space = self.full_space if default else self.space
        # define-by-run: a parameter that cannot act given those drawn before it is not drawn (nor written)
        point = space.sample(lambda p: trial.suggest_categorical(p.key, p.choices))
        config = spec.layered(space.config(point, meta={"tool": "iotame tune", "study": spec.study,
                                                         "trial": trial.number}))
        trial_dir = spec.out / "trials" / f"{trial.number:04d}"
        trial_dir.mkdir(parents=True, exist_ok=True)
        config_path = save_config(config, trial_dir / "config.json")
        trial.set_user_attr("config", config)
        earlier = None if default else self._measured_as(trial, config)
        if earlier is not None:
            trial.set_user_attr(ATTR_REUSED, earlier.number)
            value = earlier.value if earlier.state == TrialState.COMPLETE else None
            error = None if value is not None else f"failed before, as trial {earlier.number}"
            return self._finish(trial, point, value, error, [])
        # the default runs NOISE_RUNS times at least: its spread says whether the job can be tuned at all
        m = measure(spec.argv, config_path, trial_dir, spec.objective,
                    max(spec.repeat, NOISE_RUNS) if default else spec.repeat, timeout=self.timeout,
                    cwd=spec.cwd, page_cache=self.page_cache)
        runs = [{"value": r.value, "error": r.error, "seconds": r.seconds, "dir": r.dir} for r in m.runs]
        if default:         # the noise check's message says how long the job's I/O lasts
            for run in runs:
                run["io_seconds"] = _io_seconds(Path(run["dir"]) / "stats.json")
        trial.set_user_attr("runs", runs)
        if m.spread is not None:
            trial.set_user_attr("spread", m.spread)
        stats_file = Path(m.runs[0].dir) / "stats.json" if m.runs else None
        if default and m.ok and stats_file is not None and stats_file.exists():
            w = workload_from_stats(json.loads(stats_file.read_text()))
            trial.set_user_attr("workload", w.to_json())
        return self._finish(trial, point, m.value, m.error, runs)

    def _finish(self, trial: optuna.Trial, point: dict, value: float | None, error: str | None,
                runs: list) -> TrialRecord:
        if value is None:
            trial.set_user_attr(ATTR_ERROR, error or "failed")
            self.study.tell(trial, state=TrialState.FAIL)
        else:
            self.study.tell(trial, value)
        self.heartbeat.drop(trial.number)
        rec = TrialRecord(trial.number, point, value, error if value is None else None,
                          bool(trial.user_attrs.get(ATTR_DEFAULT)), trial.user_attrs.get(ATTR_SEED),
                          trial.user_attrs.get(ATTR_REUSED), runs)
        with self.lock:
            if rec.ok and (self.best is None or better(rec.value, self.best.value, self.direction)):
                self.best = rec
            done = counted_trials(self.study)
        self.events.trial_done(rec, self.best, done, self.spec.trials)
        return rec

    def _run_reserved(self, trial: optuna.Trial) -> TrialRecord:
        try:
            return self._run(trial)
        except optuna.exceptions.UpdateFinishedTrialError:
            # another tuner failed this trial while it ran (its heartbeats were late: a stalled database or
            # machine); the runs stay in trials/NNNN, the study does not count the trial
            self.heartbeat.drop(trial.number)
            self.events.note(f"trial {trial.number} was marked failed by another tuner while it ran (its "
                             f"heartbeat was late); its runs are in {self.spec.out / 'trials' / f'{trial.number:04d}'}")
            return TrialRecord(trial.number, {}, None, "marked failed by another tuner (heartbeat late)")
        except BaseException:
            # interrupted (Ctrl-C) or broken: the trial must not stay RUNNING, nor count against the budget
            self._abandon(trial)
            raise

    def _abandon(self, trial: optuna.Trial) -> None:
        try:
            mark_interrupted(self.study, [trial.number])
            self.study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
        except Exception:
            pass        # a database gone too: the heartbeat stops, other tuners fail the trial as stale
        if self.heartbeat is not None:
            self.heartbeat.drop(trial.number)

    # --- the phases ----------------------------------------------------------------------------------------

    def run_default(self) -> FrozenTrial:
        """Runs the default trial unless the study has one; raises TuneError when the default fails. The tuner
        whose trial claims "default" first runs it; the others wait for it (and take it over when that tuner
        stops)."""
        waited: set[int] = set()
        while True:
            done = self._default_trial()
            if done is not None:
                return done
            owner = self.claims.owner("default")
            o = self._trial(owner) if owner is not None else None
            if o is not None and o.state == TrialState.RUNNING and owner not in self.heartbeat.numbers():
                self._note_once("default", f"another tuner is running the default trial ({owner}): waiting for it")
                waited.add(owner)
                self._wait()
                continue
            if o is not None and owner in waited and o.state == TrialState.FAIL and not self._dead(o):
                raise TuneError(f"tune: the default configuration failed in another tuner (trial {owner}: "
                                f"{o.user_attrs.get(ATTR_ERROR)}); nothing to compare with")
            trial = self._new_trial({ATTR_DEFAULT: True}, self.full_space.default_point())
            won = self.claims.steal("default", owner, trial.number) if owner is not None \
                else self.claims.claim("default", trial.number) == trial.number
            if not won:
                self._release(trial, "another tuner runs the default")
                continue
            rec = self._run_reserved(trial)
            if not rec.ok:
                raise TuneError(f"tune: the default configuration failed ({rec.error}); see "
                                f"{self.spec.out / 'trials' / f'{rec.number:04d}'}; nothing to compare with")

    def workload(self, default: FrozenTrial) -> Workload | None:
        w = default.user_attrs.get("workload")
        return Workload.from_json(w) if w else None

    def prepare(self, default: FrozenTrial, searching: bool = True) -> None:
        """Timeout, pruned space, knowledge-base seeds and the sampler, once the default is known. A job too noisy to
        tune stops a search (TuneError); without one (searching False: --recommend, which measures nothing to rank)
        it is only noted."""
        spec, study = self.spec, self.study
        w = self.workload(default)
        if spec.objective != "wall-time" and (w is None or w.data_ops == 0):
            raise TuneError("tune: the command made no MPI-IO data calls under the runtime, so there is nothing "
                            "to tune for " + spec.objective + " (--objective wall-time tunes its run time)")
        if w is not None and w.nprocs and w.nprocs != spec.nprocs:
            # e.g. MPICH under srun without --mpi=pmi2: every rank starts alone, as a job of one, without an error
            raise TuneError(f"tune: the default run's statistics describe a job of {w.nprocs} process"
                            f"{'es' if w.nprocs > 1 else ''}, not {spec.nprocs}: the ranks did not start as one "
                            f"MPI job (under srun, give the plugin your MPI needs, e.g. --mpi=pmi2 for MPICH: "
                            f"docs/slurm.md), or --np is wrong")
        runs = default.user_attrs.get("runs", [])
        noisy = too_noisy([r["value"] for r in runs if r.get("value") is not None], spec.repeat, spec.max_noise,
                          [r["io_seconds"] for r in runs if r.get("io_seconds") is not None])
        if noisy is not None and searching:
            raise TuneError(f"tune: {noisy}")
        if noisy is not None:
            self.events.note(noisy)
        if self.timeout is None:
            slowest = max((r.get("seconds") or 0) for r in default.user_attrs.get("runs", [{}]))
            self.timeout = max(TIMEOUT_MIN, TIMEOUT_FACTOR * slowest)
        stored = study.user_attrs.get("space")
        if stored is not None:
            self.space = Space.from_json(stored)
        else:
            self.space = (prune(self.full_space, w) if w is not None else self.full_space).never_acting()
            study.set_user_attr("space", self.space.to_json())
            for n in self.space.notes[len(self.full_space.notes):]:
                self.events.note(n)
        if w is not None and not study.user_attrs.get("seeded") \
                and self.claims.claim("seeded", self._token) == self._token:      # one tuner seeds the study
            seen = {_config_key({})}
            self._seed_first(seen)
            self._seed_recommendation(default, seen)
            if spec.knowledge is not None:
                self._seed(signature(w, spec.fs), seen)
            study.set_user_attr("seeded", True)
        study.sampler = self.sampler_plugin.create(self.space, spec.seed)

    def recommendation(self, default: FrozenTrial) -> Recommendation:
        """The cost model's recommendation for the default's workload, made once per study (its model run in
        out/model-run) and kept in the study."""
        stored = self.study.user_attrs.get("recommendation")
        if stored is not None:
            return Recommendation.from_json(stored)
        spec, runs = self.spec, default.user_attrs.get("runs") or [{}]
        stats = Path(runs[0]["dir"]) / "stats.json" if runs[0].get("dir") else None
        reference = ((spec.base or {}).get("defaults") or {}).get("collective", {}).get("strategy", DEFAULT_STRATEGY)
        rec = recommend_for_default(spec.argv, spec.layered, spec.profile, self.space, self.workload(default), stats,
                                    spec.out / "model-run", durable=spec.durable, reference=reference,
                                    where=spec.where, cwd=spec.cwd, timeout=self.timeout, page_cache=self.page_cache)
        self.study.set_user_attr("recommendation", rec.to_json())
        return rec

    def _seed_first(self, seen: set) -> None:
        """Enqueues the configurations given to try first (--first), each flattened to defaults and as the space's
        closest point; the settings the space cannot express are named, not silently lost."""
        for label, given in self.spec.first:
            config = flatten_rules(given)
            point = self.space.point_from_config(config)
            key = _config_key(self.space.config(point))
            outside = self.space.left_out(config)
            if outside:
                self.events.note(f"{label}: not in this space, left out of its trial: {', '.join(outside)}")
            if key in seen:
                self.events.note(f"{label}: its trial is the default or one already queued: not tried again")
                continue
            seen.add(key)
            self.study.enqueue_trial(point, user_attrs={ATTR_SEED: label})
            self.events.note(f"trying first the configuration of {label}")

    def _seed_recommendation(self, default: FrozenTrial, seen: set) -> None:
        """Enqueues the model's recommendation first, unless it is the default."""
        rec = self.recommendation(default)
        if rec.message and not rec.settings:
            self.events.note(f"model: {rec.message}")
            return
        if point_is_default(rec, self.space):
            self.events.note("model: its recommendation is the default in this space: not tried again")
            return
        point = rec.point(self.space)
        seen.add(_config_key(self.space.config(point)))
        self.study.enqueue_trial(point, user_attrs={ATTR_SEED: MODEL_SEED})
        shown = ", ".join(f"{s.section}.{s.name}={s.value}" for s in rec.settings)
        self.events.note(f"trying first the cost model's recommendation: {shown} (predicted: {rec.gain_text()})")

    def _seed(self, sig: dict, seen: set) -> None:
        try:
            known = KnowledgeBase(self.spec.knowledge).lookup(sig, 3)
        except Exception as e:       # a broken knowledge base must not stop a study
            self.events.note(f"knowledge base {self.spec.knowledge} not used: {e}")
            return
        for k in known:
            point = self.space.point_from_config(k.config)
            key = _config_key(self.space.config(point))
            if key in seen:
                continue
            seen.add(key)
            speed = f", {k.speedup:.2f}x" if k.speedup else ""
            self.study.enqueue_trial(point, user_attrs={ATTR_SEED: f"knowledge base: study {k.study}{speed}"})
            self.events.note(f"trying first the best configuration of a similar workload (study {k.study}{speed})")

    def search(self) -> None:
        total = self.spec.trials
        self.events.search_started(counted_trials(self.study), total)
        if not len(self.space):
            self.events.note("the space is empty for this workload: nothing to search")
            return

        def worker() -> None:
            while not self.stop.is_set() and self.step() is not None:
                pass

        if self.spec.jobs <= 1:
            worker()
            return
        with ThreadPoolExecutor(self.spec.jobs) as pool:
            futures = [pool.submit(worker) for _ in range(self.spec.jobs)]
            try:
                for f in futures:
                    f.result()
            except BaseException:
                self.stop.set()
                raise

    def final(self, default: FrozenTrial) -> FinalResult | None:
        spec = self.spec
        complete = [t for t in self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                    if not is_default(t)]
        complete.sort(key=lambda t: t.value, reverse=self.direction == "maximize")
        default_key = _config_key(default.user_attrs.get("config") or {})
        picked, seen = [], {default_key}
        for t in complete:
            key = _config_key(t.user_attrs.get("config") or {})
            if key not in seen:
                seen.add(key)
                picked.append(t)
            if len(picked) >= spec.final_top:
                break
        if not picked or spec.final_repeat < 1:
            return None
        final_dir = spec.out / "final"
        base = Candidate("default", default.number,
                         save_config(spec.layered({"version": 1, "meta": {"default": True}}),
                                     _mkdir(final_dir) / "default.json"),
                         dict(default.params))
        cands = [Candidate(f"trial-{t.number:04d}", t.number,          # (the trial may be another tuner's)
                           save_config(t.user_attrs["config"], _mkdir(final_dir / f"trial-{t.number:04d}") /
                                       "config.json"), dict(t.params)) for t in picked]
        self.events.final_started(spec.final_repeat * (1 + len(cands)))

        def on_run(c: Candidate, r: int, outcome) -> None:
            self.events.final_run(c.label, r, outcome.value, outcome.error)

        return run_final(spec.argv, base, cands, final_dir, spec.objective, self.direction, spec.final_repeat,
                         on_run=on_run, timeout=self.timeout, cwd=spec.cwd, page_cache=self.page_cache)

    # --- results -------------------------------------------------------------------------------------------

    def results(self, default: FrozenTrial, final: FinalResult | None) -> TuneResult:
        spec, study = self.spec, self.study
        trials = study.get_trials(deepcopy=False)
        skip = set(interrupted_numbers(study))
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        best_trial = study.best_trial if complete else default
        if final is not None and final.default.ok and final.best.ok:
            best_number, best_value, default_value = final.best.trial, final.best.median, final.default.median
            n, r = len(final.candidates), final.rounds
            measured = f"final re-run: the default and the best {n} configuration{'s' if n > 1 else ''} " \
                       f"alternately, {r} round{'s' if r > 1 else ''}, medians"
        else:
            best_number, best_value, default_value = best_trial.number, best_trial.value, default.value
            measured = "search trials (no final re-run)" if final is None else \
                "search trials (the default failed in the final re-run)"
        chosen = next(t for t in trials if t.number == best_number)
        is_def = is_default(chosen)
        speedup = 1.0 if is_def else ratio(best_value, default_value, self.direction)
        interval = None     # the least and largest of the final re-run's rounds, the best against the default
        if not is_def and final is not None and final.default.ok and final.best.ok:
            paired = paired_interval(dict(enumerate(r.value for r in final.best.runs)),
                                     dict(enumerate(r.value for r in final.default.runs)), self.direction)
            interval = None if paired is None else [1 + paired[1][0], 1 + paired[1][1]]
        config = dict(chosen.user_attrs.get("config") or {"version": 1})
        params = {k: v for k, v in self.full_space.canonical(chosen.params).items() if v != UNSET}
        ablation = None if is_def else self.ablation(chosen, final)
        if ablation is not None:
            config = spec.layered(self.full_space.config(ablation.point))
            params = {k: v for k, v in ablation.point.items() if v != UNSET}
        config["meta"] = {"tool": "iotame tune", "study": spec.study, "trial": best_number,
                          "objective": spec.objective, "value": best_value, "default_value": default_value,
                          "speedup": speedup, "command": list(spec.argv), "default": is_def,
                          "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        config = spec.published(config)
        best_path = save_config(config, spec.out / "best.json")
        w = self.workload(default)
        summary: dict[str, Any] = {
            "version": SUMMARY_VERSION, "study": spec.study, "storage": spec.storage_url,
            "objective": spec.objective, "direction": self.direction, "unit": OBJECTIVE_UNITS[spec.objective],
            "command": list(spec.argv), "nprocs": spec.nprocs, "fs": spec.fs, "sampler": spec.sampler,
            "space": {"source": spec.space_source, "size": self.space.size(), "params": self.space.describe(),
                      "notes": list(self.space.notes)},
            "trials": {"total": len([t for t in trials if counts(t, skip)]),
                       "complete": len(complete),
                       "failed": len([t for t in trials if t.state == TrialState.FAIL and counts(t, skip)]),
                       "interrupted": len([t for t in trials if t.number in skip and role(t) is None]),
                       "reused": len([t for t in trials if ATTR_REUSED in t.user_attrs]),
                       "repeat": spec.repeat},
            "default": {"trial": default.number, "objective": default_value, "search_objective": default.value},
            "best": {"trial": best_number, "objective": best_value, "search_objective": chosen.value,
                     "params": params,
                     "config": {k: v for k, v in config.items() if k != "meta"}, "is_default": is_def},
            "speedup": speedup, "speedup_interval": interval, "measured": measured,
            "final": [c.to_json() for c in ([final.default, *final.candidates] if final else [])],
            "ablation": None if ablation is None else {**ablation.to_json(),
                                                       "summary": ablation.line()},
            "durable": spec.durable,
            "page_cache": self.page_cache.status, "timeout": self.timeout,
            "workload": w.to_json() if w else None,
            "recommendation": study.user_attrs.get("recommendation"),
            "best_json": str(best_path),
        }
        summary_path = spec.out / "summary.json"
        summary_path.write_text(json.dumps(summary, indent=1) + "\n")
        if spec.knowledge is not None and w is not None:
            try:
                KnowledgeBase(spec.knowledge).record(
                    signature(w, spec.fs), config, study=spec.study, objective=spec.objective,
                    command=spec.argv, default_value=default_value, best_value=best_value, speedup=speedup)
            except Exception as e:
                self.events.note(f"knowledge base {spec.knowledge} not updated: {e}")
        return TuneResult(summary, best_path, summary_path)

    def ablation(self, chosen: FrozenTrial, final: FinalResult | None) -> AblationResult | None:
        """The best trial's settings measured by their removal (iotame.tune.ablation), side by side; None when there
        is nothing to weigh (one setting, no rounds) or the best configuration failed."""
        spec = self.spec
        # only what can act in the best configuration is weighed (a value that changes nothing carries nothing)
        point = self.full_space.canonical(chosen.params)
        if spec.ablation_rounds < 1 or sum(v != UNSET for v in point.values()) < 2:
            return None
        if final is not None and final.best.ok and final.default.ok:
            noise = noise_of([r.value for r in final.best.runs], [r.value for r in final.default.runs])
        else:
            noise = noise_of(*[[r["value"] for r in t.user_attrs.get("runs", []) if r.get("value") is not None]
                               for t in (chosen, self.default)])
        out = spec.out / "ablation"
        n = sum(v != UNSET for v in point.values())
        self.events.ablation_started(spec.ablation_rounds * (1 + n))

        def config_of(p: dict, label: str) -> Path:
            return save_config(spec.layered(self.full_space.config(p, meta={"tool": "iotame tune", "ablation": label})),
                               _mkdir(out / label) / "config.json")

        def on_run(label: str, r: int, o) -> None:
            self.events.ablation_run(label, r, o.value, o.error)

        return ablate(spec.argv, self.full_space, point, config_of, out, spec.objective, self.direction,
                      spec.ablation_rounds, noise, on_run=on_run, max_noise=spec.max_noise, timeout=self.timeout,
                      cwd=spec.cwd, page_cache=self.page_cache)

    def start(self) -> FrozenTrial:
        """Opens (or resumes) the study, runs the default trial and prepares the search; returns the default."""
        self.open()
        self.default = self.run_default()
        self.prepare(self.default)
        return self.default

    def step(self) -> TrialRecord | None:
        """Runs one more trial of the search; None when the budget is spent or the sampler has nothing new. While
        other tuners still run trials that would fill the budget, waits for them: one that stops leaves its trial
        to be failed (stale) and its budget to this tuner."""
        while len(self.space) and not self.stop.is_set():
            self._check()
            trial = self._reserve()
            if trial is not None:
                return self._run_reserved(trial)
            others = self._others_running()
            if not others:
                return None
            self._note_once(f"others:{others}", f"waiting for trial{'s' if len(others) > 1 else ''} "
                                                f"{', '.join(map(str, others))} of another tuner")
            self._wait()
        return None

    def _final_key(self) -> str:
        """The final re-run covers the study up to its last counted trial: a study resumed with more trials gets
        a new one."""
        skip = set(interrupted_numbers(self.study))
        last = max((t.number for t in self.study.get_trials(deepcopy=False) if counts(t, skip)), default=-1)
        return f"final:{last}"

    def finish(self) -> TuneResult:
        """The final re-run, best.json, summary.json and the knowledge base: done by the tuner whose trial claims
        the final first; the others wait for it and write the same best.json and summary.json (taking the final
        over when that tuner stops)."""
        while True:
            self._check()
            key = self._final_key()
            stored = self.study.user_attrs.get(key)
            if stored is not None:
                return self._write_results(stored)
            owner = self.claims.owner(key)
            o = self._trial(owner) if owner is not None else None
            if o is not None and o.state == TrialState.RUNNING:
                self._note_once(f"final:{owner}", f"another tuner is doing the final re-run (trial {owner}): "
                                                  f"waiting for its result")
                self._wait()
                continue
            if o is not None and not self._dead(o):
                self._wait()        # finished: its result is being stored
                continue
            marker = self._new_trial({ATTR_ROLE: "final",
                                      ATTR_ERROR: "not a search trial: the final re-run and the ablation"})
            won = self.claims.steal(key, owner, marker.number) if owner is not None \
                else self.claims.claim(key, marker.number) == marker.number
            if not won:
                self._release(marker, "another tuner does the final re-run")
                continue
            try:
                result = self.results(self.default, self.final(self.default))
                self.study.set_user_attr(key, {"summary": result.summary,
                                               "best": json.loads(result.best_path.read_text()),
                                               "out": str(self.spec.out.resolve()), "trial": marker.number})
            except BaseException:
                self._abandon(marker)
                raise
            self.study.tell(marker, state=TrialState.FAIL, skip_if_finished=True)
            self.heartbeat.drop(marker.number)
            return result

    def _write_results(self, stored: dict) -> TuneResult:
        """best.json and summary.json of a final re-run another tuner did, in this tuner's --out."""
        spec = self.spec
        best_path = save_config(stored["best"], spec.out / "best.json")
        summary = dict(stored["summary"], best_json=str(best_path),
                       final_by={"out": stored.get("out"), "trial": stored.get("trial")})
        summary_path = spec.out / "summary.json"
        summary_path.write_text(json.dumps(summary, indent=1) + "\n")
        self.events.note(f"the final re-run was done by another tuner (trial {stored.get('trial')}); its runs are "
                         f"in {stored.get('out')}")
        return TuneResult(summary, best_path, summary_path)

    def run(self) -> TuneResult:
        try:
            self.start()
            self.search()
            return self.finish()
        finally:
            self.close()


def _io_seconds(stats_path: Path) -> float | None:
    """The I/O seconds a run's statistics report (None without them)."""
    try:
        return float(json.loads(stats_path.read_text())["summary"]["io_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def run_tune(spec: TuneSpec, events: TuneEvents | None = None) -> TuneResult:
    """Runs (or resumes) a study and returns its summary."""
    return Tuner(spec, events).run()
