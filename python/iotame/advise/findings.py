"""Findings: what the counters of a Darshan log say is wrong with a job's I/O, each with an id, a severity, a
sentence and the counters (with their values) that show it. Thresholds are named constants with their reason.

A finding concerns one group of files (its `match`, the glob of its rule) or the whole job (`match` null).
"""
from __future__ import annotations

from .records import FINDING_IDS, Finding
from .summary_records import GroupSummary, JobSummary, Summary

__all__ = ["Finding", "find", "FINDING_IDS", "SMALL_BINS", "SMALL_SHARE", "SMALL_MIN_REQUESTS", "MIN_BYTES",
           "UNALIGNED_SHARE", "NONCONSECUTIVE_SHARE", "STRIPE_MIN_BYTES", "FILES_PER_OST_MAX",
           "OST_BYTES_IMBALANCE", "IMBALANCE_RATIO", "IMBALANCE_MIN_SECONDS", "RMW_MIN_SWITCHES", "META_SHARE",
           "META_MIN_SECONDS", "MANY_FILES", "SMALL_FILE_BYTES", "SMALL_CHUNK_BYTES", "CRITICAL_SHARE", "INFO_SHARE"]

# Requests in Darshan's bins below 100 KB are small: storage reaches its bandwidth with requests of about 1 MiB
# (the profiles of docs/calibrate.md rise up to there), and 100K is the bin boundary below it.
SMALL_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K")
SMALL_SHARE = 0.5              # most of a file's requests: a few small header writes do not make a pattern
SMALL_MIN_REQUESTS = 100       # fewer small requests cost milliseconds whatever their size
MIN_BYTES = 1 << 20            # files that moved less than 1 MiB are not worth a rule's data findings
UNALIGNED_SHARE = 0.5          # most requests not starting at a multiple of POSIX_FILE_ALIGNMENT (the block size)
NONCONSECUTIVE_SHARE = 0.5     # most requests not where the rank's last one ended: the ranks' pieces interleave
STRIPE_MIN_BYTES = 1 << 30     # below 1 GiB written, one storage target writes a shared file within seconds
FILES_PER_OST_MAX = 8          # more files than this on one OST: Seelam, Kerstens and Teller found 1 to 8 concurrent
                               # streams best on a disk target; more make it position between them
OST_BYTES_IMBALANCE = 2.0      # the busiest OST got twice the mean bytes: it alone sets the job's write time
IMBALANCE_RATIO = 2.0          # the slowest rank took twice the fastest's (or the mean's) time
IMBALANCE_MIN_SECONDS = 1.0    # ... and at least a second more: below it imbalance costs little
RMW_MIN_SWITCHES = 16          # read/write alternations on a written file: a read-modify-write pattern, not a
                               # header read before writing
META_SHARE = 0.3               # metadata (open, close, stat, seek) took 30 % of the I/O time
META_MIN_SECONDS = 1.0         # ... and at least a second summed over the ranks
MANY_FILES = 100               # a job of more files than this ...
SMALL_FILE_BYTES = 1 << 20     # ... whose median file is below 1 MiB spends its time on metadata servers
SMALL_CHUNK_BYTES = 1 << 20    # HDF5 chunks below 1 MiB make small requests whatever the hints

CRITICAL_SHARE = 0.5          # a group's findings are critical when it holds half of the job's I/O time ...
INFO_SHARE = 0.05             # ... and only informative below 5 % of it: fixing them cannot gain more


def _find_small(g: GroupSummary) -> tuple[int, int, dict[str, int]]:
    """(small requests, requests, the counters) of a group's histogram."""
    small = total = 0
    counters: dict[str, int] = {}
    for d, bins in g.histogram.directions().items():
        for b, n in bins.items():
            name = f"POSIX_SIZE_{d.upper()}_{b}" if g.histogram_source == "POSIX" else \
                f"MPIIO_SIZE_{d.upper()}_AGG_{b}"
            counters[name] = n
            total += n
            if b in SMALL_BINS:
                small += n
    return small, total, counters


