"""What a job's statistics say about its I/O (the workload), the signature the knowledge base matches workloads
by, and the parameters a workload makes pointless (left out of the search rather than tried).

Statistics count the MPI-IO calls the application made, which no hint changes, so the default trial's statistics
describe the workload of every trial.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from .space import Space

__all__ = ["Workload", "workload_from_stats", "recorded_workload", "size_bucket", "signature", "similar", "distance",
           "prune", "READ_SIDE", "WRITE_SIDE", "COLLECTIVE_ONLY"]

# Hints that only matter for one direction, or only for collective calls (MPI-IO hint names).
READ_SIDE = frozenset({"romio_cb_read", "romio_ds_read", "ind_rd_buffer_size"})
WRITE_SIDE = frozenset({"romio_cb_write", "romio_ds_write", "ind_wr_buffer_size",
                        "striping_factor", "striping_unit", "start_iodevice"})   # striping: new files only
COLLECTIVE_ONLY = frozenset({"cb_nodes", "cb_buffer_size", "cb_config_list", "romio_cb_read", "romio_cb_write",
                             "romio_cb_alltoall", "romio_cb_pfr", "romio_no_indep_rw"})


def size_bucket(n: int | float) -> int:
    """The power-of-two bucket of a size: its lower bound (0 for 0), as in the statistics' histograms."""
    n = int(n)
    return 0 if n <= 0 else 1 << (n.bit_length() - 1)


def _direction(op: str) -> str | None:
    if op.startswith(("read", "iread")):
        return "read"
    if op.startswith(("write", "iwrite")):
        return "write"
    return None


def _collective(op: str) -> bool:
    return "_all" in op or "ordered" in op


@dataclass(frozen=True)
class Workload:
    """Counts over every file of a job: bytes, data calls by kind, files, and the most frequent request-size
    bucket per direction (None: no requests that way)."""

    nprocs: int
    bytes_read: int
    bytes_written: int
    files: int
    read_ops: int
    write_ops: int
    collective_ops: int
    independent_ops: int
    read_size: int | None
    write_size: int | None
    hdf5_files: int = 0          # files the runtime saw opened through HDF5 (a per-file "hdf5" object)
    hdf5_same_calls: bool | None = None  # every rank made the same HDF5 calls (modules.hdf5); None: not known
    independent_reads: int | None = None  # independent read calls (prefetch serves only these); None: not recorded

    @property
    def data_ops(self) -> int:
        return self.read_ops + self.write_ops

    @property
    def collective_fraction(self) -> float:
        return self.collective_ops / self.data_ops if self.data_ops else 0.0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Workload":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def recorded_workload(user_attrs: Mapping[str, Any]) -> Workload | None:
    """The workload a trial recorded among its attributes (the default trial does; None when its run left no
    statistics)."""
    w = user_attrs.get("workload")
    return Workload.from_json(w) if w else None


def _dominant(counts: dict[int, int]) -> int | None:
    if not counts:
        return None
    return max(counts, key=lambda b: (counts[b], b))


def workload_from_stats(stats: Mapping[str, Any]) -> Workload:
    """The workload in a statistics object (docs/formats.md)."""
    reads = writes = coll = indep = indep_reads = 0
    hist: dict[str, dict[int, int]] = {"read": {}, "write": {}}
    files = stats.get("files") or []
    for f in files:
        for op, o in (f.get("ops") or {}).items():
            d = _direction(op)
            if d is None or not isinstance(o, dict):
                continue
            n = int(o.get("count", 0) or 0)
            if d == "read":
                reads += n
            else:
                writes += n
            if _collective(op):
                coll += n
            else:
                indep += n
                indep_reads += n if d == "read" else 0
        for d in ("read", "write"):
            for bucket, n in ((f.get("histogram") or {}).get(d) or {}).items():
                hist[d][int(bucket)] = hist[d].get(int(bucket), 0) + int(n)
    s = stats.get("summary") or {}
    return Workload(nprocs=int(stats.get("nprocs") or 0), bytes_read=int(s.get("bytes_read", 0) or 0),
                    bytes_written=int(s.get("bytes_written", 0) or 0), files=len(files), read_ops=reads,
                    write_ops=writes, collective_ops=coll, independent_ops=indep,
                    read_size=_dominant(hist["read"]), write_size=_dominant(hist["write"]),
                    hdf5_files=sum(1 for f in files if isinstance(f.get("hdf5"), dict)),
                    hdf5_same_calls=((stats.get("modules") or {}).get("hdf5") or {}).get("same_on_every_rank"),
                    independent_reads=indep_reads)


def signature(w: Workload, fs: str) -> dict:
    """What the knowledge base stores and matches: process count, file system, bytes read and written (power-of-
    two buckets), the most frequent request size per direction (bucket), the fraction of collective calls
    (tenths) and the number of files."""
    return {"nprocs": w.nprocs, "fs": fs, "read_bytes": size_bucket(w.bytes_read),
            "write_bytes": size_bucket(w.bytes_written), "read_size": w.read_size, "write_size": w.write_size,
            "collective": round(w.collective_fraction, 1), "files": w.files}


