"""`iotame tune` end to end with a stand-in job (no MPI, no build): a Python program whose bandwidth depends on the
hints of its configuration, which fails on one hint value while claiming the highest bandwidth, and sleeps on
another. Its values are exact, so the best configuration and the speedup are known in advance."""
import datetime
import json
import subprocess
import sys

import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState

from iotame.cli import main
from iotame.config import check_config
from iotame.report import make_report
from iotame.tune.noise import NOISE_RUNS
from iotame.tune.study import interrupted_numbers, tuner_id

from .fakes import make_stats

FAKE_JOB = r'''#!{python}
"""Bandwidth: 100 MB/s x3 with romio_cb_write=disable (x0.5 enable) x1.5 with cb_buffer_size=4194304.
romio_ds_write=enable: exit status 1 after writing statistics that claim 1e6 MB/s. cb_buffer_size=2097152 with
romio_cb_write=automatic: sleeps 30 s. With a file "noisy" beside it, x1, x3 and x0.5 by turns. Every run is
logged (hints, configuration path) to log.jsonl."""
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
cfg = json.load(open(os.environ["IOTAME_CONFIG"])) if os.environ.get("IOTAME_CONFIG") else None
hints = ((cfg or {{}}).get("defaults") or {{}}).get("mpiio_hints", {{}})
with open(os.path.join(here, "log.jsonl"), "a") as log:
    log.write(json.dumps({{"hints": hints, "config": os.environ.get("IOTAME_CONFIG"),
                          "meta": (cfg or {{}}).get("meta")}}) + "\n")
if os.path.exists(os.path.join(here, "always-fail")):
    sys.exit(7)
runs = sum(1 for _ in open(os.path.join(here, "log.jsonl")))
if hints.get("cb_buffer_size") == 2097152 and hints.get("romio_cb_write") == "automatic":
    time.sleep(30)
mbs = 100.0 * {{"disable": 3.0, "enable": 0.5}}.get(hints.get("romio_cb_write"), 1.0)
mbs *= 1.5 if hints.get("cb_buffer_size") == 4194304 else 1.0
if os.path.exists(os.path.join(here, "noisy")):   # a job too short to measure: x1, x3, x0.5 by turns
    mbs *= (1.0, 3.0, 0.5)[runs % 3]
fail = hints.get("romio_ds_write") == "enable"
if fail:
    mbs = 1e6
stats = json.load(open(os.path.join(here, "stats-template.json")))
total = stats["summary"]["bytes_read"] + stats["summary"]["bytes_written"]
stats["summary"]["io_seconds"] = total / mbs / 1e6
stats["summary"]["io_mbs"] = mbs
json.dump(stats, open(os.environ["IOTAME_STATS"], "w"))
print(json.dumps({{"kernel": "fake", "nprocs": 1, "params": {{}}, "verified": True,
                  "phases": [{{"name": "write", "bytes": total, "seconds": total / mbs / 1e6, "mbs": mbs}}]}}))
sys.exit(1 if fail else 0)
'''

SPACE = """
[mpiio]
romio_cb_write = ["enable", "disable"]
romio_ds_write = ["enable"]
cb_buffer_size = {pow2 = [2097152, 4194304]}
"""


@pytest.fixture(autouse=True)
def knowledge_env(tmp_path, monkeypatch):
    monkeypatch.setenv("IOTAME_KNOWLEDGE", str(tmp_path / "kb.sqlite"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))     # no machine profile of the user's
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def job(tmp_path, fake_lib):
    d = tmp_path / "job"
    d.mkdir()
    prog = d / "fake-job"
    prog.write_text(FAKE_JOB.format(python=sys.executable))
    prog.chmod(0o755)
    (d / "stats-template.json").write_text(json.dumps(dict(make_stats(), nprocs=1)))    # run alone: a job of one
    return prog


def log(job):
    return [json.loads(line) for line in (job.parent / "log.jsonl").read_text().splitlines()]


