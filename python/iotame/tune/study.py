"""A study in optuna's RDB storage: an SQLite file by default, or a PostgreSQL URL that lets tuners on several
nodes share one study. Every trial records the host and process of the tuner running it and a heartbeat, so a
tuner that resumes a study can tell the trials a killed tuner left RUNNING (same host and the process is gone, or
no heartbeat for STALE_SECONDS) from trials another live tuner is running, and mark only the former failed."""
from __future__ import annotations

import os
import socket
import threading
import time
import warnings
from pathlib import Path

import optuna
from optuna.trial import FrozenTrial, TrialState

from ..errors import UsageError

__all__ = ["ATTR_DEFAULT", "ATTR_SEED", "ATTR_REUSED", "ATTR_ERROR", "HEARTBEAT_SECONDS", "STALE_SECONDS",
           "CLAIM_GRACE_SECONDS", "sqlite_url", "open_study", "register", "claim", "Heartbeat", "fail_interrupted",
           "mark_interrupted", "interrupted_numbers", "is_default", "counted_trials", "quiet_optuna"]

ATTR_DEFAULT = "default"          # user attribute: the trial measures the system default
ATTR_SEED = "seed"                # user attribute: where an enqueued configuration came from
ATTR_REUSED = "reused_from"       # user attribute: the configuration was measured before, by that trial
ATTR_ERROR = "error"
_HOST, _PID, _BEAT = "host", "pid", "heartbeat"
_INTERRUPTED = "interrupted_trials"   # study user attribute: numbers of trials a killed tuner left
_TUNER = "tuner:"                     # study user attributes tuner:HOST:PID, one per tuner that ran the study
HEARTBEAT_SECONDS = 30
STALE_SECONDS = 300                   # a claimed trial with no heartbeat for this long is abandoned
CLAIM_GRACE_SECONDS = 30              # an unclaimed RUNNING trial this old is abandoned


def quiet_optuna() -> None:
    """optuna logs every trial at INFO level; the tuner prints its own progress."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def open_study(storage: str, name: str, direction: str, objective: str,
               sampler: optuna.samplers.BaseSampler | None = None) -> optuna.Study:
    """Creates the study, or loads it when it exists; a study created for another objective is refused."""
    quiet_optuna()
    try:
        study = optuna.create_study(storage=storage, study_name=name, direction=direction, load_if_exists=True,
                                    sampler=sampler or optuna.samplers.RandomSampler())
    except (ImportError, ModuleNotFoundError) as e:
        raise UsageError(f"tune: storage {storage}: {e} (install the database driver, e.g. psycopg2-binary)") \
            from None
    except ValueError as e:      # an invalid URL
        raise UsageError(f"tune: storage {storage}: {e}") from None
    known = study.user_attrs.get("objective")
    if known is None:
        study.set_user_attr("objective", objective)
    elif known != objective:
        raise UsageError(f"tune: study {name} in {storage} optimizes {known}, not {objective} "
                         f"(give --objective {known}, or another --study)")
    return study


def claim(trial: optuna.Trial) -> None:
    """Marks a trial as run by this process on this host. Three writes: a tuner killed between them leaves a
    trial that `_abandoned` treats as unclaimed."""
    trial.set_user_attr(_HOST, socket.gethostname())
    trial.set_user_attr(_PID, os.getpid())
    trial.set_user_attr(_BEAT, time.time())


class Heartbeat:
    """While in its `with` block, refreshes the trial's heartbeat every `interval` seconds from a thread."""

    def __init__(self, trial: optuna.Trial, interval: float = HEARTBEAT_SECONDS):
        self.trial, self.interval = trial, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="iotame-heartbeat", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.trial.set_user_attr(_BEAT, time.time())
            except Exception:      # a busy database: the next beat will do
                pass

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def register(study: optuna.Study) -> None:
    """Records this tuner (host and process) in the study, so that later tuners know who may hold its trials."""
    study.set_user_attr(f"{_TUNER}{socket.gethostname()}:{os.getpid()}", time.time())


def _other_tuner_alive(study: optuna.Study) -> bool:
    """Whether a tuner other than this one may still be running the study: one on this host whose process
    exists, or one on another host (which this tuner cannot check)."""
    here, me = socket.gethostname(), os.getpid()
    for key in study.user_attrs:
        if not key.startswith(_TUNER):
            continue
        host, _, pid = key[len(_TUNER):].rpartition(":")
        if host != here:
            return True
        if pid.isdigit() and int(pid) != me and _alive(int(pid)):
            return True
    return False


def _abandoned(t: FrozenTrial, now: float, others: bool) -> bool:
    host, pid, beat = t.user_attrs.get(_HOST), t.user_attrs.get(_PID), t.user_attrs.get(_BEAT)
    started = t.datetime_start.timestamp() if t.datetime_start else now
    if host is None or not isinstance(pid, int):
        # asked but never (fully) claimed: its tuner died in between, unless another live tuner is about to claim it
        return not others or now - started > CLAIM_GRACE_SECONDS
    if host == socket.gethostname() and pid != os.getpid() and not _alive(pid):
        return True
    last = beat if isinstance(beat, (int, float)) else started
    return now - last > STALE_SECONDS


def fail_interrupted(study: optuna.Study) -> list[int]:
    """Marks failed the RUNNING trials whose tuner is gone, records them as interrupted, returns their numbers."""
    now = time.time()
    others = _other_tuner_alive(study)
    stale = [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
             if _abandoned(t, now, others)]
    for t in stale:
        study.tell(t.number, state=TrialState.FAIL, skip_if_finished=True)
    if stale:
        mark_interrupted(study, [t.number for t in stale])
    return [t.number for t in stale]


def mark_interrupted(study: optuna.Study, numbers: list[int]) -> None:
    """Records trials as interrupted: failed, but not counted against the budget."""
    study.set_user_attr(_INTERRUPTED, sorted(set(interrupted_numbers(study)) | set(numbers)))


def interrupted_numbers(study: optuna.Study) -> list[int]:
    """The trials a stopped tuner left (see fail_interrupted)."""
    return list(study.user_attrs.get(_INTERRUPTED, []))


def is_default(t: FrozenTrial) -> bool:
    return bool(t.user_attrs.get(ATTR_DEFAULT))


def counted_trials(study: optuna.Study) -> int:
    """Trials that use the budget: complete, failed (but not interrupted by a killed tuner) and running."""
    skip = set(interrupted_numbers(study))
    return sum(1 for t in study.get_trials(deepcopy=False)
               if t.state in (TrialState.COMPLETE, TrialState.RUNNING)
               or (t.state == TrialState.FAIL and t.number not in skip))
