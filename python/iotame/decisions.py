"""What each module of the runtime decided in one job, and why, in words: the throttle per storage target and
direction, the selector per call signature, staging per file. `iotame stats show` prints these lines and
`iotame report STATS.json` puts them on the run's page, so both say the same (docs/formats.md, Statistics)."""
from __future__ import annotations

import json
from pathlib import Path

__all__ = ["settings_of", "throttle_rows", "pick_way", "selector_reason", "staging_times", "hints_rows", "hints_words"]

# The runtime's defaults for the settings the reasons quote (runtime/settings.json).
_DEFAULTS = {("throttle", "window_seconds"): 0.25, ("collective", "exam_budget"): 0.05}


def settings_of(stats: dict) -> dict:
    """{(section, key): value} for the settings the reasons quote: the job's configuration's `defaults` when its
    file (the stats' `config`) is still readable, else the runtime's defaults; `"from"` says which."""
    out = dict(_DEFAULTS)
    out["from"] = "the defaults"
    path = stats.get("config")
    if not path:
        return out
    try:
        defaults = json.loads(Path(path).read_text()).get("defaults") or {}
    except (OSError, ValueError, AttributeError):
        return out
    for section, key in _DEFAULTS:
        value = (defaults.get(section) or {}).get(key)
        if isinstance(value, (int, float)):
            out[(section, key)] = float(value)
    out["from"] = str(path)
    return out


def _throttle_reason(t: dict, io_seconds: float, window: float) -> str:
    """One target and direction of the throttle: the level it kept and why, or why it never searched."""
    mode = t.get("mode")
    level = t.get("level", 0)
    if mode != "auto":
        return f"level {level} set by the configuration" if level else "no limit"
    measured = {int(k): v for k, v in (t.get("measured_mbs") or {}).items()}
    tried = ", ".join(f"{k}: {v:.1f} MB/s" for k, v in sorted(measured.items(), reverse=True))
    if t.get("from_knowledge") and t.get("found_level"):
        return f"level {t['found_level']} from the knowledge file (remembered for this workload)"
    if t.get("found_level"):
        return f"found level {t['found_level']} after {t.get('searches', 1)} search(es) ({tried})"
    if measured:
        return f"searching, no search finished: measured {tried}; level {level} in force at the end"
    start = f"; started at the profile's level {t['predicted_level']}" if t.get("predicted_level") else ""
    return (f"not decided: the job's I/O ({io_seconds:.3g} s) was shorter than one window ({window:g} s), so no "
            f"level was measured{start}")


def throttle_rows(stats: dict, settings: dict | None = None) -> list[dict]:
    """Per storage target and direction under the throttle: {target, direction, mode, level, max_inside,
    requests, reason, phases}. The I/O time quoted is a process's time in requests, the mean over the processes
    (io_seconds_mean)."""
    th = ((stats.get("modules") or {}).get("throttle")) or {}
    if not isinstance(th, dict):
        return []
    window = (settings or settings_of(stats))[("throttle", "window_seconds")]
    rows = []
    for target in th.get("targets") or []:
        for direction in ("read", "write"):
            t = target.get(direction)
            if not isinstance(t, dict) or not t.get("requests"):
                continue
            io = float((th.get(direction) or {}).get("io_seconds_mean", 0) or 0)
            rows.append({"target": str(target.get("target", "?")), "direction": direction,
                         "mode": str(t.get("mode", "?")), "level": t.get("level", 0),
                         "max_inside": t.get("max_inside", 0), "requests": t.get("requests", 0),
                         "reason": _throttle_reason(t, io, window), "phases": t.get("phases") or []})
    return rows


# How the cost model's pick served a call signature, as its decision's "model" part says: the first of these set
# (docs/collective.md, "Prediction"), else "untrusted" (the configured order, as without a profile).
PICK_WAYS = ("trusted", "explored", "learned", "leads", "deferred")


def pick_way(model: dict | None) -> str:
    """The first of PICK_WAYS that the decision's model part sets, else "untrusted"."""
    return next((way for way in PICK_WAYS if model and model.get(way)), "untrusted")