def tune(tmp_path, job, *options, space=SPACE):
    (tmp_path / "space.toml").write_text(space)
    return main(["tune", "--space", str(tmp_path / "space.toml"), "--no-drop-caches", "--out",
                 str(tmp_path / "out"), "--study", "s", *options, "--", str(job)])


def load(tmp_path):
    return optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 'out' / 'study.sqlite'}")


def search_trials(study):
    """The study's trials without the final re-run's own trial (user attribute role)."""
    return [t for t in study.get_trials() if "role" not in t.user_attrs]


def test_grid_study_end_to_end(tmp_path, job, capsys):
    assert tune(tmp_path, job, "--sampler", "grid", "--trials", "40", "--final-repeat", "2") == 0
    out = tmp_path / "out"
    study = load(tmp_path)
    trials = search_trials(study)
    # the default first, with the empty configuration
    assert trials[0].user_attrs["default"] is True
    # (every run makes the files it wrote durable at close: the objective measures the storage)
    assert json.loads((out / "trials" / "0000" / "config.json").read_text())["defaults"] == {
        "posix": {"sync_at_close": True}}
    assert log(job)[0]["hints"] == {}
    # the grid: 3 x 2 x 3 = 18 configurations, the default's (all unset) among them, then it stops
    assert len(trials) == 18
    assert len({tuple(sorted(t.params.items())) for t in trials}) == 18
    # failed trials are FAIL in the study and never best, though their statistics claimed 1e6 MB/s
    failed = [t for t in trials if t.state == TrialState.FAIL]
    assert len(failed) == 9 and all(t.params["mpiio.romio_ds_write"] == "enable" for t in failed)
    assert failed[0].user_attrs["error"] == "run 1: exit status 1"
    assert study.best_trial.params == {"mpiio.romio_cb_write": "disable", "mpiio.romio_ds_write": "unset",
                                       "mpiio.cb_buffer_size": 4194304}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["speedup"] == pytest.approx(4.5)
    assert summary["default"]["objective"] == pytest.approx(100.0)
    assert summary["best"]["objective"] == pytest.approx(450.0)
    assert summary["best"]["params"] == {"mpiio.romio_cb_write": "disable", "mpiio.cb_buffer_size": 4194304}
    assert summary["trials"]["failed"] == 9 and summary["trials"]["complete"] == 9
    assert summary["measured"].startswith("race: the default and 4 configurations")
    # the race: the default, the best 3 and the best without romio_cb_write (without cb_buffer_size is trial 2)
    lead = f"trial-{study.best_trial.number:04d}"
    labels = [c["label"] for c in summary["final"]]
    assert labels[:2] == ["default", lead] and labels[-1] == f"{lead}-without-romio_cb_write" and len(labels) == 5
    assert all(len(c["values"]) == 2 for c in summary["final"])
    assert summary["race"]["answer"] == lead and summary["race"]["no_gain"] is False
    # best.json: a configuration the runtime accepts, with where it came from
    assert check_config(out / "best.json") == []
    assert main(["config", "check", str(out / "best.json")]) == 0
    best = json.loads((out / "best.json").read_text())
    assert best["defaults"] == {"mpiio_hints": {"romio_cb_write": "disable", "cb_buffer_size": 4194304}}
    assert best["meta"]["speedup"] == pytest.approx(4.5) and best["meta"]["study"] == "s"
    printed = capsys.readouterr().out
    assert "speedup: 4.50x [4.50, 4.50] (95 % interval)" in printed and "450.0 MB/s" in printed
    assert summary["speedup_interval"] == [pytest.approx(4.5), pytest.approx(4.5)]
    # the ablation: both settings carry the gain (x3 and x1.5), the largest first
    effects = summary["ablation"]["effects"]
    assert [(e["setting"], e["kept"]) for e in effects] == [("mpiio.romio_cb_write", True),
                                                            ("mpiio.cb_buffer_size", True)]
    assert [e["effect"] for e in effects] == [pytest.approx(2.0), pytest.approx(0.5)]
    assert [s["setting"] for s in best["meta"]["settings"]] == ["mpiio.romio_cb_write", "mpiio.cb_buffer_size"]
    assert [e["interval"] for e in effects] == [[pytest.approx(2.0)] * 2, [pytest.approx(0.5)] * 2]
    assert "romio_cb_write=disable: +200 % [+200, +200], cb_buffer_size=4194304: +50 % [+50, +50]" in printed
    # the report
    page = make_report(out)
    assert page == out / "index.html" and "speedup 4.50x" in page.read_text()
    assert ("<td>romio_cb_write=disable</td><td class=num>+200.0 %</td><td class=num>+200.0 .. +200.0 %</td>"
            "<td class=num>2</td><td>kept</td>") in page.read_text()
    for png in ("trials.png", "params.png", "phases.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"


def test_resume_after_a_killed_tuner(tmp_path, job):
    assert tune(tmp_path, job, "--sampler", "random", "--seed", "1", "--trials", "4", "--final-repeat", "0") == 0
    study = load(tmp_path)
    assert len(search_trials(study)) == 4
    # a tuner killed in the middle of a trial leaves it RUNNING, held by a process that no longer exists
    gone = subprocess.Popen(["true"])
    gone.wait()
    t = study.ask()
    study._storage.record_heartbeat(t._trial_id)
    t.set_user_attr("tuner", {**tuner_id(), "pid": gone.pid})
    # one killed between creating its trial (an hour ago) and the trial's first heartbeat
    study._storage.create_new_trial(study._study_id, template_trial=FrozenTrial(
        number=-1, state=TrialState.RUNNING, value=None, datetime_start=datetime.datetime.now() -
        datetime.timedelta(hours=1), datetime_complete=None, params={}, distributions={}, user_attrs={},
        system_attrs={}, intermediate_values={}, trial_id=-1))
    assert tune(tmp_path, job, "--sampler", "random", "--seed", "1", "--trials", "7", "--final-repeat", "0") == 0
    study = load(tmp_path)
    trials = search_trials(study)
    assert trials[4].state == trials[5].state == TrialState.FAIL
    assert interrupted_numbers(study) == [trials[4].number, trials[5].number]
    assert len(trials) == 9                                  # 7 counted, and the 2 interrupted ones
    assert [t.number for t in trials if t.user_attrs.get("default")] == [0]
    assert all(t.state != TrialState.RUNNING for t in study.get_trials())
    assert sum(1 for e in log(job) if e["hints"] == {}) == NOISE_RUNS   # the default trial ran once


def test_a_failing_default_stops_the_study(tmp_path, job, capsys):
    (job.parent / "always-fail").write_text("")
    assert tune(tmp_path, job, "--trials", "5") == 1
    err = capsys.readouterr().err
    assert "iotame: tune: the default configuration failed (run 1: exit status 7)" in err
    assert len(log(job)) == 1               # its first run failed: measuring stops there


def test_timed_out_trial_fails(tmp_path, job):
    space = '[mpiio]\ncb_buffer_size = [2097152]\nromio_cb_write = ["automatic"]\n'
    assert tune(tmp_path, job, "--sampler", "grid", "--trials", "10", "--timeout", "1", space=space) == 0
    study = load(tmp_path)
    slow = [t for t in search_trials(study) if t.params.get("mpiio.cb_buffer_size") == 2097152
            and t.params.get("mpiio.romio_cb_write") == "automatic"]
    assert len(slow) == 1 and slow[0].state == TrialState.FAIL
    assert slow[0].user_attrs["error"] == "run 1: timed out after 1 s"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["best"]["trial"] != slow[0].number


def test_default_wins_when_nothing_beats_it(tmp_path, job):
    space = '[mpiio]\nromio_cb_write = ["enable"]\n'
    assert tune(tmp_path, job, "--sampler", "grid", "--trials", "5", "--final-repeat", "1", space=space) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["best"]["is_default"] is True and summary["speedup"] == 1.0
    best = json.loads((tmp_path / "out" / "best.json").read_text())
    assert "defaults" not in best and best["meta"]["default"] is True
    assert check_config(tmp_path / "out" / "best.json") == []


def test_knowledge_base_seeds_a_similar_study(tmp_path, job):
    small = '[mpiio]\nromio_cb_write = ["disable"]\ncb_buffer_size = [4194304]\n'
    assert tune(tmp_path, job, "--sampler", "grid", "--trials", "10", "--final-repeat", "1", space=small) == 0
    (tmp_path / "space2.toml").write_text(SPACE)
    out2 = tmp_path / "out2"
    rc = main(["tune", "--space", str(tmp_path / "space2.toml"), "--no-drop-caches", "--out", str(out2),
               "--study", "s2", "--sampler", "random", "--trials", "2", "--final-repeat", "0", "--", str(job)])
    assert rc == 0
    study = optuna.load_study(study_name="s2", storage=f"sqlite:///{out2 / 'study.sqlite'}")
    first = study.trials[1]
    assert first.user_attrs["seed"].startswith("knowledge base: study s, 4.50x")
    assert first.params == {"mpiio.romio_cb_write": "disable", "mpiio.romio_ds_write": "unset",
                            "mpiio.cb_buffer_size": 4194304}
    assert tune(tmp_path, job, "--no-knowledge", "--trials", "5", "--final-repeat", "0", space=small) == 0  # resumes
    assert len(search_trials(load(tmp_path))) == 5


def test_resume_with_another_objective_is_refused(tmp_path, job, capsys):
    assert tune(tmp_path, job, "--trials", "1", "--no-knowledge") == 0
    assert tune(tmp_path, job, "--trials", "2", "--objective", "io-time", "--no-knowledge") == 2
    assert "optimizes io-bandwidth, not io-time" in capsys.readouterr().err


def test_dry_run_prints_the_space(tmp_path, job, capsys):
    assert tune(tmp_path, job, "--dry-run") == 0
    out = capsys.readouterr().out
    assert "mpiio.romio_cb_write: unset, enable, disable" in out and "processes: 1" in out
    assert not (tmp_path / "out").exists()


def test_bad_space_launches_nothing(tmp_path, job, capsys):
    assert tune(tmp_path, job, space="[mpiio]\ncb_nodes = []\n") == 2
    assert capsys.readouterr().err == f"iotame: space {tmp_path / 'space.toml'}: mpiio.cb_nodes: empty list of values\n"
    assert not (job.parent / "log.jsonl").exists()


def test_every_trial_keeps_the_base_configuration(tmp_path, job):
    """--base: the default trial and every other start from it; the trial's own settings go on top."""
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"version": 1, "defaults": {"mpiio_hints": {"cb_nodes": 1, "romio_cb_write": "enable"},
                                                           "throttle": {"readers": 2}}}))
    # seeded: six of the grid's points, not all of them, and the check below needs one that sets romio_cb_write
    assert tune(tmp_path, job, "--sampler", "grid", "--trials", "6", "--final-repeat", "1", "--base", str(base),
                "--seed", "1") == 0
    out = tmp_path / "out"
    configs = [json.loads(p.read_text()) for p in sorted((out / "trials").glob("*/config.json"))]
    assert configs[0]["defaults"] == {"mpiio_hints": {"cb_nodes": 1, "romio_cb_write": "enable"},
                                      "throttle": {"readers": 2}, "posix": {"sync_at_close": True}}
    for c in configs:
        assert c["defaults"]["mpiio_hints"]["cb_nodes"] == 1 and c["defaults"]["throttle"] == {"readers": 2}
    assert any(c["defaults"]["mpiio_hints"]["romio_cb_write"] == "disable" for c in configs)  # the search's on top
    final_default = json.loads((out / "final" / "default.json").read_text())
    assert final_default["defaults"]["throttle"] == {"readers": 2}
    best = json.loads((out / "best.json").read_text())
    assert best["defaults"]["mpiio_hints"]["cb_nodes"] == 1


