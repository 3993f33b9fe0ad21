"""The JSON result a kernel prints on stdout (docs/formats.md): found in a trial's captured output, so a trial
whose data did not verify fails, and the report can compare phases."""
from __future__ import annotations

import json

__all__ = ["find_result"]


def find_result(stdout: str | None) -> dict | None:
    """The last JSON object with "phases" in `stdout` (the whole text, or one of its lines), or None."""
    text = (stdout or "").strip()
    if not text:
        return None
    for candidate in [text, *reversed(text.splitlines())]:
        candidate = candidate.strip()
        if not candidate.startswith("{"):
            continue
        try:
            obj = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("phases"), list):
            return obj
    return None
