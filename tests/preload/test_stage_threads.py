"""Staging under MPI_THREAD_MULTIPLE without ThreadSanitizer: several threads open, set views, write, set atomicity,
sync, get the size of and close different files at once (tests/mpi/programs/stage_threads.c) and every value reads
back, every staged write is counted. One MPICH rank: with two, MPICH's ROMIO deadlocks by itself (its process-wide
lock is held through a collective file call; the tsan layer says more). The same program under ThreadSanitizer is in
tests/tsan."""
import json

from conftest import TEST_PROGRAMS, write_json

THREADS = TEST_PROGRAMS / "stage_threads"


def test_threads_staging_different_files_at_once_read_back_every_value(job):
    threads, iterations, stats = 4, 50, job.tmp / "s.json"
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {"staging": {"enabled": True}}})
    p = job.run(1, [THREADS, job.tmp, threads, iterations], preload=True, config=config, stats=stats, timeout=300)
    assert json.loads(p.stdout) == {"threads": threads, "iterations": iterations, "mismatches": 0, "errors": 0}
    s = json.loads(stats.read_text())["modules"]["stage"]
    # each iteration of each thread: one collective write staged, one write in atomic mode not staged
    assert s["calls"] == threads * iterations and s["bypassed"] == threads * iterations, s
    assert s["bytes"] == threads * iterations * 8 * 256 * 4, s  # STRIPES blocks of BLOCK ints
    assert s["flusher"]["bytes_written"] > 0 and s["flusher"]["failed"] == [], s
