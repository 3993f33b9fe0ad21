"""The cost model's recommendation (iotame.tune.recommend): from a profile and the statistics of the default run and
the model run, the strategy of least predicted time (or the hints that do it), the throttle level of the profile's
streams curve, staging where writes reach the device; nothing without a profile. And in a study: enqueued first after
the default, with its seed label, before the knowledge base's seeds."""
import copy
import json

import pytest

from iotame.cli import main
from iotame.config import check_config
from iotame.tune.builtin import builtin_space
from iotame.tune.recommend import recommend, strategy_times, throttle_level
from iotame.tune.space import Param, Space
from iotame.tune.workload import prune, workload_from_stats

from .fakes import make_stats
from .test_tune_study import job, knowledge_env, load, log, search_trials, tune  # noqa: F401 (fixtures)

PROFILE = {"nodes": {"count": 1, "processes_per_node": 2},
           "storage": {"streams": {"write": [[1, 1000.0], [2, 1900.0], [4, 1000.0]],
                                   "read": [[1, 1000.0], [2, 1500.0], [4, 2000.0]]},
                       "write_back": {"absorbed_bytes": 0}}}


def profile(**write_back):
    p = copy.deepcopy(PROFILE)
    p["storage"]["write_back"].update(write_back)
    return p


def model_stats(predicted, calls=10):
    """Statistics of a model run: one decision with the model's predicted seconds per strategy."""
    s = make_stats()
    s["files"][0]["decisions"] = [{"signature": {"op": "write", "nprocs": 2, "bytes": 524288, "requests": 2,
                                                 "gap": 0}, "strategy": min(predicted, key=predicted.get),
                                   "calls": calls, "model": {"predicted_s": predicted}}]
    return s


def settings(rec):
    return {f"{s.section}.{s.name}": s.value for s in rec.settings}


@pytest.mark.parametrize("points, ppn, level", [
    ([[1, 100], [2, 200], [4, 120]], 4, 2),          # best at 2 (only measured counts and ppn are candidates)
    ([[1, 100], [2, 200], [4, 120]], 3, 2),          # 3 (ppn) read between the points: 2 x (0.6)^0.585 = 148
    ([[1, 100], [2, 200]], 8, 2),                     # beyond the last point: the controller measures the rest
    ([[1, 100]], 8, 0),                               # one point: no prediction
    ([[1, 200], [2, 195], [4, 100]], 2, 2),           # within 5 % of the best: the highest level
    ([[1, 200], [2, 180], [4, 100]], 2, 1),
    ([[1, 1743.09], [2, 2033.6], [4, 955.29]], 2, 2),
])
def test_throttle_level_from_the_streams_curve(points, ppn, level):
    assert throttle_level(points, ppn) == level


def recommend_at(ppn: int):
    """The recommendation for the sample statistics of a job of ppn processes on one node of the sample profile."""
    stats = make_stats()
    stats["nprocs"] = ppn
    w = workload_from_stats(stats)
    p = profile()
    p["nodes"]["processes_per_node"] = ppn
    return recommend(w, p, prune(builtin_space("local", ppn), w).never_acting(), durable=False)


def test_no_static_level_from_a_curve_that_stops_below_the_node_s_processes():
    rec = recommend_at(8)
    assert "throttle.writers" not in settings(rec) and "throttle.readers" not in settings(rec)
    assert any(what == "throttle.writers" and "stops at 4 streams" in why for what, why in rec.left)


def test_throttle_level_is_recommended_in_the_space_where_it_is_below_the_node_s_processes():
    rec = recommend_at(4)
    # writes: 1000 (1), 1900 (2), 1000 (4): level 2; reads: best with all 4, no limit
    assert settings(rec)["throttle.writers"] == 2
    assert "throttle.readers" not in settings(rec)
    assert any(what == "throttle.readers" and "no limit" in why for what, why in rec.left)
    assert rec.gains["throttle.writers"] is None                        # not predicted


def test_staging_where_writes_are_synchronous_not_where_the_page_cache_absorbs_them():
    w = workload_from_stats(make_stats(bytes_written=64 << 20))
    space = prune(builtin_space("local", 2), w).never_acting()
    assert settings(recommend(w, profile(absorbed_bytes=0), space, durable=False))["staging.enabled"] is True
    # 64 MiB from one node, 16 MiB absorbed: synchronous for this job
    assert settings(recommend(w, profile(absorbed_bytes=16 << 20), space, durable=False))["staging.enabled"] is True
    absorbing = recommend(w, profile(absorbed_bytes=4 << 30), space, durable=False)
    assert "staging.enabled" not in settings(absorbing)
    assert any(what == "staging.enabled" and "page cache absorbs" in why for what, why in absorbing.left)
    # the tuner's runs sync at close: the writes reach the device within the measured time whatever is absorbed
    assert settings(recommend(w, profile(absorbed_bytes=4 << 30), space, durable=True))["staging.enabled"] is True


