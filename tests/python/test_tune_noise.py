"""Honest measurements in the tuner: a job too noisy to tune is named as such before the search, each setting's
effect carries the interval of its paired rounds, the ablation adds rounds only where an interval straddles the
noise, and the report's figure of the parameters keeps its title off its panels."""
import json
from pathlib import Path

import pytest

from iotame.report.data import ReportData, ReportTrial
from iotame.report.plots import params_figure
from iotame.tune.ablation import ablate, effect_line, paired_interval
from iotame.tune.measure import RunOutcome
from iotame.tune.noise import NOISE_RUNS, too_noisy
from iotame.tune.space import Param, Space

from .test_tune_conditional import config_writer
from .test_tune_study import job, knowledge_env, load, log, search_trials, tune  # noqa: F401 (fixtures)


# ---- a job too short to measure ----

def test_a_job_too_noisy_to_tune_stops_before_the_search_with_advice(tmp_path, job, capsys):
    (job.parent / "noisy").touch()
    assert tune(tmp_path, job, "--trials", "6") == 1
    err = capsys.readouterr().err
    assert f"{NOISE_RUNS} runs of the default spread 250 %" in err
    assert "too short or too irregular to tune" in err and "--repeat 25" in err and "--max-noise 2.5" in err
    assert len(log(job)) == NOISE_RUNS                  # no search trial ran, nothing was ranked
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_noisy_job_is_tuned_when_the_limit_is_raised(tmp_path, job):
    (job.parent / "noisy").touch()
    assert tune(tmp_path, job, "--trials", "3", "--final-repeat", "0", "--max-noise", "3") == 0
    assert len(search_trials(load(tmp_path))) == 3


def test_the_limit_applies_to_a_trial_measured_several_times():
    values = [100.0, 130.0, 90.0]                        # spread 40 %
    assert too_noisy(values, 1, 0.3, []) is not None
    assert too_noisy(values, 4, 0.3, []) is None         # medians of 4 runs: about 20 %
    assert too_noisy(values, 1, 0.5, [0.01, 0.012, 0.011]) is None
    assert "0.011 s of I/O per run" in too_noisy(values, 1, 0.3, [0.01, 0.012, 0.011])


# ---- intervals and extra rounds ----

def _space():
    return Space((Param("mpiio", "mpiio_hints", "romio_cb_write", ("disable",)),
                  Param("mpiio", "mpiio_hints", "romio_ds_write", ("disable",)),
                  Param("mpiio", "mpiio_hints", "cb_buffer_size", (4194304,))))


def _hints(config: dict) -> dict:
    return (config.get("defaults") or {}).get("mpiio_hints", {})


def test_the_ablation_adds_rounds_only_where_an_interval_straddles_the_noise(tmp_path, monkeypatch):
    """romio_cb_write carries x3 in every round (kept after 2 rounds); cb_buffer_size nothing (dropped after 2);
    romio_ds_write +20 % in one round and -5 % in the other, forever: it gets rounds up to twice the asked ones
    and is decided by its median, marked uncertain."""
    space = _space()
    point = {"mpiio.romio_cb_write": "disable", "mpiio.romio_ds_write": "disable", "mpiio.cb_buffer_size": 4194304}
    calls: list[tuple[str, int]] = []

    def run_once(argv, config_path, out, objective, **kw):
        hints = _hints(json.loads(Path(config_path).read_text()))
        r = int(Path(out).name.split("-")[1]) - 1
        calls.append((Path(out).parent.name, r))
        value = 300.0 if hints.get("romio_cb_write") == "disable" else 100.0
        if "romio_ds_write" not in hints:
            value /= (1.2, 0.95)[r % 2]
        return RunOutcome(str(out), value, None, 0, 1.0)

    monkeypatch.setattr("iotame.tune.ablation.run_once", run_once)
    r = ablate(["job"], space, point, config_writer(space, tmp_path), tmp_path, "io-bandwidth", "maximize", 2, 0.1)
    by_key = {e.key: e for e in r.effects}
    cb, ds, buf = by_key["mpiio.romio_cb_write"], by_key["mpiio.romio_ds_write"], by_key["mpiio.cb_buffer_size"]
    assert (cb.kept, cb.rounds, cb.uncertain) == (True, 2, False)
    assert cb.effect == pytest.approx(2.0) and cb.interval == (pytest.approx(2.0), pytest.approx(2.0))
    assert (buf.kept, buf.rounds, buf.uncertain) == (False, 2, False)
    assert (ds.rounds, ds.uncertain) == (4, True)
    assert ds.interval == (pytest.approx(-0.05), pytest.approx(0.2))
    assert ds.kept is (ds.effect >= 0.1)
    assert r.rounds == 4
    # the extra rounds ran the best and the doubtful setting only
    assert sorted({label for label, rnd in calls if 2 <= rnd < 4}) == ["best", "without-mpiio_romio_ds_write"]
    line = effect_line(r.effects, r.noise)
    assert line.startswith("romio_cb_write=disable: +200 % [+200, +200]")
    assert "(uncertain)" in line or "romio_ds_write" in line.split("the rest")[-1]


