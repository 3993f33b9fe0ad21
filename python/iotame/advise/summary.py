"""The summary of a Darshan log (what load.load_log returns, typed by DarshanLog): per group of files and for the
job, from the files' tallies (files.py) and what they add up to (measures.py).

Files are grouped by the glob a configuration rule would use for them (see file_glob): the per-process files of a
job (rank0001.dat, rank0002.dat, ...) form one group, as they get one rule.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import PurePosixPath

from .files import IGNORED_PREFIXES, SIZE_BINS, FileTally, tally_files
from .load import DarshanLog
from .measures import (measure_access, measure_hdf5, measure_histogram, measure_mpiio, measure_ost_load,
                       measure_ranks, measure_striping, measure_totals)
from .summary_records import (Alignment, GroupSummary, JobSummary, RequestCounts, SkippedFiles, Summary, Totals,
                              UnreadModule)
from ..render import fmt_size

__all__ = ["SIZE_BINS", "MAX_FILES", "IGNORED_PREFIXES", "file_glob", "summarize_log"]

# More processes than any machine has run (and than MPI's int ranks reach): a header saying so is damaged.
MAX_NPROCS = 1 << 31

# Files analysed one by one at most; the rest (the least bytes and time) are summed as skipped. A log of a job that
# opened a million files would otherwise make a million rows and rules; 10000 keeps a summary within seconds.
MAX_FILES = 10000


def _summary_glob_escape(name: str) -> str:
    """A name as a glob matching itself: glob characters become `?` (any one character)."""
    return re.sub(r"[*?\[\]]", "?", name)


def file_glob(path: str, numbered: bool) -> str:
    """The glob of a file's rule: its basename (paths in a log are the other machine's), with every run of digits
    wildcarded when `numbered` (per-process files and numbered series: rank and step numbers differ per run)."""
    base = _summary_glob_escape(PurePosixPath(path).name or path)
    wild = re.sub(r"[0-9]+", "*", base)
    # a name of digits alone (anonymized logs name files by hashes) would become `*`, a rule for every file
    return wild if numbered and wild.strip("*") else base


def _summary_group(pattern: str, files: list[FileTally], nprocs: int, partial: dict) -> GroupSummary:
    posix: Counter = Counter()
    mpiio: Counter = Counter()
    for f in files:
        posix.update(f.posix)
        mpiio.update(f.mpiio)
    shared = any(f.shared(nprocs) for f in files)
    ranks = nprocs if any(-1 in f.ranks for f in files) else len({r for f in files for r in f.ranks})
    posix_ranks = nprocs if any(-1 in f.posix_ranks for f in files) else len({r for f in files
                                                                               for r in f.posix_ranks})
    source, hist = measure_histogram(files)
    has_posix = any(f.layer == "POSIX" for f in files)
    return GroupSummary(
        match=pattern, files=len(files), example=files[0].path,
        kind="shared" if shared else ("per-process" if len(files) > 1 else "single"),
        ranks=ranks, totals=measure_totals(files), histogram_source=source, histogram=hist,
        access=measure_access(posix) if has_posix else None,
        alignment=Alignment(max(f.alignment for f in files), posix["POSIX_FILE_NOT_ALIGNED"],
                            posix["POSIX_READS"] + posix["POSIX_WRITES"]) if has_posix else None,
        rw_switches=posix["POSIX_RW_SWITCHES"] if has_posix else None,
        requests=RequestCounts(posix["POSIX_READS"], posix["POSIX_WRITES"]),
        mpiio=measure_mpiio(mpiio, sum(f.mpiio_records for f in files)),
        lustre=measure_striping(files), hdf5=measure_hdf5(files), rank_balance=measure_ranks(files),
        counters={**{k: v for k, v in posix.items() if v}, **{k: v for k, v in mpiio.items() if v}},
        posix_ranks=posix_ranks,
        partial={m: True for f in files for m, on in partial.get(str(f.id), {}).items() if on})


def _summary_groups(files: list[FileTally]) -> dict[str, list[FileTally]]:
    """Files by the glob of their rule: digits wildcarded where two or more files share the wildcarded name."""
    numbered: dict[str, list[FileTally]] = defaultdict(list)
    for f in files:
        numbered[file_glob(f.path, True)].append(f)
    groups: dict[str, list[FileTally]] = defaultdict(list)
    for pattern, members in numbered.items():
        if len(members) > 1:
            groups[pattern].extend(members)
        else:
            groups[file_glob(members[0].path, False)].extend(members)
    return groups


def _summary_weight(moved: int, io_seconds: float, job: Totals) -> float:
    """What makes a file matter: its share of the job's bytes plus its share of the I/O time."""
    return (moved / job.moved if job.moved else 0.0) + (io_seconds / job.io_seconds if job.io_seconds else 0.0)


