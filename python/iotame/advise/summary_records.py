"""The records of a log's summary: per group of files and for the job, what the findings, the configuration and
the output read. Each record's to_json() gives its keys in the --json document (docs/advise.md); counters stay
mappings by Darshan's names, as the log has them."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from .records import Finding

__all__ = ["Seconds", "Totals", "Histogram", "DirectionAccess", "Access", "Alignment", "RequestCounts",
           "MpiioCalls", "Striping", "Hdf5Use", "SharedRankBalance", "PerRankBalance", "GroupSummary", "OstLoad",
           "UnreadModule", "JobSummary", "SkippedFiles", "Summary"]


@dataclass
class Seconds:
    """Seconds in reads, writes and metadata (open, close, stat, seek), summed over the ranks."""

    read: float
    write: float
    meta: float

    @property
    def total(self) -> float:
        return self.read + self.write + self.meta


@dataclass
class Totals:
    """Bytes and seconds of a set of files; `meta_share` the part of the I/O time metadata took."""

    bytes_read: int
    bytes_written: int
    seconds: Seconds
    io_seconds: float
    meta_share: float

    @property
    def moved(self) -> int:
        return self.bytes_read + self.bytes_written

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Histogram:
    """Darshan's request-size bins per direction, nonzero bins only (e.g. write {"1M_4M": 2048})."""

    read: dict[str, int]
    write: dict[str, int]

    def directions(self) -> dict[str, dict[str, int]]:
        return {"read": self.read, "write": self.write}


@dataclass
class DirectionAccess:
    """Requests of one direction: consecutive ones (starting where the last ended), sequential (forward, past a
    gap), random (backwards); the three add up to the requests."""

    requests: int
    consecutive: int
    sequential: int
    random: int


@dataclass
class Access:
    read: DirectionAccess
    write: DirectionAccess

    def of(self, direction: str) -> DirectionAccess:
        return self.read if direction == "read" else self.write


@dataclass
class Alignment:
    """The file system's block size (POSIX_FILE_ALIGNMENT) and the requests not starting at a multiple of it."""

    file_alignment: int
    not_aligned: int
    requests: int


@dataclass
class RequestCounts:
    read: int
    write: int


@dataclass
class MpiioCalls:
    """MPI-IO calls by kind, opens, views and bytes (MPIIO_* counters summed)."""

    independent_reads: int
    independent_writes: int
    collective_reads: int
    collective_writes: int
    split_reads: int
    split_writes: int
    nonblocking_reads: int
    nonblocking_writes: int
    independent_opens: int
    collective_opens: int
    views: int
    bytes_read: int
    bytes_written: int


@dataclass
class Striping:
    """The striping of a group's files that have a LUSTRE record: stripe size and count (the most common), every
    stripe count, the OSTs, and the most files of the group on one OST."""

    files: int
    stripe_size: int
    stripe_count: int
    stripe_counts: list[int]
    osts: list[int]
    files_per_ost_max: int


@dataclass
class Hdf5Use:
    """A group's HDF5 datasets: how many, the chunked ones, their smallest chunk in bytes, any collective
    transfer."""

    datasets: int
    chunked: list[str]
    chunk_bytes_min: int | None
    collective_transfers: bool


@dataclass
class SharedRankBalance:
    """Fastest and slowest rank from a shared file's reduced record (Darshan's *_FASTEST_RANK, *_SLOWEST_RANK);
    the slowest is compared with the fastest."""

    versus: ClassVar[str] = "fastest"
    source: str
    counters: dict[str, Any]
    fastest_rank: int | None
    fastest_bytes: int | None
    fastest_seconds: float | None
    slowest_rank: int | None
    slowest_bytes: int | None
    slowest_seconds: float | None
    variance_seconds: float | None
    variance_bytes: float | None

    @property
    def base_seconds(self) -> float | None:
        return self.fastest_seconds


@dataclass
class PerRankBalance:
    """Fastest, slowest and mean rank over per-rank records (each rank's files); the slowest is compared with the
    mean."""

    versus: ClassVar[str] = "mean"
    source: str
    ranks: int
    fastest_seconds: float
    slowest_seconds: float
    mean_seconds: float
    fastest_bytes: int
    slowest_bytes: int
    variance_seconds: float
    counters: dict[str, Any] = field(default_factory=dict)

    @property
    def base_seconds(self) -> float | None:
        return self.mean_seconds


