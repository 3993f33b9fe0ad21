"""Findings: what the counters of a Darshan log say is wrong with a job's I/O, each with an id, a severity, a
sentence and the counters (with their values) that show it. Thresholds are named constants with their reason.

A finding concerns one group of files (its `match`, the glob of its rule) or the whole job (`match` null).
"""
from __future__ import annotations

from .records import FINDING_IDS, Finding
from ..render import fmt_size
from .summary_records import GroupSummary, JobSummary, Summary

__all__ = ["Finding", "find", "small_time_share", "FINDING_IDS", "SMALL_BINS", "BIN_UPPER", "SMALL_SHARE",
           "REQUEST_COST_BYTES", "SMALL_TIME_SHARE",
           "MIN_REQUESTS_PER_RANK", "MIN_BYTES", "UNALIGNED_SHARE", "NONCONSECUTIVE_SHARE", "STRIPE_MIN_BYTES",
           "STRIPE_SHARE", "FILES_PER_OST_MAX", "OST_BYTES_IMBALANCE", "IMBALANCE_RATIO", "IMBALANCE_RUN_SHARE",
           "IMBALANCE_MIN_SECONDS", "RMW_SWITCHES_PER_RANK", "META_SHARE", "META_SECONDS_PER_RANK", "MANY_FILES",
           "SMALL_FILE_BYTES", "SMALL_FILES_TIME_SHARE", "SMALL_CHUNK_BYTES", "UNREAD_SHARE", "CRITICAL_SHARE",
           "INFO_SHARE"]

# Requests in Darshan's bins below 100 KB are small: storage reaches its bandwidth with requests of about 1 MiB
# (the profiles of docs/calibrate.md rise up to there), and 100K is the bin boundary below it.
SMALL_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K")
BIN_UPPER = {"0_100": 100, "100_1K": 1000, "1K_10K": 10_000, "10K_100K": 100_000}   # each small bin's upper edge
SMALL_SHARE = 0.5              # most of a file's requests: a few small header writes do not make a pattern
REQUEST_COST_BYTES = 256 << 10  # a request's fixed cost (latency) in bytes of transfer: storage reaches its
                               # bandwidth with requests of about 1 MiB, so a request costs about a quarter of that
                               # before its first byte moves
SMALL_TIME_SHARE = 0.1         # the small requests take (by that estimate) a tenth of the file's I/O time: 60,000
                               # HDF5 metadata reads beside 1.6 TB in 100 MB reads are not what the job waits on
MIN_REQUESTS_PER_RANK = 10     # fewer requests per rank cost each rank milliseconds, whatever the job's size
MIN_BYTES = 1 << 20            # files that moved less than 1 MiB are not worth a rule's data findings
UNALIGNED_SHARE = 0.5          # most requests not starting at a multiple of POSIX_FILE_ALIGNMENT (the block size)
NONCONSECUTIVE_SHARE = 0.5     # most requests not where the rank's last one ended: the ranks' pieces interleave
STRIPE_MIN_BYTES = 1 << 30     # below 1 GiB written, one storage target writes a shared file within seconds
STRIPE_SHARE = 0.5             # striped over at most half of the targets the writers could use
FILES_PER_OST_MAX = 8          # more files than this on one OST: Seelam, Kerstens and Teller found 1 to 8 concurrent
                               # streams best on a disk target; more make it position between them
OST_BYTES_IMBALANCE = 2.0      # the busiest OST got twice the mean bytes: it alone sets the job's write time
IMBALANCE_RATIO = 2.0          # the slowest rank took twice the fastest's (or the mean's) time
IMBALANCE_RUN_SHARE = 0.05     # ... and the difference is at least 5 % of the job's run time: the other ranks wait
IMBALANCE_MIN_SECONDS = 1.0    # ... and at least a second: below it imbalance costs little
RMW_SWITCHES_PER_RANK = 16     # read/write alternations per rank on a written file: a read-modify-write pattern,
                               # not a header read before writing (a rank that reads then writes switches once)