def _summary_partial_notes(files: list[FileTally], flagged: dict[str, dict[str, bool]],
                           partial_modules: list[str]) -> list[str]:
    """One note per module Darshan flagged partial (load_log's header.partial_modules: it ran out of memory), with
    the files the flag concerns (load_log's "partial"); one per file whose POSIX record is short by its counters
    (files.FileTally.posix_partial: MPI-IO moved more), whose figures are then MPI-IO's."""
    notes = []
    for m in partial_modules:
        n = sum(1 for f in files if flagged.get(str(f.id), {}).get(m))
        notes.append(f"Darshan flagged the {m} module partial (it ran out of memory): the {m} records of "
                     f"{n:,} file(s) may be missing or short")
    for f in files:
        if f.posix_partial:
            posix = f.posix["POSIX_BYTES_READ"] + f.posix["POSIX_BYTES_WRITTEN"]
            mpiio = f.mpiio["MPIIO_BYTES_READ"] + f.mpiio["MPIIO_BYTES_WRITTEN"]
            notes.append(f"the POSIX record of {f.path} is partial: POSIX shows {fmt_size(posix)}, MPI-IO "
                         f"{fmt_size(mpiio)}; its bytes, times and request sizes are MPI-IO's")
    return notes


def _summary_unread(module_bytes: dict[str, dict]) -> list[UnreadModule]:
    """The modules with bytes that advise does not analyse (STDIO, DAOS, ...), as the worker counted them
    (modbytes.py); a module pydarshan could not read is named with the reason."""
    out = []
    for mod, b in sorted(module_bytes.items()):
        if "error" in b:
            out.append(UnreadModule(mod, None, None, b["error"]))
        elif b["bytes_read"] or b["bytes_written"]:
            out.append(UnreadModule(mod, b["bytes_read"], b["bytes_written"], None))
    return out


def _summary_nprocs(log: DarshanLog, files: list[FileTally]) -> tuple[int, str | None]:
    """The job's processes: the header's, unless it is impossible (below 1, above MAX_NPROCS, or fewer than the
    ranks the records name): then the ranks the records name, and a note saying so."""
    n = log.job.nprocs
    highest = max((r for f in files for r in f.ranks), default=-1)
    if 1 <= n <= MAX_NPROCS and n > highest:
        return n, None
    used = max(1, highest + 1)
    recorded = getattr(log.job, "nprocs_recorded", None) or n    # load.py's raw value, where it keeps one
    return used, (f"the log's job record says {recorded:,} processes, which cannot be (damaged): the records name "
                  f"ranks up to {highest}; {used} processes are assumed")


def _summary_notes(modules: list[str]) -> list[str]:
    notes = []
    if "POSIX" not in modules:
        notes.append("the log has no POSIX module: bytes, times, request sizes and access patterns of the files "
                     "are unknown" + (" (taken from MPI-IO where it has them)" if "MPI-IO" in modules else ""))
    if "MPI-IO" not in modules:
        notes.append("the job did not use MPI-IO (no MPI-IO module in the log): MPI-IO hints and collective "
                     "strategies do not apply to it; POSIX-level findings stand")
    return notes


def _summary_job(log: DarshanLog, files: list[FileTally], totals: Totals, nprocs: int,
                 unread: list[UnreadModule]) -> JobSummary:
    hist_source, hist = measure_histogram(files)
    posix_all: Counter = Counter()
    for f in files:
        posix_all.update(f.posix)
    shared = [f for f in files if f.shared(nprocs)]
    sizes = sorted(sum(f.bytes()) for f in files)
    return JobSummary(
        nprocs=nprocs, run_seconds=log.job.run_time, files=len(files), shared_files=len(shared),
        per_process_files=len(files) - len(shared), median_file_bytes=sizes[len(sizes) // 2] if sizes else 0,
        totals=totals, io_seconds_per_process=totals.io_seconds / nprocs if nprocs else None,
        histogram_source=hist_source, histogram=hist,
        access=measure_access(posix_all) if "POSIX" in log.modules else None,
        mpiio=measure_mpiio(sum((f.mpiio for f in files), Counter()), sum(f.mpiio_records for f in files)),
        lustre=measure_ost_load(files), unread=unread)


def summarize_log(log: DarshanLog, max_files: int = MAX_FILES, module_bytes: dict | None = None,
                  partial: dict | None = None, partial_modules: list[str] | None = None) -> Summary:
    """The summary of a loaded log: the job (totals over every file), the groups (one per rule glob, the groups
    that matter first), the files beyond `max_files` (summed as skipped), notes and the log's modules;
    `module_bytes` the worker's count of the modules advise does not analyse (load_log's "module_bytes"),
    `partial` and `partial_modules` Darshan's partial flags per file and per module (load_log's "partial" and
    "header"."partial_modules")."""
    files = tally_files(log)
    nprocs, nprocs_note = _summary_nprocs(log, files)
    totals = measure_totals(files)
    ranked = sorted(files, key=lambda f: -_summary_weight(sum(f.bytes()), f.times().total, totals))
    kept, rest = ranked[:max_files], ranked[max_files:]
    groups = [_summary_group(p, members, nprocs, partial or {}) for p, members in _summary_groups(kept).items()]
    groups.sort(key=lambda g: -_summary_weight(g.totals.moved, g.totals.io_seconds, totals))
    skipped = SkippedFiles(len(rest), measure_totals(rest),
                           f"beyond the {max_files} files that matter most (--max-files)") if rest else None
    partial = partial or {}
    notes = ([nprocs_note] if nprocs_note else []) + _summary_notes(log.modules) + \
        _summary_partial_notes(files, partial, partial_modules or [])
    job = _summary_job(log, files, totals, nprocs, _summary_unread(module_bytes or {}))
    return Summary(job, groups, skipped, notes, log.modules, [(sum(f.bytes()), f.times().total) for f in files])
