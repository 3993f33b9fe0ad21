"""The race at the end of a study (iotame.tune.race) on a cheap objective: a function of the configuration, with or
without seeded noise, so every outcome is known; and the entrants it is given (iotame.tune.final.race_entrants):
settings that cannot act in the workload are dropped."""
import random
from types import SimpleNamespace

import pytest

from iotame.tune import UNSET, builtin_space
from iotame.tune.budget import StudyPlan, parse_budget
from iotame.tune.race_study import needed_point, race_entrants
from iotame.tune.race import Entrant, paired_interval, race
from iotame.tune.workload import Workload


def bandwidth(point: dict, noise: random.Random | None = None) -> float:
    """100 MB/s, x2 with a=1; b changes nothing; c=1 costs 10 %; times a shared noise when given."""
    v = 100.0 * (2.0 if point.get("a") == 1 else 1.0) * (0.9 if point.get("c") == 1 else 1.0)
    return v * (noise.uniform(0.7, 1.3) if noise else 1.0)


def entrants(*points):
    return [Entrant(label, point) for label, point in points]


def runner(log, noise=None):
    def run(e: Entrant, r: int) -> float:
        log.append((r, e.label))
        return bandwidth(e.point, noise)
    return run


def test_the_simplest_configuration_as_fast_as_the_best_wins():
    es = entrants(("default", {}), ("best", {"a": 1, "b": 1}), ("without a", {"b": 1}), ("without b", {"a": 1}))
    log = []
    result = race(es, es[0], runner(log), "maximize", min_rounds=3, max_rounds=6)
    assert result.answer.label == "without b"          # b carries nothing: left out
    assert result.best.point["a"] == 1 and not result.no_gain
    assert result.speedup == pytest.approx((2.0, 2.0, 2.0))
    assert es[2].out.startswith("slower than")         # without a is clearly slower
    assert result.runs == len(log) and result.rounds == 3


def test_rounds_are_paired_and_rotated():
    es = entrants(("default", {}), ("x", {"a": 1}), ("y", {"a": 1, "b": 1}))
    log = []
    race(es, es[0], runner(log), "maximize", min_rounds=3, max_rounds=3)
    firsts = [next(label for r, label in log if r == n) for n in range(3)]
    assert len(set(firsts)) == 3                       # a different entrant opens each round
    for n in range(3):                                 # every entrant ran once in every round
        assert sorted(label for r, label in log if r == n) == sorted({label for _, label in log if _ == n})


def test_nothing_beyond_the_noise_answers_the_default():
    noise = random.Random(7)
    es = entrants(("default", {}), ("b only", {"b": 1}), ("b and d", {"b": 1, "d": 2}))
    result = race(es, es[0], runner([], noise), "maximize", min_rounds=3, max_rounds=5)
    assert result.answer is es[0] and result.no_gain and result.speedup is None


def test_a_real_gain_in_noise_is_found_with_an_interval_above_one():
    noise = random.Random(3)

    def run(e, r):      # noise of +-5 % per run around a x2 gain
        return bandwidth(e.point) * noise.uniform(0.95, 1.05)
    es = entrants(("default", {}), ("a", {"a": 1}), ("a and b", {"a": 1, "b": 1}))
    result = race(es, es[0], run, "maximize", min_rounds=3, max_rounds=8)
    assert result.answer.label == "a" and result.speedup[1] > 1.5


def test_the_run_cap_is_kept_and_a_failing_entrant_is_out():
    es = entrants(("default", {}), ("a", {"a": 1}), ("fails", {"a": 1, "c": 1}), ("c", {"c": 1}))

    def run(e, r):
        return None if e.label == "fails" else bandwidth(e.point)
    result = race(es, es[0], run, "maximize", min_rounds=2, max_rounds=10, run_cap=7)
    assert result.runs <= 7 and es[2].error is not None and result.answer.label == "a"


def test_paired_interval_is_the_ratio_when_exact_and_wider_with_noise():
    assert paired_interval({0: 200, 1: 200}, {0: 100, 1: 100}, "maximize") == pytest.approx((2.0, 2.0, 2.0))
    assert paired_interval({0: 1.0}, {0: 2.0}, "minimize") == pytest.approx((2.0, 2.0, 2.0))
    mean, lo, hi = paired_interval({0: 210, 1: 190, 2: 200}, {0: 100, 1: 100, 2: 100}, "maximize")
    assert lo < 2.0 < hi and lo > 1.5
    assert paired_interval({0: 1.0}, {1: 1.0}, "maximize") is None