_SAME = ("nprocs", "fs", "read_bytes", "write_bytes", "read_size", "write_size")


def similar(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two signatures are similar when process count, file system, byte buckets and request-size buckets agree."""
    return all(a.get(k) == b.get(k) for k in _SAME)


def distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """How far apart two similar signatures are: the difference in collective fraction plus the relative
    difference in file count (0: the same workload as far as the statistics tell)."""
    fa, fb = int(a.get("files") or 0), int(b.get("files") or 0)
    files = abs(fa - fb) / max(fa, fb, 1)
    return abs(float(a.get("collective") or 0) - float(b.get("collective") or 0)) + files


# staging's settings that act for reads too (prefetching; the area holds its buffers): kept for a job that only reads
STAGING_READ_SIDE = frozenset({"prefetch", "prefetch_kb", "cache_mb"})

# HDF5 settings that make every rank take part in a call: a job whose ranks make different HDF5 calls would hang
HDF5_COLLECTIVE = {"hdf5.transfer": "collective", "hdf5.coll_metadata_reads": True, "hdf5.coll_metadata_writes": True}


def _hdf5_collective_rule(space: Space, w: Workload) -> Space:
    """HDF5's collective transfer and metadata stay in the space only when the statistics show every rank making the
    same HDF5 calls; the notes say which way it went."""
    keys = [p.key for p in space if p.key in HDF5_COLLECTIVE]
    if not keys or w.hdf5_files == 0:
        return space
    names = ", ".join(k.split(".")[-1] for k in keys)
    if w.hdf5_same_calls:
        return space.without([], f"{names} kept: every rank made the same HDF5 calls")
    why = "the ranks made different HDF5 calls" if w.hdf5_same_calls is False else \
        "the statistics do not say whether every rank made the same HDF5 calls"
    return space.without(keys, f"{names} left out: {why} (collective transfer or metadata could hang the job)")


def prune(space: Space, w: Workload) -> Space:
    """The space without the settings this workload cannot feel: read-side hints (and the throttle's readers, staging's
    prefetch) when it reads nothing, write-side and striping hints (and the throttle's writers, staging's write-behind)
    when it writes nothing, collective-buffering hints and iotame's collective settings (strategies, staging's
    aggregator caching) when it makes no collective call (and the space cannot make it: HDF5 transfer), HDF5
    properties when the statistics show no file opened through HDF5 (the runtime adds an "hdf5" object to such
    files).
    A workload with no data calls keeps everything."""
    if w.data_ops == 0:
        return space
    space = _hdf5_collective_rule(space, w)
    reasons: dict[str, str] = {}
    # a setting of the space that can turn the job's independent calls into collective ones keeps the
    # collective-buffering hints in (HDF5's transfer mode)
    collective = w.collective_ops > 0 or (w.hdf5_files > 0 and any(
        p.key == "hdf5.transfer" and "collective" in p.values for p in space))
    for p in space:
        if p.layer == "hdf5" and w.hdf5_files == 0:
            reasons[p.key] = "opens no file through HDF5"
        if (p.section == "collective" or p.key == "iotame.staging.collective") and not collective:
            reasons[p.key] = "makes no collective calls"  # iotame's strategies, and where staging caches them
        if p.section == "throttle" and p.name == "readers" and w.read_ops == 0:
            reasons[p.key] = "makes no reads"
        if p.section == "throttle" and p.name == "writers" and w.write_ops == 0:
            reasons[p.key] = "makes no writes"
        if p.section == "staging" and p.name in ("prefetch", "prefetch_kb") and w.read_ops == 0:
            reasons[p.key] = "makes no reads"
        elif p.section == "staging" and p.name in ("prefetch", "prefetch_kb") and w.independent_reads == 0:
            reasons[p.key] = "makes no independent reads (prefetch serves only those)"
        if p.section == "staging" and p.name not in STAGING_READ_SIDE and w.write_ops == 0:  # write-behind
            reasons[p.key] = "makes no writes"
        if p.section != "mpiio_hints":
            continue
        if p.name in READ_SIDE and w.read_ops == 0:
            reasons[p.key] = "makes no reads"
        elif p.name in WRITE_SIDE and w.write_ops == 0:
            reasons[p.key] = "makes no writes"
        elif p.name in COLLECTIVE_ONLY and not collective:
            reasons[p.key] = "makes no collective calls"
    for why in sorted(set(reasons.values())):
        names = [k.split(".")[-1] for k, r in reasons.items() if r == why]
        space = space.without([k for k, r in reasons.items() if r == why],
                              f"{', '.join(names)} left out: the workload {why}")
    return space