META_SHARE = 0.3               # metadata (open, close, stat, seek) took 30 % of the I/O time
META_SECONDS_PER_RANK = 0.1    # ... and at least 0.1 s per rank: below it opening files costs the run nothing
MANY_FILES = 100               # a job of more small files than this ...
SMALL_FILE_BYTES = 1 << 20     # ... (below 1 MiB each) ...
SMALL_FILES_TIME_SHARE = 0.25  # ... that took a quarter of the job's I/O time: time goes to metadata servers
UNREAD_SHARE = 0.1             # modules advise does not analyse (STDIO, DAOS) moved a tenth of the job's bytes
SMALL_CHUNK_BYTES = 1 << 20    # HDF5 chunks below 1 MiB make small requests whatever the hints

CRITICAL_SHARE = 0.5          # a group's findings are critical when it holds half of the job's I/O time ...
INFO_SHARE = 0.05             # ... and only informative below 5 % of it: fixing them cannot gain more


def _find_small(g: GroupSummary) -> tuple[int, int, int, dict[str, int]]:
    """(small requests, requests, the small requests' bytes at most (each at its bin's upper edge), the counters)
    of a group's histogram."""
    small = total = small_bytes = 0
    counters: dict[str, int] = {}
    for d, bins in g.histogram.directions().items():
        for b, n in bins.items():
            name = f"POSIX_SIZE_{d.upper()}_{b}" if g.histogram_source == "POSIX" else \
                f"MPIIO_SIZE_{d.upper()}_AGG_{b}"
            counters[name] = n
            total += n
            if b in SMALL_BINS:
                small += n
                small_bytes += n * BIN_UPPER[b]
    return small, total, small_bytes, counters


def _find_calls(g: GroupSummary) -> tuple[int, int]:
    """(collective, independent) MPI-IO data calls of a group (split collective ones count as collective,
    nonblocking ones as independent)."""
    mpi = g.mpiio
    if not mpi:
        return 0, 0
    return (mpi.collective_reads + mpi.collective_writes + mpi.split_reads + mpi.split_writes,
            mpi.independent_reads + mpi.independent_writes + mpi.nonblocking_reads + mpi.nonblocking_writes)


def small_time_share(small: int, total: int, small_bytes: int, moved: int) -> float:
    """The share of a file's I/O time its small requests take, estimated: each request costs REQUEST_COST_BYTES of
    transfer plus its bytes (the small ones at most their bin's upper edge)."""
    cost = moved + total * REQUEST_COST_BYTES
    return min(1.0, (small_bytes + small * REQUEST_COST_BYTES) / cost) if cost else 0.0


def _find_small_requests(g: GroupSummary) -> Finding | None:
    """Small requests weigh by the time they take: most of the requests, at least MIN_REQUESTS_PER_RANK per rank,
    and SMALL_TIME_SHARE of the group's I/O time by small_time_share's estimate."""
    small, total, small_bytes, hist = _find_small(g)
    moved = g.totals.moved
    ranks = max(1, g.ranks)
    if moved < MIN_BYTES or not total or small / total < SMALL_SHARE or small / ranks < MIN_REQUESTS_PER_RANK:
        return None
    share = small_time_share(small, total, small_bytes, moved)
    if share < SMALL_TIME_SHARE:
        return None
    coll, indep = _find_calls(g)
    mpi = g.mpiio
    figure = dict(quantity="I/O time in requests below 100 KB per I/O second (estimated)", value=round(share, 4),
                  threshold=SMALL_TIME_SHARE)
    said = (f"{small:,} of {total:,} requests ({small / total:.0%}, {small / ranks:,.0f} per rank) were below "
            f"100 KB and take about {share:.0%} of the I/O time on {fmt_size(moved)}")
    if coll and coll >= indep:
        return Finding("collective_small_requests", "warning", g.match,
                       f"collective calls, yet {said}: collective buffering did not aggregate them",
                       {**hist, "MPIIO_COLL_READS": mpi.collective_reads, "MPIIO_COLL_WRITES": mpi.collective_writes},
                       **figure)
    return Finding("small_requests", "warning", g.match,
                   said + (f"; the MPI-IO calls were mostly independent ({indep:,} against {coll:,} collective)"
                           if mpi else ""),
                   {**hist, **({"MPIIO_INDEP_WRITES": mpi.independent_writes,
                                "MPIIO_INDEP_READS": mpi.independent_reads,
                                "MPIIO_COLL_WRITES": mpi.collective_writes,
                                "MPIIO_COLL_READS": mpi.collective_reads} if mpi else {})}, **figure)


