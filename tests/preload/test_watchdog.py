"""The watchdog (runtime.hang_seconds; docs/reliability.md "The watchdog", docs/design/watchdog.md) end to end: a
rank stopped with SIGSTOP at a chosen moment (the fault injector's fail=stop, under the runtime's POSIX layer) makes
another thread or rank wait inside a call of the runtime; with hang_seconds 1 the waiting rank's report (stderr,
and IOTAME_STATS.hang.RANK) names the call, the file, the module and step, and what it waits for: a throttle gate token and the stopped process holding
it, room in a full staging ring and the stopped flusher, the node's flusher in aggregator caching, and the runtime's
own collective that the stopped rank never enters. Then the stopped process gets SIGCONT and the job must end
normally with its data verified: the watchdog only reports. No timing is asserted beyond a generous bound for the
report to appear."""
import json
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

from conftest import KERNEL, LIBIOTAME, TEST_PROGRAMS, write_json

FAULTS = TEST_PROGRAMS / "libiotame_faults.so"
AGG_FAULT = TEST_PROGRAMS / "agg_fault"
REPORT = re.compile(r"^iotame: watchdog: rank (\d+) .*$", re.M)
BOUND = 60  # seconds for the report to appear (it takes hang_seconds plus a look or two)


def processes(token):
    """The job's processes (their environment holds the token), with their state letter from /proc."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if token.encode() in (d / "environ").read_bytes():
                found[int(d.name)] = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            pass
    return found


def stopped_job(job, nprocs, argv, config, fault, timeout=120):
    """Runs argv under the runtime and the injector (rule `fault`), waits for the watchdog's report, then lets every
    stopped process go on. Returns (report line, the stopped pids seen, the finished process, its stderr)."""
    token = f"IOTAME_WATCHDOG_TEST={uuid.uuid4().hex}"
    stats = job.tmp / "s.json"
    env = job.env(False, write_json(job.tmp / "c.json", config), stats,
                  {"IOTAME_FAULT": fault, token.split("=")[0]: token.split("=")[1]})
    cmd = ["mpiexec", "-n", str(nprocs), "-genv", "LD_PRELOAD", f"{LIBIOTAME}:{FAULTS}"] + [str(a) for a in argv]
    p = subprocess.Popen(cmd, env=env, cwd=job.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err, out = [], []
    readers = [threading.Thread(target=lambda: err.extend(p.stderr), daemon=True),
               threading.Thread(target=lambda: out.extend(p.stdout), daemon=True)]
    for t in readers:
        t.start()
    report, stopped, t0 = None, set(), time.monotonic()
    try:
        while report is None and time.monotonic() - t0 < BOUND and p.poll() is None:
            stopped |= {pid for pid, state in processes(token).items() if state == "T"}
            m = REPORT.search("".join(err))
            report = m.group(0) if m else None
            time.sleep(0.1)
        stopped |= {pid for pid, state in processes(token).items() if state == "T"}
    finally:
        for pid in processes(token):
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
    try:
        p.wait(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    for t in readers:
        t.join(5)
    m = REPORT.search("".join(err))  # a job that ended at once (hang_action abort) is read to its end
    return m.group(0) if m else None, stopped, p, "".join(err), "".join(out)


def written_report(job, rank):
    """The report the watchdog wrote beside the statistics (IOTAME_STATS.hang.RANK)."""
    return json.loads((job.tmp / f"s.json.hang.{rank}").read_text())


def watchdog_config(**defaults):
    defaults.setdefault("runtime", {})["hang_seconds"] = 1
    return {"version": 1, "defaults": defaults}


def test_a_rank_waiting_for_a_gate_token_names_the_gate_and_the_stopped_holder(job):
    """Writers limited to one at a time; rank 1 stops inside its second write (holding the token); rank 0's next
    write waits for the token: its report names the throttle's gate and rank 1's process."""
    config = watchdog_config(throttle={"writers": 1, "stall_seconds": 600},
                             emulate={"device": "disk", "bandwidth_mbs": 1000, "position_ms": 1, "seek_ms": 0,
                                      "state": str(job.tmp / "dev.state")})
    report, stopped, p, err, out = stopped_job(
        job, 2, [KERNEL, "ior", "-a", "MPIIO", "-w", "-W", "-b", "4m", "-t", "64k", "-o", str(job.tmp / "t.dat")],
        config, "op=write,file=t.dat,rank=1,nth=2,fail=stop")
    assert report, err[-3000:]
    assert p.returncode == 0, err[-3000:]
    assert json.loads(out)["verified"] is True
    (holder,) = stopped
    assert report.startswith("iotame: watchdog: rank 0 ")
    assert "in MPI_File_write" in report and "t.dat" in report
    assert "module throttle, step waiting for a gate token" in report
    assert f"a throttle gate token (writes, level 1) held by process {holder}" in report
    assert "; in the kernel: " in report  # what procfs says the waiting thread sleeps in
    hang = written_report(job, 0)
    assert hang["module"] == "throttle" and hang["file"].endswith("t.dat") and str(holder) in hang["waits_for"]
    assert hang["kernel"] and hang["kernel"] in report
    assert err.count("iotame: watchdog:") == 1  # once


def test_a_writer_waiting_for_room_names_the_full_ring_and_the_stopped_flusher(job):
    """A 1 MiB staging area; the node's flusher (a thread of rank 0's process) stops inside its first write; rank 1
    keeps staging writes of small pieces (below 4 KiB: never written through) until the ring is full: its report
    names the ring and the flusher writing."""
    config = watchdog_config(staging={"enabled": True, "cache_mb": 1})
    report, stopped, p, err, out = stopped_job(
        job, 2, [KERNEL, "ior", "-a", "MPIIO", "-w", "-W", "-b", "2m", "-t", "2k", "-o", str(job.tmp / "r.dat")],
        config, "op=write,file=r.dat,rank=0,thread=other,fail=stop")
    assert report, err[-3000:]
    assert p.returncode == 0, err[-3000:]
    assert json.loads(out)["verified"] is True
    assert report.startswith("iotame: watchdog: rank 1 ")
    assert "module stage, step waiting for room in the staging ring" in report
    assert "room in the node's full staging ring" in report and "flusher writing a batch" in report
    assert written_report(job, 1)["module"] == "stage"


def test_a_rank_waiting_for_an_aggregator_names_aggregator_caching_and_the_flusher(job):
    """Aggregator caching (every rank a virtual node, each one's block cached by the other's process): the process
    of rank 0, the machine's flusher, stops inside its first write of cached blocks; rank 1's sync waits for them."""
    # the flusher writes only when asked (a long flush_delay): its first write is the sync's, so that rank 0 stops
    # once both ranks' first calls are cached
    config = {"version": 1, "defaults": {"staging": {"cache_mb": 1, "flush_delay_ms": 60000},
                                         "runtime": {"hang_seconds": 1}}, "files": [
        {"match": "*/f.dat", "staging": {"enabled": True, "collective": "aggregators"},
         "collective": {"strategy": "view_based", "virtual_node_size": 1, "block_size": 65536, "readahead": 0}}]}
    report, stopped, p, err, out = stopped_job(job, 2, [AGG_FAULT, job.tmp / "f.dat", 65536], config,
                                               "op=write,file=f.dat,thread=other,rank=0,fail=stop")
    assert report, err[-3000:]
    assert p.returncode == 0, err[-3000:]
    lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    assert [x["sync"] for x in lines] == ["MPI_SUCCESS"] * 2
    assert report.startswith("iotame: watchdog: rank 1 ")
    assert "f.dat" in report
    assert "step aggregator caching: waiting for the node's flusher to write the cached blocks" in report
    assert "flusher writing a batch" in report


def test_ranks_waiting_in_a_collective_of_the_runtime_name_it(job):
    """two_phase serves the collective writes; rank 0, an aggregator, stops inside its first write of the first
    call and so never enters the second call's collectives: rank 1's report names the collective module and the
    runtime's own MPI collective it waits in (the ranks missing cannot be known from a blocking collective)."""
    config = watchdog_config(collective={"strategy": "two_phase", "virtual_node_size": 1})
    report, stopped, p, err, out = stopped_job(
        job, 2, [KERNEL, "ior", "-a", "MPIIO", "-c", "-w", "-W", "-b", "256k", "-t", "64k", "-s", "4",
                 "-o", str(job.tmp / "c.dat")],
        config, "op=write,file=c.dat,rank=0,fail=stop")
    assert report, err[-3000:]
    assert p.returncode == 0, err[-3000:]
    assert json.loads(out)["verified"] is True
    assert report.startswith("iotame: watchdog: rank 1 ")
    assert "in MPI_File_write_at_all on" in report and "c.dat" in report
    assert "module collective, step serving the call" in report
    assert re.search(r"waiting for the runtime's own MPI_\w+ on a communicator of 2 ranks", report), report


