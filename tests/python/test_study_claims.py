"""The shared-study machinery on SQLite: the claims (one winner per key, a dead owner's claim handed on once),
which RUNNING trials a tuner fails (optuna's stale heartbeats, a dead process of this machine, a trial that never
had a heartbeat) and which it keeps (a live tuner's), and the budget rule for tuners asking at the same moment."""
import contextlib
import datetime
import subprocess
import time

from optuna.trial import FrozenTrial, TrialState

from iotame.tune.space import Param, Space
from iotame.tune.study import (Claims, Heartbeat, counted_trials, fail_interrupted, interrupted_numbers, open_study,
                               tuner_id)
from iotame.tune import Job, RunSpec, StudySpec, SpaceSpec, Tuner, TuneSpec


def study(tmp_path, heartbeat=1):
    return open_study(f"sqlite:///{tmp_path / 's.sqlite'}", "s", "maximize", "io-bandwidth", heartbeat=heartbeat)


def running(s, started=None):
    """A RUNNING trial created directly (no heartbeat), started at `started` (default now)."""
    trial_id = s._storage.create_new_trial(s._study_id, template_trial=FrozenTrial(
        number=-1, state=TrialState.RUNNING, value=None, datetime_start=started or datetime.datetime.now(),
        datetime_complete=None, params={}, distributions={}, user_attrs={}, system_attrs={},
        intermediate_values={}, trial_id=-1))
    return s._storage.get_trial(trial_id)


def test_a_claim_has_one_owner_and_passes_on_once(tmp_path):
    s = study(tmp_path)
    a, b = Claims(s), Claims(s)            # two tuners on one database
    assert a.claim("default", 3) == 3
    assert b.claim("default", 4) == 3 and b.owner("default") == 3
    assert a.claim("final:7", 5) == 5      # another key, its own owner
    assert not b.steal("default", 9, 4)    # only from the owner it names
    assert b.steal("default", 3, 4) and not a.steal("default", 3, 6)
    assert a.owner("default") == 4


def test_stopped_tuners_trials_are_failed_and_live_ones_kept(tmp_path):
    s = study(tmp_path, heartbeat=1)
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = s.ask()
    s._storage.record_heartbeat(dead._trial_id)
    dead.set_user_attr("tuner", {**tuner_id(), "pid": gone.pid})       # its process is gone: failed at once
    elsewhere = s.ask()
    s._storage.record_heartbeat(elsewhere._trial_id)
    elsewhere.set_user_attr("tuner", {**tuner_id(), "host": "another-node", "pid": gone.pid})   # cannot tell
    unbeaten_old = running(s, datetime.datetime.now() - datetime.timedelta(hours=1))
    unbeaten_new = running(s)              # its tuner may be about to record the first heartbeat
    beat = Heartbeat(s, 1)
    live = s.ask()
    beat.hold(live)
    try:
        assert fail_interrupted(s) == sorted([dead.number, unbeaten_old.number])
        # after the grace period (3 heartbeats) without one, optuna's own check fails `elsewhere`; the held one
        # keeps beating
        time.sleep(4.5)
        assert elsewhere.number in fail_interrupted(s)
    finally:
        beat.close()
    states = {t.number: t.state for t in s.get_trials()}
    assert states[live.number] == TrialState.RUNNING
    assert states[dead.number] == states[elsewhere.number] == states[unbeaten_old.number] == TrialState.FAIL
    assert set(interrupted_numbers(s)) >= {dead.number, elsewhere.number, unbeaten_old.number}
    assert counted_trials(s) == 2 - (states[unbeaten_new.number] != TrialState.RUNNING)     # live + unbeaten_new


def spec(tmp_path, name, trials):
    space = Space((Param("mpiio", "mpiio_hints", "romio_cb_write", ("enable", "disable")),))
    return TuneSpec(job=Job(("true",), 1, False), fs="local", out=tmp_path / name,
                    study=StudySpec("s", storage=f"sqlite:///{tmp_path / 's.sqlite'}", trials=trials, heartbeat=1),
                    space=SpaceSpec(space), runs=RunSpec(drop_caches=False))


