"""End to end: a job that ends before MPI_Finalize leaves each process's own statistics, marked partial
(docs/formats.md "Partial statistics"), and ends exactly as it does without the runtime."""
import json
import signal
import subprocess
import sys

import pytest

from iotame.stats import load_stats
from conftest import LIBIOTAME, TEST_PROGRAMS, Job

ABORT_MODES = TEST_PROGRAMS / "abort_modes"
pytestmark = pytest.mark.skipif(not (LIBIOTAME.is_file() and ABORT_MODES.is_file()),
                                reason=f"needs {LIBIOTAME} and {ABORT_MODES} (run make setup)")
TIMEOUT = 60  # every job here ends by itself in seconds: a hang fails the test instead of blocking the layer


def run(job, mode, preload=True):
    stats = job.tmp / "stats.json"
    p = job.run(2, [ABORT_MODES, mode, job.tmp / "f.dat"], preload=preload, stats=stats if preload else None,
                check=False, timeout=TIMEOUT)
    return p, stats


def partials(job):
    return sorted(p.name for p in job.tmp.iterdir() if ".partial." in p.name)


def load(path):
    return json.loads(path.read_text())


def exited_with_3(p):
    """Both ranks exit(3); under load MPICH's launcher may kill one rank as soon as the other has exited, and it
    then reports the kill (a bad termination) instead of the status 3."""
    return p.returncode == 3 or (p.returncode != 0 and "BAD TERMINATION" in p.stdout + p.stderr)


def test_mpi_abort_leaves_the_aborting_rank_statistics(job):
    p, stats = run(job, "abort")
    assert p.returncode == run(job, "abort", preload=False)[0].returncode == 7
    assert not stats.exists()
    assert "stats.json.partial.1" in partials(job)
    s = load(job.tmp / "stats.json.partial.1")
    assert s["partial"] == {"reason": "MPI_Abort(MPI_COMM_WORLD, 7) called on rank 1", "rank": 1,
                            "job_nprocs": 2, "signal": None}
    assert s["nprocs"] == 1
    assert s["summary"]["bytes_written"] == 2000                  # what rank 1 wrote, not rank 0's 1000
    (f,) = s["files"]
    assert f["bytes_written"] == 2000 and f["ops"]["write_at"]["count"] == 1

    show = subprocess.run([sys.executable, "-m", "iotame", "stats", "show", str(stats)], capture_output=True,
                          text=True, timeout=TIMEOUT, env=job.env(extra={"COLUMNS": "200"}))
    assert show.returncode == 0, show.stderr
    assert "partial: the job aborted (MPI_Abort(MPI_COMM_WORLD, 7) called on rank 1)" in show.stdout
    assert "rank 1: MPI_Abort" in show.stdout


@pytest.mark.parametrize("mode, sig", [("segv", signal.SIGSEGV), ("fault", signal.SIGSEGV),
                                       ("overflow", signal.SIGSEGV), ("term", signal.SIGTERM)])
def test_fatal_signal_leaves_statistics_and_the_same_death(job, mode, sig):
    p, stats = run(job, mode)
    plain, _ = run(job, mode, preload=False)
    assert p.returncode == plain.returncode == sig             # mpiexec reports the rank's signal as its code
    assert f"(signal {int(sig)})" in p.stdout + p.stderr
    s = load(job.tmp / "stats.json.partial.0")
    assert s["partial"]["signal"] == sig and s["partial"]["rank"] == 0
    assert s["partial"]["reason"] == f"signal {int(sig)} ({sig.name}) on rank 0"
    assert s["summary"]["bytes_written"] == 1000


def test_a_write_that_blocks_in_the_handler_is_ended_by_the_alarm(job):
    """The partial write cannot finish (its temporary file is a FIFO nobody reads): the alarm ends the wait and
    the process still dies by its own signal; the job's timeout would catch a hang."""
    p, stats = run(job, "blocked")
    assert p.returncode == signal.SIGSEGV and "(signal 11)" in p.stdout + p.stderr
    assert not (job.tmp / "stats.json.partial.0").exists()