def _find_group(g: GroupSummary, job: JobSummary) -> list[Finding]:
    out: list[Finding] = []
    m = g.match
    moved = g.totals.moved
    mpi = g.mpiio
    coll = (mpi.collective_reads + mpi.collective_writes + mpi.split_reads + mpi.split_writes) if mpi else 0
    indep = (mpi.independent_reads + mpi.independent_writes + mpi.nonblocking_reads +
             mpi.nonblocking_writes) if mpi else 0
    shared = g.kind == "shared" and g.ranks > 1
    small, total, hist = _find_small(g)
    if moved >= MIN_BYTES and small >= SMALL_MIN_REQUESTS and total and small / total >= SMALL_SHARE:
        if coll and coll >= indep:
            out.append(Finding("collective_small_requests", "warning", m,
                               f"collective calls, yet {small} of {total} requests that reached the file system "
                               f"were below 100 KB: collective buffering did not aggregate them",
                               {**hist, "MPIIO_COLL_READS": mpi.collective_reads,
                                "MPIIO_COLL_WRITES": mpi.collective_writes}))
        else:
            out.append(Finding("small_requests", "warning", m,
                               f"{small} of {total} requests ({small / total:.0%}) were below 100 KB" +
                               (f"; the MPI-IO calls were mostly independent ({indep} against {coll} collective)"
                                if mpi else ""),
                               {**hist, **({"MPIIO_INDEP_WRITES": mpi.independent_writes,
                                            "MPIIO_INDEP_READS": mpi.independent_reads,
                                            "MPIIO_COLL_WRITES": mpi.collective_writes,
                                            "MPIIO_COLL_READS": mpi.collective_reads} if mpi else {})}))
    al = g.alignment
    if al and moved >= MIN_BYTES and al.file_alignment > 1 and al.requests >= SMALL_MIN_REQUESTS and \
            al.not_aligned / al.requests >= UNALIGNED_SHARE:
        out.append(Finding("unaligned_requests", "warning", m,
                           f"{al.not_aligned} of {al.requests} requests did not start at a multiple of the "
                           f"file system's {al.file_alignment}-byte blocks",
                           {"POSIX_FILE_NOT_ALIGNED": al.not_aligned, "POSIX_FILE_ALIGNMENT": al.file_alignment,
                            "POSIX_READS": g.requests.read, "POSIX_WRITES": g.requests.write}))
    if shared and mpi and indep and not coll and moved >= MIN_BYTES:
        out.append(Finding("independent_shared", "warning", m,
                           f"{g.ranks} ranks accessed the shared file with independent MPI-IO calls only: the "
                           f"MPI library cannot aggregate their requests",
                           {"MPIIO_INDEP_READS": mpi.independent_reads, "MPIIO_INDEP_WRITES": mpi.independent_writes,
                            "MPIIO_NB_READS": mpi.nonblocking_reads, "MPIIO_NB_WRITES": mpi.nonblocking_writes,
                            "MPIIO_COLL_READS": 0, "MPIIO_COLL_WRITES": 0}))
    acc = g.access
    if shared and not coll and acc and moved >= MIN_BYTES:
        n = acc.read.requests + acc.write.requests
        consec = acc.read.consecutive + acc.write.consecutive
        if n >= SMALL_MIN_REQUESTS and (n - consec) / n >= NONCONSECUTIVE_SHARE:
            out.append(Finding("interleaved_no_collective", "warning", m,
                               f"{n - consec} of {n} requests on the shared file did not continue the rank's last "
                               f"one (the ranks' pieces interleave) and no collective call gathered them",
                               {"POSIX_READS": acc.read.requests, "POSIX_WRITES": acc.write.requests,
                                "POSIX_CONSEC_READS": acc.read.consecutive,
                                "POSIX_CONSEC_WRITES": acc.write.consecutive,
                                "MPIIO_COLL_READS": mpi.collective_reads if mpi else None,
                                "MPIIO_COLL_WRITES": mpi.collective_writes if mpi else None}))
    lu = g.lustre
    osts_known = job.lustre.highest_ost_id + 1 if job.lustre else 0
    written = g.totals.bytes_written
    if shared and lu and written >= STRIPE_MIN_BYTES:
        want = min(g.ranks, max(osts_known, lu.stripe_count))
        if lu.stripe_count * 2 <= want:
            out.append(Finding("stripe_count", "warning", m,
                               f"{g.ranks} ranks wrote {written:,} bytes to a file striped over "
                               f"{lu.stripe_count} OST(s), while the log shows at least {osts_known} OSTs",
                               {"LUSTRE_STRIPE_WIDTH": lu.stripe_count, "LUSTRE_STRIPE_SIZE": lu.stripe_size,
                                "POSIX_BYTES_WRITTEN": written, "ranks": g.ranks,
                                "OSTs in the log": osts_known}, osts=osts_known))
    rb = g.rank_balance
    if rb and rb.slowest_seconds is not None and rb.fastest_seconds is not None:
        slow = float(rb.slowest_seconds)
        base = float(rb.base_seconds or 0.0)
        if slow - base >= IMBALANCE_MIN_SECONDS and slow >= IMBALANCE_RATIO * max(base, 1e-9):
            out.append(Finding("rank_imbalance", "warning", m,
                               f"the slowest rank spent {slow:.2f} s in I/O on these files, "
                               f"{slow / max(base, 1e-9):.1f}x the {rb.versus} rank's {base:.2f} s ({rb.source})",
                               dict(rb.counters)))
    if g.rw_switches is not None and g.rw_switches >= RMW_MIN_SWITCHES and written and g.totals.bytes_read:
        out.append(Finding("read_modify_write", "warning", m,
                           f"reads and writes alternated {g.rw_switches} times on a written file: a "
                           f"read-modify-write pattern (data sieving, or partial blocks rewritten)",
                           {"POSIX_RW_SWITCHES": g.rw_switches, "POSIX_BYTES_READ": g.totals.bytes_read,
                            "POSIX_BYTES_WRITTEN": written}))
    t = g.totals.seconds
    if t.meta >= META_MIN_SECONDS and g.totals.meta_share >= META_SHARE:
        out.append(Finding("metadata_share", "warning", m,
                           f"metadata (open, close, stat, seek) took {g.totals.meta_share:.0%} of the I/O time on "
                           f"these files ({t.meta:.1f} s summed over the ranks)",
                           {"POSIX_F_META_TIME": t.meta, "POSIX_F_READ_TIME": t.read, "POSIX_F_WRITE_TIME": t.write}))
    h5 = g.hdf5
    if h5 and h5.chunk_bytes_min is not None and h5.chunk_bytes_min < SMALL_CHUNK_BYTES and moved >= MIN_BYTES:
        out.append(Finding("small_hdf5_chunks", "warning", m,
                           f"chunked datasets ({', '.join(h5.chunked[:4])}) have chunks of "
                           f"{h5.chunk_bytes_min:,} bytes: each chunk is a request of its own",
                           {"H5D_CHUNK_SIZE_D*·H5D_DATATYPE_SIZE": h5.chunk_bytes_min}))
    return out


