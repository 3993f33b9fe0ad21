"""One definition of a run's bandwidth, used by `iotame run`, `stats show`, the tuner, bench and the reports.

A run's bandwidth is the bytes it moved (read + written, summed over the ranks) divided by its I/O time: the
slowest rank's time inside I/O calls, data calls, sync, open, close and other metadata calls included (the
statistics' `summary.io_seconds`; the runtime's `summary.io_mbs`). A kernel's phase figure is the same quotient
for one phase, its time the wall time from the barrier before its open to the slowest rank's close.
MB/s means 10^6 bytes per second; MiB/s (2^20 bytes per second, IOR's unit) is given beside it.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MB", "MIB", "DEFINITION", "Bandwidth", "bandwidth", "run_bandwidth", "fmt_bandwidth"]

MB = 1_000_000
MIB = 1 << 20
DEFINITION = ("bandwidth = bytes read + written (all ranks) / I/O time (slowest rank, data calls + sync + "
              "open/close/metadata); MB/s = 10^6 B/s, MiB/s = 2^20 B/s")


@dataclass(frozen=True)
class Bandwidth:
    """Bytes over seconds; `mb_s` and `mib_s` are 0.0 when no time was spent."""

    bytes: int
    seconds: float

    @property
    def mb_s(self) -> float:
        return self.bytes / self.seconds / MB if self.seconds > 0 else 0.0

    @property
    def mib_s(self) -> float:
        return self.bytes / self.seconds / MIB if self.seconds > 0 else 0.0


def bandwidth(nbytes: int | float, seconds: float) -> Bandwidth:
    return Bandwidth(int(nbytes), float(seconds))


def run_bandwidth(stats_or_summary: dict) -> Bandwidth:
    """The run's bandwidth from a statistics object or its `summary` (keys bytes_read, bytes_written, io_seconds).
    Raises KeyError naming the missing key."""
    s = stats_or_summary.get("summary", stats_or_summary)
    for key in ("bytes_read", "bytes_written", "io_seconds"):
        if key not in s:
            raise KeyError(f"statistics summary: missing {key!r} (expected bytes_read, bytes_written, io_seconds)")
    return bandwidth(int(s["bytes_read"]) + int(s["bytes_written"]), float(s["io_seconds"]))


def fmt_bandwidth(bw: Bandwidth | float, mib: bool = True) -> str:
    """'803.2 MB/s (766.0 MiB/s)'; a bare float is taken as MB/s."""
    mb = bw.mb_s if isinstance(bw, Bandwidth) else float(bw)
    text = f"{mb:,.1f} MB/s"
    return f"{text} ({mb * MB / MIB:,.1f} MiB/s)" if mib else text
