"""Per-file, per-group and job summaries of a Darshan log's records (what load.load_log returns).

Files are grouped by the glob a configuration rule would use for them (see file_glob): the per-process files of a
job (rank0001.dat, rank0002.dat, ...) form one group, as they get one rule. Times are Darshan's: cumulative over
the ranks that accessed the file (a shared file's record, rank -1, sums its ranks' times).
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import PurePosixPath
from typing import Any, Iterable

__all__ = ["SIZE_BINS", "MAX_FILES", "IGNORED_PREFIXES", "file_glob", "summarize_log"]

# Darshan's request-size bins, in its counter names' order (POSIX_SIZE_WRITE_<bin>, MPIIO_SIZE_WRITE_AGG_<bin>).
SIZE_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M", "100M_1G",
             "1G_PLUS")
# Files analysed one by one at most; the rest (the least bytes and time) are summed as skipped. A log of a job that
# opened a million files would otherwise make a million rows and rules; 10000 keeps a summary within seconds.
MAX_FILES = 10000
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


def _summary_ignored(path: str) -> bool:
    return path.startswith(IGNORED_PREFIXES)


class _FileAgg:
    """One file's records added up: POSIX and MPI-IO counters summed over its records, times summed, the ranks
    that have a record (-1: Darshan reduced the file's records, it was shared by every rank)."""

    def __init__(self, fid: int, path: str):
        self.id, self.path = fid, path
        self.ranks: set[int] = set()
        self.posix: Counter = Counter()
        self.posix_times: Counter = Counter()
        self.posix_records = 0
        self.alignment = 0
        self.shared_record: dict | None = None      # the rank -1 POSIX record (fastest/slowest rank counters)
        self.rank_times: Counter = Counter()         # per-rank records: each rank's read+write+meta seconds
        self.rank_bytes: Counter = Counter()
        self.mpiio: Counter = Counter()
        self.mpiio_times: Counter = Counter()
        self.mpiio_records = 0
        self.lustre: dict | None = None
        self.datasets: list[dict] = []
        self.h5f = False

    def add_posix(self, rec: dict) -> None:
        c, f = rec["counters"], rec.get("fcounters", {})
        self.posix_records += 1
        self.ranks.add(rec["rank"])
        for k in _POSIX_SUMMED:
            self.posix[k] += max(0, int(c.get(k, 0)))
        for k in _TIMES:
            self.posix_times[k] += max(0.0, float(f.get(f"POSIX_F_{k}", 0.0)))
        self.alignment = max(self.alignment, int(c.get("POSIX_FILE_ALIGNMENT", 0)))
        if rec["rank"] == -1:
            self.shared_record = rec
        else:
            self.rank_times[rec["rank"]] += sum(max(0.0, float(f.get(f"POSIX_F_{k}", 0.0))) for k in _TIMES)
            self.rank_bytes[rec["rank"]] += int(c.get("POSIX_BYTES_READ", 0)) + int(c.get("POSIX_BYTES_WRITTEN", 0))

    def add_mpiio(self, rec: dict) -> None:
        c, f = rec["counters"], rec.get("fcounters", {})
        self.mpiio_records += 1
        self.ranks.add(rec["rank"])
        for k in _MPIIO_SUMMED:
            self.mpiio[k] += max(0, int(c.get(k, 0)))
        for k in _TIMES:
            self.mpiio_times[k] += max(0.0, float(f.get(f"MPIIO_F_{k}", 0.0)))
        if rec["rank"] == -1 and self.shared_record is None and not self.posix_records:
            self.shared_record = rec

    def shared(self, nprocs: int) -> bool:
        """Opened by more than one rank: Darshan's reduced record (rank -1) in a job of several processes, or
        records of several ranks."""
        return (-1 in self.ranks and nprocs > 1) or len(self.ranks - {-1}) > 1

    def bytes(self) -> tuple[int, int]:
        """(read, written): POSIX's when the log has it, else MPI-IO's."""
        if self.posix_records:
            return self.posix["POSIX_BYTES_READ"], self.posix["POSIX_BYTES_WRITTEN"]
        return self.mpiio["MPIIO_BYTES_READ"], self.mpiio["MPIIO_BYTES_WRITTEN"]

    def times(self) -> dict[str, float]:
        t = self.posix_times if self.posix_records else self.mpiio_times
        return {"read": t["READ_TIME"], "write": t["WRITE_TIME"], "meta": t["META_TIME"]}


def _summary_collect(log: dict) -> dict[int, _FileAgg]:
    names = log.get("names", {})
    files: dict[int, _FileAgg] = {}

    def get(fid: int) -> _FileAgg:
        if fid not in files:
            files[fid] = _FileAgg(fid, names.get(str(fid), f"<record {fid}>"))
        return files[fid]

    recs = log.get("records", {})
    for rec in recs.get("POSIX", []):
        get(rec["id"]).add_posix(rec)
    for rec in recs.get("MPI-IO", []):
        get(rec["id"]).add_mpiio(rec)
    for rec in recs.get("LUSTRE", []):
        agg = get(rec["id"])
        if agg.lustre is None:
            agg.lustre = rec
        agg.ranks.add(rec["rank"])
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
            c = rec["counters"]
            get(parent).datasets.append({
                "name": "/" + dataset,
                "rank": rec["rank"],
                "chunk": [int(c.get(f"H5D_CHUNK_SIZE_D{i}", 0)) for i in range(1, 6)
                          if int(c.get(f"H5D_CHUNK_SIZE_D{i}", 0)) > 0],
                "datatype_size": int(c.get("H5D_DATATYPE_SIZE", 0)),
                "collective": int(c.get("H5D_USE_MPIIO_COLLECTIVE", 0)) > 0,
                "bytes": int(c.get("H5D_BYTES_READ", 0)) + int(c.get("H5D_BYTES_WRITTEN", 0)),
            })
    for fid in list(files):
        if _summary_ignored(files[fid].path):
            del files[fid]
    return files


def _summary_hist(counter: Counter, name: str) -> dict[str, dict[str, int]]:
    """Darshan's size bins per direction, e.g. {"write": {"1M_4M": 2048}}, nonzero bins only; `name` formats a
    counter's name from direction and bin."""
    return {d.lower(): {b: counter[name.format(d=d, b=b)] for b in SIZE_BINS if counter[name.format(d=d, b=b)]}
            for d in ("READ", "WRITE")}


def _summary_hist_of(files: Iterable[_FileAgg]) -> tuple[str | None, dict[str, dict[str, int]]]:
    """The request-size histogram of files: POSIX's (requests that reached the file system), else MPI-IO's, else
    none (source None)."""
    posix: Counter = Counter()
    mpiio: Counter = Counter()
    for f in files:
        posix.update(f.posix)
        mpiio.update(f.mpiio)
    if any(posix[f"POSIX_SIZE_{d}_{b}"] for d in ("READ", "WRITE") for b in SIZE_BINS):
        return "POSIX", _summary_hist(posix, "POSIX_SIZE_{d}_{b}")
    if any(mpiio[f"MPIIO_SIZE_{d}_AGG_{b}"] for d in ("READ", "WRITE") for b in SIZE_BINS):
        return "MPI-IO", _summary_hist(mpiio, "MPIIO_SIZE_{d}_AGG_{b}")
    return None, {"read": {}, "write": {}}


def _summary_access(posix: Counter) -> dict[str, dict[str, int]]:
    """Per direction: requests, consecutive ones (starting where the last ended), sequential (forward, past a gap),
    random (backwards): the three add up to the requests."""
    out = {}
    for d, ops in (("read", "POSIX_READS"), ("write", "POSIX_WRITES")):
        n, consec, seq = posix[ops], posix[f"POSIX_CONSEC_{d.upper()}S"], posix[f"POSIX_SEQ_{d.upper()}S"]
        out[d] = {"requests": n, "consecutive": consec, "sequential": max(0, seq - consec),
                  "random": max(0, n - max(seq, consec))}
    return out


def _summary_mpiio(m: Counter, records: int) -> dict[str, Any] | None:
    if not records:
        return None
    keys = {"independent_reads": "MPIIO_INDEP_READS", "independent_writes": "MPIIO_INDEP_WRITES",
            "collective_reads": "MPIIO_COLL_READS", "collective_writes": "MPIIO_COLL_WRITES",
            "split_reads": "MPIIO_SPLIT_READS", "split_writes": "MPIIO_SPLIT_WRITES",
            "nonblocking_reads": "MPIIO_NB_READS", "nonblocking_writes": "MPIIO_NB_WRITES",
            "independent_opens": "MPIIO_INDEP_OPENS", "collective_opens": "MPIIO_COLL_OPENS",
            "views": "MPIIO_VIEWS", "bytes_read": "MPIIO_BYTES_READ", "bytes_written": "MPIIO_BYTES_WRITTEN"}
    return {k: m[v] for k, v in keys.items()}


def _summary_lustre(files: list[_FileAgg]) -> dict[str, Any] | None:
    """The striping of files with a LUSTRE record: stripe sizes and counts (most common first) and the OSTs."""
    recs = [f.lustre for f in files if f.lustre is not None]
    if not recs:
        return None
    osts: Counter = Counter()
    for r in recs:
        osts.update(set(r["osts"]))
    return {"files": len(recs),
            "stripe_size": Counter(r["stripe_size"] for r in recs).most_common(1)[0][0],
            "stripe_count": Counter(r["stripe_count"] for r in recs).most_common(1)[0][0],
            "stripe_counts": sorted({r["stripe_count"] for r in recs}),
            "osts": sorted(osts), "files_per_ost_max": max(osts.values()) if osts else 0}


def _summary_ranks(files: list[_FileAgg], nprocs: int) -> dict[str, Any] | None:
    """Fastest and slowest rank: a shared file's own counters (POSIX_F_FASTEST_RANK_TIME, ...); for per-process
    files the files' own times and bytes (each file is one rank's)."""
    shared = [f.shared_record for f in files if f.shared_record is not None]
    if len(files) == 1 and shared:
        rec = shared[0]
        c, fc = rec["counters"], rec.get("fcounters", {})
        p = "POSIX" if "POSIX_FASTEST_RANK" in c else "MPIIO"
        names = (f"{p}_FASTEST_RANK", f"{p}_FASTEST_RANK_BYTES", f"{p}_SLOWEST_RANK", f"{p}_SLOWEST_RANK_BYTES")
        fnames = (f"{p}_F_FASTEST_RANK_TIME", f"{p}_F_SLOWEST_RANK_TIME", f"{p}_F_VARIANCE_RANK_TIME",
                  f"{p}_F_VARIANCE_RANK_BYTES")
        return {"source": f"{p}_FASTEST_RANK/{p}_SLOWEST_RANK",
                "counters": {**{n: c.get(n) for n in names}, **{n: fc.get(n) for n in fnames}},
                "fastest_rank": c.get(f"{p}_FASTEST_RANK"), "fastest_bytes": c.get(f"{p}_FASTEST_RANK_BYTES"),
                "fastest_seconds": fc.get(f"{p}_F_FASTEST_RANK_TIME"),
                "slowest_rank": c.get(f"{p}_SLOWEST_RANK"), "slowest_bytes": c.get(f"{p}_SLOWEST_RANK_BYTES"),
                "slowest_seconds": fc.get(f"{p}_F_SLOWEST_RANK_TIME"),
                "variance_seconds": fc.get(f"{p}_F_VARIANCE_RANK_TIME"),
                "variance_bytes": fc.get(f"{p}_F_VARIANCE_RANK_BYTES")}
    per_rank: Counter = Counter()
    per_rank_bytes: Counter = Counter()
    for f in files:
        per_rank.update(f.rank_times)
        per_rank_bytes.update(f.rank_bytes)
    if len(per_rank) < 2:           # one rank's records: nothing to compare
        return None
    times = list(per_rank.values())
    nbytes = [per_rank_bytes[r] for r in per_rank]
    mean = sum(times) / len(times)
    out = {"source": "per-rank records (POSIX_F_READ_TIME+WRITE_TIME+META_TIME, POSIX_BYTES_*)",
           "ranks": len(times), "fastest_seconds": min(times), "slowest_seconds": max(times),
           "mean_seconds": mean, "fastest_bytes": min(nbytes), "slowest_bytes": max(nbytes),
           "variance_seconds": sum((t - mean) ** 2 for t in times) / len(times)}
    out["counters"] = {f"{k} (over {len(times)} ranks' records)": v for k, v in out.items()
                       if k not in ("source", "ranks")}
    return out


def _summary_hdf5(files: list[_FileAgg]) -> dict[str, Any] | None:
    datasets = [d for f in files for d in f.datasets]
    if not datasets and not any(f.h5f for f in files):
        return None
    return {"datasets": len({d["name"] for d in datasets}),
            "chunked": sorted({d["name"] for d in datasets if d["chunk"]}),
            "chunk_bytes_min": min((_summary_chunk_bytes(d) for d in datasets if d["chunk"]), default=None),
            "collective_transfers": any(d["collective"] for d in datasets)}


def _summary_chunk_bytes(d: dict) -> int:
    n = max(1, d["datatype_size"])
    for x in d["chunk"]:
        n *= x
    return n


def _summary_totals(files: list[_FileAgg]) -> dict[str, Any]:
    read = sum(f.bytes()[0] for f in files)
    written = sum(f.bytes()[1] for f in files)
    t = {"read": 0.0, "write": 0.0, "meta": 0.0}
    for f in files:
        for k, v in f.times().items():
            t[k] += v
    total = sum(t.values())
    return {"bytes_read": read, "bytes_written": written, "seconds": t, "io_seconds": total,
            "meta_share": t["meta"] / total if total > 0 else 0.0}


def _summary_group(pattern: str, files: list[_FileAgg], nprocs: int) -> dict[str, Any]:
    posix: Counter = Counter()
    mpiio: Counter = Counter()
    for f in files:
        posix.update(f.posix)
        mpiio.update(f.mpiio)
    shared = any(f.shared(nprocs) for f in files)
    ranks = nprocs if any(-1 in f.ranks for f in files) else len({r for f in files for r in f.ranks})
    source, hist = _summary_hist_of(files)
    out = {"match": pattern, "files": len(files), "example": files[0].path,
           "kind": "shared" if shared else ("per-process" if len(files) > 1 else "single"),
           "ranks": ranks, **_summary_totals(files), "histogram_source": source, "histogram": hist,
           "access": _summary_access(posix) if any(f.posix_records for f in files) else None,
           "alignment": {"file_alignment": max(f.alignment for f in files),
                         "not_aligned": posix["POSIX_FILE_NOT_ALIGNED"],
                         "requests": posix["POSIX_READS"] + posix["POSIX_WRITES"]}
           if any(f.posix_records for f in files) else None,
           "rw_switches": posix["POSIX_RW_SWITCHES"] if any(f.posix_records for f in files) else None,
           "requests": {"read": posix["POSIX_READS"], "write": posix["POSIX_WRITES"]},
           "mpiio": _summary_mpiio(mpiio, sum(f.mpiio_records for f in files)),
           "lustre": _summary_lustre(files), "hdf5": _summary_hdf5(files), "rank_balance": _summary_ranks(files, nprocs),
           "counters": {**{k: v for k, v in posix.items() if v}, **{k: v for k, v in mpiio.items() if v}}}
    return out


def _summary_groups(files: list[_FileAgg]) -> dict[str, list[_FileAgg]]:
    """Files by the glob of their rule: digits wildcarded where two or more files share the wildcarded name."""
    numbered: dict[str, list[_FileAgg]] = defaultdict(list)
    for f in files:
        numbered[file_glob(f.path, True)].append(f)
    groups: dict[str, list[_FileAgg]] = defaultdict(list)
    for pattern, members in numbered.items():
        if len(members) > 1:
            groups[pattern].extend(members)
        else:
            groups[file_glob(members[0].path, False)].extend(members)
    return groups


def _summary_weight(g: dict, total_bytes: int, total_seconds: float) -> float:
    """What makes a file matter: its share of the job's bytes plus its share of the I/O time."""
    b = g["bytes_read"] + g["bytes_written"]
    return (b / total_bytes if total_bytes else 0.0) + (g["io_seconds"] / total_seconds if total_seconds else 0.0)


def _summary_ost_load(files: list[_FileAgg]) -> dict[str, Any] | None:
    """Files and bytes per OST over the job (a file's bytes spread evenly over its OSTs)."""
    per_files: Counter = Counter()
    per_bytes: Counter = Counter()
    striped = [f for f in files if f.lustre is not None and f.lustre["osts"]]
    if not striped:
        return None
    for f in striped:
        osts = set(f.lustre["osts"])
        b = sum(f.bytes())
        for o in osts:
            per_files[o] += 1
            per_bytes[o] += b / len(osts)
    counts = list(per_files.values())
    return {"files": len(striped), "osts_used": len(per_files),
            "highest_ost_id": max(per_files), "files_per_ost_max": max(counts),
            "files_per_ost_mean": sum(counts) / len(counts),
            "bytes_per_ost_max": max(per_bytes.values()),
            "bytes_per_ost_mean": sum(per_bytes.values()) / len(per_bytes),
            "stripe_counts": dict(sorted(Counter(f.lustre["stripe_count"] for f in striped).items()))}


def summarize_log(log: dict, max_files: int = MAX_FILES) -> dict[str, Any]:
    """The summary of a loaded log: `job` (totals over every file), `groups` (one per rule glob, the groups that
    matter first), `skipped` (files beyond `max_files`, summed) and `notes`."""
    job = log["job"]
    nprocs = int(job.get("nprocs") or 0)
    files = list(_summary_collect(log).values())
    totals = _summary_totals(files)
    total_bytes = totals["bytes_read"] + totals["bytes_written"]
    ranked = sorted(files, key=lambda f: -(_summary_weight(
        {"bytes_read": f.bytes()[0], "bytes_written": f.bytes()[1], "io_seconds": sum(f.times().values())},
        total_bytes, totals["io_seconds"])))
    kept, rest = ranked[:max_files], ranked[max_files:]
    groups = [_summary_group(p, members, nprocs) for p, members in _summary_groups(kept).items()]
    groups.sort(key=lambda g: -_summary_weight(g, total_bytes, totals["io_seconds"]))
    modules = log.get("modules", [])
    notes = []
    if "POSIX" not in modules:
        notes.append("the log has no POSIX module: bytes, times, request sizes and access patterns of the files "
                     "are unknown" + (" (taken from MPI-IO where it has them)" if "MPI-IO" in modules else ""))
    if "MPI-IO" not in modules:
        notes.append("the job did not use MPI-IO (no MPI-IO module in the log): MPI-IO hints and collective "
                     "strategies do not apply to it; POSIX-level findings stand")
    hist_source, hist = _summary_hist_of(files)
    posix_all: Counter = Counter()
    for f in files:
        posix_all.update(f.posix)
    shared = [f for f in files if f.shared(nprocs)]
    per_process = [f for f in files if not f.shared(nprocs)]
    sizes = sorted(sum(f.bytes()) for f in files)
    return {
        "job": {"nprocs": nprocs, "run_seconds": float(job.get("run_time") or 0.0), "files": len(files),
                "shared_files": len(shared), "per_process_files": len(per_process),
                "median_file_bytes": sizes[len(sizes) // 2] if sizes else 0, **totals,
                "io_seconds_per_process": totals["io_seconds"] / nprocs if nprocs else None,
                "histogram_source": hist_source, "histogram": hist,
                "access": _summary_access(posix_all) if "POSIX" in modules else None,
                "mpiio": _summary_mpiio(sum((f.mpiio for f in files), Counter()),
                                        sum(f.mpiio_records for f in files)),
                "lustre": _summary_ost_load(files)},
        "groups": groups,
        "skipped": {"files": len(rest), **_summary_totals(rest),
                    "reason": f"beyond the {max_files} files that matter most (--max-files)"} if rest else None,
        "notes": notes,
    }