def _find_job(summary: Summary) -> list[Finding]:
    out: list[Finding] = []
    job = summary.job
    lu = job.lustre
    if lu:
        heavy = lu.files_per_ost_max > FILES_PER_OST_MAX
        skewed = lu.osts_used >= 2 and lu.bytes_per_ost_mean > 0 and \
            lu.bytes_per_ost_max >= OST_BYTES_IMBALANCE * lu.bytes_per_ost_mean
        if heavy or skewed:
            why = (f"{lu.files} files on {lu.osts_used} OSTs: up to {lu.files_per_ost_max} files share one "
                   f"OST" if heavy else "") + ("; " if heavy and skewed else "") + \
                  (f"the busiest OST got {lu.bytes_per_ost_max / lu.bytes_per_ost_mean:.1f}x the mean bytes"
                   if skewed else "")
            moved = job.totals.moved
            share = lu.bytes_per_ost_mean * lu.osts_used / moved if moved else 0.0
            severity = "critical" if share >= CRITICAL_SHARE else ("info" if moved and share < INFO_SHARE
                                                                   else "warning")
            out.append(Finding("ost_imbalance", severity, None, why,
                               {"LUSTRE files": lu.files, "OSTs used (LUSTRE_OST_ID_*)": lu.osts_used,
                                "files per OST, most": lu.files_per_ost_max,
                                "files per OST, mean": round(lu.files_per_ost_mean, 2),
                                "bytes per OST, most": round(lu.bytes_per_ost_max),
                                "bytes per OST, mean": round(lu.bytes_per_ost_mean),
                                "LUSTRE_STRIPE_WIDTH": lu.stripe_counts},
                               streams=lu.files_per_ost_max))
    t = job.totals.seconds
    if job.files > MANY_FILES and job.median_file_bytes < SMALL_FILE_BYTES and "POSIX" in summary.modules:
        out.append(Finding("many_small_files", "warning", None,
                           f"{job.files} files, half of them below {job.median_file_bytes:,} bytes: the job's "
                           f"time goes to opening and closing files (metadata servers) rather than moving data",
                           {"files (POSIX records)": job.files, "median bytes per file": job.median_file_bytes,
                            "POSIX_F_META_TIME": t.meta}))
    if t.meta >= META_MIN_SECONDS and job.totals.meta_share >= META_SHARE and \
            not any(f.id == "metadata_share" for g in summary.groups for f in g.findings):
        out.append(Finding("metadata_share", "warning", None,
                           f"metadata took {job.totals.meta_share:.0%} of the job's I/O time ({t.meta:.1f} s summed "
                           f"over the ranks), spread over many files",
                           {"POSIX_F_META_TIME": t.meta, "POSIX_F_READ_TIME": t.read,
                            "POSIX_F_WRITE_TIME": t.write}))
    return out


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
    Lustre; the job's others are `warning`."""
    out: list[Finding] = []
    for g in summary.groups:
        g.findings = _find_group(g, summary.job)
        severity = _find_severity(g, summary.job)
        for f in g.findings:
            f.severity = severity
        out.extend(g.findings)
    out.extend(_find_job(summary))
    return out
