"""Two `iotame tune` processes on one study in a PostgreSQL server of their own (scripts/postgres), tuning a real
kernel job (MPICH, 1 rank) under the runtime: together they run --trials N in total, each configuration is
measured once, the default once and the final re-run once; a tuner killed in the middle of a trial leaves it to
be failed as stale by optuna's heartbeat check, and the survivor runs its budget slot."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from iotame.report.data import load_report_data

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "build" / "kernels" / "iotame-kernel"
LIB = ROOT / "build" / "runtime" / "libiotame.so"
CLI = ROOT / ".venv" / "bin" / "iotame"
SCRIPT = ROOT / "scripts" / "postgres"

SPACE = """
[mpiio]
romio_cb_write = ["enable", "disable"]
cb_buffer_size = [1048576, 4194304]
"""

pytestmark = pytest.mark.skipif(not (LIB.is_file() and KERNEL.is_file() and CLI.is_file()),
                                reason=f"needs {LIB}, {KERNEL} and {CLI} (run make setup)")


@pytest.fixture(scope="session")
def server():
    """scripts/postgres up in a directory of its own; its URL. Skipped only without the postgresql package."""
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.skip("the Debian package postgresql is not installed (make setup installs it)")
    pytest.importorskip("psycopg2", reason="psycopg2-binary is not installed (make setup installs python[test])")
    d = tempfile.mkdtemp(prefix="iotame-pg-")        # under /tmp: the server's user must reach it
    try:
        p = subprocess.run([str(SCRIPT), "up", d], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        yield p.stdout.strip()
    finally:
        subprocess.run([str(SCRIPT), "down", d], capture_output=True, timeout=120)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def storage(server, request):
    """A fresh database per test (studies and claims of other tests stay out of it)."""
    import psycopg2
    name = "t_" + request.node.name.lower().replace("[", "_").replace("]", "")[:40]
    admin = server.replace("postgresql+psycopg2://", "postgresql://").rsplit("/", 1)[0] + "/postgres"
    conn = psycopg2.connect(admin)
    conn.autocommit = True
    with conn.cursor() as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}"')
        c.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    return server.rsplit("/", 1)[0] + "/" + name


def env(tmp_path):
    e = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}
    e.update(IOTAME_TUNE_HEARTBEAT="1", IOTAME_KNOWLEDGE=str(tmp_path / "kb.sqlite"), COLUMNS="200")
    return e


def start(tmp_path, storage, name, trials, *extra, job_args=(), prefix=(), seed=1):
    (tmp_path / "space.toml").write_text(SPACE)
    cmd = [*prefix, str(CLI), "tune", "--max-noise", "1000", "--space", str(tmp_path / "space.toml"),
           "--no-drop-caches", "--storage",
           storage, "--study", "shared", "--out", str(tmp_path / name), "--trials", str(trials), "--sampler",
           "random", "--seed", str(seed), "--final-top", "2", "--final-repeat", "1", "--ablation-rounds", "0", *extra,
           "--", "mpiexec", "-n", "1", str(KERNEL), "ior", "-c", "-w", "-r", *job_args,
           "-o", str(tmp_path / f"{name}.dat")]
    return subprocess.Popen(cmd, cwd=tmp_path, env=env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def finish(p, timeout=150):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"the tuner did not finish in {timeout} s:\n{err}")
    return p.returncode, out, err


def load(storage):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.load_study(study_name="shared", storage=storage)


def measured_configs(*outs):
    """The configuration of every trial directory that has runs, across the tuners' output directories."""
    configs = []
    for out in outs:
        for d in sorted((out / "trials").glob("*")):
            if list(d.glob("run-*")):
                c = json.loads((d / "config.json").read_text())
                configs.append(json.dumps(c.get("defaults"), sort_keys=True))
    return configs


def test_two_tuners_share_one_study(tmp_path, storage):
    two_tuners_share_one_study(tmp_path, storage)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_two_tuners_share_one_study_in_sqlite(tmp_path, jobs):
    """The same on one machine without a server: optuna's SQLite storage; also with two trials at once in each."""
    two_tuners_share_one_study(tmp_path, f"sqlite:///{tmp_path / 'shared.sqlite'}", "--jobs", jobs)


