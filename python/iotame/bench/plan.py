"""What a benchmark runs: its specification, and the trials (one kernel run each) it expands into.

Trials are interleaved (point A, point B, A, B, ...) so that slow drifts of the machine hit every point alike.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["BenchSpec", "Trial", "plan"]


@dataclass
class BenchSpec:
    """A benchmark: `kernel` on `nprocs` ranks with `settings` (K, V) pairs, each combination of `sweep`
    values (K, [V1, V2, ...]) repeated `repeat` times, under the runtime unless `preload` is False. With
    `drop_caches`, each trial runs its writes and its reads as two jobs and drops the page cache in between."""

    kernel: str
    nprocs: int = 2
    settings: list[tuple[str, str]] = field(default_factory=list)
    sweep: list[tuple[str, list[str]]] = field(default_factory=list)
    repeat: int = 1
    config: Path | None = None
    preload: bool = True
    out: Path | None = None
    cwd: Path | None = None
    timeout: float | None = None
    launcher: str = "mpiexec"
    drop_caches: bool | str = False          # True/"files": evict the write job's files; "machine": drop_caches


@dataclass
class Trial:
    """One kernel run: its 1-based number, which point and repeat it is, and its full settings."""

    number: int
    point: int
    repeat: int
    settings: list[tuple[str, str]]
    swept: dict[str, str]


def plan(spec: BenchSpec) -> list[Trial]:
    """The trials of `spec`, interleaved over the sweep points."""
    keys = [k for k, _ in spec.sweep]
    points = list(itertools.product(*[vs for _, vs in spec.sweep])) if spec.sweep else [()]
    trials = []
    for r in range(spec.repeat):
        for p, values in enumerate(points):
            swept = dict(zip(keys, values))
            settings = [(k, v) for k, v in spec.settings if k not in swept] + list(swept.items())
            trials.append(Trial(len(trials) + 1, p, r + 1, settings, swept))
    return trials
