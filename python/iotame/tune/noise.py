"""Whether a job can be tuned by measurement at all. The default runs several times before the search; when those
runs spread more than the gains a search could tell apart (max_noise), every ranking that follows would be noise, so
the study stops at the start and says how to make the job measurable instead."""
from __future__ import annotations

import math
import statistics

__all__ = ["NOISE_RUNS", "MAX_NOISE", "spread", "too_noisy"]

NOISE_RUNS = 3      # runs of the default that measure the job's own spread (more if --repeat asks for more)
MAX_NOISE = 0.5     # a trial noisier than this cannot tell a 1.5 x gain from luck


def spread(values: list[float]) -> float | None:
    """(max - min) / median of repeated runs; None for fewer than two."""
    if len(values) < 2 or not statistics.median(values):
        return None
    return (max(values) - min(values)) / statistics.median(values)


def too_noisy(values: list[float], repeat: int, max_noise: float, io_seconds: list[float]) -> str | None:
    """The reason the job cannot be tuned, or None. values: the default's runs; a trial's value is the median of
    `repeat` runs, whose spread is taken to shrink as 1/sqrt(repeat); io_seconds: the I/O time of each run."""
    s = spread(values)
    if s is None or s / math.sqrt(repeat) <= max_noise:
        return None
    io = f", {statistics.median(io_seconds):.3g} s of I/O per run" if io_seconds else ""
    need = math.ceil((s / max_noise) ** 2)
    return (f"the job's I/O is too short or too irregular to tune by measurement: {len(values)} runs of the "
            f"default spread {s * 100:.0f} %{io}"
            + (f" (medians of {repeat} runs: about {s / math.sqrt(repeat) * 100:.0f} %)" if repeat > 1 else "")
            + f", more than the {max_noise * 100:.0f} % a search can tell apart (--max-noise), so any ranking of "
            f"settings would be noise. Make its I/O last longer (more data or more iterations per run: a larger "
            f"problem size), measure each trial several times (--repeat {need} would do at this spread), or tune "
            f"anyway with --max-noise {math.ceil(s * 10) / 10:g}")
