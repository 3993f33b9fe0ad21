"""How close a replay came to the job: per file, what the job's record says (a Darshan log's counters, or the
statistics the trace came from) against the replay's statistics under the runtime (with its request trace).

Counted quantities are judged: bytes and calls per direction, collective calls, and requests per size bin, each
within a tolerance relative to the job's value (at least one call or byte). Bins are Darshan's: the replay's sizes
come from its request trace (MPI-IO) or, for a file it accessed through POSIX (which the trace does not cover), from
the requests the spec made it issue, whose count and bytes the statistics confirm. Between two iotame statistics
files without complete traces, bins are the power-of-two buckets of both. The share of the job's I/O time per file
is shown, not judged: the replay runs on another machine.

A replay at scale F < 1 (`--scale`, or the scale `--replay-bytes` made the kernel apply) makes the first calls of
each process, at their sizes (kept_repeats, the kernel's rule). Each of the job's values is then multiplied by the
share of the spec's value that the kept calls hold (its bytes, calls or requests of that bin), so the replay is
judged against the part of the job it replayed: a difference between the spec and the job, or between the replay
and the spec, shows as at scale 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from .darshan_plan import SIZE_BINS, counter_total, size_bin


@dataclass
class FileCounts:
    """What one file saw, in the terms both sides can give."""

    bytes: dict[str, int] = field(default_factory=lambda: {"w": 0, "r": 0})
    calls: dict[str, int] = field(default_factory=lambda: {"w": 0, "r": 0})
    collective: dict[str, int] = field(default_factory=lambda: {"w": 0, "r": 0})
    bins: dict[str, dict[int, int]] = field(default_factory=lambda: {"w": {}, "r": {}})
    binning: str = "darshan"          # darshan (exact sizes) | pow2
    seconds: float = 0.0


def _add(bins: dict[int, int], key: int, n: int) -> None:
    if n:
        bins[key] = bins.get(key, 0) + n


# ---- the job's side ----

def counts_from_darshan_rows(rows: list[dict], prefix: str) -> FileCounts:
    fc = FileCounts()
    agg = "_AGG" if prefix == "MPIIO" else ""

    def total(*keys: str) -> int:
        return sum(counter_total(rows, k) for k in keys)

    for d, kind, word in (("w", "WRITE", "WRITTEN"), ("r", "READ", "READ")):
        fc.bytes[d] = total(f"{prefix}_BYTES_{word}")
        if prefix == "MPIIO":
            fc.collective[d] = total(f"MPIIO_COLL_{kind}S", f"MPIIO_SPLIT_{kind}S")
            fc.calls[d] = fc.collective[d] + total(f"MPIIO_INDEP_{kind}S", f"MPIIO_NB_{kind}S")
        else:
            fc.calls[d] = total(f"POSIX_{kind}S")
        for i, (name, _) in enumerate(SIZE_BINS):
            _add(fc.bins[d], i, total(f"{prefix}_SIZE_{kind}{agg}_{name}"))
    fc.seconds = sum(float(r.get(f"{prefix}_F_{k}_TIME", 0.0)) for r in rows for k in ("READ", "WRITE", "META"))
    return fc


def counts_from_stats_record(rec: dict, level: str) -> FileCounts:
    """A statistics file record: the MPI-IO level (exact sizes from its trace when it has one, else the power-of-two
    histogram) or the POSIX level (its `posix` section)."""
    fc = FileCounts()
    if level == "POSIX":
        px = rec.get("posix", {})
        fc.bytes = {"w": px.get("bytes_written", 0), "r": px.get("bytes_read", 0)}
        fc.calls = {"w": px.get("writes", 0), "r": px.get("reads", 0)}
        fc.binning = "pow2"
        for d, key in (("w", "write"), ("r", "read")):
            for low, n in px.get("histogram", {}).get(key, {}).items():
                _add(fc.bins[d], int(low), n)
        t = px.get("time", {})
        fc.seconds = sum(t.get(k, {}).get("avg", 0.0) for k in ("read", "write", "meta"))
        return fc
    fc.bytes = {"w": rec.get("bytes_written", 0), "r": rec.get("bytes_read", 0)}
    for name, op in rec.get("ops", {}).items():
        for d, word in (("w", "write"), ("r", "read")):
            if word in name and not name.endswith("_end"):
                fc.calls[d] += op.get("count", 0)
                if "_all" in name or "ordered" in name:
                    fc.collective[d] += op.get("count", 0)
    trace = rec.get("trace")
    if trace and not any(trace.get("dropped", [])):
        for proc in trace["calls"]:
            for c in proc:
                for d, word in (("w", "write"), ("r", "read")):
                    if word in c["op"] and not c["op"].endswith("_end"):
                        _add(fc.bins[d], size_bin(int(c.get("bytes", 0))), 1)
    else:
        fc.binning = "pow2"
        for d, key in (("w", "write"), ("r", "read")):
            for low, n in rec.get("histogram", {}).get(key, {}).items():
                _add(fc.bins[d], int(low), n)
    t = rec.get("time", {})
    fc.seconds = sum(t.get(k, {}).get("avg", 0.0) for k in ("read", "write", "meta"))
    return fc


def _bin_label(binning: str, key: int) -> str:
    if binning == "darshan":
        return SIZE_BINS[key][0]
    return f"{key}.."


@dataclass
class Row:
    file: str
    what: str
    job: float
    replay: float
    judged: bool
    ok: bool
    factor: float = 1.0     # the job's value as recorded times this is `job` (a scaled replay, see the module doc)


def compare_counts(name: str, job: FileCounts, replay: FileCounts, tolerance: float, judged: bool,
                   factors: Factors | None = None) -> list[Row]:
    """One row per value; with factors (a scaled replay: scale_factors), each job value times its factor."""
    rows: list[Row] = []
    f = factors or Factors(1.0)

    def row(what: str, a: float, b: float, factor: float) -> None:
        a = a * factor
        ok = abs(b - a) <= max(1.0, tolerance * abs(a))
        rows.append(Row(name, what, a, b, judged, ok, factor))

    for d, word in (("w", "write"), ("r", "read")):
        row(f"{word} bytes", job.bytes[d], replay.bytes[d], f.bytes.get(d, f.scale))
        row(f"{word} calls", job.calls[d], replay.calls[d], f.calls.get(d, f.scale))
        if job.collective[d] or replay.collective[d]:
            row(f"collective {word} calls", job.collective[d], replay.collective[d], f.collective.get(d, f.scale))
    for d, word in (("w", "write"), ("r", "read")):
        for key in sorted(set(job.bins[d]) | set(replay.bins[d])):
            row(f"{word} requests {_bin_label(job.binning, key)}", job.bins[d].get(key, 0),
                replay.bins[d].get(key, 0), f.bins[d].get(key, f.scale))
    return rows


# ---- a scaled replay ----

def kept_repeats(entries: list[dict], scale: float) -> list[int]:
    """The repeats of one process's entries of a file that a replay at `scale` makes: the first ceil(scale x n)
    collective (W, R) and ceil(scale x m) independent data calls, repetitions counted; syncs and reopens all. The
    kernel's rule (replay_spec_scale in kernels/replay/spec.c), computed the same way."""
    n = {True: 0, False: 0}
    for e in entries:
        if e["op"] not in "so":
            n[e["op"] in "WR"] += e.get("repeat", 1)
    left = {k: math.ceil(scale * v) for k, v in n.items()}
    out = []
    for e in entries:
        r = e.get("repeat", 1)
        if e["op"] not in "so":
            coll = e["op"] in "WR"
            r = min(r, left[coll])
            left[coll] -= r
        out.append(r)
    return out