def test_a_trial_asked_beyond_the_shared_budget_is_released(tmp_path):
    """Two tuners ask at the same moment for the last trial of the budget: the higher-numbered one is released
    (failed, role released, never counted) and not run."""
    a, b = Tuner(spec(tmp_path, "a", 3)), Tuner(spec(tmp_path, "b", 3))
    a.open()
    b.open()
    try:
        s = a.shared.study
        for _ in range(2):
            t = s.ask()
            s.tell(t, 1.0)
        held = []
        real_ask = b.shared.study.ask

        def racing_ask(*args, **kw):       # a asks for the third trial just before b does
            held.append(a.shared.heartbeat.hold(s.ask()) or s.get_trials()[-1])
            return real_ask(*args, **kw)

        def reserve():
            return b.shared.reserve(3, lambda: False)

        b.shared.study.ask = racing_ask
        assert reserve() is None
        held = held[0]
        released = s.get_trials()[-1]
        assert released.number == held.number + 1
        assert released.state == TrialState.FAIL and released.user_attrs["role"] == "released"
        assert counted_trials(s) == 3
        assert b.shared.others_running() == [held.number]   # b waits for it: it may still be interrupted
        a.shared.abandon(s.get_trials()[held.number])       # it is (Ctrl-C): its budget is b's again
        b.shared.study.ask = real_ask
        t = reserve()
        assert t is not None and counted_trials(s) == 3
    finally:
        a.close()
        b.close()


@contextlib.contextmanager
def default_claimed_by_a_running_trial(tmp_path):
    """Two tuners on one study, the first's default trial running and holding the claim: (a, b, that trial)."""
    a, b = Tuner(spec(tmp_path, "a", 3)), Tuner(spec(tmp_path, "b", 3))
    a.open()
    b.open()
    try:
        t = a.shared.new_trial({"default": True}, a.full_space.default_point())
        assert a.shared.claims.claim("default", t.number) == t.number
        yield a, b, t
    finally:
        a.close()
        b.close()


def test_the_default_is_claimed_once(tmp_path):
    """A second tuner finding the default claimed by a running trial waits; one finding it claimed by an
    interrupted trial takes it over."""
    with default_claimed_by_a_running_trial(tmp_path) as (a, b, t):
        events = []

        def wait():                        # while b waits, a is interrupted (Ctrl-C)
            events.append("waited")
            a.shared.abandon(t)

        def run(trial):
            events.append(trial.number)
            b.shared.study.tell(trial, 1.0)
            return type("Record", (), {"ok": True})()

        b.shared.wait, b.trials.run_reserved = wait, run
        assert b.run_default().number == events[1]
        assert events[0] == "waited" and events[1] > t.number and b.shared.claims.owner("default") == events[1]


def test_a_default_finishing_while_another_tuner_looks_is_not_run_again(tmp_path):
    """The default trial completes between a second tuner's two reads of the study (none done yet; the claim's
    owner): that tuner takes the finished default and runs nothing."""
    with default_claimed_by_a_running_trial(tmp_path) as (a, b, t):
        real_default_trial, ran = b.shared.default_trial, []

        def default_trial():                # none done when b looks; a finishes right after
            done = real_default_trial()
            if done is None and not ran:
                ran.append("a")
                a.shared.study.tell(t, 1.0)
            return done

        def run(trial):
            ran.append(trial.number)
            b.shared.study.tell(trial, 1.0)
            return type("Record", (), {"ok": True})()

        b.shared.default_trial, b.trials.run_reserved = default_trial, run
        assert b.run_default().number == t.number
        assert ran == ["a"] and b.shared.claims.owner("default") == t.number
        assert [x.number for x in b.shared.study.get_trials() if x.user_attrs.get("default")] == [t.number]