def test_ablation_drops_a_setting_without_effect_and_keeps_the_others(tmp_path, job):
    """The stand-in job's bandwidth depends on romio_cb_write and cb_buffer_size only: in a best configuration that
    also sets ind_wr_buffer_size, the ablation measures that one at no effect and drops it; the others stay, ranked
    by what they carry; the configuration without the dropped one is checked against the whole."""
    from iotame.config import save_config
    from iotame.tune.ablation import ablate, effect_line
    from iotame.tune.space import UNSET, Param, Space
    space = Space((Param("mpiio", "mpiio_hints", "romio_cb_write", ("disable", "enable")),
                   Param("mpiio", "mpiio_hints", "cb_buffer_size", (4194304,)),
                   Param("mpiio", "mpiio_hints", "ind_wr_buffer_size", (1048576,)),
                   Param("mpiio", "mpiio_hints", "romio_ds_read", ("enable",))))
    point = {"mpiio.romio_cb_write": "disable", "mpiio.cb_buffer_size": 4194304,
             "mpiio.ind_wr_buffer_size": 1048576, "mpiio.romio_ds_read": "enable"}

    def config_of(p, label):
        (tmp_path / "ab" / label).mkdir(parents=True, exist_ok=True)
        return save_config(space.config(p), tmp_path / "ab" / label / "config.json")

    r = ablate([str(job)], space, point, config_of, tmp_path / "ab", "io-bandwidth", "maximize", 2, 0.02)
    assert r.dropped == ["mpiio.ind_wr_buffer_size", "mpiio.romio_ds_read"]
    assert r.point == {**point, "mpiio.ind_wr_buffer_size": UNSET, "mpiio.romio_ds_read": UNSET}
    assert r.verified is True
    assert [(e.key, round(e.effect, 3)) for e in r.effects[:2]] == [
        ("mpiio.romio_cb_write", 2.0), ("mpiio.cb_buffer_size", 0.5)]
    assert effect_line(r.effects, r.noise) == ("romio_cb_write=disable: +200 % [+200, +200], cb_buffer_size=4194304: "
                                               "+50 % [+50, +50], the rest (ind_wr_buffer_size, romio_ds_read): "
                                               "noise (< 2 %)")
    hints = [entry["hints"] for entry in log(job)]
    assert {"romio_cb_write": "disable", "cb_buffer_size": 4194304} in hints  # the reduced one was run



