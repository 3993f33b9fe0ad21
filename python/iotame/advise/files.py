"""One tally per file of a Darshan log: its POSIX and MPI-IO records added up, its Lustre layout and its HDF5
datasets (what the summary of groups and of the job is computed from).

Times are Darshan's: cumulative over the ranks that accessed the file (a shared file's record, rank -1, sums its
ranks' times).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .load import DarshanLog
from .summary_records import Seconds

__all__ = ["SIZE_BINS", "IGNORED_PREFIXES", "PARTIAL_RATIO", "PARTIAL_MIN_BYTES", "Layout", "Dataset", "FileTally",
           "tally_files"]

# Darshan's request-size bins, in its counter names' order (POSIX_SIZE_WRITE_<bin>, MPIIO_SIZE_WRITE_AGG_<bin>).
SIZE_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M", "100M_1G",
             "1G_PLUS")
# Not files of the job's data: standard streams, pseudo file systems.
IGNORED_PREFIXES = ("<", "/proc/", "/sys/", "/dev/")

_POSIX_SUMMED = ("POSIX_OPENS", "POSIX_READS", "POSIX_WRITES", "POSIX_SEEKS", "POSIX_STATS", "POSIX_FSYNCS",
                 "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN", "POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES",
                 "POSIX_SEQ_READS", "POSIX_SEQ_WRITES", "POSIX_RW_SWITCHES", "POSIX_FILE_NOT_ALIGNED",
                 "POSIX_MEM_NOT_ALIGNED") + tuple(f"POSIX_SIZE_{d}_{b}" for d in ("READ", "WRITE") for b in SIZE_BINS)
_MPIIO_SUMMED = ("MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS", "MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES",
                 "MPIIO_COLL_READS", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_READS", "MPIIO_SPLIT_WRITES",
                 "MPIIO_NB_READS", "MPIIO_NB_WRITES", "MPIIO_SYNCS", "MPIIO_HINTS", "MPIIO_VIEWS",
                 "MPIIO_BYTES_READ", "MPIIO_BYTES_WRITTEN", "MPIIO_RW_SWITCHES") + \
    tuple(f"MPIIO_SIZE_{d}_AGG_{b}" for d in ("READ", "WRITE") for b in SIZE_BINS)
_TIMES = ("READ_TIME", "WRITE_TIME", "META_TIME")
# A file's POSIX record is partial when MPI-IO moved more than twice its bytes, and at least 1 MiB more: every byte
# of an MPI-IO call reaches the file system through POSIX (data sieving and HDF5 metadata only add POSIX bytes).
PARTIAL_RATIO = 2.0
PARTIAL_MIN_BYTES = 1 << 20


def _files_add(rec: dict[str, Any], summed: tuple[str, ...], prefix: str, counters: Counter, times: Counter) -> None:
    """A record's `summed` counters and its read, write and metadata seconds (`prefix`_F_*_TIME) added to a file's
    (negative values, Darshan's "unknown", as 0)."""
    c, f = rec["counters"], rec.get("fcounters", {})
    for k in summed:
        counters[k] += max(0, int(c.get(k, 0)))
    for k in _TIMES:
        times[k] += max(0.0, float(f.get(f"{prefix}_F_{k}", 0.0)))


@dataclass
class Layout:
    """A file's Lustre layout (its first LUSTRE record): stripe size and count, the OSTs holding its stripes."""

    stripe_size: int
    stripe_count: int
    osts: list[int]


@dataclass
class Dataset:
    """An HDF5 dataset of the file (an H5D record): its chunk dimensions (none: contiguous), its element size, and
    whether its transfers were collective."""

    name: str
    chunk: list[int]
    datatype_size: int
    collective: bool

    @property
    def chunk_bytes(self) -> int:
        n = max(1, self.datatype_size)
        for x in self.chunk:
            n *= x
        return n


@dataclass
class FileTally:
    """One file's records added up: POSIX and MPI-IO counters summed over its records, times summed, the ranks
    that have a record (-1: Darshan reduced the file's records, it was shared by every rank)."""

    id: int
    path: str
    ranks: set[int] = field(default_factory=set)
    posix_ranks: set[int] = field(default_factory=set)     # the ranks of its POSIX records (-1: reduced)
    posix: Counter = field(default_factory=Counter)
    posix_times: Counter = field(default_factory=Counter)
    posix_records: int = 0
    alignment: int = 0
    shared_record: dict[str, Any] | None = None    # the POSIX rank -1 record (fastest/slowest rank counters)
    mpiio_shared_record: dict[str, Any] | None = None  # the MPI-IO rank -1 record (the same at the MPI-IO layer)
    rank_times: Counter = field(default_factory=Counter)    # per-rank records: each rank's read+write+meta seconds
    rank_bytes: Counter = field(default_factory=Counter)
    mpiio: Counter = field(default_factory=Counter)
    mpiio_times: Counter = field(default_factory=Counter)
    mpiio_records: int = 0
    lustre: Layout | None = None
    datasets: list[Dataset] = field(default_factory=list)
    h5f: bool = False

    def add_posix(self, rec: dict[str, Any]) -> None:
        c, f = rec["counters"], rec.get("fcounters", {})
        self.posix_records += 1
        self.ranks.add(rec["rank"])
        self.posix_ranks.add(rec["rank"])
        _files_add(rec, _POSIX_SUMMED, "POSIX", self.posix, self.posix_times)
        self.alignment = max(self.alignment, int(c.get("POSIX_FILE_ALIGNMENT", 0)))
        if rec["rank"] == -1:
            self.shared_record = rec
        else:
            self.rank_times[rec["rank"]] += sum(max(0.0, float(f.get(f"POSIX_F_{k}", 0.0))) for k in _TIMES)
            self.rank_bytes[rec["rank"]] += int(c.get("POSIX_BYTES_READ", 0)) + int(c.get("POSIX_BYTES_WRITTEN", 0))

    def add_mpiio(self, rec: dict[str, Any]) -> None:
        self.mpiio_records += 1
        self.ranks.add(rec["rank"])
        _files_add(rec, _MPIIO_SUMMED, "MPIIO", self.mpiio, self.mpiio_times)
        if rec["rank"] == -1:
            self.mpiio_shared_record = rec

    def shared(self, nprocs: int) -> bool:
        """Opened by more than one rank: Darshan's reduced record (rank -1) in a job of several processes, or
        records of several ranks."""
        return (-1 in self.ranks and nprocs > 1) or len(self.ranks - {-1}) > 1

    @property
    def posix_partial(self) -> bool:
        """The POSIX records hold less than MPI-IO moved through them (PARTIAL_RATIO, and at least PARTIAL_MIN_BYTES
        more): Darshan lost POSIX records of this file (its POSIX module ran out of memory), so POSIX's figures
        are not the file's."""
        if not self.posix_records or not self.mpiio_records:
            return False
        posix = self.posix["POSIX_BYTES_READ"] + self.posix["POSIX_BYTES_WRITTEN"]
        mpiio = self.mpiio["MPIIO_BYTES_READ"] + self.mpiio["MPIIO_BYTES_WRITTEN"]
        return mpiio - posix >= PARTIAL_MIN_BYTES and mpiio > PARTIAL_RATIO * posix

    @property
    def layer(self) -> str:
        """The layer whose bytes and times are the file's: POSIX (what reached the file system), MPI-IO where the
        log has no POSIX record of the file or its POSIX record is partial."""
        return "POSIX" if self.posix_records and not self.posix_partial else "MPI-IO"

    def bytes(self) -> tuple[int, int]:
        """(read, written) at the file's layer (POSIX's, else MPI-IO's)."""
        if self.layer == "POSIX":
            return self.posix["POSIX_BYTES_READ"], self.posix["POSIX_BYTES_WRITTEN"]
        return self.mpiio["MPIIO_BYTES_READ"], self.mpiio["MPIIO_BYTES_WRITTEN"]

    def times(self) -> Seconds:
        """Seconds in reads, writes and metadata as the application waited for them: MPI-IO's where the file has
        MPI-IO records (under collective buffering POSIX's are the aggregators' alone), else POSIX's."""
        t = self.mpiio_times if self.mpiio_records else self.posix_times
        return Seconds(t["READ_TIME"], t["WRITE_TIME"], t["META_TIME"])


def _files_dataset(name: str, rec: dict[str, Any]) -> Dataset:
    c = rec["counters"]
    dims = (int(c.get(f"H5D_CHUNK_SIZE_D{i}", 0)) for i in range(1, 6))
    return Dataset(name, [d for d in dims if d > 0], int(c.get("H5D_DATATYPE_SIZE", 0)),
                   int(c.get("H5D_USE_MPIIO_COLLECTIVE", 0)) > 0)


def tally_files(log: DarshanLog) -> list[FileTally]:
    """The tallies of the log's files, in the order their first record comes; the files of IGNORED_PREFIXES left
    out."""
    names = log.names
    files: dict[int, FileTally] = {}

    def get(fid: int) -> FileTally:
        if fid not in files:
            files[fid] = FileTally(fid, names.get(str(fid), f"<record {fid}>"))
        return files[fid]

    recs = log.records
    for rec in recs.get("POSIX", []):
        get(rec["id"]).add_posix(rec)
    for rec in recs.get("MPI-IO", []):
        get(rec["id"]).add_mpiio(rec)
    for rec in recs.get("LUSTRE", []):
        tally = get(rec["id"])
        if tally.lustre is None:
            tally.lustre = Layout(rec["stripe_size"], rec["stripe_count"], rec["osts"])
        tally.ranks.add(rec["rank"])
    for rec in recs.get("H5F", []):
        get(rec["id"]).h5f = True
    by_path = {f.path: fid for fid, f in files.items()}
    for rec in recs.get("H5D", []):
        # an H5D record names "FILE:/DATASET"; its file_rec_id links the file's record in logs that fill it in
        # (0 in the 3.21 logs)
        path, _, dataset = names.get(str(rec["id"]), "").partition(":/")
        parent = rec.get("file_rec_id")
        if parent not in files:
            parent = by_path.get(path)
        if parent is not None:
            get(parent).datasets.append(_files_dataset("/" + dataset, rec))
    return [f for f in files.values() if not f.path.startswith(IGNORED_PREFIXES)]
