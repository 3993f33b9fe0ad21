"""What a machine profile's predictions rest on (docs/design/fitted-model.md): the strategies its fit corrects,
with their cross-validated error, and the corrections a knowledge file keeps of it from the jobs the runtime
served. `iotame info` prints it; the runtime's statistics say the same of a job (`profile` in a file's collective
section)."""
from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["profile_key", "model_basis"]


def profile_key(text: bytes) -> str:
    """The key of a profile's corrections in a knowledge file: the runtime's 31-bit FNV-1a hash of the profile's
    bytes (runtime/src/profile/find.c), never 0, as eight hexadecimal digits."""
    h = 2166136261
    for b in text:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    h &= 0x7FFFFFFF
    return f"{h or 1:08x}"


def _corrections(knowledge: Path, key: str) -> dict:
    """The classes and measurements of the profile's corrections in a knowledge file ({} when it has none)."""
    try:
        doc = json.loads(knowledge.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"knowledge": str(knowledge), "classes": 0, "measurements": 0, "note": "not readable"}
    section = (doc.get("modules") or {}).get("collective") or {} if isinstance(doc, dict) else {}
    mine = (section.get("model") or {}).get(key) or {}
    measurements = sum(int(e.get("measurements", 0) or 0) for by_class in mine.values() if isinstance(by_class, dict)
                       for e in by_class.values() if isinstance(e, dict))
    return {"knowledge": str(knowledge), "classes": len(mine), "measurements": measurements}


def model_basis(profile: str | os.PathLike, knowledge: str | os.PathLike | None = None) -> dict:
    """{"version", "fitted": {strategy: {"rows", "cv_median"}}, "note", "corrections": {...} or None} of the profile
    file (which the caller found valid)."""
    text = Path(profile).read_bytes()
    doc = json.loads(text)
    fits = ((doc.get("strategies") or {}).get("fit") or {}).get("strategies") or {}
    fitted = {name: {"rows": f.get("rows"), "cv_median": f.get("cv_median")} for name, f in fits.items()}
    note = None if fitted else ("no strategy measurements: the model's equations alone (iotame calibrate measures "
                                "the strategies and fits the model to them)")
    return {"version": doc.get("version"), "fitted": fitted, "note": note,
            "corrections": _corrections(Path(knowledge), profile_key(text)) if knowledge else None}