def two_tuners_share_one_study(tmp_path, storage, *extra):
    n = 8
    a = start(tmp_path, storage, "a", n, *extra, job_args=("-b", "256k", "-t", "64k"))
    b = start(tmp_path, storage, "b", n, *extra, job_args=("-b", "256k", "-t", "64k"))
    (ra, _, ea), (rb, _, eb) = finish(a), finish(b)
    assert ra == 0 and rb == 0, ea + eb
    study = load(storage)
    trials = study.get_trials()
    search = [t for t in trials if "role" not in t.user_attrs]
    # N trials in total, every one finished, none interrupted
    assert len(search) == n and all(t.state.name in ("COMPLETE", "FAIL") for t in search), (ea, eb)
    assert not any(k.startswith("interrupted") for k in study.user_attrs)
    # the default once, measured once
    assert [t.number for t in search if t.user_attrs.get("default")] == [search[0].number]
    # no configuration measured twice: each trial that ran, ran its own configuration (same seed: both tuners
    # propose the same configurations, one measures and the other reuses)
    configs = measured_configs(tmp_path / "a", tmp_path / "b")
    assert len(configs) == len(set(configs)) == len([t for t in search if "reused_from" not in t.user_attrs])
    # each run directory belongs to one tuner: trials were not run by both
    numbers = [d.name for out in ("a", "b") for d in (tmp_path / out / "trials").glob("*") if list(d.glob("run-*"))]
    assert len(numbers) == len(set(numbers))
    # one final re-run, by one tuner; both write the same best.json
    finals = [t for t in trials if t.user_attrs.get("role") == "final"]
    assert len(finals) == 1 and finals[0].state.name == "FAIL"
    assert [(tmp_path / o / "final").is_dir() for o in ("a", "b")].count(True) == 1
    best_a, best_b = (json.loads((tmp_path / o / "best.json").read_text()) for o in ("a", "b"))
    assert best_a == best_b
    summaries = [json.loads((tmp_path / o / "summary.json").read_text()) for o in ("a", "b")]
    assert [("final_by" in s) for s in summaries].count(True) == 1
    assert summaries[0]["trials"]["total"] == summaries[1]["trials"]["total"] == n
    assert "the final re-run was done by another tuner" in (ea + eb)
    # the report of either shows the search trials, not the final re-run's trial
    for o in ("a", "b"):
        assert [t.number for t in load_report_data(tmp_path / o).trials] == [t.number for t in search]


def slow_disk(tmp_path, mbs):
    """tune's options for runs on an emulated disk of `mbs` MB/s: slow enough that a tuner is caught mid-run."""
    (tmp_path / "disk.json").write_text(json.dumps(
        {"version": 1, "defaults": {"emulate": {"device": "disk", "bandwidth_mbs": mbs,
                                                "state": str(tmp_path / "disk-state")}}}))
    return "--base", str(tmp_path / "disk.json")


def own_pid_namespace():
    """A prefix that starts a tuner in a PID namespace of its own (as root), so that other tuners cannot see its
    process, as for a tuner on another node, and find it gone only by its stopped heartbeat."""
    unshare = shutil.which("unshare")
    return (unshare, "--pid", "--fork", "--mount-proc") if unshare and os.geteuid() == 0 else ()


