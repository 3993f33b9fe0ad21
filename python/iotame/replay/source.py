"""What a replay starts from: a Darshan log or an iotame statistics file with a request trace, told apart by content."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError
from .plan import JobPlan


def read_json_or_none(path: Path):
    """The file's JSON value, or None when it is not JSON (a Darshan log is binary)."""
    try:
        head = path.read_bytes()[:1]
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    if head not in (b"{", b"[", b" ", b"\n"):
        return None
    try:
        return json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


def job_plan(path: str | Path, max_files: int | None = None, nprocs: int | None = None) -> JobPlan:
    """The JobPlan of a Darshan log or a statistics file; UsageError for anything else. nprocs (Darshan logs only):
    replay the job with that many processes."""
    p = Path(path)
    doc = read_json_or_none(p)
    if doc is None:
        from .darshan_plan import DEFAULT_MAX_FILES, plan_from_darshan
        return plan_from_darshan(p, max_files or DEFAULT_MAX_FILES, nprocs)
    if isinstance(doc, dict) and "replay" in doc:
        raise UsageError(f"{path}: already a replay spec (give it to iotame-kernel replay --from)")
    if isinstance(doc, dict) and "files" in doc and "nprocs" in doc:
        from .stats_plan import plan_from_stats
        if nprocs is not None and nprocs != doc["nprocs"]:
            raise UsageError(f"{path}: --nprocs {nprocs}: a trace is replayed by the job's {doc['nprocs']} processes")
        return plan_from_stats(p)
    raise UsageError(f"{path}: JSON but neither iotame statistics (keys version, nprocs, files) nor a replay spec")
