"""What a set of files' tallies add up to: totals, the request-size histogram, the access pattern, the MPI-IO
calls, the striping, the balance between ranks, the HDF5 datasets and the load per OST: the parts of a group's and
of the job's summary."""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from .files import SIZE_BINS, FileTally
from .summary_records import (Access, DirectionAccess, Hdf5Use, Histogram, MpiioCalls, OstLoad, PerRankBalance,
                              Seconds, SharedRankBalance, Striping, Totals)

__all__ = ["measure_totals", "measure_histogram", "measure_access", "measure_mpiio", "measure_striping",
           "measure_ranks", "measure_hdf5", "measure_ost_load"]


def measure_totals(files: list[FileTally]) -> Totals:
    read = sum(f.bytes()[0] for f in files)
    written = sum(f.bytes()[1] for f in files)
    t = Seconds(0.0, 0.0, 0.0)
    for f in files:
        s = f.times()
        t.read += s.read
        t.write += s.write
        t.meta += s.meta
    total = t.total
    return Totals(read, written, t, total, t.meta / total if total > 0 else 0.0)


def _measures_hist(counter: Counter, name: str) -> Histogram:
    """Darshan's size bins per direction, nonzero bins only; `name` formats a counter's name from direction and
    bin."""
    read, write = ({b: counter[name.format(d=d, b=b)] for b in SIZE_BINS if counter[name.format(d=d, b=b)]}
                   for d in ("READ", "WRITE"))
    return Histogram(read, write)


def measure_histogram(files: Iterable[FileTally]) -> tuple[str | None, Histogram]:
    """The request-size histogram of files: POSIX's (requests that reached the file system), else MPI-IO's, else
    none (source None)."""
    posix: Counter = Counter()
    mpiio: Counter = Counter()
    for f in files:
        if f.layer == "POSIX":      # a partial POSIX record's bins are not the file's
            posix.update(f.posix)
        mpiio.update(f.mpiio)
    if any(posix[f"POSIX_SIZE_{d}_{b}"] for d in ("READ", "WRITE") for b in SIZE_BINS):
        return "POSIX", _measures_hist(posix, "POSIX_SIZE_{d}_{b}")
    if any(mpiio[f"MPIIO_SIZE_{d}_AGG_{b}"] for d in ("READ", "WRITE") for b in SIZE_BINS):
        return "MPI-IO", _measures_hist(mpiio, "MPIIO_SIZE_{d}_AGG_{b}")
    return None, Histogram({}, {})


def measure_access(posix: Counter) -> Access:
    """Per direction: requests, consecutive ones, sequential, random (POSIX counters summed)."""
    def direction(d: str) -> DirectionAccess:
        n, consec, seq = posix[f"POSIX_{d}S"], posix[f"POSIX_CONSEC_{d}S"], posix[f"POSIX_SEQ_{d}S"]
        return DirectionAccess(n, consec, max(0, seq - consec), max(0, n - max(seq, consec)))
    return Access(direction("READ"), direction("WRITE"))


def measure_mpiio(m: Counter, records: int) -> MpiioCalls | None:
    if not records:
        return None
    return MpiioCalls(
        independent_reads=m["MPIIO_INDEP_READS"], independent_writes=m["MPIIO_INDEP_WRITES"],
        collective_reads=m["MPIIO_COLL_READS"], collective_writes=m["MPIIO_COLL_WRITES"],
        split_reads=m["MPIIO_SPLIT_READS"], split_writes=m["MPIIO_SPLIT_WRITES"],
        nonblocking_reads=m["MPIIO_NB_READS"], nonblocking_writes=m["MPIIO_NB_WRITES"],
        independent_opens=m["MPIIO_INDEP_OPENS"], collective_opens=m["MPIIO_COLL_OPENS"],
        views=m["MPIIO_VIEWS"], bytes_read=m["MPIIO_BYTES_READ"], bytes_written=m["MPIIO_BYTES_WRITTEN"])


def measure_striping(files: list[FileTally]) -> Striping | None:
    """The striping of files with a LUSTRE record: stripe sizes and counts (most common first) and the OSTs."""
    layouts = [f.lustre for f in files if f.lustre is not None]
    if not layouts:
        return None
    osts: Counter = Counter()
    for lay in layouts:
        osts.update(set(lay.osts))
    return Striping(files=len(layouts),
                    stripe_size=Counter(lay.stripe_size for lay in layouts).most_common(1)[0][0],
                    stripe_count=Counter(lay.stripe_count for lay in layouts).most_common(1)[0][0],
                    stripe_counts=sorted({lay.stripe_count for lay in layouts}),
                    osts=sorted(osts), files_per_ost_max=max(osts.values()) if osts else 0)