def _summary_records_json(rec: Any) -> Any:
    return None if rec is None else asdict(rec)


@dataclass
class GroupSummary:
    """A group of files (one rule's glob, `match`): how many, one of them, shared, per-process or single, the
    ranks, totals, and what the counters say of its requests; `counters` every nonzero POSIX and MPI-IO counter
    summed; `findings` what find() found in it."""

    match: str
    files: int
    example: str
    kind: str
    ranks: int
    totals: Totals
    histogram_source: str | None
    histogram: Histogram
    access: Access | None
    alignment: Alignment | None
    rw_switches: int | None
    requests: RequestCounts
    mpiio: MpiioCalls | None
    lustre: Striping | None
    hdf5: Hdf5Use | None
    rank_balance: SharedRankBalance | PerRankBalance | None
    counters: dict[str, int]
    findings: list[Finding] = field(default_factory=list)
    partial: dict[str, bool] = field(default_factory=dict)  # Darshan's partial flags on the group's files, by module
    posix_ranks: int = 0        # ranks with POSIX records of the group's files (under collective buffering: the
                                # aggregators), what POSIX counters are normalised by

    def to_json(self) -> dict[str, Any]:
        j = _summary_records_json
        return {"match": self.match, "files": self.files, "example": self.example, "kind": self.kind,
                "ranks": self.ranks, **self.totals.to_json(), "histogram_source": self.histogram_source,
                "histogram": j(self.histogram), "access": j(self.access), "alignment": j(self.alignment),
                "rw_switches": self.rw_switches, "requests": j(self.requests), "mpiio": j(self.mpiio),
                "lustre": j(self.lustre), "hdf5": j(self.hdf5), "rank_balance": j(self.rank_balance),
                "counters": self.counters, "partial": self.partial,
                "findings": [f.to_json() for f in self.findings]}


@dataclass
class OstLoad:
    """Files and bytes per OST over the job (a file's bytes spread evenly over its OSTs); `stripe_counts` files
    by stripe count."""

    files: int
    osts_used: int
    highest_ost_id: int
    files_per_ost_max: int
    files_per_ost_mean: float
    bytes_per_ost_max: float
    bytes_per_ost_mean: float
    stripe_counts: dict[int, int]


@dataclass
class UnreadModule:
    """A module of the log that advise does not analyse (STDIO, DAOS, DFS, ...), with its bytes; `error` when
    pydarshan could not read it (bytes unknown)."""

    module: str
    bytes_read: int | None
    bytes_written: int | None
    error: str | None

    @property
    def moved(self) -> int:
        return (self.bytes_read or 0) + (self.bytes_written or 0)


@dataclass
class JobSummary:
    """The job: processes, run time, its files (shared, per process, the median's bytes), totals over every file,
    and its requests, calls and OSTs."""

    nprocs: int
    run_seconds: float
    files: int
    shared_files: int
    per_process_files: int
    median_file_bytes: int
    totals: Totals
    io_seconds_per_process: float | None
    histogram_source: str | None
    histogram: Histogram
    access: Access | None
    mpiio: MpiioCalls | None
    lustre: OstLoad | None
    unread: list[UnreadModule] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        j = _summary_records_json
        return {"nprocs": self.nprocs, "run_seconds": self.run_seconds, "files": self.files,
                "shared_files": self.shared_files, "per_process_files": self.per_process_files,
                "median_file_bytes": self.median_file_bytes, **self.totals.to_json(),
                "io_seconds_per_process": self.io_seconds_per_process, "histogram_source": self.histogram_source,
                "histogram": j(self.histogram), "access": j(self.access), "mpiio": j(self.mpiio),
                "lustre": j(self.lustre), "unread_modules": [asdict(u) for u in self.unread]}


@dataclass
class SkippedFiles:
    """The files beyond --max-files, summed, and why they were not analysed."""

    files: int
    totals: Totals
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"files": self.files, **self.totals.to_json(), "reason": self.reason}


@dataclass
class Summary:
    """A log's summary: the job, its groups of files (those that matter first), the files skipped, notes on what
    the log lacks, the modules the log holds, and each file's bytes and I/O seconds (many_small_files)."""

    job: JobSummary
    groups: list[GroupSummary]
    skipped: SkippedFiles | None
    notes: list[str]
    modules: list[str]
    file_loads: list[tuple[int, float]] = field(default_factory=list)   # every file's (bytes, I/O seconds)
