"""End to end: `iotame tune` driving real mpiexec jobs of the ior kernel under the real runtime, over a tiny space
(2 parameters x 2 values), then `iotame report`; and a study killed in the middle that resumes."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import KERNEL, LIBIOTAME, Job

pytestmark = pytest.mark.skipif(not (LIBIOTAME.is_file() and KERNEL.is_file()),
                                reason=f"needs {LIBIOTAME} and {KERNEL} (run make setup)")

SPACE = """
[mpiio]
romio_cb_write = ["enable", "disable"]
cb_buffer_size = [1048576, 4194304]
"""
IOR = ["mpiexec", "-n", "1", str(KERNEL), "ior", "-c", "-w", "-r", "-b", "256k", "-t", "64k"]
# the jobs are tiny: their spread is not what these tests are about (iotame.tune.noise stops a noisy study)
NOISY_OK = ("--max-noise", "1000")


def env(tmp_path):
    return Job(tmp_path).env(extra={"COLUMNS": "160", "IOTAME_KNOWLEDGE": str(tmp_path / "kb.sqlite")})


def tune_args(tmp_path, *options):
    (tmp_path / "space.toml").write_text(SPACE)
    return [sys.executable, "-m", "iotame", "tune", "--space", str(tmp_path / "space.toml"), "--no-drop-caches",
            *NOISY_OK,
            "--out", str(tmp_path / "out"), "--study", "t", *options, "--", *IOR, "-o", str(tmp_path / "ior.dat")]


def iotame(tmp_path, *args, timeout=120):
    return subprocess.run([sys.executable, "-m", "iotame", *map(str, args)], cwd=tmp_path, env=env(tmp_path),
                          capture_output=True, text=True, timeout=timeout)


def trials(tmp_path):
    """(number, state, is default) of every search trial (not the final re-run's own, user attribute role), read
    from the SQLite storage directly."""
    path = tmp_path / "out" / "study.sqlite"
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        rows = db.execute("SELECT t.number, t.state, (SELECT COUNT(*) FROM trial_user_attributes a WHERE "
                          "a.trial_id = t.trial_id AND a.key = 'default') FROM trials t WHERE NOT EXISTS (SELECT 1 "
                          "FROM trial_user_attributes r WHERE r.trial_id = t.trial_id AND r.key = 'role') "
                          "ORDER BY t.number").fetchall()
    except sqlite3.OperationalError:         # the tables are not there yet
        rows = []
    finally:
        db.close()
    return [(n, s, bool(d)) for n, s, d in rows]


def test_tune_then_report(tmp_path):
    p = subprocess.run(tune_args(tmp_path, "--sampler", "random", "--seed", "3", "--trials", "4",
                                 "--final-repeat", "1"),
                       cwd=tmp_path, env=env(tmp_path), capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    rows = trials(tmp_path)
    assert len(rows) == 4 and rows[0] == (0, "COMPLETE", True)              # the default first
    first = json.loads((out / "trials" / "0000" / "config.json").read_text())
    assert first["defaults"] == {"posix": {"sync_at_close": True}}          # nothing but durable closes
    stats = json.loads((out / "trials" / "0000" / "run-1" / "stats.json").read_text())
    assert stats["nprocs"] == 1 and stats["summary"]["bytes_written"] == 256 * 1024
    summary = json.loads((out / "summary.json").read_text())
    assert summary["speedup"] > 0 and summary["default"]["objective"] > 0
    assert summary["fs"] in ("local", "lustre", "gpfs") and summary["nprocs"] == 1
    assert "speedup:" in p.stdout
    check = iotame(tmp_path, "config", "check", out / "best.json")
    assert check.returncode == 0 and check.stdout == f"{out / 'best.json'}: ok\n"
    report = iotame(tmp_path, "report", out)
    assert report.returncode == 0, report.stderr
    assert (out / "index.html").is_file() and (out / "trials.png").is_file() and (out / "params.png").is_file()


def durable_syncs(stats_path):
    """The syncs the POSIX layer saw on the phases kernel's file, and the ranks' close time of it."""
    (f,) = [f for f in json.loads(stats_path.read_text())["files"] if f["path"].endswith("p.dat")]
    return f["posix"]["syncs"], f["ops"]["close"]["seconds"]["max"]


def test_tuning_runs_make_writes_durable_and_the_job_outside_tuning_is_unchanged(tmp_path):
    """The phases kernel never syncs: in the tuner's runs every rank's close of the file it wrote syncs it (the time
    counted in the close, so in the objective), best.json does not carry that, and the job run with best.json
    closes as it always did; --no-durable leaves the trials alone too."""
    (tmp_path / "space.toml").write_text(SPACE)
    job = ["mpiexec", "-n", "2", str(KERNEL), "phases", "--records", "4", "--record-size", "64k", "--file",
           str(tmp_path / "p.dat")]
    base = [sys.executable, "-m", "iotame", "tune", "--space", str(tmp_path / "space.toml"), "--no-drop-caches",
            *NOISY_OK,
            "--sampler", "random", "--seed", "1", "--trials", "2", "--final-repeat", "1", "--ablation-rounds", "0"]
    p = subprocess.run([*base, "--out", str(tmp_path / "out"), "--study", "d", "--", *job], cwd=tmp_path,
                       env=env(tmp_path), capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    syncs, _ = durable_syncs(out / "trials" / "0000" / "run-1" / "stats.json")
    assert syncs >= 2                                                       # each writing rank's close
    summary = json.loads((out / "summary.json").read_text())
    assert summary["durable"] is True and "writes made durable at close" in p.stdout
    best = json.loads((out / "best.json").read_text())
    assert "posix" not in (best.get("defaults") or {})
    stats = tmp_path / "plain.json"
    Job(tmp_path).run(2, job[3:], preload=True, config=out / "best.json", stats=stats)
    assert durable_syncs(stats)[0] == 0                                     # outside tuning: unchanged
    p = subprocess.run([*base, "--no-durable", "--out", str(tmp_path / "out2"), "--study", "e", "--", *job],
                       cwd=tmp_path, env=env(tmp_path), capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    assert durable_syncs(tmp_path / "out2" / "trials" / "0000" / "run-1" / "stats.json")[0] == 0


def test_resume_after_kill(tmp_path):
    tuner = subprocess.Popen(tune_args(tmp_path, "--sampler", "random", "--seed", "5", "--trials", "60"),
                             cwd=tmp_path, env=env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:             # two trials done and the next one running: kill the tuner in its middle
            states = [s for _, s, _ in trials(tmp_path)]
            if states.count("COMPLETE") >= 2 and "RUNNING" in states:
                break
            assert tuner.poll() is None and time.monotonic() < deadline, "the tuner stopped or made no progress"
            time.sleep(0.05)
    finally:
        os.killpg(tuner.pid, signal.SIGKILL)
        tuner.wait()
    before = trials(tmp_path)
    finished = [n for n, s, _ in before if s in ("COMPLETE", "FAIL")]
    target = len(finished) + 2
    p = subprocess.run(tune_args(tmp_path, "--sampler", "random", "--seed", "5", "--trials", str(target),
                                 "--final-repeat", "1"),
                       cwd=tmp_path, env=env(tmp_path), capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    after = trials(tmp_path)
    left_running = [n for n, s, _ in before if s == "RUNNING"]
    assert [n for n, _, d in after if d] == [0]                       # one default, the first trial
    assert all(s in ("COMPLETE", "FAIL") for _, s, _ in after), (before, after, p.stderr)
    assert [n for n, _, _ in after] == list(range(len(after)))        # numbering continues (the final's trial last)
    assert len(after) == target + len(left_running)                    # interrupted trials do not count
    for n in left_running:
        assert after[n][1] == "FAIL"
    if left_running:
        assert "of a stopped tuner marked failed" in p.stderr
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["trials"]["total"] == target


RECOMMEND_SPACE = """
[iotame.collective]
strategy = ["independent", "two_phase"]
[iotame.staging]
enabled = [true]
"""


def test_the_model_s_recommendation_is_the_first_trial_after_the_default(tmp_path):
    from test_profile_runtime import profile_for
    profile = profile_for(tmp_path, tmp_path / "profile.json")
    (tmp_path / "space.toml").write_text(RECOMMEND_SPACE)
    p = subprocess.run([sys.executable, "-m", "iotame", "tune", "--space", str(tmp_path / "space.toml"),
                        "--no-drop-caches", "--out", str(tmp_path / "out"), "--study", "m", "--profile", str(profile),
                        "--sampler", "random", "--seed", "2", "--trials", "3", "--final-repeat", "0",
                        "--ablation-rounds", "0", *NOISY_OK, "--", *IOR, "-o", str(tmp_path / "ior.dat")],
                       cwd=tmp_path, env=env(tmp_path), capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    # the model run: the default with the model choosing; its statistics hold the predicted seconds per strategy
    stats = json.loads((out / "model-run" / "run" / "stats.json").read_text())
    (f,) = [f for f in stats["files"] if f["path"].endswith("ior.dat")]
    times = {}
    for d in f["decisions"]:
        for name, seconds in d["model"]["predicted_s"].items():
            times[name] = times.get(name, 0) + d["calls"] * seconds
    summary = json.loads((out / "summary.json").read_text())
    rec = {s["setting"]: s["value"] for s in summary["recommendation"]["settings"]}
    assert rec["staging.enabled"] is True                          # durable closes: writes reach the device
    best = min(times, key=times.get)
    best = best if best in ("independent", "two_phase") else "passthrough"  # one the space lacks is left unset
    assert rec.get("collective.strategy", "passthrough") == best
    first = json.loads((out / "trials" / "0001" / "config.json").read_text())
    assert first["meta"]["trial"] == 1 and first["defaults"]["staging"] == {"enabled": True}
    assert first["defaults"].get("collective", {}).get("strategy", "passthrough") == best
    assert "[model]" in p.stderr