def _find_unaligned(g: GroupSummary) -> Finding | None:
    al = g.alignment
    if not al or g.totals.moved < MIN_BYTES or al.file_alignment <= 1 or not al.requests or \
            al.requests / max(1, g.ranks) < MIN_REQUESTS_PER_RANK or al.not_aligned / al.requests < UNALIGNED_SHARE:
        return None
    return Finding("unaligned_requests", "warning", g.match,
                   f"{al.not_aligned:,} of {al.requests:,} requests ({al.not_aligned / al.requests:.0%}) did not "
                   f"start at a multiple of the file system's {al.file_alignment:,}-byte blocks",
                   {"POSIX_FILE_NOT_ALIGNED": al.not_aligned, "POSIX_FILE_ALIGNMENT": al.file_alignment,
                    "POSIX_READS": g.requests.read, "POSIX_WRITES": g.requests.write},
                   quantity="unaligned requests per request", value=round(al.not_aligned / al.requests, 4),
                   threshold=UNALIGNED_SHARE)


def _find_independent(g: GroupSummary) -> list[Finding]:
    """independent_shared and interleaved_no_collective: a shared file without collective calls."""
    out: list[Finding] = []
    coll, indep = _find_calls(g)
    mpi = g.mpiio
    if g.kind != "shared" or g.ranks <= 1 or coll or g.totals.moved < MIN_BYTES:
        return out
    # a few large independent calls per rank need no aggregation: MIN_REQUESTS_PER_RANK of them
    if mpi and indep and indep / g.ranks >= MIN_REQUESTS_PER_RANK:
        out.append(Finding("independent_shared", "warning", g.match,
                           f"{g.ranks:,} ranks accessed the shared file with independent MPI-IO calls only "
                           f"({indep / g.ranks:,.1f} per rank, none collective): the MPI library cannot aggregate "
                           f"their requests",
                           {"MPIIO_INDEP_READS": mpi.independent_reads, "MPIIO_INDEP_WRITES": mpi.independent_writes,
                            "MPIIO_NB_READS": mpi.nonblocking_reads, "MPIIO_NB_WRITES": mpi.nonblocking_writes,
                            "MPIIO_COLL_READS": 0, "MPIIO_COLL_WRITES": 0},
                           quantity="independent MPI-IO calls per rank (none collective)",
                           value=round(indep / g.ranks, 2), threshold=MIN_REQUESTS_PER_RANK))
    acc = g.access
    if acc:
        n = acc.read.requests + acc.write.requests
        consec = acc.read.consecutive + acc.write.consecutive
        if n and n / g.ranks >= MIN_REQUESTS_PER_RANK and (n - consec) / n >= NONCONSECUTIVE_SHARE:
            out.append(Finding("interleaved_no_collective", "warning", g.match,
                               f"{n - consec:,} of {n:,} requests ({(n - consec) / n:.0%}) on the shared file did "
                               f"not continue the rank's last one (the ranks' pieces interleave) and no collective "
                               f"call gathered them",
                               {"POSIX_READS": acc.read.requests, "POSIX_WRITES": acc.write.requests,
                                "POSIX_CONSEC_READS": acc.read.consecutive,
                                "POSIX_CONSEC_WRITES": acc.write.consecutive,
                                "MPIIO_COLL_READS": mpi.collective_reads if mpi else None,
                                "MPIIO_COLL_WRITES": mpi.collective_writes if mpi else None},
                               quantity="non-consecutive requests per request", value=round((n - consec) / n, 4),
                               threshold=NONCONSECUTIVE_SHARE))
    return out


