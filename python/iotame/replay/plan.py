"""A job's I/O as the replay kernel makes it: per file, per process, the calls in order; and the replay spec
(docs/kernels.md "replay") written from it.

The sources (a Darshan log, an iotame statistics file with a request trace) each build a `JobPlan`; `to_spec` turns it
into the JSON the kernel reads, compressing runs of calls that differ only by a constant shift of their offsets into
one entry with `repeat` and `advance`, and listing every range the replay reads as `preload` (data the job found on
storage, or wrote itself: the content depends on the offset only, so either way the reads are verifiable).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

SPEC_VERSION = 1
WRITE_OPS = ("w", "W")
READ_OPS = ("r", "R")
COLLECTIVE_OPS = ("W", "R")

Run = tuple[int, int, int, int]   # offset, length, count, stride


@dataclass
class Call:
    """One call: op w/r (independent), W/R (collective), s (sync), o (reopen); the file extents as runs; computation
    before it."""

    op: str
    at: list[Run] = field(default_factory=list)
    gap: float = 0.0

    @property
    def bytes(self) -> int:
        return sum(length * count for _, length, count, _ in self.at)


@dataclass
class FilePlan:
    name: str                 # relative name in the replay's directory
    path: str                 # the job's path, for reports
    api: str                  # "MPIIO" or "POSIX"
    procs: list[int]
    calls: list[list[Call]]   # one list per entry of procs

    def bytes(self, ops: tuple[str, ...]) -> int:
        return sum(c.bytes for proc in self.calls for c in proc if c.op in ops)


@dataclass
class JobPlan:
    nprocs: int
    source: dict
    files: list[FilePlan] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)   # {"path", "reason", "bytes"}: what the replay leaves out

    def skip(self, path: str, reason: str, nbytes: int = 0) -> None:
        self.skipped.append({"path": path, "reason": reason, "bytes": int(nbytes)})


# ---- names ----

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def replay_names(paths: list[str]) -> dict[str, str]:
    """Relative names for the job's paths: the basename, made unique by the parent directory's name or an index."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for path in paths:
        base = _SAFE.sub("_", os.path.basename(path.rstrip("/"))) or "file"
        base = base.lstrip(".") or "file"
        name, i = base, 1
        while name in used:
            name, i = f"{base}.{i}", i + 1
        used.add(name)
        names[path] = name
    return names


# ---- extents ----

def merge_runs(pieces: list[tuple[int, int]]) -> list[Run]:
    """(offset, length) pieces in file order as runs: adjacent pieces joined, equal pieces at a constant stride
    folded into one run. A call of no bytes is one run of length 0 at its offset (a read at the end of a file)."""
    if pieces and all(length <= 0 for _, length in pieces):
        return [(max(0, pieces[0][0]), 0, 1, 0)]
    joined: list[list[int]] = []
    for off, length in pieces:
        if length <= 0:
            continue
        if joined and joined[-1][0] + joined[-1][1] == off:
            joined[-1][1] += length
        else:
            joined.append([off, length])
    runs: list[list[int]] = []
    for off, length in joined:
        if runs:
            r = runs[-1]
            if r[2] == 1 and r[1] == length and off > r[0]:
                r[2], r[3] = 2, off - r[0]
                continue
            if r[2] > 1 and r[1] == length and off == r[0] + r[2] * r[3]:
                r[2] += 1
                continue
        runs.append([off, length, 1, 0])
    return [tuple(r) for r in runs]


def _span(at: list[Run]) -> tuple[int, int]:
    first = at[0][0]
    last = max(off + (count - 1) * stride + length for off, length, count, stride in at)
    return first, last


def _shift(a: list[Run], b: list[Run]) -> int | None:
    """d when b is a shifted by d (same shape), else None."""
    if len(a) != len(b) or not a:
        return None
    d = b[0][0] - a[0][0]
    for x, y in zip(a, b):
        if y != (x[0] + d, x[1], x[2], x[3]):
            return None
    return d


# ---- the spec ----

def _entries(calls: list[Call]) -> list[dict]:
    """Calls as spec entries: a call that repeats the previous entry's shape at the same advance extends it, whatever
    the computation before it (the entry's gap is their mean): the shape is what the I/O stack answers to, and
    every process of a collective file must compress its calls alike."""
    out: list[dict] = []
    prev: Call | None = None
    for c in calls:
        e = out[-1] if out else None
        if e is not None and prev is not None and c.op == e["op"] and c.op not in "so" and c.at and prev.at:
            d = _shift(prev.at, c.at)
            if d is not None and (e["repeat"] == 1 or d == e["advance"]):
                e["advance"], e["repeat"], e["gap"] = d, e["repeat"] + 1, e["gap"] + c.gap
                prev = c
                continue
        if c.op == "s" and e is not None and e["op"] == "s":   # consecutive syncs: one is enough
            continue
        out.append({"op": c.op, "at": [list(r) for r in c.at], "repeat": 1, "advance": 0, "gap": c.gap})
        prev = c
    for e in out:
        e["gap"] = round(e["gap"] / e["repeat"], 6)
        if e["repeat"] == 1:
            del e["advance"]
        if not e["gap"]:
            del e["gap"]
        if e["repeat"] == 1:
            del e["repeat"]
        if e["op"] in ("s", "o"):
            del e["at"]
    return out


