"""A study in optuna's RDB storage: an SQLite file by default, or a PostgreSQL URL that lets tuners on several
nodes share one study (docs/design/shared-study.md).

optuna does the liveness: its heartbeats (one row per running trial, stamped with the database's clock) and
`fail_stale_trials`, which fails the running trials whose heartbeat is older than the grace period. The tuner's
ask-and-tell loop gets no heartbeat thread from optuna (only `Study.optimize` starts one), so `Heartbeat` records
them for the trials this process holds. What optuna has no notion of is ours: which tuner does a job that must be
done once (the default trial, a configuration's measurement, the final re-run: `Claims`, a compare-and-set row in
the same database), which failed trials were interrupted rather than failing (they do not use the budget), a
trial killed on this machine (its process is gone: failed at once, not after the grace period), and a trial whose
tuner died before its first heartbeat (optuna never finds it stale)."""
from __future__ import annotations

import datetime
import inspect
import os
import random
import socket
import threading
import time
import warnings
from pathlib import Path

import optuna
from optuna.trial import FrozenTrial, TrialState

from ..errors import UsageError

__all__ = ["ATTR_DEFAULT", "ATTR_SEED", "ATTR_REUSED", "ATTR_ERROR", "ATTR_ROLE", "ATTR_TUNER", "HEARTBEAT_SECONDS",
           "GRACE_FACTOR", "HEARTBEAT_ENV", "heartbeat_seconds", "sqlite_url", "normalize_url", "open_study",
           "Claims", "Heartbeat", "tuner_id", "fail_interrupted", "mark_interrupted", "interrupted_numbers",
           "is_default", "role", "counts", "counted_trials", "quiet_optuna"]

ATTR_DEFAULT = "default"          # user attribute: the trial measures the system default
ATTR_SEED = "seed"                # user attribute: where an enqueued configuration came from
ATTR_REUSED = "reused_from"       # user attribute: the configuration was measured before, by that trial
ATTR_ERROR = "error"
ATTR_ROLE = "role"                # user attribute of a trial that is not a search trial: "final", "released"
ATTR_TUNER = "tuner"              # user attribute: the tuner process holding the trial (see tuner_id)
_INTERRUPTED = "interrupted:"     # study user attributes interrupted:N, one per trial a stopped tuner left
_INTERRUPTED_LIST = "interrupted_trials"     # the same as one list, as studies of earlier versions have it
HEARTBEAT_ENV = "IOTAME_TUNE_HEARTBEAT"
HEARTBEAT_SECONDS = 20            # a held trial's heartbeat is recorded this often …
GRACE_FACTOR = 3                  # … and it is stale after this many intervals without one


def quiet_optuna() -> None:
    """optuna logs every trial at INFO level; the tuner prints its own progress. Heartbeats outside
    Study.optimize are what the tuner means to do (see the module's docstring)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")


def heartbeat_seconds() -> int:
    """The heartbeat interval: $IOTAME_TUNE_HEARTBEAT (whole seconds, for tests and slow databases), else 20 s."""
    text = os.environ.get(HEARTBEAT_ENV, "").strip()
    if not text:
        return HEARTBEAT_SECONDS
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"tune: {HEARTBEAT_ENV}={text!r}: expected whole seconds >= 1")
    return int(text)


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def normalize_url(url: str) -> str:
    """`postgresql://…` with the driver installed: SQLAlchemy 2.1 and later read a bare postgresql:// as psycopg 3,
    the documented driver is psycopg2 (psycopg2-binary); a URL naming its driver is kept."""
    if url.startswith(("postgresql://", "postgres://")):
        try:
            import psycopg  # noqa: F401
        except ImportError:
            return "postgresql+psycopg2://" + url.split("://", 1)[1]
    return url


def _shown(url: str) -> str:
    try:
        import sqlalchemy
        return sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def open_study(storage: str, name: str, direction: str, objective: str,
               sampler: optuna.samplers.BaseSampler | None = None, heartbeat: int | None = None) -> optuna.Study:
    """Creates the study, or loads it when it exists; a study created for another objective is refused. The
    storage records heartbeats every `heartbeat` seconds (default heartbeat_seconds()); a trial optuna finds stale
    is recorded as interrupted."""
    quiet_optuna()
    interval = heartbeat or heartbeat_seconds()
    url = normalize_url(storage)
    kw = {"heartbeat_interval": interval, "grace_period": GRACE_FACTOR * interval}
    callback = ("heartbeat_stale_trial_callback"           # optuna >= 4.9; failed_trial_callback before
                if "heartbeat_stale_trial_callback" in inspect.signature(optuna.storages.RDBStorage).parameters
                else "failed_trial_callback")
    kw[callback] = lambda study, trial: mark_interrupted(study, [trial.number])
    try:
        study = _create(url, kw, name, direction, sampler)
    except (ImportError, ModuleNotFoundError) as e:
        hint = "pip install psycopg2-binary, or the package's [postgres] extra" if url.startswith("postgres") \
            else "see the storage URLs of SQLAlchemy"
        raise UsageError(f"tune: storage {_shown(url)}: {e} (install the database driver: {hint})") from None
    except ValueError as e:      # an invalid URL
        raise UsageError(f"tune: storage {_shown(url)}: {e}") from None
    except Exception as e:       # the database is unreachable, refuses the user, does not exist, …
        first = str(getattr(e, "orig", None) or e).strip().splitlines()
        raise UsageError(f"tune: storage {_shown(url)}: cannot open the study: "
                         f"{first[0] if first else type(e).__name__}") from None
    known = study.user_attrs.get("objective")
    if known is None:
        study.set_user_attr("objective", objective)
    elif known != objective:
        raise UsageError(f"tune: study {name} in {_shown(url)} optimizes {known}, not {objective} "
                         f"(give --objective {known}, or another --study)")
    return study


def _create(url: str, kw: dict, name: str, direction: str, sampler) -> optuna.Study:
    """optuna's RDBStorage and the study. Tuners started together on an empty database create optuna's tables at
    the same moment, and all but one fail on the database's unique constraints: those try again."""
    import sqlalchemy as sa
    for attempt in range(5):
        try:
            rdb = optuna.storages.RDBStorage(url, engine_kwargs=None if url.startswith("sqlite") else
                                             {"pool_pre_ping": True}, **kw)
            return optuna.create_study(storage=rdb, study_name=name, direction=direction, load_if_exists=True,
                                       sampler=sampler or optuna.samplers.RandomSampler())
        except (sa.exc.IntegrityError, sa.exc.ProgrammingError, sa.exc.OperationalError,
                optuna.exceptions.DuplicatedStudyError):
            # PostgreSQL: a unique constraint; SQLite: "table ... already exists" or "database is locked"
            if attempt == 4:
                raise
            time.sleep(0.2 + random.random())


