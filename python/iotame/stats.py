"""Statistics files (IOTAME_STATS) written by the runtime: loading, summarizing, and the tuner's objectives.

Format: docs/formats.md. MB is 10^6 bytes; a run's bandwidth is defined once, in iotame.bandwidth.
"""
from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

from .bandwidth import run_bandwidth
from .errors import StatsError

__all__ = ["load_stats", "parse_stats", "partial_paths", "load_partials", "merge_partials", "partial_banner", "summarize", "decided", "objectives", "objective", "OBJECTIVES", "emulated_storage"]

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


def _read_stats(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
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


def partial_paths(path: str | Path) -> list[Path]:
    """The partial statistics STATS.partial.RANK that processes of an aborted job wrote beside `path`, by rank."""
    p = Path(path)
    found = []
    for q in p.parent.glob(glob.escape(p.name) + ".partial.*"):
        rank = q.name[len(p.name) + len(".partial."):]
        if rank.isdigit():                       # not a temporary file (STATS.partial.R.tmpPID)
            found.append((int(rank), q))
    return [q for _, q in sorted(found)]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return float("-inf")


def load_stats(path: str | Path) -> dict:
    """The statistics at `path`; StatsError if it is missing, empty, not JSON or not a statistics file.

    When the job aborted (`path` is missing, or older than the partial statistics beside it), the partial
    statistics its processes wrote, merged (merge_partials). A partial file given itself is read the same way.
    """
    p = Path(path)
    partials = partial_paths(p)
    if partials and (not p.exists() or max(_mtime(q) for q in partials) > _mtime(p)):
        return load_partials(partials)
    obj = _read_stats(p)
    if isinstance(obj.get("partial"), dict) and "reason" in obj["partial"]:
        return merge_partials([(str(p), obj)])
    return obj


def load_partials(paths: list[Path]) -> dict:
    """Partial statistics files (partial_paths), merged (merge_partials; the newest file gives the job's size)."""
    newest = max(paths, key=_mtime)
    return merge_partials([(str(q), _read_stats(q)) for q in paths], newest=str(newest))


def _partial_of(source: str, obj: dict) -> dict:
    part = obj.get("partial")
    if not isinstance(part, dict):
        raise StatsError(f"statistics {source}: not partial statistics (no \"partial\" object)")
    for key in ("rank", "job_nprocs"):
        if not isinstance(part.get(key), int) or isinstance(part.get(key), bool) or part[key] < 0:
            raise StatsError(f"statistics {source}: partial.{key} is not a non-negative integer")
    if not isinstance(part.get("reason"), str):
        raise StatsError(f"statistics {source}: partial.reason is not a string")
    return part


def _merge_minmax(a: dict | None, ra: int, b: dict | None, rb: int) -> dict:
    """{min, avg, max} over the ranks of two records (avg weighted by their ranks)."""
    a, b = a or {}, b or {}
    if not a:
        return dict(b)
    if not b:
        return dict(a)
    n = ra + rb
    return {"min": min(a.get("min", 0), b.get("min", 0)), "max": max(a.get("max", 0), b.get("max", 0)),
            "avg": (a.get("avg", 0) * ra + b.get("avg", 0) * rb) / n if n else 0.0}


def _sum_counts(a: dict | None, b: dict | None) -> dict:
    out = dict(a or {})
    for k, v in (b or {}).items():
        out[k] = out.get(k, 0) + v if _num(v) else out.get(k, v)
    return out


def _merge_file(a: dict, b: dict) -> dict:
    """One file's records of two sets of ranks: counts and bytes summed, times min/avg/max over all of them."""
    ra, rb = int(a.get("ranks", 1) or 1), int(b.get("ranks", 1) or 1)
    out = dict(a)
    out["ranks"] = ra + rb
    for key in ("opens", "bytes_read", "bytes_written"):
        out[key] = int(a.get(key, 0) or 0) + int(b.get(key, 0) or 0)
    ops = {k: dict(v) for k, v in (a.get("ops") or {}).items()}
    for name, o in (b.get("ops") or {}).items():
        if name not in ops:
            ops[name] = dict(o)
            continue
        mine = ops[name]
        mine["count"] = mine.get("count", 0) + o.get("count", 0)
        for key in ("bytes", "errors"):
            if key in o or key in mine:
                mine[key] = mine.get(key, 0) + o.get(key, 0)
        if "seconds" in o or "seconds" in mine:
            mine["seconds"] = _merge_minmax(mine.get("seconds"), ra, o.get("seconds"), rb)
    out["ops"] = ops
    times = a.get("time") or {}
    out["time"] = {k: _merge_minmax(times.get(k), ra, (b.get("time") or {}).get(k), rb)
                   for k in set(times) | set(b.get("time") or {})}
    hist = a.get("histogram") or {}
    out["histogram"] = {d: _sum_counts(hist.get(d), (b.get("histogram") or {}).get(d))
                        for d in set(hist) | set(b.get("histogram") or {})}
    out["decisions"] = list(a.get("decisions") or []) + list(b.get("decisions") or [])
    out["passthrough_reasons"] = _sum_counts(a.get("passthrough_reasons"), b.get("passthrough_reasons"))
    return out


def _merged_summary(parts: list[dict]) -> dict:
    """Bytes summed over the ranks; each *_seconds the slowest rank's; MB/s recomputed (as the runtime does)."""
    sums = [p["summary"] for p in parts]
    out = {k: sum(int(s.get(k, 0) or 0) for s in sums) for k in ("bytes_read", "bytes_written")}
    for k in ("read_seconds", "write_seconds", "sync_seconds", "meta_seconds", "io_seconds"):
        out[k] = max(float(s.get(k, 0) or 0) for s in sums)

    def mbs(n: int, sec: float) -> float:
        return n / sec / 1e6 if sec > 0 else 0.0
    out["read_mbs"] = mbs(out["bytes_read"], out["read_seconds"])
    out["write_mbs"] = mbs(out["bytes_written"], out["write_seconds"])
    out["io_mbs"] = mbs(out["bytes_read"] + out["bytes_written"], out["io_seconds"])
    return out


def merge_partials(parts: list[tuple[str, dict]], newest: str | None = None) -> dict:
    """The partial statistics of an aborted job's processes ((source, object) pairs, each written by one rank)
    merged into one statistics object with "partial": {"ranks", "missing", "reasons"} (docs/formats.md).

    The job's size is the one the newest file (`newest`, else the last) recorded; files of other sizes or of
    ranks outside it are an earlier job's and are left out. Modules' job-wide sections are the lowest rank's.
    """
    if not parts:
        raise StatsError("partial statistics: no files to merge")
    checked = [(src, obj, _partial_of(src, obj)) for src, obj in parts]
    ref = next((c for c in checked if c[0] == newest), checked[-1])
    nprocs = ref[2]["job_nprocs"]
    by_rank: dict[int, tuple[str, dict, dict]] = {}
    for src, obj, part in checked:
        if part["job_nprocs"] == nprocs and part["rank"] < nprocs:
            by_rank.setdefault(part["rank"], (src, obj, part))
    ranks = sorted(by_rank)
    objs = [by_rank[r][1] for r in ranks]
    files: dict[str, dict] = {}
    for obj in objs:
        for f in obj.get("files", []):
            path = str(f.get("path", "?"))
            files[path] = _merge_file(files[path], f) if path in files else dict(f)
    modules: dict = {}
    reasons: dict = {}
    for obj in objs:
        for name, v in (obj.get("modules") or {}).items():
            modules.setdefault(name, v)
        reasons = _sum_counts(reasons, obj.get("passthrough_reasons"))
    first = objs[0]
    merged = {k: first.get(k) for k in ("version", "iotame_version", "mpi") if k in first}
    merged.update({
        "nprocs": nprocs, "config": first.get("config"), "config_error": first.get("config_error"),
        "malloc_threshold": first.get("malloc_threshold"),
        "wall_seconds": max(float(o.get("wall_seconds", 0) or 0) for o in objs),
        "summary": _merged_summary(objs), "files": list(files.values()), "modules": modules,
        "passthrough_reasons": reasons,
        "partial": {"ranks": ranks, "missing": [r for r in range(nprocs) if r not in by_rank],
                    "reasons": [{"rank": r, "reason": by_rank[r][2]["reason"], "signal": by_rank[r][2].get("signal")}
                                for r in ranks],
                    "files": [by_rank[r][0] for r in ranks]},
    })
    return merged


def partial_banner(partial: dict) -> list[str]:
    """The lines that say statistics are partial: the job aborted, why (per rank), and which ranks left none."""
    reasons = partial.get("reasons") or []
    first = reasons[0]["reason"] if reasons else "no process wrote why"
    lines = [f"partial: the job aborted ({first}); statistics of rank{'' if len(reasons) == 1 else 's'} "
             + ", ".join(str(r) for r in partial.get("ranks") or [])]
    lines += [f"  rank {r['rank']}: {r['reason']}" for r in reasons]
    missing = partial.get("missing") or []
    if missing:
        lines.append("  no statistics from rank" + ("" if len(missing) == 1 else "s") + " "
                     + ", ".join(str(r) for r in missing) + " (killed before writing, e.g. by SIGKILL)")
    return lines


def _io_mbs(summary: dict) -> float:
    """The run's bandwidth in MB/s, by the one definition (iotame.bandwidth.run_bandwidth)."""
    return run_bandwidth(summary).mb_s


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
                profile = f.get("profile") or {}
                model.append({"path": str(f.get("path", "?")), "profile": profile.get("path"),
                              "fitted_strategies": profile.get("fitted_strategies", 0),
                              "corrections": profile.get("corrections") or {},
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


def _call(g: dict) -> str:
    return f"{g.get('op')} {g.get('bytes', 0):,} B in {g.get('requests')} pieces"


def decided(stats: dict) -> list[dict]:
    """What each module decided and why, one {module, about, decision} per selector signature, throttled target
    and direction and staged file (iotame.decisions), and staging's visible against hidden write time."""
    from .decisions import hints_rows, hints_words, selector_reason, settings_of, staging_times, throttle_rows
    settings = settings_of(stats)
    budget = settings[("collective", "exam_budget")]
    rows = [{"module": "selector", "about": f"{f.get('path', '?')}: {_call(d.get('signature') or {})}",
             "decision": selector_reason(d, budget)}
            for f in stats.get("files", []) for d in f.get("decisions") or []]
    rows += [{"module": "throttle", "about": f"target {r['target']}, {r['direction']}s", "decision": r["reason"]}
             for r in throttle_rows(stats, settings)]
    rows += [{"module": "staging", "about": r["path"],
              "decision": f"writes {r['writes']}: {r['reason']}" + (f" (profile {r['profile']})" if r["profile"] else "")}
             for r in _staging_rows(stats.get("files", []))]
    t = staging_times(stats)
    if t and t["calls"]:
        rows.append({"module": "staging", "about": "write time",
                     "decision": f"visible {t['visible_s']:.3g} s (waiting for room, sync and close), hidden "
                                 f"{t['hidden_s']:.3g} s of the flusher's {t['flush_s']:.3g} s; {t['bytes']:,} B "
                                 f"in {t['calls']} calls"})
    for h in hints_rows(stats):
        rows.append({"module": "hints", "about": h["path"], "decision": hints_words(h)})
    return rows


def summarize(stats: dict) -> dict:
    """What `stats show` and `run` print: job summary, objectives and one row per file.

    A file's `seconds` is the sum over read, write, sync and meta of the slowest rank's time in that category.
    """
    s = stats["summary"]
    total = s["bytes_read"] + s["bytes_written"]
    summary = {
        "bytes_read": s["bytes_read"], "bytes_written": s["bytes_written"], "bytes": total,
        "io_seconds": float(s["io_seconds"]), "io_mbs": _io_mbs(s), "io_mibs": run_bandwidth(s).mib_s,
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
        "decided": decided(stats),
        "partial": stats.get("partial"),
    }