def _find_stripe(g: GroupSummary, job: JobSummary) -> Finding | None:
    lu = g.lustre
    osts_known = job.lustre.highest_ost_id + 1 if job.lustre else 0
    written = g.totals.bytes_written
    if g.kind != "shared" or g.ranks <= 1 or not lu or written < STRIPE_MIN_BYTES:
        return None
    want = min(g.ranks, max(osts_known, lu.stripe_count))
    if not want or lu.stripe_count / want > STRIPE_SHARE:
        return None
    return Finding("stripe_count", "warning", g.match,
                   f"{g.ranks:,} ranks wrote {fmt_size(written)} to a file striped over {lu.stripe_count} OST(s), "
                   f"while the log shows at least {osts_known} OSTs",
                   {"LUSTRE_STRIPE_WIDTH": lu.stripe_count, "LUSTRE_STRIPE_SIZE": lu.stripe_size,
                    "POSIX_BYTES_WRITTEN": written, "ranks": g.ranks, "OSTs in the log": osts_known},
                   osts=osts_known, quantity="stripe count per min(ranks, OSTs)",
                   value=round(lu.stripe_count / want, 4), threshold=STRIPE_SHARE)


def _find_imbalance(g: GroupSummary, job: JobSummary) -> Finding | None:
    """The slowest rank against the fastest (shared file, at the layer the application called: MPI-IO where the
    file has a reduced MPI-IO record) or the mean (per-rank records): IMBALANCE_RATIO, and a difference of
    IMBALANCE_RUN_SHARE of the run time and at least IMBALANCE_MIN_SECONDS."""
    rb = g.rank_balance
    if not rb or rb.slowest_seconds is None or rb.fastest_seconds is None:
        return None
    slow, base = float(rb.slowest_seconds), float(rb.base_seconds or 0.0)
    ratio = slow / max(base, 1e-9)
    lost = slow - base
    if ratio < IMBALANCE_RATIO or lost < max(IMBALANCE_MIN_SECONDS, IMBALANCE_RUN_SHARE * job.run_seconds):
        return None
    run = f", {lost / job.run_seconds:.0%} of the run time" if job.run_seconds > 0 else ""
    return Finding("rank_imbalance", "warning", g.match,
                   f"the slowest rank spent {slow:,.2f} s in I/O on these files, {ratio:,.1f}x the {rb.versus} "
                   f"rank's {base:,.2f} s ({lost:,.1f} s more{run}; {rb.source})", dict(rb.counters),
                   quantity=f"slowest rank's I/O time per {rb.versus} rank's", value=round(ratio, 3),
                   threshold=IMBALANCE_RATIO)


def _find_rmw(g: GroupSummary) -> Finding | None:
    """Read/write alternations per rank that made POSIX calls on the files (Darshan sums POSIX_RW_SWITCHES over
    the ranks of a shared file's record; under collective buffering only the aggregators have POSIX records): one
    read before writing is one switch per rank, whatever the job's size."""
    written, read = g.totals.bytes_written, g.totals.bytes_read
    # reads of 0 bytes count: data sieving reads the holes of a file being written, past its end
    if g.rw_switches is None or not written or not (read or g.requests.read):
        return None
    ranks = max(1, g.posix_ranks)
    per_rank = g.rw_switches / ranks
    if per_rank < RMW_SWITCHES_PER_RANK:
        return None
    return Finding("read_modify_write", "warning", g.match,
                   f"reads and writes alternated {g.rw_switches:,} times on a written file, {per_rank:,.1f} per rank "
                   f"of the {ranks:,} with POSIX records: a read-modify-write pattern (data sieving, or partial "
                   f"blocks rewritten)",
                   {"POSIX_RW_SWITCHES": g.rw_switches, "ranks with POSIX records": ranks,
                    "POSIX_READS": g.requests.read,
                    "POSIX_BYTES_READ": read,
                    "POSIX_BYTES_WRITTEN": written},
                   quantity="read/write switches per rank", value=round(per_rank, 2),
                   threshold=RMW_SWITCHES_PER_RANK)