def _rdb(study: optuna.Study) -> optuna.storages.RDBStorage:
    storage = study._storage
    return getattr(storage, "_backend", storage)       # optuna wraps an RDBStorage in a cache


class Claims:
    """Who does a job that must be done once, whichever tuner asks: a row (study, key) -> trial number in a table
    of its own, `iotame_claims`, in the study's database. Inserting the row is the compare-and-set (the primary key
    lets one insert win); the claim is alive as long as its trial is (a stale trial is failed by optuna's heartbeat
    check, and `steal` then hands the claim to another trial)."""

    def __init__(self, study: optuna.Study):
        import sqlalchemy as sa
        self.sa = sa
        self.engine = _rdb(study).engine
        self.study_id = study._study_id
        meta = sa.MetaData()
        self.table = sa.Table("iotame_claims", meta,
                              sa.Column("study_id", sa.Integer, primary_key=True),
                              sa.Column("key", sa.String(255), primary_key=True),
                              sa.Column("trial", sa.Integer, nullable=False))
        try:
            meta.create_all(self.engine, checkfirst=True)
        except sa.exc.SQLAlchemyError:      # another tuner created it at the same moment
            meta.create_all(self.engine, checkfirst=True)

    def claim(self, key: str, number: int) -> int:
        """Claims `key` for trial `number`; returns the owner: `number` when this claim won."""
        sa, t = self.sa, self.table
        try:
            with self.engine.begin() as c:
                c.execute(t.insert().values(study_id=self.study_id, key=key, trial=number))
            return number
        except sa.exc.IntegrityError:
            owner = self.owner(key)
            return owner if owner is not None else self.claim(key, number)

    def owner(self, key: str) -> int | None:
        t = self.table
        with self.engine.connect() as c:
            return c.execute(self.sa.select(t.c.trial).where(t.c.study_id == self.study_id,
                                                             t.c.key == key)).scalar()

    def steal(self, key: str, old: int, number: int) -> bool:
        """Hands the claim of a dead trial `old` to `number`; False when someone else took it first."""
        t = self.table
        with self.engine.begin() as c:
            r = c.execute(t.update().where(t.c.study_id == self.study_id, t.c.key == key, t.c.trial == old)
                          .values(trial=number))
            return r.rowcount == 1


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def tuner_id() -> dict:
    """This process as it is told apart from others: host, boot, PID namespace (containers share host names) and
    process id."""
    return {"host": socket.gethostname(), "boot": _boot_id(), "pidns": _pid_namespace(), "pid": os.getpid()}


