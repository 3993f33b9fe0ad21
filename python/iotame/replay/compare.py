"""How close a replay came to the job: per file, what the job's record says (a Darshan log's counters, or the
statistics the trace came from) against the replay's statistics under the runtime (with its request trace).

Counted quantities are judged: bytes and calls per direction, collective calls, and requests per size bin, each
within a tolerance relative to the job's value (at least one call or byte). Bins are Darshan's: the replay's sizes
come from its request trace (MPI-IO) or, for a file it accessed through POSIX (which the trace does not cover), from
the requests the spec made it issue, whose count and bytes the statistics confirm. Between two iotame statistics
files without complete traces, bins are the power-of-two buckets of both. The share of the job's I/O time per file
is shown, not judged: the replay runs on another machine.
"""
from __future__ import annotations

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


def compare_counts(name: str, job: FileCounts, replay: FileCounts, tolerance: float, judged: bool) -> list[Row]:
    rows: list[Row] = []

    def row(what: str, a: float, b: float) -> None:
        ok = abs(b - a) <= max(1.0, tolerance * abs(a))
        rows.append(Row(name, what, a, b, judged, ok))

    for d, word in (("w", "write"), ("r", "read")):
        row(f"{word} bytes", job.bytes[d], replay.bytes[d])
        row(f"{word} calls", job.calls[d], replay.calls[d])
        if job.collective[d] or replay.collective[d]:
            row(f"collective {word} calls", job.collective[d], replay.collective[d])
    for d, word in (("w", "write"), ("r", "read")):
        for key in sorted(set(job.bins[d]) | set(replay.bins[d])):
            row(f"{word} requests {_bin_label(job.binning, key)}", job.bins[d].get(key, 0), replay.bins[d].get(key, 0))
    return rows


def time_shares(counts: dict[str, FileCounts]) -> dict[str, float]:
    total = sum(c.seconds for c in counts.values())
    return {k: (c.seconds / total if total else 0.0) for k, c in counts.items()}


def replay_record(stats: dict, directory: Path, name: str) -> dict | None:
    target = str((directory / name).resolve())
    for rec in stats.get("files", []):
        if rec.get("path") in (target, str(directory / name)) or rec.get("path", "").endswith("/" + name):
            return rec
    return None


def bins_from_spec_file(spec_file: dict) -> dict[str, dict[int, int]]:
    """Darshan bins of the requests a spec file makes: an MPI-IO call is one request of its bytes; a POSIX
    call is one request per contiguous piece."""
    bins: dict[str, dict[int, int]] = {"w": {}, "r": {}}
    for proc in spec_file["calls"]:
        for e in proc:
            d = e["op"].lower()
            if d not in ("w", "r"):
                continue
            n = e.get("repeat", 1)
            if spec_file["api"] == "MPIIO":
                _add(bins[d], size_bin(sum(r[1] * r[2] for r in e["at"])), n)
            else:
                for _, length, count, _ in e["at"]:
                    _add(bins[d], size_bin(length), n * count)
    return bins