def test_without_a_hang_nothing_is_reported_and_zero_turns_it_off(job):
    """A job that makes progress is never reported, and hang_seconds 0 starts no watchdog at all."""
    for seconds in (1, 0):
        stats = job.tmp / f"s{seconds}.json"
        config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {"runtime": {"hang_seconds": seconds}}})
        res, p = job.kernel(2, "ior", "-a", "MPIIO", "-c", "-w", "-r", "-W", "-b", "1m", "-t", "64k", preload=True,
                            config=config, stats=stats)
        assert res["verified"] is True and "watchdog" not in p.stderr
        assert not list(job.tmp.glob(f"s{seconds}.json.partial.*")) + list(job.tmp.glob(f"s{seconds}.json.hang.*"))


def test_hang_action_abort_ends_the_process_after_the_report_with_the_stack(job):
    """hang_action abort: after its report (and, with hang_backtrace, the stuck thread's stack) the waiting rank
    raises SIGABRT; its partial statistics hold the signal and the report; the launcher ends the job."""
    config = watchdog_config(throttle={"writers": 1, "stall_seconds": 600},
                             emulate={"device": "disk", "bandwidth_mbs": 1000, "position_ms": 1, "seek_ms": 0,
                                      "state": str(job.tmp / "dev.state")})
    config["defaults"]["runtime"].update(hang_action="abort", hang_backtrace=True)
    report, stopped, p, err, out = stopped_job(
        job, 2, [KERNEL, "ior", "-a", "MPIIO", "-w", "-b", "4m", "-t", "64k", "-o", str(job.tmp / "t.dat")],
        config, "op=write,file=t.dat,rank=1,nth=2,fail=stop")
    assert report and report.startswith("iotame: watchdog: rank 0 "), err[-3000:]
    assert p.returncode != 0
    assert "runtime.hang_action is abort" in err
    assert "the stuck thread's stack:" in err
    part = json.loads((job.tmp / "s.json.partial.0").read_text())
    assert part["partial"]["signal"] == signal.SIGABRT and part["hang"]["action"] == "abort"