def test_strategy_of_least_predicted_time_and_its_gain():
    w = workload_from_stats(make_stats())
    space = prune(builtin_space("local", 2), w).never_acting()
    stats = model_stats({"passthrough": 0.02, "two_phase": 0.01, "independent": 0.03})
    assert strategy_times(stats) == pytest.approx({"passthrough": 0.2, "two_phase": 0.1, "independent": 0.3})
    rec = recommend(w, profile(), space, default_stats=make_stats(), model_stats=stats)
    assert settings(rec)["collective.strategy"] == "two_phase"
    assert rec.gains["collective strategy"] == pytest.approx(2.0)
    # the job's I/O time: 0.5 s of which its collective calls (write_at_all) took none in these statistics
    assert rec.gains["job I/O time (collective calls' share)"] == pytest.approx(1.0)
    # the model's best is the default's strategy: nothing to set
    same = recommend(w, profile(), space, model_stats=model_stats({"passthrough": 0.01, "two_phase": 0.02}))
    assert "collective.strategy" not in settings(same)


def test_independent_outside_the_space_is_recommended_as_romio_hints():
    w = workload_from_stats(make_stats())
    space = Space((Param("iotame", "collective", "strategy", ("two_phase", "view_based")),
                   Param("mpiio", "mpiio_hints", "romio_cb_write", ("enable", "disable")),
                   Param("mpiio", "mpiio_hints", "romio_ds_write", ("enable", "disable"))))
    rec = recommend(w, profile(), space, model_stats=model_stats({"passthrough": 0.02, "independent": 0.01}))
    # reads are independent here (read_at): only the write side's hints are in the space anyway
    assert settings(rec) == {"mpiio_hints.romio_cb_write": "disable", "mpiio_hints.romio_ds_write": "enable"}
    assert rec.point(space) == {"iotame.collective.strategy": "unset", "mpiio.romio_cb_write": "disable",
                                "mpiio.romio_ds_write": "enable"}


def test_no_profile_recommends_nothing_and_says_how_to_make_one():
    w = workload_from_stats(make_stats())
    rec = recommend(w, None, builtin_space("local", 2), where="/data")
    assert rec.settings == [] and rec.config() == {"version": 1}
    assert "no machine profile for /data" in rec.message and "iotame calibrate" in rec.message


SPACE_WITH_STAGING = """
[mpiio]
romio_cb_write = ["enable", "disable"]
[iotame.staging]
enabled = [true]
"""


def write_profile(tmp_path):
    """A profile valid for the validator: the unit tests' sample, its write-back absorbing everything."""
    from pathlib import Path
    sample = Path(__file__).resolve().parents[1] / "unit" / "data" / "profile_sample.json"
    path = tmp_path / "profile.json"
    path.write_text(sample.read_text())
    return path


def test_the_recommendation_is_enqueued_first_then_the_knowledge_base(tmp_path, job, capsys):
    prof = write_profile(tmp_path)
    assert tune(tmp_path, job, "--sampler", "random", "--seed", "1", "--trials", "4", "--final-repeat", "0",
                "--profile", str(prof), space=SPACE_WITH_STAGING) == 0
    trials = search_trials(load(tmp_path))
    assert trials[0].user_attrs["default"] is True
    # the job writes (write_at_all) with durable closes: staging; no collective strategy in this space
    assert trials[1].user_attrs["seed"] == "model"
    assert trials[1].params == {"mpiio.romio_cb_write": "unset", "iotame.staging.enabled": True}
    # the job makes collective calls and the space has a collective hint: one model run after the default, whose
    # statistics would hold the model's predictions (the stand-in's hold none: the strategy is not predicted)
    model = json.loads((tmp_path / "out" / "model-run" / "config.json").read_text())["defaults"]["collective"]
    assert model == {"strategy": "auto", "exam_budget": 0, "profile": str(prof)}
    assert [(r["meta"] or {}).get("trial") for r in log(job)[:5]] == [0, 0, 0, None, 1]   # the default runs 3 times
    assert summary_gains(tmp_path) == {"collective strategy": None, "staging": None}
    assert json.loads((tmp_path / "out" / "trials" / "0001" / "config.json").read_text())["defaults"]["staging"] \
        == {"enabled": True}
    assert all("seed" not in t.user_attrs for t in trials[2:])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["recommendation"]["settings"][0]["setting"] == "staging.enabled"
    assert "[model]" in capsys.readouterr().err          # the trial list says where trial 1 came from


def summary_gains(tmp_path):
    return json.loads((tmp_path / "out" / "summary.json").read_text())["recommendation"]["gains"]


