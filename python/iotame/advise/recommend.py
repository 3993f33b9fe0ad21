"""The configuration advise writes: per-file rules (`files`, one per group of files that matter, by its glob) and
`defaults`, each setting answering a finding, the reasons in `meta.advise` (which the runtime ignores), and, with a
machine profile, the gain the cost model's storage terms predict for the settings they describe.

Predictions (docs/design/cost-model.md, "Device" and "Streams on a target"; the curves read as the runtime reads
them, tune/recommend.py's power law): request-size settings (collective buffering, staging) by the time of the
job's requests at their Darshan bins against the same bytes in the aggregated requests; throttle levels by the
profile's streams curve at the streams a target saw against the level it predicts best; striping by the targets
busy at once. The exchange between processes is not modelled here (no call signature in a Darshan log), so a
prediction is an upper bound of what the setting can gain on the storage side.
"""
from __future__ import annotations

import math
from typing import Any

from ..tune.recommend import curve_value, throttle_level
from .findings import MIN_REQUESTS_PER_RANK, SMALL_BINS
from .records import AdvisedConfig, AdvisedSetting, Finding, Prediction, Unanswered
from .summary_records import GroupSummary, Summary

__all__ = ["CB_BUFFER_SIZE", "MERGED_REQUEST", "HDF5_CHUNK_BYTES", "HDF5_ALIGNMENT_THRESHOLD", "BIN_BYTES",
           "build_config"]

CB_BUFFER_SIZE = 16 << 20          # ROMIO's default buffer: aggregators write requests of this size
MERGED_REQUEST = 4 << 20           # staging's flusher merges a node's adjacent writes into requests about this large
                                   # (its prefetch unit, docs/staging.md); the prediction's request size
HDF5_CHUNK_BYTES = 4 << 20         # chunks of a few MiB: requests where storage reaches its bandwidth
HDF5_ALIGNMENT_THRESHOLD = 65536   # objects below it (HDF5's metadata) stay packed; larger ones start aligned
NO_MODEL_TERM = "not predicted: the cost model has no term for this setting"
# A request size standing for each Darshan bin (about its geometric middle) for the predictions.
BIN_BYTES = {"0_100": 64, "100_1K": 512, "1K_10K": 4096, "10K_100K": 32768, "100K_1M": 262144,
             "1M_4M": 2 << 20, "4M_10M": 6 << 20, "10M_100M": 32 << 20, "100M_1G": 256 << 20, "1G_PLUS": 1 << 30}


class _Builder:
    """Collects settings per rule; a key set twice keeps the first value and adds the finding to its reasons."""

    def __init__(self) -> None:
        self.rules: dict[str | None, dict[str, dict[str, Any]]] = {}
        self.settings: list[AdvisedSetting] = []
        self.unanswered: list[Unanswered] = []

    def add(self, match: str | None, section: str, key: str, value: Any, finding: str, reason: str,
            gain: float | None = None, gain_note: str | None = None) -> None:
        sec = self.rules.setdefault(match, {}).setdefault(section, {})
        for s in self.settings:
            if s.rule == (match or "defaults") and s.key == f"{section}.{key}":
                if finding not in s.findings:
                    s.findings.append(finding)
                return
        sec[key] = value
        self.settings.append(AdvisedSetting(match or "defaults", f"{section}.{key}", value, [finding], reason, gain,
                                            gain_note or NO_MODEL_TERM))

    def leave(self, finding: Finding, why: str) -> None:
        self.unanswered.append(Unanswered(finding.id, finding.match, why))


def _rec_curve(profile: dict | None, direction: str, pattern: str) -> list | None:
    pts = ((((profile or {}).get("storage") or {}).get(direction) or {}).get(pattern)) or None
    return sorted((int(a), float(b)) for a, b in pts) if pts else None


