"""Measuring one configuration: run the job under the runtime R times, each run in its own directory (statistics,
stdout, stderr), and take the median of the objective. A run fails on a non-zero exit status, a timeout, missing
statistics or a kernel result whose data did not verify; a configuration with a failed run has no value."""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from ..runner import run_command
from ..stats import OBJECTIVES, objective as stats_objective
from .kernel_output import find_result
from .noise import spread
from .page_cache import PageCache

__all__ = ["OBJECTIVE_DIRECTIONS", "OBJECTIVE_UNITS", "RunOutcome", "Measurement", "run_once", "measure",
           "better", "ratio"]

OBJECTIVE_DIRECTIONS = {name: direction for name, (_, direction) in OBJECTIVES.items()}
OBJECTIVE_DIRECTIONS["wall-time"] = "minimize"
OBJECTIVE_UNITS = {"io-bandwidth": "MB/s", "io-time": "s", "wall-time": "s"}


def better(a: float, b: float, direction: str) -> bool:
    """a is strictly better than b."""
    return a > b if direction == "maximize" else a < b


def ratio(best: float, default: float, direction: str) -> float | None:
    """How many times better `best` is than `default` (>1: better): best/default for a bandwidth, default/best
    for a time. None when it cannot be computed (a zero)."""
    if direction == "maximize":
        return best / default if default > 0 else None
    return default / best if best > 0 else None


@dataclass
class RunOutcome:
    """One run: its value of the objective (None when it failed) and why it failed."""

    dir: str
    value: float | None
    error: str | None
    exit_status: int
    seconds: float
    dropped_cache: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Measurement:
    """The runs of one configuration; value is the median of their values (None if any run failed)."""

    runs: list[RunOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.runs) and all(r.ok for r in self.runs)

    @property
    def error(self) -> str | None:
        return next((f"run {i + 1}: {r.error}" for i, r in enumerate(self.runs) if not r.ok), None)

    @property
    def values(self) -> list[float]:
        return [r.value for r in self.runs if r.value is not None]

    @property
    def value(self) -> float | None:
        return statistics.median(self.values) if self.ok else None

    @property
    def spread(self) -> float | None:
        """(max - min) / median of the runs (0 for one run)."""
        if not self.ok or not self.values:
            return None
        return spread(self.values) or 0.0


def _failure(result, timeout: float | None) -> str | None:
    if result.timed_out:
        return f"timed out after {timeout:g} s"
    kernel = find_result(result.stdout)
    if kernel is not None and kernel.get("verified") is False:
        return "data verification failed"
    if result.returncode != 0:
        partial = f" ({result.stats_error})" if getattr(result, "partial", None) else ""
        return f"exit status {result.exit_status}{partial}"
    return None


def run_once(argv: Sequence[str], config: str | Path, run_dir: str | Path, objective: str, *,
             timeout: float | None = None, cwd: str | Path | None = None,
             page_cache: PageCache | None = None) -> RunOutcome:
    """Runs the job once under the runtime with `config`; its statistics, stdout and stderr stay in run_dir."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    dropped = page_cache.drop() if page_cache else False
    try:
        result = run_command(list(argv), config=config, stats_path=run_dir / "stats.json", capture=True,
                             cwd=cwd, timeout=timeout)
    except (FileNotFoundError, PermissionError) as e:
        return RunOutcome(str(run_dir), None, f"cannot run {argv[0]}: {e.strerror}", 127, 0.0, dropped)
    (run_dir / "stdout.txt").write_text(result.stdout or "", encoding="utf-8")
    (run_dir / "stderr.txt").write_text(result.stderr or "", encoding="utf-8")
    error = _failure(result, timeout)
    value = None
    if error is None:
        if objective == "wall-time":
            value = result.seconds
        elif result.stats is None:
            error = result.stats_error or "no statistics"
        else:
            value = stats_objective(result.stats, objective)
    if page_cache is not None:
        page_cache.after_run(result.stats, cwd)
    return RunOutcome(str(run_dir), value, error, result.exit_status, result.seconds, dropped)


def measure(argv: Sequence[str], config: str | Path, trial_dir: str | Path, objective: str, repeat: int = 1,
            **kw) -> Measurement:
    """Runs the job `repeat` times (run-1, run-2, … in trial_dir), stopping at the first failed run."""
    m = Measurement()
    for i in range(repeat):
        run = run_once(argv, config, Path(trial_dir) / f"run-{i + 1}", objective, **kw)
        m.runs.append(run)
        if not run.ok:
            break
    return m
