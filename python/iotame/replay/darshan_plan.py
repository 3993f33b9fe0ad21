"""A Darshan log as a JobPlan: from DXT where it traced a file (every request's offset, length and time), else from
the file's counters (the request-size bins, the common access sizes, collective or independent, shared or per
process, read or write first).

What counters cannot say is chosen the way parallel programs usually do it, and the spec's `source.notes` says so:
collective calls interleave the processes' pieces call by call (piece k of rank r follows rank r-1's), independent
calls on a shared file give each process a contiguous region of its own, a file per process starts at offset 0,
and accesses are in order unless most were not sequential (then they are shuffled, with a fixed seed).
"""
from __future__ import annotations

import fnmatch
import functools
import random
from collections import defaultdict
from pathlib import Path

from ..advise.load import load_log
from ..advise.summary import IGNORED_PREFIXES, SIZE_BINS as BIN_NAMES
from ..errors import UsageError
from .plan import COLLECTIVE_OPS, Call, FilePlan, JobPlan, align_collectives, merge_runs, replay_names

# Darshan's request-size bins: name suffix, largest size in the bin (DARSHAN_BUCKET_INC counts size <= bound).
SIZE_BINS = list(zip(BIN_NAMES, (100, 1024, 10240, 102400, 1 << 20, 4 << 20, 10 << 20, 100 << 20, 1 << 30, 1 << 62)))

# Files the MPI library or the system made for themselves (besides those advise ignores): the replayed job makes
# its own.
NOT_THE_JOBS = [p + "*" for p in IGNORED_PREFIXES] + ["/tmp/ompi.*", "*.locktest.*", "*/.nfs*", "*.sm"]

DEFAULT_MAX_FILES = 1000
SHUFFLE_SEED = 35


def size_bin(size: int) -> int:
    for i, (_, bound) in enumerate(SIZE_BINS):
        if size <= bound:
            return i
    return len(SIZE_BINS) - 1


def _bin_low(i: int) -> int:
    return 0 if i == 0 else SIZE_BINS[i - 1][1] + 1


def read_log(path: str | Path) -> dict:
    """The log's records and DXT traces, read the way iotame advise reads them (header checked, parsed in a child
    process); LogError naming the file and what is wrong. Read once per version of the file (a comparison reads it
    for the spec and for the counters); the result is shared: do not modify it."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return load_log(p, dxt=True)          # its error names the file
    return _read_log_once(str(p.resolve()), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _read_log_once(path: str, mtime_ns: int, size: int) -> dict:
    return load_log(path, dxt=True)


# ---- request sizes from counters ----

def counter_sizes(c: dict, prefix: str, direction: str, calls: int, nbytes: int,
                  common: list[tuple[int, int]]) -> list[int]:
    """`calls` request sizes of one direction whose bins match the counters and whose sum is close to nbytes: the
    common access sizes first (shared between the directions in proportion to their bins), then each bin's
    remaining requests at the mean size of what is left, kept inside the bin."""
    kind = "WRITE" if direction == "w" else "READ"
    other = "READ" if direction == "w" else "WRITE"
    agg = "_AGG" if prefix == "MPIIO" else ""
    left = [int(c.get(f"{prefix}_SIZE_{kind}{agg}_{name}", 0)) for name, _ in SIZE_BINS]
    theirs = [int(c.get(f"{prefix}_SIZE_{other}{agg}_{name}", 0)) for name, _ in SIZE_BINS]
    if sum(left) == 0:
        left[size_bin(max(1, nbytes // max(1, calls)))] = calls
    sizes: list[int] = []
    for size, count in common:
        b = size_bin(size)
        if left[b] == 0 or count <= 0:
            continue
        share = left[b] / (left[b] + theirs[b]) if theirs[b] else 1.0
        take = min(left[b], round(count * share))
        sizes += [size] * take
        left[b] -= take
    rest_bytes = max(0, nbytes - sum(sizes))
    rest_calls = sum(left)
    for b, k in enumerate(left):
        if k:
            mean = rest_bytes // rest_calls if rest_calls else 0
            # 0 bytes where the counters left none: a request all the same (a read at the end of a file)
            size = min(max(mean, _bin_low(b)), SIZE_BINS[b][1])
            sizes += [size] * k
            rest_bytes, rest_calls = max(0, rest_bytes - size * k), rest_calls - k
    return sizes[:calls] if len(sizes) >= calls else sizes + [sizes[-1] if sizes else 0] * (calls - len(sizes))


def _common_sizes(c: dict, prefix: str) -> list[tuple[int, int]]:
    return [(int(c.get(f"{prefix}_ACCESS{i}_ACCESS", 0)), int(c.get(f"{prefix}_ACCESS{i}_COUNT", 0)))
            for i in range(1, 5)]


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _call(op: str, off: int, length: int, gap: float = 0.0) -> Call:
    """One request as a call; one of 0 bytes is still a call: a collective one with no data on this process, an
    independent one a run of length 0 at its offset (a read at the end of a file)."""
    return Call(op, [] if length <= 0 and op in COLLECTIVE_OPS else merge_runs([(off, length)]), gap)


def _collective_calls(op: str, sizes: list[int], nprocs: int) -> list[list[Call]]:
    """Call k of every proc holds sizes[k*P + r] at rank order, one call after the other (interleaved)."""
    sizes = sorted(sizes)
    per = len(sizes) // nprocs
    calls: list[list[Call]] = [[] for _ in range(nprocs)]
    base = 0
    for k in range(per):
        chunk = sizes[k * nprocs:(k + 1) * nprocs]
        off = base
        for r, s in enumerate(chunk):
            calls[r].append(_call(op, off, s))
            off += s
        base = off
    return calls


def _independent_calls(op: str, sizes_per_proc: list[list[int]], segmented: bool, shuffle: bool) -> list[list[Call]]:
    """Each proc's requests in a region of its own (segmented) or from offset 0, in order or shuffled."""
    calls, base = [], 0
    rng = random.Random(SHUFFLE_SEED)
    for sizes in sizes_per_proc:
        offs, off = [], base if segmented else 0
        for s in sizes:
            offs.append((off, s))
            off += s
        if shuffle:
            rng.shuffle(offs)
        calls.append([_call(op, *p) for p in offs])
        base = off if segmented else base
    return calls