def _rec_request_gain(g: GroupSummary, profile: dict | None, new_size: int,
                      directions: tuple[str, ...] = ("read", "write")) -> tuple[float | None, str]:
    """The storage time of the group's requests in `directions` (Darshan's bins, each at its BIN_BYTES) against
    the same bytes in sequential requests of `new_size`, from the profile's curves."""
    if profile is None:
        return None, "no machine profile: no prediction"
    old = new = 0.0
    for d in directions:
        bins = g.histogram.directions()[d]
        a = g.access.of(d) if g.access else None
        n = a.requests if a else 0
        pattern = "sequential" if n and a.consecutive / n >= 0.5 else "scattered"
        before, after = _rec_curve(profile, d, pattern), _rec_curve(profile, d, "sequential")
        if not before or not after:
            return None, f"the profile has no {d} curves"
        for b, count in bins.items():
            size = BIN_BYTES[b]
            old += count * size / (curve_value(before, size) * 1e6)
            new += count * size / (curve_value(after, max(size, new_size)) * 1e6)
    if new <= 0:
        return None, "no requests in the log's bins: no prediction"
    return old / new, f"storage time of the log's requests ({old:.3g} s) against {new_size:,}-byte sequential " \
                      f"requests ({new:.3g} s), the profile's {'/'.join(directions)} curves"


def _rec_throttle_gain(profile: dict | None, direction: str, streams: int) -> tuple[float | None, str]:
    if profile is None:
        return None, "no machine profile: no prediction"
    pts = (((profile.get("storage") or {}).get("streams") or {}).get(direction)) or []
    pts = sorted((int(a), float(b)) for a, b in pts)
    if len(pts) < 2:
        return None, f"the profile's {direction} streams curve has fewer than two points"
    if streams > pts[-1][0]:
        return None, f"the profile's {direction} streams curve stops at {pts[-1][0]} streams, below the " \
                     f"{streams} a target saw: auto measures the levels instead"
    level = throttle_level(pts, streams)
    gain = curve_value(pts, level) / curve_value(pts, streams)
    return gain, f"the profile's {direction} streams curve at {level} streams against {streams}"


def _rec_strategy_settings(b: _Builder, g: GroupSummary, f: Finding, profile: dict | None) -> None:
    mpi = g.mpiio
    for d, calls in (("write", mpi.collective_writes if mpi else 0), ("read", mpi.collective_reads if mpi else 0)):
        if calls:
            b.add(g.match, "mpiio_hints", f"romio_cb_{d}", "enable", f.id,
                  f"collective {d}s gathered into large requests by aggregators (collective buffering on)")
    gain, note = _rec_request_gain(g, profile, CB_BUFFER_SIZE)
    b.add(g.match, "mpiio_hints", "cb_buffer_size", CB_BUFFER_SIZE, f.id,
          f"aggregators' requests of {CB_BUFFER_SIZE >> 20} MiB", gain, note)
    b.add(g.match, "collective", "strategy", "auto", f.id,
          "the selector measures the collective strategies on the job's own calls and keeps the fastest")


def _rec_staging(b: _Builder, g: GroupSummary, f: Finding, profile: dict | None) -> bool:
    if not g.mpiio and not g.hdf5:
        b.leave(f, "the runtime stages MPI-IO and HDF5 writes; these files were written through POSIX calls only")
        return False
    done = False
    if g.totals.bytes_written:
        gain, note = _rec_request_gain(g, profile, MERGED_REQUEST, ("write",))
        b.add(g.match, "staging", "enabled", True, f.id,
              "writes return once copied into the node's area; the node's flusher merges the ranks' pieces into "
              "large requests and writes them behind", gain, note)
        done = True
    acc = g.access.read if g.access else None
    # prefetch where the small requests are reads: most of the reads small, at least MIN_REQUESTS_PER_RANK per
    # rank, and sequential
    small_reads = sum(n for size_bin, n in g.histogram.read.items() if size_bin in SMALL_BINS)
    reads = sum(g.histogram.read.values())
    if reads and small_reads / reads >= 0.5 and small_reads / max(1, g.ranks) >= MIN_REQUESTS_PER_RANK and acc and \
            acc.requests and (acc.consecutive + acc.sequential) / acc.requests >= 0.5:
        b.add(g.match, "staging", "prefetch", True, f.id,
              "the node's flusher reads ahead of each rank's sequential reads")
        done = True
    return done


