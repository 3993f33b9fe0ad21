"""An iotame statistics file with a request trace (`trace.requests`, docs/formats.md) as a JobPlan: every traced
MPI-IO call with the file extents it accessed, in each process's order, collective where the job's call was."""
from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..stats import load_stats
from .plan import Call, FilePlan, JobPlan, align_collectives, replay_names


def _op(name: str) -> str | None:
    """The spec's op of a traced MPI_File_ function, None for those the replay does not make (views, sizes: the
    kernel makes its own)."""
    if name == "sync":
        return "s"
    for d, word in (("w", "write"), ("r", "read")):
        if word in name:
            collective = name.endswith(("_all", "_all_begin", "_ordered", "_ordered_begin")) or "_all_" in name
            return d.upper() if collective else d
    return None


def plan_from_stats(path: str | Path) -> JobPlan:
    stats = load_stats(path)
    nprocs = int(stats.get("nprocs", 0))
    traced = [f for f in stats.get("files", []) if f.get("trace")]
    if not traced:
        raise UsageError(f"{path}: no file record has a `trace`: run the job with the setting trace.requests "
                         "(e.g. {\"version\": 1, \"defaults\": {\"trace\": {\"requests\": 100000}}})")
    job = JobPlan(nprocs, {"kind": "stats", "path": str(Path(path).resolve()), "dxt": True, "notes": []})
    notes: set[str] = set()
    rename = replay_names([f["path"] for f in traced])
    for rec in traced:
        trace = rec["trace"]
        dropped = sum(trace.get("dropped", []))
        if dropped:
            notes.add(f"{rec['path']}: {dropped} calls past the trace's limit are not replayed")
        calls: list[list[Call]] = []
        for proc_calls in trace["calls"]:
            out, prev_end, closed = [], None, False
            for c in proc_calls:
                t, d = float(c.get("t", 0.0)), float(c.get("d", 0.0))
                if c["op"] in ("open", "close"):    # a close then an open again: the replay's reopen
                    if c["op"] == "open" and closed:
                        out.append(Call("o"))
                    closed = c["op"] == "close"
                    prev_end = t + d
                    continue
                op = _op(c["op"])
                if op is not None and c.get("at") is None and op != "s":
                    notes.add("calls through a shared file pointer are not replayed (their offset is the library's)")
                    op = None
                if c.get("at_truncated"):
                    notes.add("calls of more than 4096 runs are replayed with the runs traced")
                if op in ("w", "r") and not c.get("at"):   # an independent call of 0 bytes moves nothing
                    op = None
                if op is not None:
                    gap = max(0.0, t - prev_end) if prev_end is not None else 0.0
                    out.append(Call(op, [tuple(r) for r in c.get("at") or []], gap))
                prev_end = t + d
            calls.append(out)
        f = FilePlan(rename[rec["path"]], rec["path"], "MPIIO", [int(p) for p in trace["procs"]], calls)
        align_collectives(f)
        job.files.append(f)
    job.source["notes"] = sorted(notes)
    return job
