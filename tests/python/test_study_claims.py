"""Which RUNNING trials a resuming tuner marks failed: those of a dead tuner, including one killed in the middle of
claiming its trial, but never one that a live tuner holds."""
import os
import socket
import time

import optuna
from optuna.trial import TrialState

from iotame.tune.study import claim, fail_interrupted, interrupted_numbers, open_study, register


def study(tmp_path):
    return open_study(f"sqlite:///{tmp_path / 's.sqlite'}", "s", "maximize", "io-bandwidth")


def dead_pid():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_dead_tuners_trials_are_failed_and_live_ones_kept(tmp_path):
    s = study(tmp_path)
    dead, partial, unclaimed, live = (s.ask() for _ in range(4))
    for t, pid in ((dead, dead_pid()), (live, os.getppid())):
        t.set_user_attr("host", socket.gethostname())
        t.set_user_attr("pid", pid)
        t.set_user_attr("heartbeat", time.time())
    partial.set_user_attr("host", socket.gethostname())      # killed between the writes of claim()
    lost = fail_interrupted(optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 's.sqlite'}"))
    assert sorted(lost) == sorted([dead.number, partial.number, unclaimed.number])
    states = {t.number: t.state for t in s.get_trials()}
    assert states[live.number] == TrialState.RUNNING
    assert sorted(interrupted_numbers(s)) == sorted(lost)


def test_unclaimed_trial_of_a_live_tuner_waits_for_its_claim(tmp_path):
    s = study(tmp_path)
    s.set_user_attr(f"tuner:{socket.gethostname()}:{os.getppid()}", 0.0)     # another live tuner on this host
    t = s.ask()
    assert fail_interrupted(s) == []
    claim(t)
    register(s)
    assert fail_interrupted(s) == [] and s.get_trials()[0].state == TrialState.RUNNING
