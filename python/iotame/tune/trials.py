"""Running the study's trials: the default (claimed once in the study, run by one tuner, waited for by the others)
and the search, one trial after another or `jobs` at once; a configuration measured before is not run again (its
value is reused). A failed or timed-out trial is told to optuna as FAIL and so can never be best."""
from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import optuna
from optuna.trial import FrozenTrial, TrialState

from ..config import save_config
from .measure import better, measure
from .noise import NOISE_RUNS
from .page_cache import PageCache
from .records import TrialRecord, TuneError, TuneEvents
from .samplers import Sampler
from .shared import SharedStudy
from .space import Space
from .spec import TuneSpec
from .study import ATTR_DEFAULT, ATTR_ERROR, ATTR_REUSED, ATTR_SEED, counted_trials
from .workload import workload_from_stats

__all__ = ["Trials"]


class Trials:
    """The trials this tuner runs. `space` is what the search samples (the full space until the default's workload
    prunes it) and `timeout` a run's limit (None until the default's runs decide it): the tuner sets both once the
    default is known. `best` is the best trial this tuner has seen, for its progress reports."""

    def __init__(self, spec: TuneSpec, shared: SharedStudy, full_space: Space, sampler: Sampler,
                 page_cache: PageCache, events: TuneEvents):
        self.spec, self.shared, self.full_space, self.sampler = spec, shared, full_space, sampler
        self.page_cache, self.events = page_cache, events
        self.space = full_space
        self.timeout = spec.runs.timeout
        self.lock = threading.Lock()
        self.best: TrialRecord | None = None
        for t in shared.counted((TrialState.COMPLETE,)):
            self._remember(TrialRecord.from_frozen(t))

    def _remember(self, rec: TrialRecord) -> None:
        if rec.ok and (self.best is None or better(rec.value, self.best.value, self.spec.study.direction)):
            self.best = rec

    def run_default(self) -> FrozenTrial:
        """Runs the default trial unless the study has one; raises TuneError when the default fails. The tuner
        whose trial claims "default" first runs it; the others wait for it (and take it over when that tuner
        stops)."""
        shared = self.shared
        waited: set[int] = set()
        while True:
            done = shared.default_trial()
            if done is not None:
                return done
            owner = shared.claims.owner("default")
            o = shared.trial(owner) if owner is not None else None
            if o is not None and o.state == TrialState.COMPLETE:
                continue        # the default finished after default_trial() read the study: read it again
            if o is not None and o.state == TrialState.RUNNING and owner not in shared.heartbeat.numbers():
                shared.note_once("default", f"another tuner is running the default trial ({owner}): waiting for it")
                waited.add(owner)
                shared.wait()
                continue
            if o is not None and owner in waited and o.state == TrialState.FAIL and not shared.dead(o):
                raise TuneError(f"tune: the default configuration failed in another tuner (trial {owner}: "
                                f"{o.user_attrs.get(ATTR_ERROR)}); nothing to compare with")
            trial = shared.new_trial({ATTR_DEFAULT: True}, self.full_space.default_point())
            if not shared.take("default", owner, trial.number):
                shared.release(trial, "another tuner runs the default")
                continue
            rec = self.run_reserved(trial)
            if not rec.ok:
                raise TuneError(f"tune: the default configuration failed ({rec.error}); see "
                                f"{self.spec.out / 'trials' / f'{rec.number:04d}'}; nothing to compare with")

    def search(self) -> None:
        """Runs trials until the budget is spent or the sampler has nothing new, in `jobs` threads."""
        self.events.search_started(counted_trials(self.shared.study), self.spec.study.trials)
        if not len(self.space):
            self.events.note("the space is empty for this workload: nothing to search")
            return

        def worker() -> None:
            while not self.shared.stop.is_set() and self.step() is not None:
                pass

        if self.spec.study.jobs <= 1:
            worker()
            return
        with ThreadPoolExecutor(self.spec.study.jobs) as pool:
            futures = [pool.submit(worker) for _ in range(self.spec.study.jobs)]
            try:
                for f in futures:
                    f.result()
            except BaseException:
                self.shared.stop.set()
                raise

    def step(self) -> TrialRecord | None:
        """Runs one more trial of the search; None when the budget is spent or the sampler has nothing new. While
        other tuners still run trials that would fill the budget, waits for them: one that stops leaves its trial
        to be failed (stale) and its budget to this tuner."""
        shared = self.shared
        while len(self.space) and not shared.stop.is_set():
            shared.check()
            trial = shared.reserve(self.spec.study.trials,
                                   lambda: self.sampler.exhausted(shared.study.sampler, shared.study))
            if trial is not None:
                return self.run_reserved(trial)
            others = shared.others_running()
            if not others:
                return None
            shared.note_once(f"others:{others}", f"waiting for trial{'s' if len(others) > 1 else ''} "
                                                 f"{', '.join(map(str, others))} of another tuner")
            shared.wait()
        return None

    def run_reserved(self, trial: optuna.Trial) -> TrialRecord:
        """Runs a trial this tuner holds; an interrupted one is abandoned (it does not count against the budget)."""
        try:
            return self._run(trial)
        except optuna.exceptions.UpdateFinishedTrialError:
            # another tuner failed this trial while it ran (its heartbeats were late: a stalled database or
            # machine); the runs stay in trials/NNNN, the study does not count the trial
            self.shared.heartbeat.drop(trial.number)
            self.events.note(f"trial {trial.number} was marked failed by another tuner while it ran (its "
                             f"heartbeat was late); its runs are in {self.spec.out / 'trials' / f'{trial.number:04d}'}")
            return TrialRecord(trial.number, {}, None, "marked failed by another tuner (heartbeat late)")
        except BaseException:
            # interrupted (Ctrl-C) or broken: the trial must not stay RUNNING, nor count against the budget
            self.shared.abandon(trial)
            raise

    def _run(self, trial: optuna.Trial) -> TrialRecord:
        spec = self.spec
        default = bool(trial.user_attrs.get(ATTR_DEFAULT))
        space = self.full_space if default else self.space
        # define-by-run: a parameter that cannot act given those drawn before it is not drawn (nor written)
        point = space.sample(lambda p: trial.suggest_categorical(p.key, p.choices))
        config = spec.space.layered(space.config(point, meta={"tool": "iotame tune", "study": spec.study.name,
                                                              "trial": trial.number}))
        trial_dir = spec.out / "trials" / f"{trial.number:04d}"
        trial_dir.mkdir(parents=True, exist_ok=True)
        config_path = save_config(config, trial_dir / "config.json")
        trial.set_user_attr("config", config)
        earlier = None if default else self.shared.measured_as(trial, config)
        if earlier is not None:
            trial.set_user_attr(ATTR_REUSED, earlier.number)
            value = earlier.value if earlier.state == TrialState.COMPLETE else None
            error = None if value is not None else f"failed before, as trial {earlier.number}"
            return self._finish(trial, point, value, error, [])
        # the default runs NOISE_RUNS times at least: its spread says whether the job can be tuned at all
        m = measure(spec.job.argv, config_path, trial_dir, spec.study.objective,
                    max(spec.runs.repeat, NOISE_RUNS) if default else spec.runs.repeat, timeout=self.timeout,
                    cwd=spec.runs.cwd, page_cache=self.page_cache)
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
        study = self.shared.study
        if value is None:
            trial.set_user_attr(ATTR_ERROR, error or "failed")
            study.tell(trial, state=TrialState.FAIL)
        else:
            study.tell(trial, value)
        self.shared.heartbeat.drop(trial.number)
        rec = TrialRecord(trial.number, point, value, error if value is None else None,
                          bool(trial.user_attrs.get(ATTR_DEFAULT)), trial.user_attrs.get(ATTR_SEED),
                          trial.user_attrs.get(ATTR_REUSED), runs)
        with self.lock:
            self._remember(rec)
            done = counted_trials(study)
        self.events.trial_done(rec, self.best, done, self.spec.study.trials)
        return rec


def _io_seconds(stats_path: Path) -> float | None:
    """The I/O seconds a run's statistics report (None without them)."""
    try:
        return float(json.loads(stats_path.read_text())["summary"]["io_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