def _collective_entries_agree(entries: list[list[dict]], collective: tuple[str, ...]) -> bool:
    seqs = [[(e["op"], e.get("repeat", 1)) for e in proc if e["op"] in collective] for proc in entries]
    return all(s == seqs[0] for s in seqs)


def _proc_entries(f: FilePlan) -> list[list[dict]]:
    """Every proc's entries; when compressing made the collective sequences differ between procs (a proc whose
    calls repeat where another's do not), the collective calls are left one entry each."""
    collective = COLLECTIVE_OPS + (("s", "o") if f.api == "MPIIO" else ())
    entries = [_entries(proc) for proc in f.calls]
    if _collective_entries_agree(entries, collective):
        return entries
    out = []
    for proc in f.calls:
        es: list[dict] = []
        for c in proc:
            if c.op in collective:
                es.append(_entries([c])[0])
            else:
                es.extend(_entries([c]))
        out.append(es)
    return out


# Above this many pieces the written ranges are not worked out piece by piece: every read range is preloaded.
PRELOAD_PIECES_CAP = 1 << 20


def _merge(intervals: list[tuple[int, int]]) -> list[list[int]]:
    merged: list[list[int]] = []
    for lo, hi in sorted(intervals):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return merged


def _pieces(at: list[Run]) -> list[tuple[int, int]]:
    return [(off + i * stride, off + i * stride + length) for off, length, count, stride in at for i in range(count)]


def _subtract(span: tuple[int, int], covered: list[list[int]]) -> list[tuple[int, int]]:
    lo, hi = span
    out = []
    for c_lo, c_hi in covered:
        if c_hi <= lo or c_lo >= hi:
            continue
        if c_lo > lo:
            out.append((lo, c_lo))
        lo = max(lo, c_hi)
    if lo < hi:
        out.append((lo, hi))
    return out


def preload_ranges(f: FilePlan) -> list[list[int]]:
    """What the replay must find on storage, as [offset, length] merged: every range a call reads that the job did
    not write before it, as far as MPI-IO lets a reader see the write: its own process's earlier writes, and after
    a reopen every process's writes before it."""
    pieces = sum(r[2] for proc in f.calls for c in proc for r in c.at)
    reads = [(p, i, c) for p, proc in enumerate(f.calls) for i, c in enumerate(proc) if c.op in READ_OPS and c.at]
    if pieces > PRELOAD_PIECES_CAP:
        return [[lo, hi - lo] for lo, hi in _merge([_span(c.at) for _, _, c in reads])]
    first_reopen = [next((i for i, c in enumerate(proc) if c.op == "o"), None) for proc in f.calls]
    before_reopen = _merge([x for p, proc in enumerate(f.calls) if first_reopen[p] is not None
                            for c in proc[:first_reopen[p]] if c.op in WRITE_OPS for x in _pieces(c.at)])
    needed: list[tuple[int, int]] = []
    for p, proc in enumerate(f.calls):
        own: list[tuple[int, int]] = []
        covered, stale = [], True      # what this process can see written, merged again only after a write
        for i, c in enumerate(proc):
            if c.op in WRITE_OPS:
                own += _pieces(c.at)
                stale = True
            elif c.op == "o" and i == first_reopen[p]:
                own += [tuple(x) for x in before_reopen]
                stale = True
            elif c.op in READ_OPS and c.at:
                if stale:
                    covered, stale = _merge(own), False
                for piece in _pieces(c.at):
                    needed += _subtract(piece, covered)
    return [[lo, hi - lo] for lo, hi in _merge(needed)]


def spec_bytes(spec: dict) -> int:
    """The bytes a spec's calls move (preload aside)."""
    return sum(e.get("repeat", 1) * sum(r[1] * r[2] for r in e.get("at", []))
               for f in spec["files"] for proc in f["calls"] for e in proc)


def to_spec(job: JobPlan) -> dict:
    files = []
    for f in job.files:
        files.append({"name": f.name, "path": f.path, "api": f.api, "procs": f.procs,
                      "preload": preload_ranges(f), "calls": _proc_entries(f)})
    source = dict(job.source)
    if job.skipped:
        source["skipped"] = job.skipped
    return {"replay": SPEC_VERSION, "source": source, "nprocs": job.nprocs, "files": files}


def align_collectives(f: FilePlan) -> None:
    """Every proc makes the same collective calls in the same order, as MPI-IO requires of the job itself: a proc
    whose sequence is a prefix of the longest gets empty calls (a collective call where it has no data). When the
    orders differ, every call of the file becomes independent (same bytes and offsets; the syncs and reopens of
    MPI-IO go)."""
    collective = COLLECTIVE_OPS + (("s", "o") if f.api == "MPIIO" else ())
    seqs = [[c.op for c in proc if c.op in collective] for proc in f.calls]
    longest = max(seqs, key=len, default=[])
    if all(seq == longest[:len(seq)] for seq in seqs):
        for proc, seq in zip(f.calls, seqs):
            proc.extend(Call(op) for op in longest[len(seq):])
        return
    for proc in f.calls:
        proc[:] = [Call(c.op.lower(), c.at, c.gap) for c in proc if not (c.op in "so" and f.api == "MPIIO")]