def test_without_a_profile_the_study_runs_as_before(tmp_path, job, capsys):
    assert tune(tmp_path, job, "--sampler", "random", "--seed", "1", "--trials", "3", "--final-repeat", "0",
                space=SPACE_WITH_STAGING) == 0
    assert all("seed" not in t.user_attrs for t in search_trials(load(tmp_path)))
    assert "no machine profile" in capsys.readouterr().err


def test_recommend_prints_the_configuration_without_searching(tmp_path, job, capsys):
    prof = write_profile(tmp_path)
    assert tune(tmp_path, job, "--recommend", "--profile", str(prof), space=SPACE_WITH_STAGING) == 0
    out = capsys.readouterr().out
    assert "staging.enabled" in out and "predicted gain: collective strategy: not predicted; staging: not predicted" \
        in out
    # the default alone was run; the recommendation waits in the study for a later `iotame tune` of it
    assert [(t.state.name, t.user_attrs.get("default"), t.user_attrs.get("seed"))
            for t in search_trials(load(tmp_path))] == [("COMPLETE", True, None), ("WAITING", None, "model")]
    assert len(log(job)) == 4                                          # the default's 3 runs and the model run
    config = tmp_path / "out" / "recommended.json"
    assert check_config(config) == []
    assert main(["config", "check", str(config)]) == 0
    assert json.loads(config.read_text())["defaults"] == {"staging": {"enabled": True}}
    # --json: the same configuration on stdout
    capsys.readouterr()
    assert tune(tmp_path, job, "--recommend", "--json", "--profile", str(prof), space=SPACE_WITH_STAGING) == 0
    assert json.loads(capsys.readouterr().out)["defaults"] == {"staging": {"enabled": True}}


def test_recommend_on_a_job_too_noisy_to_search_still_recommends_and_says_so(tmp_path, job, capsys):
    """The model's recommendation ranks nothing measured: a noisy default is noted, not a stop."""
    (job.parent / "noisy").touch()
    prof = write_profile(tmp_path)
    assert tune(tmp_path, job, "--recommend", "--profile", str(prof), space=SPACE_WITH_STAGING) == 0
    captured = capsys.readouterr()
    assert "staging.enabled" in captured.out and "too short or too irregular to tune" in captured.err
    assert (tmp_path / "out" / "recommended.json").exists()


def test_a_recommendation_equal_to_the_default_is_not_enqueued(tmp_path, job, capsys):
    # without durable closes the sample profile's page cache absorbs the stand-in's 2 MiB: no staging, and the
    # model run's statistics hold no prediction: nothing to try beyond the default
    prof = write_profile(tmp_path)
    assert tune(tmp_path, job, "--sampler", "random", "--seed", "1", "--trials", "3", "--final-repeat", "0",
                "--no-durable", "--profile", str(prof), space=SPACE_WITH_STAGING) == 0
    assert all("seed" not in t.user_attrs for t in search_trials(load(tmp_path)))
    err = capsys.readouterr().err
    assert "model: the model recommends the default configuration for this workload" in err
    left = json.loads((tmp_path / "out" / "summary.json").read_text())["recommendation"]["left"]
    assert any(x["what"] == "staging.enabled" and "page cache absorbs" in x["why"] for x in left)


def test_first_configurations_are_tried_first_flattened_with_what_the_space_lacks_named(tmp_path, job, capsys):
    advice = tmp_path / "advice.json"
    advice.write_text(json.dumps({"version": 1, "defaults": {"staging": {"enabled": False}},
                                  "files": [{"match": "*.dat", "staging": {"enabled": True},
                                             "mpiio_hints": {"romio_cb_write": "enable", "cb_nodes": 1}}]}))
    same = tmp_path / "same.json"
    same.write_text(json.dumps({"version": 1, "defaults": {"staging": {"enabled": True},
                                                           "mpiio_hints": {"romio_cb_write": "enable"}}}))
    assert tune(tmp_path, job, "--sampler", "random", "--seed", "1", "--trials", "3", "--final-repeat", "0",
                "--first", str(advice), "--first", str(same), space=SPACE_WITH_STAGING) == 0
    trials = search_trials(load(tmp_path))
    assert trials[1].user_attrs["seed"] == str(advice)
    assert trials[1].params == {"mpiio.romio_cb_write": "enable", "iotame.staging.enabled": True}
    assert all("seed" not in t.user_attrs for t in trials[2:])         # the second one is the same point
    err = capsys.readouterr().err
    assert f"{advice}: not in this space, left out of its trial: mpiio_hints.cb_nodes" in err
    assert f"{same}: its trial is the default or one already queued: not tried again" in err


def test_a_first_configuration_that_is_not_valid_is_an_error_naming_it(tmp_path, job, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "defaults": {"staging": {"enabled": "yes"}}}))
    assert tune(tmp_path, job, "--trials", "2", "--first", str(bad), space=SPACE_WITH_STAGING) == 2
    assert f"{bad}" in capsys.readouterr().err and not (job.parent / "log.jsonl").exists()   # nothing ran
