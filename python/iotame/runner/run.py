"""Running one command under the runtime and collecting its statistics."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import StatsError
from ..paths import require_lib
from ..stats import load_partials, load_stats, partial_paths
from .env import runtime_env

__all__ = ["RunResult", "run_command", "exit_status"]


def exit_status(returncode: int) -> int:
    """A shell-style exit status: a process killed by signal N gives 128+N."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass
class RunResult:
    """What one run left: its exit code, captured output (when captured) and statistics (when written)."""

    argv: list[str]
    returncode: int
    seconds: float
    stdout: str | None = None
    stderr: str | None = None
    stats: dict | None = None
    stats_path: str | None = None      # None when the statistics went to a temporary file, since removed
    stats_error: str | None = None     # why there are no statistics, when the runtime was loaded
    partial: dict | None = None        # the aborted job's partial statistics, merged (then stats is None)
    timed_out: bool = False

    @property
    def exit_status(self) -> int:
        return exit_status(self.returncode)


def _fingerprint(path: Path):
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _launch(argv: list[str], env: dict, cwd, capture: bool, timeout: float | None):
    """(returncode, stdout, stderr, timed_out). With a timeout the job gets its own session, so that all of
    it (mpiexec and its ranks) can be stopped; without one it stays in the terminal's group and sees Ctrl-C."""
    kw = dict(env=env, cwd=cwd, text=True, errors="replace")
    if capture:
        kw.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if timeout is None:
        p = subprocess.run(argv, **kw)
        return p.returncode, p.stdout, p.stderr, False
    with subprocess.Popen(argv, start_new_session=True, **kw) as p:
        try:
            out, err = p.communicate(timeout=timeout)
            return p.returncode, out, err, False
        except subprocess.TimeoutExpired:
            out, err = _stop_job(p)
            return p.returncode, out, err, True


def _stop_job(p: subprocess.Popen) -> tuple[str | None, str | None]:
    """Stops a job past its timeout: its session and every process descended from it, SIGTERM, then SIGKILL what
    is left 5 s later. A launcher's helpers may be in sessions of their own (MPICH's proxies): once the launcher is
    gone they are orphans that no signal to its session reaches, and would hold the job's files and cores."""
    out = err = None
    seen: dict[int, str] = {}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        seen.update(_descendants(p.pid))
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        _signal_processes(seen, sig)
        try:
            out, err = p.communicate(timeout=5)
            break
        except subprocess.TimeoutExpired:
            continue
    p.wait()
    _signal_processes(seen, signal.SIGKILL)
    return out, err


def _proc_stats() -> dict[int, tuple[int, str]]:
    """Every process of this machine: pid -> (parent pid, start time in clock ticks since boot)."""
    found = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()   # after the command's name, which may hold spaces
        found[int(d)] = (int(fields[1]), fields[19])
    return found


def _descendants(root: int) -> dict[int, str]:
    """The processes descended from `root`, any session, as pid -> start time (which tells a pid used again)."""
    stats, children = _proc_stats(), {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    found, todo = {}, [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found[child] = stats[child][1]
                todo.append(child)
    return found


def _signal_processes(seen: dict[int, str], sig: int) -> None:
    """Sends `sig` to each process of `seen` that still runs (the same pid, started at the same time)."""
    stats = _proc_stats()
    for pid, started in seen.items():
        if stats.get(pid, (0, None))[1] == started:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def _partial(target: Path, started: float) -> dict | None:
    """The partial statistics this run's processes wrote beside `target` (merged), or None."""
    mine = []
    for q in partial_paths(target):
        try:
            if q.stat().st_mtime >= started - 1:     # not an earlier job's (coarse file-system clocks)
                mine.append(q)
        except OSError:
            continue
    try:
        return load_partials(mine) if mine else None
    except StatsError:
        return None


def run_command(argv: Sequence[str], *, config: str | Path | None = None, stats_path: str | Path | None = None,
                preload: bool = True, capture: bool = False, cwd: str | Path | None = None,
                timeout: float | None = None, env: Mapping[str, str] | None = None,
                lib: str | Path | None = None) -> RunResult:
    """Runs `argv` (a list; never through a shell) and waits for it.

    With `preload` (default) libiotame.so is preloaded, `config` (already validated by the caller) is passed in
    IOTAME_CONFIG and the statistics go to `stats_path`, or to a temporary file that is read then removed.
    `lib` is the runtime preloaded (default: the one paths.py finds).
    Raises MissingFileError when libiotame.so is not built, FileNotFoundError/PermissionError when the
    command cannot be started.
    """
    argv = [str(a) for a in argv]
    if not preload:
        t0 = time.monotonic()
        rc, out, err, timed_out = _launch(argv, runtime_env(None, None, None, env), cwd, capture, timeout)
        return RunResult(argv, rc, time.monotonic() - t0, out, err, timed_out=timed_out)

    lib = Path(lib) if lib is not None else require_lib()
    tmpdir = None
    if stats_path is None:
        tmpdir = tempfile.mkdtemp(prefix="iotame-stats-")
        target = Path(tmpdir) / "stats.json"
    else:
        target = Path(stats_path).resolve()
    try:
        before = _fingerprint(target)
        started = time.time()
        t0 = time.monotonic()
        rc, out, err, timed_out = _launch(argv, runtime_env(lib, config, target, env), cwd, capture, timeout)
        result = RunResult(argv, rc, time.monotonic() - t0, out, err, timed_out=timed_out,
                           stats_path=None if tmpdir else str(target))
        after = _fingerprint(target)
        if after is None or after == before:
            result.partial = _partial(target, started)
            if result.partial is not None:
                first = result.partial["partial"]["reasons"][0]["reason"]
                where = "" if tmpdir else f" ({target}.partial.*)"
                result.stats_error = f"partial statistics only: the job aborted ({first}){where}"
            else:
                result.stats_error = ("no statistics were written (not an MPI program, or it did not reach "
                                      "MPI_Finalize)")
        else:
            try:
                result.stats = load_stats(target)
            except StatsError as e:
                result.stats_error = str(e)
        return result
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
