"""Running the trials of a benchmark: one `mpiexec -n N iotame-kernel KERNEL …` each, under the runtime."""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from ..paths import require_kernel, require_lib
from ..runner import RUNTIME_VARS, get_launcher, run_command
from .kernels import get_kernel
from .plan import BenchSpec, Trial, plan

__all__ = ["BenchRun", "parse_kernel_output", "run_trial", "run_bench"]


@dataclass
class BenchRun:
    """The outcome of one trial. `ok` is False for a non-zero exit, no result, a failed verification or a
    timeout; `error` then says which, and `stderr` holds what the job printed there."""

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


def _verdict(returncode: int, timed_out: bool, timeout, result, parse_error) -> str | None:
    if timed_out:
        return f"timed out after {timeout:g} s"
    if result is not None and result.get("verified") is False:
        return f"data verification failed (exit status {returncode}): " + \
            json.dumps(result.get("errors", []))[:500]
    if returncode != 0:
        return f"exit status {returncode}" + (f" (no result: {parse_error})" if result is None else "")
    return parse_error if result is None else None


def run_trial(spec: BenchSpec, trial: Trial, program: Path, stats_path: Path | None = None) -> BenchRun:
    """Runs one trial and returns its outcome (never raises for a failing job)."""
    kernel = get_kernel(spec.kernel)
    launcher = get_launcher(spec.launcher)
    argv = launcher.command(spec.nprocs, kernel.argv(str(program), trial.settings),
                            env_names=RUNTIME_VARS if spec.preload else ())
    run = BenchRun(kernel=spec.kernel, number=trial.number, point=trial.point, repeat=trial.repeat,
                   settings=dict(trial.settings), swept=dict(trial.swept), nprocs=spec.nprocs, argv=argv,
                   preload=spec.preload, config=str(spec.config) if spec.config else None)
    try:
        r = run_command(argv, config=spec.config, stats_path=stats_path, preload=spec.preload, capture=True,
                        cwd=spec.cwd, timeout=spec.timeout)
    except OSError as e:
        run.returncode, run.error = 127, f"cannot start {argv[0]}: {e.strerror or e}"
        return run
    try:
        run.result = parse_kernel_output(r.stdout)
        parse_error = None
    except ValueError as e:
        parse_error = str(e)
    run.returncode, run.wall_seconds, run.stderr = r.exit_status, r.seconds, r.stderr or ""
    run.stats, run.stats_error, run.stats_path = r.stats, r.stats_error, r.stats_path
    run.error = _verdict(r.returncode, r.timed_out, spec.timeout, run.result, parse_error)
    run.ok = run.error is None
    return run


def run_bench(spec: BenchSpec, on_start: Callable[[Trial], None] | None = None,
              on_done: Callable[[BenchRun], None] | None = None) -> list[BenchRun]:
    """Runs every trial of `spec` in order. With `spec.out`, each run is appended to
    `OUT/KERNEL-YYYYmmdd-HHMMSS.jsonl` as it finishes and statistics files are kept beside it."""
    program = require_kernel()
    get_kernel(spec.kernel)  # unknown kernel or missing library: fail before running anything
    if spec.preload:
        require_lib()
    jsonl, stem = None, None
    if spec.out is not None:
        spec.out.mkdir(parents=True, exist_ok=True)
        stem = f"{spec.kernel}-{time.strftime('%Y%m%d-%H%M%S')}"
        jsonl = spec.out / f"{stem}.jsonl"
    runs = []
    for trial in plan(spec):
        if on_start:
            on_start(trial)
        stats_path = (spec.out / f"{stem}-run{trial.number}.stats.json") if jsonl and spec.preload else None
        run = run_trial(spec, trial, program, stats_path)
        runs.append(run)
        if jsonl:
            with jsonl.open("a", encoding="utf-8") as f:
                f.write(json.dumps(run.to_json()) + "\n")
        if on_done:
            on_done(run)
    return runs