def _rec_throttle(b: _Builder, g: GroupSummary, f: Finding, profile: dict | None, streams: int) -> None:
    """throttle auto for each direction the group moved bytes in; `streams`: how many a target saw."""
    for d, key, moved in (("write", "writers", g.totals.bytes_written), ("read", "readers", g.totals.bytes_read)):
        if moved:
            gain, note = _rec_throttle_gain(profile, d, streams)
            b.add(g.match, "throttle", key, "auto", f.id,
                  f"at most a measured number of processes {d} one storage target at once (auto finds it); "
                  f"the others wait their turn instead of making the target switch between streams", gain, note)
    if not g.mpiio and not g.hdf5:
        b.add(None, "posix", "all_files", True, f.id,
              "the files are written through POSIX calls only: the runtime records (and throttles) every "
              "regular file the processes open")


def _rec_collective(g: GroupSummary) -> bool:
    return bool(g.mpiio and (g.mpiio.collective_writes or g.mpiio.collective_reads))


def _rec_streams(g: GroupSummary) -> int:
    """Processes a storage target served at once, at most: the most files of the group on one OST (one writer a
    file), the ranks over the stripe count for a shared file, else the ranks."""
    lu = g.lustre
    if lu and g.kind != "shared":
        return max(1, int(lu.files_per_ost_max))
    if lu:
        return max(1, math.ceil(g.ranks / max(1, lu.stripe_count)))
    return max(1, g.ranks)


def _rec_answer_small(b: _Builder, g: GroupSummary, f: Finding, profile: dict | None) -> None:
    if not _rec_staging(b, g, f, profile) and (g.mpiio or g.hdf5):
        b.leave(f, "reads that are not sequential: no setting of the runtime merges them")


def _rec_answer_unaligned(b: _Builder, g: GroupSummary, f: Finding, profile: dict | None) -> None:
    if g.hdf5:
        unit = int((g.lustre.stripe_size if g.lustre else 0) or max(4096, g.alignment.file_alignment))
        b.add(g.match, "hdf5", "alignment", unit, f.id,
              f"HDF5 places datasets at multiples of {unit:,} bytes (the stripe or block size)")
        b.add(g.match, "hdf5", "alignment_threshold", HDF5_ALIGNMENT_THRESHOLD, f.id,
              "objects below 64 KiB (metadata) stay packed")
    elif _rec_collective(g):
        _rec_strategy_settings(b, g, f, profile)
    else:
        b.leave(f, "the offsets are the application's own (independent or POSIX calls): no setting aligns them")


def _rec_answer_stripes(b: _Builder, g: GroupSummary, f: Finding, profile: dict | None) -> None:
    targets = int(((profile or {}).get("filesystem") or {}).get("targets") or 0)
    old = g.lustre.stripe_count
    want = min(g.ranks, targets or f.osts)
    if want <= old:
        b.leave(f, f"the machine profile's file system has {targets} storage target(s), no more than the job's "
                   f"stripe count")
        return
    gain, note = (want / old, f"{want} of the profile's {targets} targets busy at once against {old}") \
        if targets else (None, "no machine profile: no prediction")
    b.add(g.match, "mpiio_hints", "striping_factor", want, f.id,
          f"the file striped over {want} targets when the job creates it (the hint acts on new files only)",
          gain, note)
    b.add(g.match, "mpiio_hints", "striping_unit", int(g.lustre.stripe_size or 1 << 20), f.id,
          "the stripe size the job had")
    if _rec_collective(g):
        b.add(g.match, "mpiio_hints", "cb_nodes", want, f.id,
              "one aggregator per target: each writes its own stripes")


def _rec_answer_imbalance(b: _Builder, g: GroupSummary, f: Finding, profile: dict | None) -> None:
    if _rec_collective(g):
        b.add(g.match, "collective", "strategy", "auto", f.id,
              "the selector measures the collective strategies on the job's own calls and keeps the fastest")
    else:
        _rec_throttle(b, g, f, profile, _rec_streams(g))


