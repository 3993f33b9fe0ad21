"""`iotame run` with stand-ins for libiotame.so and the MPI program (see conftest.py)."""
import json
import os
import time

from iotame.cli import main
from iotame.runner import Mpiexec, get_launcher, run_command, runtime_env
from .fakes import make_stats


def test_runtime_env_prepends_the_library_and_sets_absolute_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = runtime_env("/lib/libiotame.so", "c.json", "s.json", base={"LD_PRELOAD": "/other.so", "IOTAME_STATS": "x"})
    assert env["LD_PRELOAD"] == "/lib/libiotame.so:/other.so"
    assert env["IOTAME_CONFIG"] == str(tmp_path / "c.json")
    assert env["IOTAME_STATS"] == str(tmp_path / "s.json")
    env = runtime_env("/lib/libiotame.so", base={"IOTAME_CONFIG": "/old.json", "IOTAME_STATS": "/old"})
    assert env["LD_PRELOAD"] == "/lib/libiotame.so" and "IOTAME_CONFIG" not in env and "IOTAME_STATS" not in env


def test_mpiexec_launcher():
    assert get_launcher().command(4, ["prog", "-x"]) == ["mpiexec", "-n", "4", "prog", "-x"]
    ompi = Mpiexec(forward_with_x=True)
    assert ompi.command(2, ["p"], env_names=["LD_PRELOAD"]) == ["mpiexec", "-n", "2", "-x", "LD_PRELOAD", "p"]


def test_run_sets_the_environment_and_prints_statistics(tmp_path, fake_lib, fake_program, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("LD_PRELOAD", "")
    config = tmp_path / "c.json"
    config.write_text('{"version": 1}')
    stats = tmp_path / "s.json"
    fake_program.plan([{"exit": 3, "stdout": "hello\n", "stats": make_stats(bytes_written=2097152)}])
    rc = main(["run", "--config", str(config), "--stats", str(stats), "--", str(fake_program.path), "a", "b c"])
    assert rc == 3
    (entry,) = fake_program.log()
    assert entry["argv"] == ["a", "b c"]
    assert entry["env"] == {"LD_PRELOAD": str(fake_lib), "IOTAME_CONFIG": str(config),
                            "IOTAME_STATS": str(stats)}
    assert json.loads(stats.read_text())["summary"]["bytes_written"] == 2097152
    err = capsys.readouterr().err
    assert "2,097,152" in err and "/tmp/x.dat" in err


def test_run_temporary_statistics_are_removed(fake_lib, fake_program, capsys):
    fake_program.plan([{"stats": make_stats()}])
    assert main(["run", "--quiet", str(fake_program.path)]) == 0
    (entry,) = fake_program.log()
    assert not os.path.exists(entry["env"]["IOTAME_STATS"])
    assert "bytes read" not in capsys.readouterr().err


def test_run_without_statistics_says_so(fake_lib, fake_program, capsys, tmp_path):
    fake_program.plan([{"exit": 0}])
    assert main(["run", "--", str(fake_program.path)]) == 0
    assert "iotame: run: no statistics were written" in capsys.readouterr().err
    # a statistics file left by an earlier job is not taken for this one's
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(make_stats()))
    fake_program.plan([{"exit": 7}])
    assert main(["run", "--stats", str(stale), "--", str(fake_program.path)]) == 7
    assert "no statistics were written" in capsys.readouterr().err


def test_run_with_a_bad_config_launches_nothing(tmp_path, fake_lib, fake_program, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "defaults": {"mpiio_hints": {"cb_nodes": "four"}}}')
    assert main(["run", "--config", str(bad), "--", str(fake_program.path)]) == 2
    assert fake_program.log() == []
    assert capsys.readouterr().err == (f"iotame: config {bad}: defaults.mpiio_hints.cb_nodes: "
                                       "expected an integer >= 1, got \"four\"\n")


def test_run_config_from_the_environment_is_validated(tmp_path, fake_lib, fake_program, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 2}')
    monkeypatch.setenv("IOTAME_CONFIG", str(bad))
    assert main(["run", "--", str(fake_program.path)]) == 2
    assert fake_program.log() == []


def test_run_without_the_library(tmp_path, fake_program, monkeypatch, capsys):
    monkeypatch.setenv("IOTAME_LIB", str(tmp_path / "missing.so"))
    assert main(["run", "--", str(fake_program.path)]) == 2
    assert fake_program.log() == []
    assert "libiotame.so not found" in capsys.readouterr().err


def test_run_usage_errors(fake_lib, tmp_path, capsys):
    assert main(["run"]) == 2
    assert "no command given" in capsys.readouterr().err
    assert main(["run", "--", str(tmp_path / "no-such-program")]) == 127
    assert "cannot run" in capsys.readouterr().err


def test_run_command_without_preload(fake_program):
    fake_program.plan([{"exit": 1, "stdout": "x"}])
    r = run_command([fake_program.path], preload=False, capture=True)
    assert (r.returncode, r.stdout, r.stats, r.stats_error) == (1, "x", None, None)
    assert fake_program.log()[0]["env"]["LD_PRELOAD"] is None


def test_run_command_timeout_stops_the_job(tmp_path):
    r = run_command(["sleep", "30"], preload=False, timeout=0.5)
    assert r.timed_out and r.exit_status != 0 and r.seconds < 10


def test_a_timeout_stops_the_processes_that_left_the_jobs_session(tmp_path):
    """A launcher's helper in a session of its own (as MPICH's proxies are), which ignores SIGTERM: the timeout
    stops it too, though the launcher ends at SIGTERM and leaves it an orphan."""
    pid_file = tmp_path / "helper.pid"
    helper = f"trap '' TERM; echo \\$\\$ > {pid_file}; exec sleep 300"     # $$: the helper's own pid
    r = run_command(["sh", "-c", f"setsid sh -c \"{helper}\" & while [ ! -s {pid_file} ]; do sleep 0.05; done; "
                     "sleep 300"], preload=False, timeout=2)
    assert r.timed_out
    pid = int(pid_file.read_text())
    gone = False
    for _ in range(100):                 # the kill is sent before run_command returns; init reaps it
        try:
            gone = open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] in "ZX"
        except FileNotFoundError:
            gone = True
        if gone:
            break
        time.sleep(0.05)
    if not gone:
        os.kill(pid, 9)
    assert gone, "the helper outlived the job's timeout"