def test_a_killed_tuners_trial_is_failed_and_its_slot_reused(tmp_path, storage):
    """Tuner b runs in a PID namespace of its own, so that a cannot see its process (as for a tuner on another
    node) and finds its trial only by the heartbeat that stops. The runs are slowed by the emulated disk so that b
    is killed in the middle of one."""
    n = 6
    base, slow = slow_disk(tmp_path, 10), ("-b", "4m", "-t", "1m")
    a = start(tmp_path, storage, "a", n, *base, job_args=slow)
    b = start(tmp_path, storage, "b", n, *base, job_args=slow, prefix=own_pid_namespace(), seed=2)
    victim = None
    try:
        deadline = time.monotonic() + 120
        while victim is None:           # b is measuring a search trial: kill it, its job with it
            if b.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"tuner b stopped or made no progress:\n{b.communicate()[1]}")
            for d in sorted((tmp_path / "b" / "trials").glob("*/run-1")):
                number = int(d.parent.name)
                t = next((t for t in load(storage).get_trials() if t.number == number), None)
                if t is not None and t.state.name == "RUNNING" and not t.user_attrs.get("default"):
                    victim = number
            time.sleep(0.05)
    finally:
        if b.poll() is None:
            os.killpg(b.pid, signal.SIGKILL)
            b.communicate()
    ra, _, ea = finish(a)
    assert ra == 0, ea
    study = load(storage)
    t = next(t for t in study.get_trials() if t.number == victim)
    assert t.state.name == "FAIL" and study.user_attrs.get(f"interrupted:{victim}") is True
    assert "of a stopped tuner marked failed" in ea
    search = [t for t in study.get_trials() if "role" not in t.user_attrs]
    interrupted = {int(k.split(":")[1]) for k in study.user_attrs if k.startswith("interrupted:")}
    counted = [t for t in search if t.number not in interrupted]
    assert len(counted) == n and all(t.state.name in ("COMPLETE", "FAIL") for t in study.get_trials())
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["trials"]["total"] == n


def test_an_unreachable_database_is_named_with_what_failed(tmp_path):
    pytest.importorskip("psycopg2", reason="psycopg2-binary is not installed (make setup installs python[test])")
    from iotame.errors import UsageError
    from iotame.tune.study import normalize_url, open_study
    url = "postgresql://someone:secret@127.0.0.1:1/iotame"
    with pytest.raises(UsageError) as e:
        open_study(url, "s", "maximize", "io-bandwidth")
    assert str(e.value).startswith("tune: storage postgresql+psycopg2://someone:***@127.0.0.1:1/iotame: cannot open "
                                   "the study: connection to server at \"127.0.0.1\", port 1 failed")
    assert normalize_url("postgresql+psycopg2://u@h/d") == "postgresql+psycopg2://u@h/d"


def test_the_final_rerun_of_a_killed_tuner_is_taken_over(tmp_path, storage):
    """Whichever tuner claims the final re-run is killed during it (b in a PID namespace of its own, as above); the
    other, waiting for the final, finds its trial stale, takes the final over and writes best.json."""
    n = 3
    extra, slow = (*slow_disk(tmp_path, 20), "--final-repeat", "3"), ("-b", "2m", "-t", "1m")
    tuners = {"a": start(tmp_path, storage, "a", n, *extra, job_args=slow),
              "b": start(tmp_path, storage, "b", n, *extra, job_args=slow, prefix=own_pid_namespace(), seed=2)}
    deadline = time.monotonic() + 150
    victim = None
    try:
        while victim is None:          # the tuner whose final/ appears is running the final: kill it
            if time.monotonic() > deadline or any(p.poll() is not None for p in tuners.values()):
                raise AssertionError("no tuner was caught in the final re-run:\n" +
                                     "\n".join(p.communicate()[1] for p in tuners.values() if p.poll() is not None))
            victim = next((o for o in tuners if list((tmp_path / o / "final").glob("*/run-1"))), None)
            time.sleep(0.05)
    finally:
        if victim is not None:
            os.killpg(tuners[victim].pid, signal.SIGKILL)
            tuners[victim].communicate()
    survivor = "b" if victim == "a" else "a"
    rc, _, err = finish(tuners[survivor])
    assert rc == 0, err
    finals = [t for t in load(storage).get_trials() if t.user_attrs.get("role") == "final"]
    assert len(finals) == 2 and all(t.state.name == "FAIL" for t in finals)     # the killed one, the survivor's
    assert list((tmp_path / survivor / "final").glob("*/run-1"))
    summary = json.loads((tmp_path / survivor / "summary.json").read_text())
    assert "final_by" not in summary and summary["trials"]["total"] == n
    assert (tmp_path / survivor / "best.json").is_file()
