"""Running the trials of a benchmark: one `mpiexec -n N iotame-kernel KERNEL …` each, under the runtime.

With `drop_caches` a trial that writes and reads runs as two jobs in a temporary working directory on the same
file system: the writes, keeping their files; `sync` and the page cache dropped; the reads on those files. The
result has the phases of the second job (the reads) replacing those of the same name in the first; the directory
is removed after.
A read-only trial drops the cache and runs where it is asked to, on files an earlier `--keep` run left.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from ..paths import require_kernel, require_lib
from ..runner import RUNTIME_VARS, get_launcher, run_command
from . import caches
from .kernels import Kernel, Settings, get_kernel
from .plan import BenchSpec, Trial, plan

__all__ = ["BenchRun", "parse_kernel_output", "verified_job", "merge_results", "run_trial", "run_bench"]


@dataclass
class BenchRun:
    """The outcome of one trial. `ok` is False for a non-zero exit, no result, a failed verification or a
    timeout; `error` then says which, and `stderr` holds what the job printed there.

    A trial is one job (`argv`, its statistics `stats`), or with --drop-caches, when it writes and reads, two:
    `argv` (the writes, files kept) and `read_argv` with `read_stats` (the reads, after the caches were dropped).
    `caches_dropped` is None when not asked, else whether the page cache was dropped before the reads."""

    kernel: str
    number: int
    point: int
    repeat: int
    settings: dict
    swept: dict
    nprocs: int
    argv: list
    preload: bool
    config: str | None
    returncode: int = 0
    wall_seconds: float = 0.0
    ok: bool = False
    error: str | None = None
    result: dict | None = None
    stats: dict | None = None
    stats_error: str | None = None
    stats_path: str | None = None
    stderr: str = ""
    caches_dropped: bool | None = None
    read_argv: list | None = None
    read_stats: dict | None = None
    read_stats_path: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


def parse_kernel_output(stdout: str) -> dict:
    """The kernel's JSON result: the whole of stdout, or else its last line that is a JSON object with phases.
    Raises ValueError when there is none."""
    text = (stdout or "").strip()
    candidates = [text] + [line.strip() for line in reversed(text.splitlines())]
    for c in candidates:
        if not c.startswith("{"):
            continue
        try:
            obj = json.loads(c)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("phases"), list):
            return obj
    raise ValueError("no JSON result with \"phases\" on stdout")


def verified_job(argv: list, env: dict, cwd, stats: Path, timeout: float) -> tuple[dict, dict | None]:
    """One kernel job of a bench script (argv[3:] names it: after `mpiexec -n N`): (its result, the runtime's
    statistics at `stats` or None). RuntimeError when it fails, times out, prints no result or its data did not
    verify."""
    if stats.exists():
        stats.unlink()
    name = " ".join(map(str, argv[3:]))
    try:
        p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{' '.join(map(str, argv[3:6]))}: no result after {timeout} s") from None
    if p.returncode != 0:
        raise RuntimeError(f"{name} exited {p.returncode}:\n{p.stderr[-1500:]}")
    try:
        res = parse_kernel_output(p.stdout)
    except ValueError as e:
        raise RuntimeError(f"{name}: {e}") from None
    if res.get("verified") is not True:
        raise RuntimeError(f"{name}: data did not verify: {str(res.get('errors'))[:300]}")
    return res, json.loads(stats.read_text()) if stats.exists() else None


def merge_results(write: dict, read: dict) -> dict:
    """One result from a write job and a read job: the write job's phases that the read job does not have (its
    warm-cache reads are replaced), then the read job's phases; verified false if either is, true if either is
    and none false; errors of both. Other keys (params) are the write job's."""
    names = {p.get("name") for p in read.get("phases", [])}
    merged = dict(write)
    merged["phases"] = [p for p in write.get("phases", []) if p.get("name") not in names] + \
        list(read.get("phases", []))
    verdicts = [write.get("verified"), read.get("verified")]
    merged["verified"] = False if False in verdicts else True if True in verdicts else None
    merged["errors"] = list(write.get("errors") or []) + list(read.get("errors") or [])
    return merged