def spec_file_counts(spec_file: dict, scale: float = 1.0) -> FileCounts:
    """What a spec file's calls move at `scale`: bytes, calls, collective calls and Darshan bins per direction (an
    MPI-IO call is one request of its bytes; a POSIX call one request and one call per contiguous piece)."""
    fc = FileCounts()
    for proc in spec_file["calls"]:
        for e, n in zip(proc, kept_repeats(proc, scale)):
            d = e["op"].lower()
            if d not in ("w", "r") or n == 0:
                continue
            runs = e.get("at", [])
            fc.bytes[d] += n * sum(r[1] * r[2] for r in runs)
            if spec_file["api"] == "MPIIO":
                fc.calls[d] += n
                fc.collective[d] += n if e["op"] in "WR" else 0
                _add(fc.bins[d], size_bin(sum(r[1] * r[2] for r in runs)), n)
            else:
                for _, length, count, _ in runs:
                    fc.calls[d] += n * count
                    _add(fc.bins[d], size_bin(length), n * count)
    return fc


@dataclass
class Factors:
    """Per value of a file, what a scaled replay makes of the spec's (kept / whole); `scale` for a value the spec
    has none of."""

    scale: float
    bytes: dict[str, float] = field(default_factory=dict)
    calls: dict[str, float] = field(default_factory=dict)
    collective: dict[str, float] = field(default_factory=dict)
    bins: dict[str, dict[int, float]] = field(default_factory=lambda: {"w": {}, "r": {}})


def scale_factors(spec_file: dict, scale: float) -> Factors:
    whole, kept = spec_file_counts(spec_file), spec_file_counts(spec_file, scale)
    f = Factors(scale)
    for d in ("w", "r"):
        for mine, k, w in ((f.bytes, kept.bytes, whole.bytes), (f.calls, kept.calls, whole.calls),
                           (f.collective, kept.collective, whole.collective)):
            if w[d]:
                mine[d] = k[d] / w[d]
        f.bins[d] = {b: kept.bins[d].get(b, 0) / n for b, n in whole.bins[d].items()}
    return f


def time_shares(counts: dict[str, FileCounts]) -> dict[str, float]:
    total = sum(c.seconds for c in counts.values())
    return {k: (c.seconds / total if total else 0.0) for k, c in counts.items()}


def replay_record(stats: dict, directory: Path, name: str) -> dict | None:
    target = str((directory / name).resolve())
    for rec in stats.get("files", []):
        if rec.get("path") in (target, str(directory / name)) or rec.get("path", "").endswith("/" + name):
            return rec
    return None


def bins_from_spec_file(spec_file: dict, scale: float = 1.0) -> dict[str, dict[int, int]]:
    """Darshan bins of the requests a spec file makes at `scale`: an MPI-IO call is one request of its bytes; a POSIX
    call is one request per contiguous piece."""
    return spec_file_counts(spec_file, scale).bins