def test_paired_intervals_pair_the_rounds():
    best, other = {0: 200.0, 1: 100.0, 2: 150.0}, {0: 100.0, 1: 100.0}
    effect, (low, high) = paired_interval(best, other, "maximize")
    assert (effect, low, high) == (pytest.approx(0.5), pytest.approx(0.0), pytest.approx(1.0))
    effect, (low, high) = paired_interval({0: 1.0}, {0: 2.0}, "minimize")        # times: smaller is better
    assert effect == low == high == pytest.approx(1.0)
    assert paired_interval({0: 1.0}, {1: 2.0}, "maximize") is None


# ---- the report's figure ----

def test_the_parameter_figure_keeps_its_title_above_its_panels(tmp_path):
    trials = [ReportTrial(i, "complete", 100.0 + i, {f"mpiio.hint_{k}": (i + k) % 3 for k in range(5)})
              for i in range(1, 12)]
    data = ReportData(tmp_path, {"study": "s"}, trials, None)
    fig = params_figure(data)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    title = fig._suptitle.get_window_extent(renderer)
    panels = [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_title()]
    assert len(panels) == 5
    assert all(title.y0 >= p.y1 for p in panels)


def test_an_ablation_whose_best_configuration_jumps_between_runs_weighs_nothing(tmp_path, monkeypatch):
    """The best configuration runs at 300 or 1000 MB/s by turns (a job bimodal under it): no removal can be told
    from luck, so every setting is kept and the line says why, instead of ranking them."""
    space = _space()
    point = {"mpiio.romio_cb_write": "disable", "mpiio.romio_ds_write": "disable", "mpiio.cb_buffer_size": 4194304}

    def run_once(argv, config_path, out, objective, **kw):
        hints = _hints(json.loads(Path(config_path).read_text()))
        r = int(Path(out).name.split("-")[1]) - 1
        value = (300.0, 1000.0)[r % 2] if len(hints) == 3 else 500.0
        return RunOutcome(str(out), value, None, 0, 1.0)

    monkeypatch.setattr("iotame.tune.ablation.run_once", run_once)
    r = ablate(["job"], space, point, config_writer(space, tmp_path), tmp_path, "io-bandwidth", "maximize", 2, 0.1,
               max_noise=0.5)
    assert r.unsteady == pytest.approx(700 / 650)
    assert r.dropped == [] and r.point == point
    assert r.line().startswith("not weighed: the best configuration's own runs spread 108 %")
    # the same runs without the limit: a ranking of luck, which the limit prevents
    assert ablate(["job"], space, point, config_writer(space, tmp_path / "b"), tmp_path / "b", "io-bandwidth",
                  "maximize", 2, 0.1).unsteady is None