def _measures_shared_balance(rec: dict, p: str) -> SharedRankBalance:
    """Fastest and slowest rank of a reduced record (rank -1) of module prefix `p` (POSIX or MPIIO)."""
    c, fc = rec["counters"], rec.get("fcounters", {})
    names = (f"{p}_FASTEST_RANK", f"{p}_FASTEST_RANK_BYTES", f"{p}_SLOWEST_RANK", f"{p}_SLOWEST_RANK_BYTES")
    fnames = (f"{p}_F_FASTEST_RANK_TIME", f"{p}_F_SLOWEST_RANK_TIME", f"{p}_F_VARIANCE_RANK_TIME",
              f"{p}_F_VARIANCE_RANK_BYTES")
    return SharedRankBalance(
        source=f"{p}_FASTEST_RANK/{p}_SLOWEST_RANK",
        counters={**{n: c.get(n) for n in names}, **{n: fc.get(n) for n in fnames}},
        fastest_rank=c.get(f"{p}_FASTEST_RANK"), fastest_bytes=c.get(f"{p}_FASTEST_RANK_BYTES"),
        fastest_seconds=fc.get(f"{p}_F_FASTEST_RANK_TIME"),
        slowest_rank=c.get(f"{p}_SLOWEST_RANK"), slowest_bytes=c.get(f"{p}_SLOWEST_RANK_BYTES"),
        slowest_seconds=fc.get(f"{p}_F_SLOWEST_RANK_TIME"),
        variance_seconds=fc.get(f"{p}_F_VARIANCE_RANK_TIME"), variance_bytes=fc.get(f"{p}_F_VARIANCE_RANK_BYTES"))


def measure_ranks(files: list[FileTally]) -> SharedRankBalance | PerRankBalance | None:
    """Fastest and slowest rank, at the layer the application called: a shared file's MPI-IO record when it has
    one (under collective calls only the aggregators reach POSIX, so POSIX's ranks differ by design), else its
    POSIX record; for per-process files the files' own times and bytes (each file is one rank's). Files with
    MPI-IO records but no reduced one are not compared at POSIX (their POSIX records are the aggregators')."""
    if len(files) == 1:
        f = files[0]
        if f.mpiio_shared_record is not None:
            return _measures_shared_balance(f.mpiio_shared_record, "MPIIO")
        if f.shared_record is not None:
            return _measures_shared_balance(f.shared_record, "POSIX")
    if any(f.mpiio_records for f in files):
        return None
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
    out = PerRankBalance(source="per-rank records (POSIX_F_READ_TIME+WRITE_TIME+META_TIME, POSIX_BYTES_*)",
                         ranks=len(times), fastest_seconds=min(times), slowest_seconds=max(times), mean_seconds=mean,
                         fastest_bytes=min(nbytes), slowest_bytes=max(nbytes),
                         variance_seconds=sum((t - mean) ** 2 for t in times) / len(times))
    shown = ("fastest_seconds", "slowest_seconds", "mean_seconds", "fastest_bytes", "slowest_bytes",
             "variance_seconds")
    out.counters = {f"{k} (over {len(times)} ranks' records)": getattr(out, k) for k in shown}
    return out


def measure_hdf5(files: list[FileTally]) -> Hdf5Use | None:
    datasets = [d for f in files for d in f.datasets]
    if not datasets and not any(f.h5f for f in files):
        return None
    return Hdf5Use(datasets=len({d.name for d in datasets}),
                   chunked=sorted({d.name for d in datasets if d.chunk}),
                   chunk_bytes_min=min((d.chunk_bytes for d in datasets if d.chunk), default=None),
                   collective_transfers=any(d.collective for d in datasets))


def measure_ost_load(files: list[FileTally]) -> OstLoad | None:
    """Files and bytes per OST over the job (a file's bytes spread evenly over its OSTs)."""
    per_files: Counter = Counter()
    per_bytes: Counter = Counter()
    striped = [f for f in files if f.lustre is not None and f.lustre.osts]
    if not striped:
        return None
    for f in striped:
        osts = set(f.lustre.osts)
        b = sum(f.bytes())
        for o in osts:
            per_files[o] += 1
            per_bytes[o] += b / len(osts)
    counts = list(per_files.values())
    return OstLoad(files=len(striped), osts_used=len(per_files), highest_ost_id=max(per_files),
                   files_per_ost_max=max(counts), files_per_ost_mean=sum(counts) / len(counts),
                   bytes_per_ost_max=max(per_bytes.values()),
                   bytes_per_ost_mean=sum(per_bytes.values()) / len(per_bytes),
                   stripe_counts=dict(sorted(Counter(f.lustre.stripe_count for f in striped).items())))