def _find_meta(totals, ranks: int, match: str | None, where: str, layer: str) -> Finding | None:
    """Metadata's share of the I/O time; `layer` names the counters the seconds come from (MPIIO for files with
    MPI-IO records, POSIX else, or both over a job)."""
    t = totals.seconds
    per_rank = t.meta / max(1, ranks)
    if totals.meta_share < META_SHARE or per_rank < META_SECONDS_PER_RANK:
        return None
    names = {k: f"{layer}_F_{k}_TIME" for k in ("META", "READ", "WRITE")} if layer in ("MPIIO", "POSIX") else \
        {k: f"{k.lower()} seconds (MPI-IO where a file has it, else POSIX)" for k in ("META", "READ", "WRITE")}
    return Finding("metadata_share", "warning", match,
                   f"metadata (open, close, stat, seek, sync) took {totals.meta_share:.0%} of the I/O time {where} "
                   f"({t.meta:,.1f} s summed over the ranks, {per_rank:,.2f} s per rank)",
                   {names["META"]: t.meta, names["READ"]: t.read, names["WRITE"]: t.write},
                   quantity="metadata seconds per I/O second", value=round(totals.meta_share, 4),
                   threshold=META_SHARE)


def _find_chunks(g: GroupSummary) -> Finding | None:
    h5 = g.hdf5
    if not h5 or h5.chunk_bytes_min is None or h5.chunk_bytes_min >= SMALL_CHUNK_BYTES or g.totals.moved < MIN_BYTES:
        return None
    return Finding("small_hdf5_chunks", "warning", g.match,
                   f"chunked datasets ({', '.join(h5.chunked[:4])}) have chunks of {h5.chunk_bytes_min:,} bytes: "
                   f"each chunk is a request of its own",
                   {"H5D_CHUNK_SIZE_D*·H5D_DATATYPE_SIZE": h5.chunk_bytes_min},
                   quantity="bytes per chunk", value=h5.chunk_bytes_min, threshold=SMALL_CHUNK_BYTES)


def _find_group(g: GroupSummary, job: JobSummary) -> list[Finding]:
    out = [_find_small_requests(g), _find_unaligned(g), *_find_independent(g), _find_stripe(g, job),
           _find_imbalance(g, job), _find_rmw(g),
           _find_meta(g.totals, g.ranks, g.match, "on these files", "MPIIO" if g.mpiio else "POSIX"),
           _find_chunks(g)]
    return [f for f in out if f is not None]


def _find_share_severity(share: float) -> str:
    return "critical" if share >= CRITICAL_SHARE else ("info" if share < INFO_SHARE else "warning")


def _find_ost(job: JobSummary) -> Finding | None:
    lu = job.lustre
    if not lu:
        return None
    heavy = lu.files_per_ost_max > FILES_PER_OST_MAX
    skew = lu.bytes_per_ost_max / lu.bytes_per_ost_mean if lu.bytes_per_ost_mean > 0 else 0.0
    skewed = lu.osts_used >= 2 and skew >= OST_BYTES_IMBALANCE
    if not heavy and not skewed:
        return None
    why = (f"{lu.files:,} files on {lu.osts_used} OSTs: up to {lu.files_per_ost_max} files share one OST"
           if heavy else "") + ("; " if heavy and skewed else "") + \
        (f"the busiest OST got {skew:.1f}x the mean bytes" if skewed else "")
    moved = job.totals.moved
    share = lu.bytes_per_ost_mean * lu.osts_used / moved if moved else 0.0
    figure = dict(quantity="files on the busiest OST", value=lu.files_per_ost_max, threshold=FILES_PER_OST_MAX) \
        if heavy else dict(quantity="bytes of the busiest OST per OST's mean", value=round(skew, 3),
                           threshold=OST_BYTES_IMBALANCE)
    return Finding("ost_imbalance", _find_share_severity(share) if moved else "warning", None, why,
                   {"LUSTRE files": lu.files, "OSTs used (LUSTRE_OST_ID_*)": lu.osts_used,
                    "files per OST, most": lu.files_per_ost_max,
                    "files per OST, mean": round(lu.files_per_ost_mean, 2),
                    "bytes per OST, most": round(lu.bytes_per_ost_max),
                    "bytes per OST, mean": round(lu.bytes_per_ost_mean),
                    "LUSTRE_STRIPE_WIDTH": lu.stripe_counts},
                   streams=lu.files_per_ost_max, **figure)


