"""`iotame replay compare`: run the replay of a job under the runtime, with its request trace, and compare the
replay's statistics with the job's record (compare.py)."""
from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

from ..errors import IotameError, UsageError
from ..paths import require_kernel
from ..runner import run_command
from ..stats import load_stats
from .compare import (FileCounts, Row, bins_from_spec_file, compare_counts, counts_from_darshan_rows,
                      counts_from_stats_record, replay_record, scale_factors, time_shares)
from .plan import to_spec
from .source import job_plan, read_json_or_none

DEFAULT_TOLERANCE = 0.05
TRACE_LIMIT_CAP = 1_000_000


def _calls_per_proc(spec: dict) -> int:
    return max((sum(e.get("repeat", 1) for e in proc) for f in spec["files"] for proc in f["calls"]), default=0)


def replay_config(spec: dict, path: Path) -> Path:
    """The runtime configuration of a compared replay: every call traced, POSIX files recorded too."""
    limit = min(TRACE_LIMIT_CAP, _calls_per_proc(spec) + 16)
    path.write_text(json.dumps({"version": 1, "defaults": {"trace": {"requests": limit},
                                                           "posix": {"all_files": True}}}))
    return path


def job_counts(source: Path, spec: dict) -> dict[str, FileCounts]:
    """Per spec file name, what the job's own record says about it."""
    doc = read_json_or_none(source)
    by_path: dict[str, FileCounts] = {}
    if doc is None:
        from .darshan_plan import file_records, read_log
        for path, prefix, rows in file_records(read_log(source)).values():
            by_path[path] = counts_from_darshan_rows(rows, prefix)
    else:
        for rec in doc.get("files", []):
            by_path[rec["path"]] = counts_from_stats_record(rec, "MPIIO")
    return {f["name"]: by_path[f["path"]] for f in spec["files"] if f["path"] in by_path}


def replay_counts(stats: dict, directory: Path, spec: dict, scale: float = 1.0) -> dict[str, FileCounts]:
    out = {}
    for f in spec["files"]:
        rec = replay_record(stats, directory, f["name"])
        if rec is None:
            out[f["name"]] = FileCounts()
            continue
        fc = counts_from_stats_record(rec, f["api"])
        if f["api"] == "POSIX" or fc.binning != "darshan":
            fc.bins, fc.binning = bins_from_spec_file(f, scale), "darshan"
        out[f["name"]] = fc
    return out


def _applied_scale(stdout: str | None, asked: float) -> float:
    """The scale the kernel applied (its result's params.scale_applied: --replay-bytes may lower it)."""
    for line in (stdout or "").splitlines()[::-1]:
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "params" in doc:
            return float(doc["params"].get("scale_applied", asked))
    return asked


def _scaling(scale: float, replay_bytes: int | None) -> str:
    """How a scaled replay's values are judged, in a sentence for the output."""
    why = f"--replay-bytes {replay_bytes} made the kernel lower it" if replay_bytes else "--scale"
    return (f"the replay ran at scale {scale:.6g} ({why}): per process and file the first ceil({scale:.6g} x n) "
            f"collective and independent calls of the spec, at their sizes; each job value is the log's times the "
            f"share of the spec's value those calls hold (column x), so bytes, calls and requests per size bin are "
            f"judged on the part of the job replayed; x = 0: none of the kept calls has that value (say, reads "
            f"that follow the kept writes)")


def compare_replay(source: str | Path, launcher: list[str], *, scale: float = 1.0,
                   tolerance: float = DEFAULT_TOLERANCE, workdir: str | Path | None = None,
                   stats_out: str | Path | None = None, timeout: float | None = None,
                   nprocs: int | None = None, replay_bytes: int | None = None) -> dict:
    """Runs `launcher kernel replay --from SPEC` under the runtime and returns the comparison (JSON-able):
    {"source", "nprocs", "scale", "tolerance", "judged", "scaled", "ok", "rows": [...], "time_share": {...},
    "notes"}. With replay_bytes the kernel lowers the scale until what it writes fits (`scale` is then the one it
    applied); a scaled replay is judged against the job's values times each row's `factor` (compare.py), and
    `scaled` says so (null at scale 1)."""
    source = Path(source)
    spec = to_spec(job_plan(source, nprocs=nprocs))
    tmp = Path(tempfile.mkdtemp(prefix="iotame-replay-", dir=workdir))
    try:
        spec_path = tmp / "spec.json"
        spec_path.write_text(json.dumps(spec))
        data = tmp / "files"
        argv = [*launcher, str(require_kernel()), "replay", "--from", str(spec_path), "--dir", str(data),
                "--scale", repr(scale), *(["--replay-bytes", str(replay_bytes)] if replay_bytes else [])]
        stats_path = Path(stats_out) if stats_out else tmp / "stats.json"
        try:
            result = run_command(argv, config=replay_config(spec, tmp / "config.json"), stats_path=stats_path,
                                 capture=True, timeout=timeout)
        except OSError as e:
            raise UsageError(f"replay compare: cannot run {argv[0]}: {e.strerror}") from None
        if result.returncode != 0 or result.stats is None:
            tail = (result.stderr or "").strip().splitlines()[-5:]
            raise IotameError(f"replay compare: the replay failed (exit status {result.exit_status}"
                              f"{', timed out' if result.timed_out else ''}): " + " | ".join(tail)
                              + (f" ({result.stats_error})" if result.stats_error else ""))
        stats = load_stats(stats_path)
        scale = _applied_scale(result.stdout, scale)
        job = job_counts(source, spec)
        replay = replay_counts(stats, data, spec, scale)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    files = {f["name"]: f for f in spec["files"]}
    rows: list[Row] = []
    for name, fc in job.items():
        factors = scale_factors(files[name], scale) if scale < 1 else None
        rows += compare_counts(name, fc, replay[name], tolerance, True, factors)
    job_share, replay_share = time_shares(job), time_shares(replay)
    return {"source": str(source), "nprocs": spec["nprocs"], "scale": scale, "tolerance": tolerance,
            "judged": True, "scaled": _scaling(scale, replay_bytes) if scale < 1 else None,
            "ok": all(r.ok for r in rows if r.judged),
            "rows": [asdict(r) for r in rows],
            "time_share": {n: {"job": job_share[n], "replay": replay_share.get(n, 0.0)} for n in job},
            "notes": spec["source"].get("notes", []), "skipped": spec["source"].get("skipped", [])}
