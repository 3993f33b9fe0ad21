"""Summaries of benchmark runs: per phase (and sweep point) median, min and max MB/s over the successful runs."""
from __future__ import annotations

import statistics
from typing import Iterable

from ..stats import objectives
from .execute import BenchRun
from .plan import BenchSpec

__all__ = ["phase_mbs", "summarize_phases", "bench_json", "caches_dropped", "RUNTIME_ROW"]

RUNTIME_ROW = "all I/O (runtime stats)"   # the runtime's summary.io_mbs, next to the kernel's own phases


def phase_mbs(phase: dict) -> float:
    """A phase's MB/s: its `mbs`, else bytes / seconds / 10^6."""
    if isinstance(phase.get("mbs"), (int, float)):
        return float(phase["mbs"])
    seconds = phase.get("seconds") or 0
    return phase.get("bytes", 0) / seconds / 1e6 if seconds else 0.0


def summarize_phases(runs: Iterable[BenchRun]) -> list[dict]:
    """Rows {"point": swept values, "name", "runs", "median", "min", "max"} in order of first appearance;
    the runtime's io_mbs appears as phase RUNTIME_ROW when the runs have statistics (of one job each)."""
    groups: dict[tuple, list[float]] = {}
    points: dict[tuple, dict] = {}
    for run in runs:
        if not run.ok:
            continue
        pkey = tuple(sorted(run.swept.items()))
        values = [(p.get("name", "?"), phase_mbs(p)) for p in run.result.get("phases", [])]
        if run.stats and not run.read_argv:      # two jobs (--drop-caches): no one runtime figure
            values.append((RUNTIME_ROW, objectives(run.stats)["io-bandwidth"]))
        for name, mbs in values:
            groups.setdefault((pkey, name), []).append(mbs)
            points[(pkey, name)] = dict(run.swept)
    return [{"point": points[k], "name": k[1], "runs": len(v), "median": statistics.median(v), "min": min(v),
             "max": max(v)} for k, v in groups.items()]


def bench_json(spec: BenchSpec, runs: list[BenchRun]) -> dict:
    """Everything `iotame bench --json` prints: the specification, every run and the phase summary."""
    return {
        "kernel": spec.kernel, "nprocs": spec.nprocs, "repeat": spec.repeat, "settings": dict(spec.settings),
        "sweep": dict(spec.sweep), "preload": spec.preload, "config": str(spec.config) if spec.config else None,
        "drop_caches": spec.drop_caches, "caches_dropped": caches_dropped(runs),
        "runs": [r.to_json() for r in runs], "phases": summarize_phases(runs),
        "failed": sum(not r.ok for r in runs),
    }


def caches_dropped(runs: Iterable[BenchRun]) -> bool | None:
    """None when no run asked for it, else whether every run that asked could drop the page cache."""
    asked = [r.caches_dropped for r in runs if r.caches_dropped is not None]
    return all(asked) if asked else None