def _find_small_files(summary: Summary, small: list[tuple[int, float]]) -> Finding | None:
    """Many files below SMALL_FILE_BYTES that took SMALL_FILES_TIME_SHARE of the job's I/O time; `small` the
    (bytes, seconds) of each such file."""
    job = summary.job
    io = job.totals.io_seconds
    if len(small) <= MANY_FILES or io <= 0 or "POSIX" not in summary.modules:
        return None
    seconds = sum(t for _, t in small)
    if seconds / io < SMALL_FILES_TIME_SHARE:
        return None
    sizes = sorted(b for b, _ in small)
    return Finding("many_small_files", "warning", None,
                   f"{len(small):,} of the job's {job.files:,} files moved less than {fmt_size(SMALL_FILE_BYTES)} "
                   f"each (their median {fmt_size(sizes[len(sizes) // 2])}) and took {seconds / io:.0%} of its I/O "
                   f"time: the job's time goes to opening and closing files rather than moving data",
                   {"small files": len(small), "files (POSIX records)": job.files,
                    "median bytes per small file": sizes[len(sizes) // 2], "their seconds": round(seconds, 3),
                    "POSIX_F_META_TIME": job.totals.seconds.meta},
                   quantity="small files' I/O seconds per I/O second", value=round(seconds / io, 4),
                   threshold=SMALL_FILES_TIME_SHARE)


def _find_unread(job: JobSummary) -> Finding | None:
    """I/O through modules advise does not analyse (STDIO, DAOS): their share of all the bytes the log counts."""
    unread = sum(u.moved for u in job.unread)
    total = unread + job.totals.moved
    if unread < MIN_BYTES or unread / total < UNREAD_SHARE:
        return None
    names = ", ".join(f"{u.module}: {fmt_size(u.moved)}" for u in job.unread if u.moved)
    return Finding("unread_modules", _find_share_severity(unread / total), None,
                   f"{unread / total:.0%} of the job's bytes went through modules advise does not analyse "
                   f"({names}, not analysed)",
                   {f"{u.module} bytes": u.moved for u in job.unread if u.moved},
                   quantity="bytes of unanalysed modules per byte", value=round(unread / total, 4),
                   threshold=UNREAD_SHARE)


def _find_job(summary: Summary) -> list[Finding]:
    job = summary.job
    small = [(b, t) for b, t in summary.file_loads if b < SMALL_FILE_BYTES]
    out = [_find_ost(job), _find_small_files(summary, small), _find_unread(job)]
    if not any(f.id == "metadata_share" for g in summary.groups for f in g.findings):
        out.append(_find_meta(job.totals, job.nprocs, None, "of the job, spread over many files",
                              "MPIIO" if job.mpiio and "POSIX" not in summary.modules else
                              ("POSIX" if not job.mpiio else "both")))
    return [f for f in out if f is not None]


def _find_severity(g: GroupSummary, job: JobSummary) -> str:
    """A group's findings weigh by the group's share of the job: its I/O time (its bytes when the log has no
    times)."""
    if job.totals.io_seconds > 0:
        share = g.totals.io_seconds / job.totals.io_seconds
    else:
        moved = job.totals.moved
        share = g.totals.moved / moved if moved else 0.0
    return "critical" if share >= CRITICAL_SHARE else ("info" if share < INFO_SHARE else "warning")


def find(summary: Summary) -> list[Finding]:
    """Every finding of a summary (summary.summarize_log's): per group (each group also gets its own, in its
    `findings`), then the job's. A group's findings are `critical` when the group holds at least half
    of the job's I/O time, `info` below 5 %, else `warning`; so are ost_imbalance's by the bytes of the files on
    Lustre and unread_modules' by their bytes; the job's others are `warning`."""
    out: list[Finding] = []
    for g in summary.groups:
        g.findings = _find_group(g, summary.job)
        severity = _find_severity(g, summary.job)
        for f in g.findings:
            f.severity = severity
        out.extend(g.findings)
    out.extend(_find_job(summary))
    return out