class Heartbeat:
    """Records the heartbeat of every trial this process holds, every `interval` seconds, from a thread. `hold`
    writes who holds the trial and records the first heartbeat at once; `drop` stops its heartbeats."""

    def __init__(self, study: optuna.Study, interval: int):
        self.storage, self.interval = study._storage, interval
        self.lock = threading.Lock()
        self.held: dict[int, int] = {}          # trial number -> trial id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="iotame-heartbeat", daemon=True)
        self._thread.start()

    def hold(self, trial: optuna.Trial) -> None:
        if ATTR_TUNER not in trial.user_attrs:      # first: a trial killed on this machine is then found at once
            trial.set_user_attr(ATTR_TUNER, tuner_id())
        self.storage.record_heartbeat(trial._trial_id)
        with self.lock:
            self.held[trial.number] = trial._trial_id

    def drop(self, number: int) -> None:
        with self.lock:
            self.held.pop(number, None)

    def numbers(self) -> set[int]:
        with self.lock:
            return set(self.held)

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            with self.lock:
                ids = list(self.held.values())
            for trial_id in ids:
                try:
                    self.storage.record_heartbeat(trial_id)
                except Exception:      # a busy or briefly unreachable database: the next beat will do
                    pass

    def close(self) -> None:
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


def _dead_here(t: FrozenTrial) -> bool:
    """The trial's tuner ran on this machine, in this PID namespace, and its process is gone."""
    who = t.user_attrs.get(ATTR_TUNER)
    if not isinstance(who, dict) or not isinstance(who.get("pid"), int):
        return False
    me = tuner_id()
    same = all(who.get(k) == me[k] for k in ("host", "boot", "pidns"))
    return same and who["pid"] != me["pid"] and not _alive(who["pid"])


def _unbeaten(study: optuna.Study, grace: float) -> list[int]:
    """Running trials with no heartbeat row, started more than `grace` seconds ago: their tuner died between
    creating the trial and its first heartbeat. (optuna's stale check skips trials without a heartbeat row.)"""
    try:
        import sqlalchemy as sa
        from optuna.storages._rdb import models
    except ImportError:
        return []
    rdb = _rdb(study)
    if not hasattr(rdb, "engine"):
        return []
    t, h = models.TrialModel, models.TrialHeartbeatModel
    q = (sa.select(t.number).outerjoin(h, h.trial_id == t.trial_id)
         .where(t.study_id == study._study_id, t.state == TrialState.RUNNING, h.trial_heartbeat_id.is_(None)))
    with rdb.engine.connect() as c:
        numbers = {n for (n,) in c.execute(q)}
    if not numbers:
        return []
    cutoff = datetime.datetime.now() - datetime.timedelta(seconds=grace)     # optuna's times are naive local
    return [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
            if t.number in numbers and t.datetime_start is not None and t.datetime_start < cutoff]


def fail_interrupted(study: optuna.Study) -> list[int]:
    """Fails the RUNNING trials whose tuner is gone and records them as interrupted; returns their numbers: those
    optuna finds stale (no heartbeat for the grace period), those of a process of this machine that no longer
    exists, and those that never had a heartbeat and are older than the grace period."""
    before = set(interrupted_numbers(study))
    optuna.storages.fail_stale_trials(study)          # its callback (open_study) records them as interrupted
    rdb = _rdb(study)
    grace = (getattr(rdb, "grace_period", None) or GRACE_FACTOR * (rdb.heartbeat_interval or HEARTBEAT_SECONDS))
    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    unbeaten = set(_unbeaten(study, grace))
    lost = [t for t in running if _dead_here(t) or t.number in unbeaten]
    if lost:
        mark_interrupted(study, [t.number for t in lost])      # first: a failed trial must never use the budget
        for t in lost:
            study.tell(t.number, state=TrialState.FAIL, skip_if_finished=True)
    return sorted(set(interrupted_numbers(study)) - before)


def mark_interrupted(study: optuna.Study, numbers: list[int]) -> None:
    """Records trials as interrupted: failed, but not counted against the budget. One study attribute per trial,
    so that tuners marking different trials at once do not overwrite each other."""
    for n in numbers:
        study.set_user_attr(f"{_INTERRUPTED}{n}", True)


def interrupted_numbers(study: optuna.Study) -> list[int]:
    """The trials stopped tuners left (see fail_interrupted)."""
    attrs = study.user_attrs
    found = {int(k[len(_INTERRUPTED):]) for k in attrs if k.startswith(_INTERRUPTED)}
    return sorted(found | set(attrs.get(_INTERRUPTED_LIST, [])))


def is_default(t: FrozenTrial) -> bool:
    return bool(t.user_attrs.get(ATTR_DEFAULT))


def role(t: FrozenTrial) -> str | None:
    """"final" (the final re-run's trial), "released" (asked but not run), or None: a search trial."""
    return t.user_attrs.get(ATTR_ROLE)


def counts(t: FrozenTrial, interrupted: set[int]) -> bool:
    """Whether the trial uses the budget: a search or default trial that is complete, failed (not interrupted by a
    stopped tuner) or running."""
    if role(t) is not None:
        return False
    return t.state in (TrialState.COMPLETE, TrialState.RUNNING) or \
        (t.state == TrialState.FAIL and t.number not in interrupted)


def counted_trials(study: optuna.Study) -> int:
    skip = set(interrupted_numbers(study))
    return sum(1 for t in study.get_trials(deepcopy=False) if counts(t, skip))