def test_a_default_run_of_another_process_count_stops_the_study(tmp_path, job, capsys):
    """Statistics of a job of another size than the command's (MPICH ranks under srun without --mpi=pmi2 each start
    as a job of one): the study stops after the default, naming both counts."""
    stats = json.loads((job.parent / "stats-template.json").read_text())
    stats["nprocs"] = 3
    (job.parent / "stats-template.json").write_text(json.dumps(stats))
    assert tune(tmp_path, job, "--trials", "4") == 1
    err = capsys.readouterr().err
    assert "a job of 3 processes, not 1" in err and "--mpi=pmi2" in err
    assert len(log(job)) == NOISE_RUNS      # the default trial alone


def test_the_study_says_its_most_runs_beforehand_and_a_budget_caps_them(tmp_path, job, capsys):
    assert tune(tmp_path, job, "--sampler", "grid", "--trials", "40", "--final-repeat", "2", "--budget", "20") == 0
    err = capsys.readouterr().err
    announced = int(err.split("iotame: tune: at most ", 1)[1].split(" runs", 1)[0])
    assert announced == 3 + 40 + (1 + 3 + 3 + 2) * 6           # before the default: the plan for the whole space
    assert "--budget 20 runs: 9 search trials instead of 40" in err
    assert len(log(job)) <= 20                                  # every run of the study, the race's included
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["race"]["runs"] <= 8 and summary["trials"]["total"] == 9