def test_the_application_signal_handler_is_kept(job):
    """Rank 0's own SIGSEGV handler runs and exits 42. MPICH's launcher then kills rank 1, and may report that kill
    (SIGKILL, 9) as the job's status instead of rank 0's 42."""
    p, stats = run(job, "own-handler")
    assert "own handler" in p.stdout and p.returncode in (42, 9), (p.returncode, p.stdout)
    assert partials(job) == [] and not stats.exists()


def test_exit_before_finalize(job):
    """Both ranks exit(3). MPICH's launcher may kill one rank as soon as the other has exited, before that rank's
    exit handler wrote its partial: the ranks present must each be right, and the merge names the missing."""
    p, stats = run(job, "exit")
    assert exited_with_3(p) and exited_with_3(run(job, "exit", preload=False)[0]), (p.returncode, p.stdout)
    present = [rank for rank in (0, 1) if (job.tmp / f"stats.json.partial.{rank}").exists()]
    assert present and partials(job) == [f"stats.json.partial.{rank}" for rank in present]
    for rank in present:
        part = load(job.tmp / f"stats.json.partial.{rank}")["partial"]
        assert part["reason"] == f"exited with status 3 before MPI_Finalize on rank {rank}"
    merged = load_stats(stats)
    assert merged["partial"]["ranks"] == present
    assert sorted(merged["partial"]["ranks"] + merged["partial"]["missing"]) == [0, 1]
    assert merged["summary"]["bytes_written"] == sum(1000 * (rank + 1) for rank in present)
    assert merged["nprocs"] == 2 and merged["files"][0]["ranks"] == len(present)


def test_a_normal_job_leaves_no_partial_and_removes_stale_ones(job):
    (job.tmp / "stats.json.partial.1").write_text("{}")           # an earlier aborted job's
    p, stats = run(job, "normal")
    assert p.returncode == 0, p.stderr
    assert stats.exists() and "partial" not in load(stats)
    assert partials(job) == []


def test_nothing_without_the_statistics_variable_or_when_disabled(job):
    p = job.run(2, [ABORT_MODES, "exit", job.tmp / "f.dat"], preload=True, check=False, timeout=TIMEOUT)
    assert exited_with_3(p) and partials(job) == [], (p.returncode, p.stdout)
    p = job.run(2, [ABORT_MODES, "abort", job.tmp / "f.dat"], preload=True, stats=job.tmp / "stats.json",
                extra_env={"IOTAME_DISABLE": "1"}, check=False, timeout=TIMEOUT)
    assert p.returncode == 7 and partials(job) == []


def test_ctrl_c_to_the_launcher_leaves_every_ranks_statistics(job):
    """mpiexec forwards SIGINT to every rank and kills the others as soon as one dies of it: each rank waits for
    the others' partial statistics before the signal goes on, so none is killed before writing its own."""
    import time
    stats = job.tmp / "stats.json"
    proc = subprocess.Popen(["mpiexec", "-n", "2", str(ABORT_MODES), "wait", str(job.tmp / "f.dat")], cwd=job.tmp,
                            env=job.env(preload=True, stats=stats), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + TIMEOUT
    while not all((job.tmp / f"f.dat.ready.{r}").exists() for r in (0, 1)) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=TIMEOUT)
    assert partials(job) == ["stats.json.partial.0", "stats.json.partial.1"]
    merged = load_stats(stats)
    assert merged["partial"]["ranks"] == [0, 1] and merged["partial"]["missing"] == []
    assert [r["reason"] for r in merged["partial"]["reasons"]] == [f"signal 2 (SIGINT) on rank {r}" for r in (0, 1)]


def test_iotame_run_says_partial_statistics(tmp_path):
    stats = tmp_path / "s.json"
    env = Job(tmp_path).env(extra={"COLUMNS": "200"})
    p = subprocess.run([sys.executable, "-m", "iotame", "run", "--stats", str(stats), "--", "mpiexec", "-n", "2",
                        str(ABORT_MODES), "abort", str(tmp_path / "f.dat")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 7
    assert "partial statistics only: the job aborted (MPI_Abort(MPI_COMM_WORLD, 7) called on rank 1)" in p.stderr
