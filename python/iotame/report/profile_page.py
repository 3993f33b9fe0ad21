"""`iotame report PROFILE.json`: one page for a machine profile (`iotame calibrate --out`): the storage curves
(MB/s per request size, sequential and scattered, write and read, per stream count where measured), the network's
ping-pong, and the strategies' measured calls with the fit's cross-validated error, as figures beside their
tables. The same look as a run's page (run_page.py)."""
from __future__ import annotations

from pathlib import Path

from .page import _STYLE, _e
from .run_page import _plt, _png, _size_label, _table

__all__ = ["is_profile", "render_profile_page", "make_profile_page"]


def is_profile(obj: object) -> bool:
    """Whether a JSON object is a machine profile (its storage and nodes sections) rather than run statistics."""
    return isinstance(obj, dict) and isinstance(obj.get("storage"), dict) and "nodes" in obj and "summary" not in obj


def _log_figure(fig, ax, xlabel: str, title: str) -> str:
    """MB/s against a size on log axes (the size in powers of two), with its legend, as an <img>."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("MB/s (10^6 B/s)")
    ax.set_title(title)
    ax.legend(fontsize="small")
    return _png(fig)


def storage_figure(storage: dict) -> str:
    """MB/s against the request size, one line per operation and access (log-log)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for op in ("write", "read"):
        for access, style in (("sequential", "-"), ("scattered", "--")):
            points = (storage.get(op) or {}).get(access) or []
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], style, marker="o", label=f"{op} {access}")
    return _log_figure(fig, ax, "request size (bytes)", "storage: one stream")


def network_figure(network: dict) -> str:
    """Ping-pong MB/s against the message size within a node and across nodes; '' without points."""
    lines = [(where, (network.get(where) or {}).get("points") or []) for where in ("intra", "inter")]
    lines = [(where, pts) for where, pts in lines if pts]
    if not lines:
        return ""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    for where, pts in lines:
        ax.plot([p[0] for p in pts], [p[2] for p in pts], marker="o", label="within a node" if where == "intra"
                else "across nodes")
    return _log_figure(fig, ax, "message size (bytes)", "network: ping-pong")


def _strategy_rows(strategies: dict) -> tuple[list[str], list[list]]:
    """One row per measured signature and operation: MB/s of its median call under each strategy."""
    import statistics
    names, table = [], {}
    for r in strategies.get("measured") or []:
        key = (r["op"], r["pieces"], r["piece"], "interleaved" if r["interleaved"] else "contiguous", r["calls"])
        mbs = r["bytes"] / max(statistics.median(r["seconds"]), 1e-12) / 1e6
        table.setdefault(key, {})[r["strategy"]] = mbs
        if r["strategy"] not in names:
            names.append(r["strategy"])
    rows = [[f"{op} {pieces:,} x {_size_label(piece)} {layout}, {calls} call{'s' if calls != 1 else ''}"]
            + [f"{by[n]:,.1f}" if n in by else "" for n in names] for (op, pieces, piece, layout, calls), by in
            table.items()]
    return names, rows


def render_profile_page(profile: dict, source: str) -> str:
    """The page for one machine profile (`source` names the file in the title)."""
    fs, nodes = profile.get("filesystem") or {}, profile.get("nodes") or {}
    head = (f"<p>{_e(fs.get('path', '?'))} ({_e(fs.get('mount_type') or fs.get('type') or '?')}, "
            f"{_e(fs.get('targets', 1))} target(s)); {_e(nodes.get('count', '?'))} node(s) x "
            f"{_e(nodes.get('processes_per_node', '?'))} process(es); created {_e(profile.get('created', '?'))} on "
            f"{_e(profile.get('host', '?'))}</p>")
    storage = profile.get("storage") or {}
    curves = [[f"{op} {access}", _size_label(int(p[0])), f"{p[1]:,.1f}"] for op in ("write", "read")
              for access in ("sequential", "scattered") for p in (storage.get(op) or {}).get(access) or []]
    parts = [f"<h2>Storage</h2>{storage_figure(storage)}",
             _table(["curve", "request", "MB/s"], curves, {2})]
    memory = profile.get("memory") or {}
    if memory.get("copy_mbs"):
        parts.append(f"<p>memory copy: {memory['copy_mbs']:,.0f} MB/s</p>")
    network = profile.get("network") or {}
    figure = network_figure(network)
    if figure:
        parts.append(f"<h2>Network</h2>{figure}")
    strategies = profile.get("strategies") or {}
    if strategies.get("measured"):
        names, rows = _strategy_rows(strategies)
        parts.append("<h2>Collective strategies: MB/s of the median call</h2>"
                     + _table(["signature"] + names, rows, set(range(1, len(names) + 1))))
        fits = (strategies.get("fit") or {}).get("strategies") or {}
        if fits:
            parts.append("<h3>The fitted model's cross-validated error</h3>" + _table(
                ["strategy", "rows", "median", "largest"],
                [[n, f["rows"], f"{100 * f['cv_median']:.1f} %", f"{100 * f['cv_max']:.1f} %"]
                 for n, f in fits.items()], {1, 2, 3}))
    notes = profile.get("notes") or []
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>iotame profile: {_e(source)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>iotame profile: {_e(source)}</h1>{head}{''.join(parts)}"
            "</body></html>\n")


def make_profile_page(path: str | Path, profile: dict, out: str | Path | None = None) -> Path:
    """Writes the page of a loaded profile (default: beside it, PROFILE.html) and returns its path."""
    path = Path(path)
    page = Path(out) if out else path.with_suffix(".html")
    page.write_text(render_profile_page(profile, path.name), encoding="utf-8")
    return page
