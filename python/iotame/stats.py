"""Statistics files (IOTAME_STATS) written by the runtime: loading, summarizing, and the tuner's objectives.

Format: docs/formats.md. MB is 10^6 bytes.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import StatsError

__all__ = ["load_stats", "parse_stats", "summarize", "objectives", "objective", "OBJECTIVES", "emulated_storage"]

# name -> (summary key, direction): what `iotame tune` can optimize.
OBJECTIVES = {
    "io-bandwidth": ("io_mbs", "maximize"),
    "io-time": ("io_seconds", "minimize"),
}

_TIME_KINDS = ("read", "write", "sync", "meta")


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parse_stats(obj: Any, source: str = "statistics") -> dict:
    """Checks that a parsed object is a statistics file (the keys this package relies on) and returns it."""
    if not isinstance(obj, dict):
        raise StatsError(f"{source}: not a statistics file (expected a JSON object)")
    summary = obj.get("summary")
    if not isinstance(summary, dict):
        raise StatsError(f"{source}: not a statistics file (no \"summary\" object)")
    for key in ("bytes_read", "bytes_written", "io_seconds"):
        if not _num(summary.get(key)):
            raise StatsError(f"{source}: not a statistics file (summary.{key} is not a number)")
    files = obj.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        raise StatsError(f"{source}: not a statistics file (\"files\" is not a list of objects)")
    return obj


def load_stats(path: str | Path) -> dict:
    """The statistics at `path`; StatsError if it is missing, empty, not JSON or not a statistics file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise StatsError(f"statistics {path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise StatsError(f"statistics {path}: invalid JSON (invalid UTF-8)") from None
    if not text.strip():
        raise StatsError(f"statistics {path}: empty file")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise StatsError(f"statistics {path}: line {e.lineno}, column {e.colno}: invalid JSON ({e.msg})") from None
    return parse_stats(obj, f"statistics {path}")


def _io_mbs(summary: dict) -> float:
    if _num(summary.get("io_mbs")):
        return float(summary["io_mbs"])
    seconds = summary["io_seconds"]
    total = summary["bytes_read"] + summary["bytes_written"]
    return total / seconds / 1e6 if seconds > 0 else 0.0


def objectives(stats: dict) -> dict[str, float]:
    """Every objective's value: {"io-bandwidth": summary.io_mbs, "io-time": summary.io_seconds}."""
    summary = stats["summary"]
    return {"io-bandwidth": _io_mbs(summary), "io-time": float(summary["io_seconds"])}


def objective(stats: dict, name: str) -> float:
    """One objective's value (see OBJECTIVES for the names and whether to maximize or minimize)."""
    if name not in OBJECTIVES:
        raise KeyError(f"unknown objective {name!r} (expected one of: {', '.join(OBJECTIVES)})")
    return objectives(stats)[name]


def _file_row(f: dict) -> dict:
    ops = f.get("ops") or {}
    count = sum(int(o.get("count", 0)) for o in ops.values() if isinstance(o, dict))
    times = f.get("time") or {}
    seconds = sum(float((times.get(k) or {}).get("max", 0) or 0) for k in _TIME_KINDS)
    return {"path": str(f.get("path", "?")), "bytes_read": int(f.get("bytes_read", 0) or 0),
            "bytes_written": int(f.get("bytes_written", 0) or 0), "ops": count, "seconds": seconds}


def _collective_rows(files: list) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """Per file: the strategies that served collective calls, the selector's decisions (strategy auto), the
    calls its steady windows served without a collective of the runtime's, and the machine profile the selector
    predicted with (or why none) with each decision's predicted and measured seconds."""
    served, decided, steady, model = [], [], [], []
    for f in files:
        for name, v in (f.get("strategies") or {}).items():
            seconds = float(v.get("seconds", 0) or 0)
            served.append({"path": str(f.get("path", "?")), "strategy": name, "calls": int(v.get("calls", 0)),
                           "bytes": int(v.get("bytes", 0)),
                           "mbs": int(v.get("bytes", 0)) / seconds / 1e6 if seconds > 0 else 0.0})
        for d in f.get("decisions") or []:
            decided.append({"path": str(f.get("path", "?")), **d})
            if isinstance(d.get("model"), dict):
                model.append({"path": str(f.get("path", "?")), "profile": (f.get("profile") or {}).get("path"),
                              "signature": d.get("signature", {}), "strategy": d.get("strategy"), **d["model"]})
        if f.get("profile_refused"):
            model.append({"path": str(f.get("path", "?")), "refused": str(f["profile_refused"])})
        if f.get("steady_calls"):
            steady.append({"path": str(f.get("path", "?")), "calls": int(f["steady_calls"]),
                           "measured": int(f.get("steady_windows_measured", 0) or 0),
                           "changed": int(f.get("steady_windows_changed", 0) or 0)})
    return served, decided, steady, model


def _hdf5_rows(files: list) -> list[dict]:
    """Per HDF5 file: what the runtime applied, and what it could not apply and why."""
    rows = []
    for f in files:
        h = f.get("hdf5")
        if not isinstance(h, dict):
            continue
        applied = [f"{k}={v}" for k, v in (h.get("applied") or {}).items()]
        alike: dict[str, list[str]] = {}          # datasets with the same properties are shown on one line
        for name, d in (h.get("datasets") or {}).items():
            if isinstance(d, dict) and d:
                alike.setdefault(" ".join(f"{k}={v}" for k, v in d.items()), []).append(name)
        for props, names in alike.items():
            more = f" and {len(names) - 1} more" if len(names) > 1 else ""
            applied.append(f"{names[0]}{more}: {props}")
        missed = [f"{n.get('property')}" + (f" ({n['dataset']})" if n.get("dataset") else "") + f": {n.get('reason')}"
                  for n in h.get("not_applied") or [] if isinstance(n, dict)]
        rows.append({"path": str(f.get("path", "?")), "driver": h.get("driver"), "applied": applied,
                     "not_applied": missed})
    return rows


def _staging_rows(files: list) -> list[dict]:
    """Per file staging decided at its open (staging.enabled true or auto): whether its writes were staged and why,
    and the machine profile auto decided by."""
    rows = []
    for f in files:
        d = f.get("stage")
        if isinstance(d, dict) and "writes" in d:
            rows.append({"path": str(f.get("path", "?")), "enabled": d.get("enabled"), "writes": str(d["writes"]),
                         "reason": str(d.get("reason", "")), "profile": d.get("profile")})
    return rows


def emulated_storage(stats: dict | None) -> str | None:
    """The line that labels a run made on the emulated storage device (the runtime's modules.emulate), else None."""
    e = ((stats or {}).get("modules") or {}).get("emulate")
    if not isinstance(e, dict):
        return None
    streams, targets = e.get("streams"), e.get("targets") or 1
    striped = f"{targets} targets striped in {e.get('target_unit', 0) // 1024} KiB units, each " if targets > 1 else ""
    return (f"storage: EMULATED {e.get('device', '?')} ({striped}servers {e.get('servers')}, {e.get('bandwidth_mbs'):g} MB/s "
            f"each, positioning {e.get('position_ms'):g} ms + seek up to {e.get('seek_ms'):g} ms over "
            f"{e.get('span_mb'):g} MB, {streams} prefetched stream{'' if streams == 1 else 's'}, write-behind "
            f"{'on' if e.get('write_behind') else 'off'}; {e.get('requests', 0)} requests modelled): experiments "
            "only, not this machine's storage")


def summarize(stats: dict) -> dict:
    """What `stats show` and `run` print: job summary, objectives and one row per file.

    A file's `seconds` is the sum over read, write, sync and meta of the slowest rank's time in that category.
    """
    s = stats["summary"]
    total = s["bytes_read"] + s["bytes_written"]
    summary = {
        "bytes_read": s["bytes_read"], "bytes_written": s["bytes_written"], "bytes": total,
        "io_seconds": float(s["io_seconds"]), "io_mbs": _io_mbs(s),
        "read_mbs": float(s.get("read_mbs", 0) or 0), "write_mbs": float(s.get("write_mbs", 0) or 0),
    }
    return {
        "nprocs": stats.get("nprocs"), "mpi": stats.get("mpi"), "config": stats.get("config"),
        "config_error": stats.get("config_error"), "summary": summary, "objectives": objectives(stats),
        "files": [_file_row(f) for f in stats.get("files", [])],
        "passthrough_reasons": stats.get("passthrough_reasons") or {},
        "collective": dict(zip(("strategies", "decisions", "steady", "model"), _collective_rows(stats.get("files", [])))),
        "hdf5": _hdf5_rows(stats.get("files", [])),
        "staging": _staging_rows(stats.get("files", [])),
    }