def _verdict(returncode: int, timed_out: bool, timeout, result, parse_error) -> str | None:
    if timed_out:
        return f"timed out after {timeout:g} s"
    if result is not None and result.get("verified") is False:
        return f"data verification failed (exit status {returncode}): " + \
            json.dumps(result.get("errors", []))[:500]
    if returncode != 0:
        return f"exit status {returncode}" + (f" (no result: {parse_error})" if result is None else "")
    return parse_error if result is None else None


@dataclass
class _Job:
    argv: list
    returncode: int = 127
    seconds: float = 0.0
    result: dict | None = None
    error: str | None = None
    stderr: str = ""
    stats: dict | None = None
    stats_error: str | None = None
    stats_path: str | None = None


def _job(spec: BenchSpec, kernel: Kernel, program: Path, settings: Settings, stats_path: Path | None,
         cwd: Path | str | None) -> _Job:
    """Runs one job of a trial (never raises for a failing job)."""
    launcher = get_launcher(spec.launcher)
    job = _Job(launcher.command(spec.nprocs, kernel.argv(str(program), settings),
                                env_names=RUNTIME_VARS if spec.preload else ()))
    try:
        r = run_command(job.argv, config=spec.config, stats_path=stats_path, preload=spec.preload, capture=True,
                        cwd=cwd, timeout=spec.timeout)
    except OSError as e:
        job.error = f"cannot start {job.argv[0]}: {e.strerror or e}"
        return job
    parse_error = None
    try:
        job.result = parse_kernel_output(r.stdout)
    except ValueError as e:
        parse_error = str(e)
    job.returncode, job.seconds, job.stderr = r.exit_status, r.seconds, r.stderr or ""
    job.stats, job.stats_error, job.stats_path = r.stats, r.stats_error, r.stats_path
    job.error = _verdict(r.returncode, r.timed_out, spec.timeout, job.result, parse_error)
    return job


def _workdir(spec: BenchSpec, kernel: Kernel, settings: Settings) -> Path:
    """A new directory for a trial's files, on their file system: beside the file the settings name, else in
    the working directory."""
    base = Path(spec.cwd or os.getcwd())
    file = dict(settings).get(kernel.file_option)
    if file:
        base = (base / file).parent
    return Path(tempfile.mkdtemp(prefix=".iotame-bench-", dir=base))


def _move_files(kernel: Kernel, settings: Settings, workdir: Path) -> Settings:
    """The settings with the kernel's file option, when set, moved into `workdir` (relative names land there
    anyway: the jobs run in it)."""
    return [(k, str(workdir / Path(v).name) if k == kernel.file_option else v) for k, v in settings]