def _trial(number, params):
    return SimpleNamespace(number=number, params=params)


def test_settings_that_cannot_act_in_the_workload_are_dropped():
    space = builtin_space("local", 4)
    # collective reads and writes only: staging's prefetch serves independent reads, which this job never makes
    w = Workload(nprocs=4, bytes_read=1 << 20, bytes_written=1 << 20, files=1, read_ops=4, write_ops=4,
                 collective_ops=8, independent_ops=0, read_size=1 << 18, write_size=1 << 18, independent_reads=0)
    lead = {"mpiio.romio_cb_write": "disable", "iotame.staging.enabled": True, "iotame.staging.prefetch": True}
    got = {label: point for label, point, _ in race_entrants(space, w, [_trial(7, lead)])}
    acting = got["trial-0007-acting"]
    assert acting["iotame.staging.prefetch"] == UNSET and acting["mpiio.romio_cb_write"] == "disable"
    assert {"trial-0007", "trial-0007-without-romio_cb_write", "trial-0007-without-enabled"} <= set(got)
    # no collective calls: the collective-buffering hint cannot act either
    w2 = Workload(nprocs=4, bytes_read=0, bytes_written=1 << 20, files=1, read_ops=0, write_ops=4,
                  collective_ops=0, independent_ops=4, read_size=None, write_size=1 << 18, independent_reads=0)
    got2 = {label: point for label, point, _ in race_entrants(space, w2, [_trial(7, lead)])}
    assert got2["trial-0007-acting"]["mpiio.romio_cb_write"] == UNSET


def test_budget_and_plan():
    assert parse_budget("120").runs == 120 and parse_budget("30m").minutes == 30
    assert parse_budget("2.5min").runs_for(30.0) == 5
    with pytest.raises(ValueError, match="expected a number of runs"):
        parse_budget("soon")
    plan = StudyPlan.of(trials=10, repeat=1, space_size=4, top=3, min_rounds=3, max_rounds=6)
    assert plan.total == 3 + 10 + (1 + 3 + 4 + 2) * 6
    trials, cap = plan.within(30)
    assert (trials, cap) == (10, 30 - 3 - 10)                # the search fits; the race gets the rest
    assert plan.within(20) == (5, 12)                      # the race keeps its first rounds of 4 entrants


def test_a_smaller_entrant_stays_while_the_default_is_still_in_doubt():
    """The default looks as fast in the first rounds (one lucky run), then falls behind: the smaller of two
    configurations as fast as the best must still be in the race then (it was once dropped for having more
    settings than the default of the moment)."""
    es = entrants(("default", {}), ("big", {"a": 1, "b": 1}), ("small", {"a": 1}))

    def run(e, r):
        return {"default": 250.0 if r == 0 else 100.0, "big": 200.0, "small": 199.0}[e.label]
    result = race(es, es[0], run, "maximize", min_rounds=3, max_rounds=8)
    assert result.answer.label == "small" and es[0].out.startswith("slower than big")
    assert result.rounds >= 6 and not result.no_gain


def test_a_late_entrant_keeps_only_the_settings_whose_removal_was_clearly_slower():
    """b and c carry nothing: removing either alone leaves 2 settings, so only the late entrant with a alone (built
    from the first rounds' removals) can be the simplest as fast; it runs its own first rounds before it counts."""
    lead = {"a": 1, "b": 1, "c": 2}
    es = entrants(("default", {}), ("lead", lead), ("without a", {"b": 1, "c": 2}), ("without b", {"a": 1, "c": 2}),
                  ("without c", {"a": 1, "b": 1}))
    added = []

    def late(now):
        point = needed_point(es[1], now, "maximize")
        added.append(Entrant("needed", point))
        return added
    log = []
    result = race(es, es[0], runner(log), "maximize", min_rounds=3, max_rounds=6, late=late)
    assert added[0].point == {"a": 1} and result.answer is added[0]
    assert len(added[0].values) == 3 and result.rounds == 6 and result.speedup[0] == pytest.approx(2.0)
    assert needed_point(es[1], es[:2], "maximize") is None      # no removal measured: nothing to leave out


def test_a_reduction_that_is_the_default_is_not_raced_twice():
    space = builtin_space("local", 4)
    got = [label for label, _, _ in race_entrants(space, None, [_trial(3, {"mpiio.romio_cb_write": "disable"})])]
    assert got == ["trial-0003"]             # without its one setting it is the default, which is raced already