def _rec_answer_rmw(b: _Builder, g: GroupSummary, f: Finding, profile: dict | None) -> None:
    # the writes mostly independent: a few independent writes beside collective ones are not what switched
    if g.mpiio and g.mpiio.independent_writes and g.mpiio.independent_writes >= g.mpiio.collective_writes:
        b.add(g.match, "mpiio_hints", "romio_ds_write", "disable", f.id,
              "ROMIO's data sieving reads the range of a noncontiguous independent write before writing it")
    else:
        b.leave(f, "the reads and writes are the application's own, or collective buffering's over the holes of "
                   "the aggregators' domains: no setting removes them")


def _rec_answer_meta(b: _Builder, g: GroupSummary, f: Finding, profile: dict | None) -> None:
    if g.hdf5:
        b.add(g.match, "hdf5", "coll_metadata_writes", True, f.id,
              "HDF5 writes its metadata collectively at flush and close instead of from every rank")
        b.add(g.match, "hdf5", "meta_block_size", 1 << 20, f.id,
              "HDF5 aggregates metadata in 1 MiB blocks: fewer, larger metadata requests")
    else:
        b.leave(f, "opens, closes and stats are the application's own: no setting removes them")


def _rec_answer_chunks(b: _Builder, g: GroupSummary, f: Finding, profile: dict | None) -> None:
    rules = [{"match": name, "chunk_bytes": HDF5_CHUNK_BYTES} for name in g.hdf5.chunked]
    b.add(g.match, "hdf5", "datasets", rules, f.id,
          f"chunks of about {HDF5_CHUNK_BYTES >> 20} MiB for the chunked datasets (new datasets only)")


# How each finding of a group is answered (findings.FINDING_IDS; the job's: _rec_job).
_REC_ANSWERS = {
    "collective_small_requests": _rec_strategy_settings,
    "small_requests": _rec_answer_small, "independent_shared": _rec_answer_small,
    "interleaved_no_collective": _rec_answer_small, "unaligned_requests": _rec_answer_unaligned,
    "stripe_count": _rec_answer_stripes, "rank_imbalance": _rec_answer_imbalance,
    "read_modify_write": _rec_answer_rmw, "metadata_share": _rec_answer_meta, "small_hdf5_chunks": _rec_answer_chunks,
}


def _rec_group(b: _Builder, g: GroupSummary, profile: dict | None) -> None:
    for f in g.findings:
        _REC_ANSWERS[f.id](b, g, f, profile)


def _rec_job(b: _Builder, findings: list[Finding], groups: list[GroupSummary], profile: dict | None) -> None:
    for f in findings:
        if f.match is not None:
            continue
        if f.id == "ost_imbalance":
            streams = f.streams
            striped = [g for g in groups if g.lustre and g.totals.moved]
            if not striped:
                b.leave(f, "none of the files that matter has a LUSTRE record")
            for g in striped:
                _rec_throttle(b, g, f, profile, streams)
        else:
            b.leave(f, "the job's structure (how many files, when it opens them) is the application's: no setting "
                       "changes it; write fewer, shared files (MPI-IO or HDF5) where the application allows")


def build_config(summary: Summary, findings: list[Finding], top: int, profile: dict | None, profile_path: str | None,
                 profile_note: str, log_path: str) -> AdvisedConfig:
    """The configuration of the `top` groups that matter (and the job's findings), every setting with the
    finding(s) it answers."""
    b = _Builder()
    groups = summary.groups[:top]
    for g in groups:
        _rec_group(b, g, profile)
    _rec_job(b, findings, groups, profile)
    config: dict[str, Any] = {"version": 1}
    if None in b.rules:
        config["defaults"] = b.rules[None]
    rules = []
    for g in groups:
        if g.match in b.rules:
            rule = {"match": g.match, **b.rules[g.match]}
            if "mpiio_hints" in rule:
                rule["override"] = True     # the log cannot tell the application's own hints: ours win
            rules.append(rule)
    if rules:
        config["files"] = rules
    config["meta"] = {"advise": {
        "log": log_path, "by": "iotame advise",
        "match": "globs on basenames, digits wildcarded where files are numbered (per-process files, steps): the "
                 "log's paths are those of the machine that ran the job",
        "settings": [s.to_json() for s in b.settings],
        "profile": profile_path}}
    return AdvisedConfig(config, b.settings, b.unanswered, Prediction(profile_path, profile_note))