def _split_trial(spec: BenchSpec, kernel: Kernel, program: Path, run: BenchRun, settings: Settings,
                 stats_path: Path | None, drop: Callable[[], bool]) -> None:
    """Runs a --drop-caches trial as write job, cache drop, read job; fills `run`."""
    split = kernel.split(settings)
    if split is None:         # nothing is read: one job, nothing to drop
        _fill(run, _job(spec, kernel, program, settings, stats_path, spec.cwd))
        return
    if split.write is None:   # read only, on the user's files where they are (not known here: machine mode only)
        run.caches_dropped = drop([])
        _fill(run, _job(spec, kernel, program, split.read, stats_path, spec.cwd))
        return
    try:
        workdir = _workdir(spec, kernel, settings)
    except OSError as e:
        run.returncode, run.error = 1, f"cannot create a working directory: {e.strerror or e}"
        return
    read_stats = stats_path.with_name(stats_path.name.replace(".stats.json", "-read.stats.json")) \
        if stats_path else None
    try:
        write = _job(spec, kernel, program, _move_files(kernel, split.write, workdir), stats_path, workdir)
        if write.error:
            _fill(run, write, "write job: ")
            return
        run.caches_dropped = drop([workdir])    # the write job's files are all in its working directory
        read = _job(spec, kernel, program, _move_files(kernel, split.read, workdir), read_stats, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    _fill(run, write)
    run.read_argv, run.read_stats, run.read_stats_path = read.argv, read.stats, read.stats_path
    run.returncode, run.wall_seconds = read.returncode, write.seconds + read.seconds
    run.stderr = write.stderr + read.stderr
    run.stats_error = run.stats_error or read.stats_error
    run.error = f"read job: {read.error}" if read.error else None
    run.result = merge_results(write.result, read.result) if read.result else write.result
    run.ok = run.error is None


def _fill(run: BenchRun, job: _Job, prefix: str = "") -> None:
    run.argv, run.returncode, run.wall_seconds, run.stderr = job.argv, job.returncode, job.seconds, job.stderr
    run.result, run.stats, run.stats_error, run.stats_path = job.result, job.stats, job.stats_error, job.stats_path
    run.error = prefix + job.error if job.error else None
    run.ok = run.error is None


def _dropper(spec: BenchSpec) -> Callable[[list], bool]:
    """drop(paths) for a trial's split: "machine" empties the machine's page cache (root), anything else true
    ("files") evicts only `paths`, the write job's files; whether the reads will come from storage."""
    if spec.drop_caches == "machine":
        return lambda paths: caches.drop_caches() is None
    return lambda paths: bool(paths) and not caches.evict(paths).errors


def run_trial(spec: BenchSpec, trial: Trial, program: Path, stats_path: Path | None = None,
              drop: Callable[[], bool] | None = None) -> BenchRun:
    """Runs one trial and returns its outcome (never raises for a failing job). `drop` drops the page cache
    and says whether it could (default: caches.drop_caches)."""
    kernel = get_kernel(spec.kernel, program)
    run = BenchRun(kernel=spec.kernel, number=trial.number, point=trial.point, repeat=trial.repeat,
                   settings=dict(trial.settings), swept=dict(trial.swept), nprocs=spec.nprocs, argv=[],
                   preload=spec.preload, config=str(spec.config) if spec.config else None)
    if spec.drop_caches:
        _split_trial(spec, kernel, program, run, list(trial.settings), stats_path,
                     drop or _dropper(spec))
    else:
        _fill(run, _job(spec, kernel, program, list(trial.settings), stats_path, spec.cwd))
    return run


def run_bench(spec: BenchSpec, on_start: Callable[[Trial], None] | None = None,
              on_done: Callable[[BenchRun], None] | None = None,
              on_warning: Callable[[str], None] | None = None, stem: str | None = None) -> list[BenchRun]:
    """Runs every trial of `spec` in order. With `spec.out`, each run is appended to `OUT/STEM.jsonl` as it
    finishes (STEM defaults to KERNEL-YYYYmmdd-HHMMSS) and statistics files are kept beside it. `on_warning`
    hears, once, that the page cache could not be dropped."""
    program = require_kernel()
    get_kernel(spec.kernel, program)  # unknown kernel or missing library: fail before running anything
    if spec.preload:
        require_lib()
    jsonl = None
    if spec.out is not None:
        spec.out.mkdir(parents=True, exist_ok=True)
        stem = stem or f"{spec.kernel}-{time.strftime('%Y%m%d-%H%M%S')}"
        jsonl = spec.out / f"{stem}.jsonl"
    warned: set[str] = set()
    evict_files = _dropper(spec)

    def warn_once(text: str) -> None:
        if text not in warned and on_warning:
            warned.add(text)
            on_warning(text)

    def drop(paths) -> bool:
        if spec.drop_caches != "machine":
            return evict_files(paths)
        warn_once(caches.MACHINE_WARNING)
        why = caches.drop_caches()
        if why:
            warn_once(f"cannot drop the page cache ({why}): read figures may come from memory")
        return why is None

    runs = []
    for trial in plan(spec):
        if on_start:
            on_start(trial)
        stats_path = (spec.out / f"{stem}-run{trial.number}.stats.json") if jsonl and spec.preload else None
        run = run_trial(spec, trial, program, stats_path, drop)
        runs.append(run)
        if jsonl:
            with jsonl.open("a", encoding="utf-8") as f:
                f.write(json.dumps(run.to_json()) + "\n")
        if on_done:
            on_done(run)
    return runs