def selector_reason(d: dict, budget: float) -> str:
    """One call signature under strategy auto: what serves it and why."""
    measured = d.get("throughputs") or {}
    tried = ", ".join(f"{k} {v:.1f} MB/s" for k, v in measured.items()) or "nothing yet"
    strategy = d.get("strategy") or "-"
    model = d.get("model") if isinstance(d.get("model"), dict) else None
    if d.get("state") == "running":
        if d.get("from_knowledge"):
            return f"decided: {strategy}, from the knowledge file"
        m = model or {}
        way, pick = pick_way(m), m.get("first")
        if way == "trusted":
            return f"decided: {strategy}, the cost model's pick, trusted beyond its error ({tried})"
        if way == "deferred":
            return (f"decided: {strategy}, the fastest measured; the cost model's pick ({pick}) was examined after "
                    f"the configured first, as its first call, with the set-up of the handle, was predicted slower "
                    f"({tried})")
        served_first = {
            "explored": f"{m.get('explored')} (explored first: within the errors of the cost model's "
                        f"pick, {pick}, and measured by no earlier job of its class) and the candidates after it",
            "learned": f"the cost model's pick ({pick}, served first as its class's earlier jobs measured it) and the "
                       f"candidates after it",
            "leads": f"the cost model's pick ({pick}, faster beyond its error than the job without a profile) and the "
                     f"candidates within its error"}.get(way)
        if served_first:
            return f"decided: {strategy}, the fastest measured of {served_first} ({tried})"
        return f"decided: {strategy}, the fastest measured ({tried})"
    waited = int(d.get("deferred_calls", 0) or 0)
    if budget >= 1:
        return f"examining: the job ended before every candidate was measured; {strategy} served; measured: {tried}"
    return (f"examining: the budget was never earned ({budget:.0%} of this signature's I/O time pays for the "
            f"next candidate's calls; {d.get('calls', 0)} calls, {waited} waited for credit); {strategy} served; "
            f"measured: {tried}")


def staging_times(stats: dict) -> dict | None:
    """Staging's write time as the application saw it against the time the flusher spent behind it: {visible_s
    (blocked_seconds on a full area plus drain_seconds: sync, close and reads waiting for the flusher), hidden_s
    (the flusher's overlapped_seconds: flush time no process waited for), flush_s, bytes, calls}, or None."""
    st = ((stats.get("modules") or {}).get("stage")) or {}
    if not isinstance(st, dict) or not st:
        return None
    fl = st.get("flusher") or {}
    visible = float(st.get("blocked_seconds", 0) or 0) + float(st.get("drain_seconds", 0) or 0)
    flush = float(fl.get("flush_seconds", 0) or 0)
    return {"visible_s": visible, "hidden_s": float(fl.get("overlapped_seconds", 0) or 0),
            "flush_s": flush, "bytes": int(st.get("bytes", 0) or 0), "calls": int(st.get("calls", 0) or 0)}


def hints_rows(stats: dict) -> list[dict]:
    """Per file, the MPI-IO hints: `set` those the configuration set, `taken` those the MPI library reported at the
    file's first open (MPI_File_get_info: what it took of them, and its own defaults; absent in older statistics)."""
    rows = []
    for f in stats.get("files") or []:
        set_, taken = f.get("hints"), f.get("hints_taken")
        set_ = {str(k): str(v) for k, v in set_.items()} if isinstance(set_, dict) else {}
        taken = {str(k): str(v) for k, v in taken.items()} if isinstance(taken, dict) else None
        if set_ or taken:
            rows.append({"path": str(f.get("path", "?")), "set": set_, "taken": taken})
    return rows


def hints_words(row: dict) -> str:
    """A file's hints in words: each set one with what the library took of it, then how many it reports."""
    taken = row["taken"]
    parts = [f"{k}={v}" + ("" if taken is None or taken.get(k) == v else
                           f" (took {taken[k]})" if k in taken else " (not reported)")
             for k, v in row["set"].items()]
    if taken is not None:
        parts.append(f"{len(taken)} hints reported by the library")
    return "; ".join(parts)