# ---- a file from its counters ----

def _split_collective(sizes: list[int], ncoll: int) -> tuple[list[int], list[int]]:
    """The ncoll largest sizes for the collective calls, the others (in their order) for the independent ones."""
    largest = set(sorted(range(len(sizes)), key=lambda i: -sizes[i])[:ncoll])
    return ([sizes[i] for i in sorted(largest)],
            [s for i, s in enumerate(sizes) if i not in largest])


def counter_total(rows: list[dict], key: str) -> int:
    """A counter summed over a file's records."""
    return int(sum(r.get(key, 0) for r in rows))


def file_from_counters(rows: list[dict], prefix: str, procs: list[int], notes: set[str]) -> list[list[Call]]:
    """Per proc, the calls of the file's counter records (one record of rank -1 for a shared file, or one per
    rank)."""
    shared = rows[0]["rank"] == -1
    nprocs = len(procs)
    per_proc: list[list[Call]] = [[] for _ in procs]
    directions = []
    for d, kind in (("w", "WRITE"), ("r", "READ")):
        start = rows[0].get(f"{prefix}_F_{kind}_START_TIMESTAMP", 0.0)
        directions.append((start, d, kind))
    for _, d, kind in sorted(directions):
        for idx, row in enumerate(rows):   # a shared file has the one record of rank -1
            if prefix == "MPIIO":
                coll = int(row.get(f"MPIIO_COLL_{kind}S", 0)) + int(row.get(f"MPIIO_SPLIT_{kind}S", 0))
                indep = int(row.get(f"MPIIO_INDEP_{kind}S", 0)) + int(row.get(f"MPIIO_NB_{kind}S", 0))
            else:
                coll, indep = 0, int(row.get(f"POSIX_{kind}S", 0))
            nbytes = int(row.get(f"{prefix}_BYTES_{'WRITTEN' if d == 'w' else 'READ'}", 0))
            if coll + indep == 0:
                continue
            sizes = counter_sizes(row, prefix, d, coll + indep, nbytes, _common_sizes(row, prefix))
            coll_sizes, indep_sizes = _split_collective(sizes, coll - coll % nprocs if shared else 0)
            if coll_sizes and indep_sizes:
                notes.add("collective calls take the largest of the counters' request sizes, independent ones the "
                          "rest (HDF5 and PnetCDF move their data collectively, their metadata in small "
                          "independent requests)")
            if coll and not shared:
                notes.add("collective calls of a file opened by a single process are replayed as independent ones")
            seq = int(row.get(f"POSIX_SEQ_{kind}S", 0)) if prefix == "POSIX" else None
            shuffle = seq is not None and indep and seq < (coll + indep) / 2
            if shared:
                if coll_sizes:
                    for r, cs in enumerate(_collective_calls(d.upper(), coll_sizes, nprocs)):
                        per_proc[r] += cs
                if indep_sizes:
                    bounds = [0]
                    for n in _split(len(indep_sizes), nprocs):
                        bounds.append(bounds[-1] + n)
                    parts = [indep_sizes[lo:hi] for lo, hi in zip(bounds, bounds[1:])]
                    for r, cs in enumerate(_independent_calls(d, parts, nprocs > 1, shuffle)):
                        per_proc[r] += cs
            else:
                per_proc[idx] += _independent_calls(d, [sizes], False, shuffle)[0]
    syncs = counter_total(rows, "MPIIO_SYNCS" if prefix == "MPIIO" else "POSIX_FSYNCS")
    if syncs:
        per = max(1, syncs // nprocs) if shared else None
        for idx, proc in enumerate(per_proc):
            n = per if shared else int(rows[idx].get("MPIIO_SYNCS" if prefix == "MPIIO" else "POSIX_FSYNCS", 0))
            proc += [Call("s")] * n
    return per_proc


# ---- a file from DXT ----

def file_from_dxt(dxt: list[dict], procs: list[int], collective: dict[str, bool]) -> list[list[Call]]:
    """Per proc, its traced requests in start-time order, with the computation between them as gaps."""
    by_rank = {p: [] for p in procs}
    for rec in dxt:
        for seg_key, d in (("write_segments", "w"), ("read_segments", "r")):
            op = d.upper() if collective[d] else d
            for off, length, start, end in rec.get(seg_key, []):
                by_rank.setdefault(rec["rank"], []).append((float(start), float(end), op, int(off), int(length)))
    per_proc = []
    for p in procs:
        calls, prev_end = [], None
        for start, end, op, off, length in sorted(by_rank.get(p, [])):
            gap = max(0.0, start - prev_end) if prev_end is not None else 0.0
            calls.append(_call(op, off, length, gap))
            prev_end = end
        per_proc.append(calls)
    return per_proc


# ---- the job ----

def _records(log: dict, module: str) -> list[dict]:
    """A module's records as one dict each: counters and fcounters by name, rank and id."""
    return [{**r["counters"], **r.get("fcounters", {}), "rank": r["rank"], "id": r["id"]}
            for r in log["records"].get(module, [])]


def _dxt(log: dict, module: str) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = defaultdict(list)
    for rec in log["records"].get(module, []):
        out[rec["id"]].append(rec)
    return out


def _traced_calls(dxt: list[dict]) -> int:
    return sum(len(r["write_segments"]) + len(r["read_segments"]) for r in dxt)


def _counted_calls(rows: list[dict], prefix: str) -> int:
    keys = (["MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES", "MPIIO_COLL_READS", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_READS",
             "MPIIO_SPLIT_WRITES", "MPIIO_NB_READS", "MPIIO_NB_WRITES"] if prefix == "MPIIO"
            else ["POSIX_READS", "POSIX_WRITES"])
    return sum(counter_total(rows, k) for k in keys)


def _file_bytes(rows: list[dict], prefix: str) -> int:
    return counter_total(rows, f"{prefix}_BYTES_READ") + counter_total(rows, f"{prefix}_BYTES_WRITTEN")


def file_records(log: dict, mods: dict[str, list[dict]] | None = None) -> dict[int, tuple[str, str, list[dict]]]:
    """Per file id: its path, the level the replay uses (MPIIO when the file has MPI-IO records, else POSIX) and
    that level's records (counters and fcounters together), by rank."""
    if mods is None:
        mods = {m: _records(log, m) for m in ("MPI-IO", "POSIX")}
    by_file: dict[int, dict[str, list[dict]]] = defaultdict(lambda: {"MPIIO": [], "POSIX": []})
    for prefix, module in (("MPIIO", "MPI-IO"), ("POSIX", "POSIX")):
        for row in mods[module]:
            by_file[row["id"]][prefix].append(row)
    out = {}
    for fid, recs in by_file.items():
        prefix = "MPIIO" if recs["MPIIO"] else "POSIX"
        out[fid] = (log["names"].get(str(fid), f"<unnamed {fid}>"), prefix,
                    sorted(recs[prefix], key=lambda r: r["rank"]))
    return out


def _segments_by_rank(traced: list[dict], key: str) -> dict[int, list[list]]:
    """A direction's DXT segments per rank, in start-time order (the lists of the records themselves)."""
    out: dict[int, list[list]] = defaultdict(list)
    for rec in traced:
        out[rec["rank"]].extend(rec.get(key, []))
    for segs in out.values():
        segs.sort(key=lambda s: s[2])
    return out


def derive_offsets(traced: list[dict], posix: list[dict], collective: dict[str, bool], notes: set[str]) -> list[dict]:
    """The DXT MPI-IO records with the offsets Darshan 3.1 left out (-1) filled in: a rank's POSIX DXT segments of
    the same direction in order where it has as many, else from the pattern the counters describe (collective calls
    interleave the ranks call by call; independent ones give each rank a region of its own, in rank order)."""
    if not any(seg[0] < 0 for rec in traced for k in ("write_segments", "read_segments") for seg in rec.get(k, [])):
        return traced
    traced = [{**rec, "write_segments": [list(x) for x in rec.get("write_segments", [])],
               "read_segments": [list(x) for x in rec.get("read_segments", [])]} for rec in traced]
    for key, d in (("write_segments", "w"), ("read_segments", "r")):
        mine, theirs = _segments_by_rank(traced, key), _segments_by_rank(posix, key)
        if not any(seg[0] < 0 for segs in mine.values() for seg in segs):
            continue
        if all(len(theirs.get(r, [])) == len(segs) for r, segs in mine.items()):
            for r, segs in mine.items():
                for seg, low in zip(segs, theirs[r]):
                    seg[0] = int(low[0])
            notes.add("the MPI-IO trace has no offsets (Darshan 3.1): each call takes the offset of the rank's "
                      "POSIX request of the same order")
            continue
        ranks = sorted(mine)
        if collective[d]:
            base = 0
            for k in range(max(len(mine[r]) for r in ranks)):
                for r in ranks:
                    if k < len(mine[r]):
                        mine[r][k][0], base = base, base + int(mine[r][k][1])
        else:
            base = 0
            for r in ranks:
                for seg in mine[r]:
                    seg[0], base = base, base + int(seg[1])
        notes.add("the MPI-IO trace has no offsets (Darshan 3.1) and the POSIX trace does not match it call for "
                  "call: offsets follow the counters' pattern (collective calls interleave the ranks, independent "
                  "ones give each rank its own region)")
    return traced


def _traced_file(traced: list[dict], rows: list[dict], prefix: str, procs: list[int], notes: set[str],
                 posix: list[dict] | None = None):
    """Per proc, the DXT trace of a file, collective where the counters say every call of a direction was, and the
    counted syncs of a shared file after each process's calls (DXT does not trace them)."""
    collective = {}
    for d, kind in (("w", "WRITE"), ("r", "READ")):
        coll = counter_total(rows, f"MPIIO_COLL_{kind}S") + counter_total(rows, f"MPIIO_SPLIT_{kind}S")
        indep = counter_total(rows, f"MPIIO_INDEP_{kind}S") + counter_total(rows, f"MPIIO_NB_{kind}S")
        collective[d] = prefix == "MPIIO" and coll > 0 and indep == 0
        if prefix == "MPIIO" and coll and indep:
            notes.add("a file with both collective and independent calls of one direction is replayed with "
                      "independent ones (DXT does not say which call was which)")
    if prefix == "MPIIO":
        traced = derive_offsets(traced, posix or [], collective, notes)
    calls = file_from_dxt(traced, procs, collective)
    if rows[0]["rank"] == -1:
        syncs = counter_total(rows, "MPIIO_SYNCS" if prefix == "MPIIO" else "POSIX_FSYNCS") // len(procs)
        for proc in calls:
            proc += [Call("s")] * syncs
    return calls


def _opens_per_proc(rows: list[dict], prefix: str, nprocs: int) -> float:
    keys = ["MPIIO_COLL_OPENS", "MPIIO_INDEP_OPENS"] if prefix == "MPIIO" else ["POSIX_OPENS"]
    total = sum(counter_total(rows, k) for k in keys)
    return total / nprocs if rows[0]["rank"] == -1 else total / max(1, len(rows))


def reopen_between_phases(calls: list[list[Call]]) -> None:
    """A reopen after a process's last write when reads follow it: a job that opens a file more than once most
    often writes it, closes it and opens it again to read it (a checkpoint and its restart)."""
    for proc in calls:
        last_write = max((i for i, c in enumerate(proc) if c.op in "wW"), default=None)
        if last_write is not None and any(c.op in "rR" for c in proc[last_write + 1:]):
            proc.insert(last_write + 1, Call("o"))


def _fold(procs: list[int], calls: list[list[Call]], nprocs: int) -> tuple[list[int], list[list[Call]]]:
    """The calls of rank r made by rank r mod nprocs, after those of the lower ranks it stands for."""
    folded: dict[int, list[Call]] = {}
    for p, c in zip(procs, calls):
        folded.setdefault(p % nprocs, []).extend(c)
    return sorted(folded), [folded[p] for p in sorted(folded)]


def _job_nprocs(log: dict) -> int:
    """The job's process count; where the log's is damaged (null), one more than the highest rank of a record."""
    if log["job"].get("nprocs"):
        return int(log["job"]["nprocs"])
    ranks = [r["rank"] for m in ("MPI-IO", "POSIX", "DXT_MPIIO", "DXT_POSIX") for r in log["records"].get(m, [])]
    return max(ranks, default=0) + 1


def plan_from_darshan(path: str | Path, max_files: int = DEFAULT_MAX_FILES, nprocs: int | None = None) -> JobPlan:
    """The job's plan; with nprocs, made by that many processes: a shared file's counters split over them, the
    calls of rank r (DXT, a file per process) made by rank r mod nprocs."""
    log = read_log(path)
    job_nprocs = _job_nprocs(log)
    nprocs = nprocs or job_nprocs
    mods = {m: _records(log, m) for m in ("MPI-IO", "POSIX")}
    dxt = {"MPIIO": _dxt(log, "DXT_MPIIO"), "POSIX": _dxt(log, "DXT_POSIX")}
    job = JobPlan(nprocs, {"kind": "darshan", "path": str(Path(path).resolve()),
                           "dxt": bool(dxt["MPIIO"] or dxt["POSIX"]), "notes": []})
    notes: set[str] = set()
    for m in log["modules"]:
        if m not in ("MPI-IO", "POSIX", "DXT_MPIIO", "DXT_POSIX", "H5F", "H5D", "LUSTRE", "PNETCDF_FILE",
                     "PNETCDF_VAR", "HEATMAP"):
            notes.add(f"the {m} module's records are not replayed (its I/O is not MPI-IO or POSIX)")
    if "H5F" in log["modules"] or "H5D" in log["modules"]:
        notes.add("HDF5 is replayed as the MPI-IO and POSIX calls it made")
    if not mods["MPI-IO"] and not mods["POSIX"]:
        modules = ", ".join(log["modules"]) or "none"
        raise UsageError(f"{path}: the log has no MPI-IO or POSIX records (modules: {modules}): nothing to replay")

    candidates = []
    for fid, (fpath, prefix, rows) in file_records(log, mods).items():
        if any(fnmatch.fnmatch(fpath, pat) for pat in NOT_THE_JOBS):
            job.skip(fpath, "made by the MPI library or the system, not the job", _file_bytes(rows, prefix))
            continue
        opened = rows[0].get(f"{prefix}_F_OPEN_START_TIMESTAMP", 0.0)
        candidates.append((fpath, fid, prefix, rows, opened))
    candidates.sort(key=lambda c: -_file_bytes(c[3], c[2]))
    for fpath, _, prefix, rows, _ in candidates[max_files:]:
        job.skip(fpath, f"past the {max_files} files with the most bytes", _file_bytes(rows, prefix))
    kept = sorted(candidates[:max_files], key=lambda c: c[4])
    rename = replay_names([c[0] for c in kept])
    for fpath, fid, prefix, rows, _ in kept:
        shared = rows[0]["rank"] == -1
        procs = list(range(job_nprocs)) if shared else [int(r["rank"]) for r in rows]
        traced = dxt[prefix].get(fid, [])
        if traced and _traced_calls(traced) >= _counted_calls(rows, prefix):
            calls = _traced_file(traced, rows, prefix, procs, notes, dxt["POSIX"].get(fid, []))
        else:
            if traced:
                notes.add("files DXT did not trace completely are replayed from their counters")
            if shared:
                procs = list(range(nprocs))
            calls = file_from_counters(rows, prefix, procs, notes)
        if _opens_per_proc(rows, prefix, job_nprocs) >= 2:
            reopen_between_phases(calls)
        if nprocs != job_nprocs:
            procs, calls = _fold(procs, calls, nprocs)
        f = FilePlan(rename[fpath], fpath, prefix, procs, calls)
        align_collectives(f)
        job.files.append(f)
    if not job.source["dxt"]:
        notes.add("offsets are not in the counters: collective calls interleave the processes' pieces, independent "
                  "ones on a shared file give each process its own region")
    if nprocs != job_nprocs:
        notes.add(f"the job's {job_nprocs} processes are replayed by {nprocs}: a shared file's counters are split "
                  f"over them, the traced calls of rank r and the files of rank r are made by rank r mod {nprocs}")
        job.source["job_nprocs"] = job_nprocs
    job.source["notes"] = sorted(notes)
    return job
