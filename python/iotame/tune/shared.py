"""One tuner's hold on a study that other tuners may share (docs/design/shared-study.md): the trials it creates,
holds (heartbeats), releases and abandons, the claims that make a job be done once in the study (the default, a
configuration's measurement, the final re-run), the budget rule for tuners asking at the same moment, and the
waiting for other tuners' work, failing the trials of tuners that stopped."""
from __future__ import annotations

import datetime
import hashlib
import json
import threading
import time
from typing import Callable

import optuna
from optuna.trial import FrozenTrial, TrialState

from ..errors import UsageError
from .measure import OBJECTIVE_UNITS
from .space import Space, config_key
from .spec import TuneSpec
from .study import (ATTR_DEFAULT, ATTR_ERROR, ATTR_REUSED, ATTR_ROLE, ATTR_SEED, ATTR_TUNER, Claims, Heartbeat,
                    counted_trials, counts, fail_interrupted, heartbeat_seconds, interrupted_numbers, is_default,
                    mark_interrupted, open_study, role, tuner_id)

__all__ = ["SharedStudy", "POLL_SECONDS"]

POLL_SECONDS = 5          # how often a tuner waiting for another one's trial looks at the study


def _plural(numbers: list[int]) -> str:
    return f"{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"


class SharedStudy:
    """The study as this tuner sees it. `study` is optuna's; `stop` ends every wait (Ctrl-C, a failed worker)."""

    def __init__(self, study: optuna.Study, interval: int, note: Callable[[str], None]):
        self.study = study
        self.claims = Claims(study)
        self.heartbeat = Heartbeat(study, interval)
        self.poll = min(POLL_SECONDS, interval)
        self.note = note
        self.stop = threading.Event()
        self.lock = threading.Lock()        # asking for trials: parallel workers must not overshoot the budget
        self._noted: set[str] = set()
        self._last_check = 0.0

    @classmethod
    def open(cls, spec: TuneSpec, full_space: Space, note: Callable[[str], None]) -> "SharedStudy":
        """Opens (or resumes) the study of `spec`, which must have been started with the same space; fails the trials
        a stopped tuner left running, and writes out/study.json (where the study is, what it measures)."""
        s = spec.study
        interval = s.heartbeat or heartbeat_seconds()
        spec.out.mkdir(parents=True, exist_ok=True)
        study = open_study(spec.storage_url, s.name, s.direction, s.objective, heartbeat=interval)
        stored = study.user_attrs.get("space_full")
        if stored is None:
            study.set_user_attr("space_full", full_space.to_json())
            study.set_user_attr("command", list(spec.job.argv))
        elif Space.from_json(stored).to_json() != full_space.to_json():
            raise UsageError(f"tune: study {s.name} was started with another search space (or file system, "
                             f"or process count); give a new --study, or the same options as before")
        shared = cls(study, interval, note)
        lost = fail_interrupted(study)
        if lost:
            note(f"resuming study {s.name}: trial{_plural(lost)} of a stopped tuner marked failed")
        (spec.out / "study.json").write_text(json.dumps({
            "storage": spec.storage_url, "study": s.name, "objective": s.objective,
            "direction": s.direction, "unit": OBJECTIVE_UNITS[s.objective], "command": list(spec.job.argv),
            "nprocs": spec.job.nprocs, "fs": spec.fs}, indent=1) + "\n")
        return shared

    def close(self) -> None:
        """Stops the heartbeats (the trials still held, if any, then go stale and are failed by others)."""
        self.heartbeat.close()

    # --- looking at the study and waiting ----------------------------------------------------------------------

    def counted(self, states: tuple | None = None) -> list[FrozenTrial]:
        """The trials in `states` (None: all) that count against the budget (not interrupted, released or final)."""
        skip = set(interrupted_numbers(self.study))
        return [t for t in self.study.get_trials(deepcopy=False, states=states) if counts(t, skip)]

    def trial(self, number: int) -> FrozenTrial | None:
        for t in self.study.get_trials(deepcopy=False):
            if t.number == number:
                return t
        return None

    def dead(self, t: FrozenTrial | None) -> bool:
        """A trial that holds nothing: gone, interrupted (its tuner stopped) or released."""
        return t is None or role(t) == "released" or \
            (t.state == TrialState.FAIL and t.number in set(interrupted_numbers(self.study)))

    def default_trial(self) -> FrozenTrial | None:
        done = [t for t in self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if is_default(t) and role(t) is None]
        return done[-1] if done else None

    def others_running(self) -> list[int]:
        """Search and default trials other tuners are running (they may still fail and free their budget)."""
        mine = self.heartbeat.numbers()
        return [t.number for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                if t.number not in mine and role(t) is None]

    def note_once(self, key: str, text: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.note(text)

    def check(self) -> None:
        """Fails the trials of stopped tuners, at most once per poll interval (every waiting loop calls it)."""
        now = time.monotonic()
        if now - self._last_check < self.poll:
            return
        self._last_check = now
        lost = fail_interrupted(self.study)
        if lost:
            self.note(f"trial{_plural(lost)} of a stopped tuner marked failed; "
                      f"{'their' if len(lost) > 1 else 'its'} budget is free again")

    def wait(self) -> None:
        self.stop.wait(self.poll)
        self.check()

    # --- trials held by this tuner -------------------------------------------------------------------------------

    def hold(self, trial: optuna.Trial) -> optuna.Trial:
        self.heartbeat.hold(trial)
        return trial

    def new_trial(self, user_attrs: dict, fixed_params: dict | None = None) -> optuna.Trial:
        """A RUNNING trial created with its attributes in one write (so no tuner ever sees it without them)."""
        frozen = optuna.trial.FrozenTrial(
            number=-1, state=TrialState.RUNNING, value=None, datetime_start=datetime.datetime.now(),
            datetime_complete=None, params={}, distributions={}, user_attrs={**user_attrs, ATTR_TUNER: tuner_id()},
            system_attrs={"fixed_params": fixed_params} if fixed_params is not None else {},
            intermediate_values={}, trial_id=-1)
        trial_id = self.study._storage.create_new_trial(self.study._study_id, template_trial=frozen)
        return self.hold(optuna.Trial(self.study, trial_id))

    def release(self, trial: optuna.Trial, why: str) -> None:
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

    def abandon(self, trial: optuna.Trial) -> None:
        """An interrupted trial: failed and marked interrupted, so that it does not count against the budget."""
        try:
            mark_interrupted(self.study, [trial.number])
            self.study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
        except Exception:
            pass        # a database gone too: the heartbeat stops, other tuners fail the trial as stale
        self.heartbeat.drop(trial.number)

    def done_with(self, trial: optuna.Trial) -> None:
        """A trial that is no search trial (the final's marker), finished: failed, so that it is never best."""
        self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
        self.heartbeat.drop(trial.number)

    # --- claims --------------------------------------------------------------------------------------------------

    def take(self, key: str, owner: int | None, number: int) -> bool:
        """Claims `key` for trial `number`: a new claim, or the claim of `owner` (a trial that holds nothing any more)
        handed on; False when another trial won it first."""
        if owner is not None:
            return self.claims.steal(key, owner, number)
        return self.claims.claim(key, number) == number

    def reserve(self, budget: int, exhausted: Callable[[], bool]) -> optuna.Trial | None:
        """Asks for the next search trial if the budget allows (`exhausted`: the sampler has nothing new). Tuners
        sharing the study may ask at the same moment: a trial is run only if fewer than `budget` counted trials have
        lower numbers (the storage numbers trials in the order it creates them), else released."""
        with self.lock:
            if self.stop.is_set() or counted_trials(self.study) >= budget or exhausted():
                return None
            trial = self.hold(self.study.ask())
            skip = set(interrupted_numbers(self.study))
            below = sum(1 for t in self.study.get_trials(deepcopy=False)
                        if t.number < trial.number and counts(t, skip))
            if below >= budget:
                self.release(trial, "the budget was spent by trials asked at the same time")
                return None
            return trial

    def measured_as(self, trial: optuna.Trial, config: dict) -> FrozenTrial | None:
        """The trial that measured `config`, or None when this one is to measure it. A configuration is measured
        once in the study: a finished trial with the same configuration is reused; else the first trial to claim
        it measures it and the others wait for its result (a claim whose trial was interrupted passes on)."""
        key = config_key(config)
        claim = "config:" + hashlib.sha1(key.encode()).hexdigest()
        while True:
            for t in self.counted((TrialState.COMPLETE, TrialState.FAIL)):
                if t.number != trial.number and ATTR_REUSED not in t.user_attrs \
                        and config_key(t.user_attrs.get("config") or {}) == key:
                    return t
            owner = self.claims.claim(claim, trial.number)
            if owner == trial.number:
                return None
            o = self.trial(owner)
            if self.dead(o):
                if self.claims.steal(claim, owner, trial.number):
                    return None
                continue
            if o.state != TrialState.RUNNING:
                self.wait()        # finished: found as such by the loop above once visible
                continue
            self.note_once(f"config:{trial.number}", f"trial {trial.number}: trial {owner} (another tuner) is "
                                                     f"measuring the same configuration: waiting for its result")
            self.wait()
            if self.stop.is_set():
                raise KeyboardInterrupt

    def final_key(self) -> str:
        """The final re-run covers the study up to its last counted trial: a study resumed with more trials gets
        a new one."""
        last = max((t.number for t in self.counted()), default=-1)
        return f"final:{last}"
