"""End to end: the `iotame` CLI driving real mpiexec jobs with the real runtime and kernel."""
import json
import subprocess
import sys

import pytest

from conftest import KERNEL, LIBIOTAME, Job

pytestmark = pytest.mark.skipif(not (LIBIOTAME.is_file() and KERNEL.is_file()),
                                reason=f"needs {LIBIOTAME} and {KERNEL} (run make setup)")

MiB = 1 << 20
IOR = [str(KERNEL), "ior", "-w", "-r", "-W", "-R", "-b", "1m", "-t", "256k"]


def iotame(tmp_path, *args, timeout=300):
    """Runs the CLI of this Python environment (`python -m iotame`) in tmp_path with a clean environment."""
    env = Job(tmp_path).env(extra={"COLUMNS": "160"})
    return subprocess.run([sys.executable, "-m", "iotame", *map(str, args)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_run_writes_statistics(tmp_path):
    stats = tmp_path / "s.json"
    p = iotame(tmp_path, "run", "--stats", stats, "--", "mpiexec", "-n", "2", *IOR)
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)                    # the kernel's own stdout passes through untouched
    assert result["verified"] is True
    s = json.loads(stats.read_text())
    assert s["nprocs"] == 2
    assert s["summary"]["bytes_written"] == 2 * MiB
    assert "2,097,152" in p.stderr                   # the summary table


def test_run_with_a_valid_config(tmp_path):
    config = tmp_path / "good.json"
    config.write_text(json.dumps({"version": 1, "defaults": {"mpiio_hints": {"cb_buffer_size": 1048576}}}))
    stats = tmp_path / "s.json"
    p = iotame(tmp_path, "run", "--quiet", "--config", config, "--stats", stats, "--", "mpiexec", "-n", "2", *IOR)
    assert p.returncode == 0, p.stderr
    s = json.loads(stats.read_text())
    assert s["config"] == str(config) and s["config_error"] is None


def test_run_with_a_bad_config_launches_nothing(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "defaults": {"mpiio_hints": {"cb_nodes": "four"}}}))
    stats = tmp_path / "s.json"
    p = iotame(tmp_path, "run", "--config", bad, "--stats", stats, "--", "mpiexec", "-n", "2", *IOR)
    assert p.returncode == 2
    assert p.stderr == f"iotame: config {bad}: defaults.mpiio_hints.cb_nodes: expected an integer >= 1, got \"four\"\n"
    assert p.stdout == "" and not stats.exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["bad.json"]


def test_run_of_a_program_without_mpi(tmp_path):
    p = iotame(tmp_path, "run", "--", "true")
    assert p.returncode == 0
    assert "no statistics were written" in p.stderr


def test_bench_ior_json(tmp_path):
    p = iotame(tmp_path, "bench", "ior", "--np", "2", "--repeat", "2", "--set", "b=1m", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert len(data["runs"]) == 2
    for run in data["runs"]:
        assert run["ok"], run["error"]
        assert run["result"]["nprocs"] == 2
        assert [ph["name"] for ph in run["result"]["phases"]] == ["write", "read"]
        assert run["stats"]["summary"]["bytes_written"] == 2 * MiB
    names = [row["name"] for row in data["phases"]]
    assert names[:2] == ["write", "read"] and all(row["runs"] == 2 for row in data["phases"])


def test_bench_reports_a_failed_run(tmp_path):
    p = iotame(tmp_path, "bench", "ior", "--repeat", "1", "--set", "b=3k", "--set", "t=2k")  # kernel rejects
    assert p.returncode == 1
    assert "run 1 of 1 failed: exit status 2" in p.stderr


def test_info_json_has_the_paths(tmp_path):
    p = iotame(tmp_path, "info", "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["libiotame"] == {"path": str(LIBIOTAME), "exists": True, "from": "checkout"}
    assert info["kernel"] == {"path": str(KERNEL), "exists": True, "from": "checkout"}
    assert info["mpi"]["implementation"] in ("MPICH", "Open MPI")
