"""`iotame report STATS.json`: one HTML page for one run, in the tuning report's look (page._STYLE): the summary,
per file and layer (MPI-IO, POSIX) bytes and time, request-size histograms and time per rank as figures (PNG
embedded, so the page is one file), and what each module decided and why (iotame.decisions, the lines
`iotame stats show` prints)."""
from __future__ import annotations

import base64
import io
from pathlib import Path

from ..bandwidth import DEFINITION, fmt_bandwidth, run_bandwidth
from ..decisions import hints_rows, settings_of, staging_times, throttle_rows
from ..stats import decided, load_stats, summarize
from .page import _STYLE, _e


__all__ = ["make_run_page", "render_run_page"]

_KINDS = ("read", "write", "sync", "meta")


def _words(hints: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in hints.items())


def _png(fig) -> str:
    """The figure as an <img> with its PNG inline; closes the figure."""
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return f"<img alt='figure' src='data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}'>"


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _size_label(n: int) -> str:
    for unit, step in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= step:
            return f"{n / step:g} {unit}"
    return f"{n} B"


def histogram_figure(f: dict) -> str:
    """Requests per size bucket (a bucket is a power of two: its lower bound), reads and writes, at the MPI-IO
    layer and, when the stats have it, at the POSIX layer below; '' when the file has no requests."""
    layers = [("MPI-IO", f.get("histogram") or {}), ("POSIX", (f.get("posix") or {}).get("histogram") or {})]
    layers = [(name, h) for name, h in layers if any(h.get(d) for d in ("read", "write"))]
    if not layers:
        return ""
    plt = _plt()
    fig, axes = plt.subplots(1, len(layers), figsize=(4.6 * len(layers), 3.0), squeeze=False)
    for ax, (name, h) in zip(axes[0], layers):
        sizes = sorted({int(k) for d in ("read", "write") for k in (h.get(d) or {})})
        xs = range(len(sizes))
        for shift, d, color in ((-0.2, "read", "tab:blue"), (0.2, "write", "tab:orange")):
            counts = [int((h.get(d) or {}).get(str(s), 0)) for s in sizes]
            ax.bar([x + shift for x in xs], counts, width=0.4, color=color, label=d, log=True)   # 1 beside 10^5
        ax.set_xticks(list(xs), [_size_label(s) for s in sizes], rotation=30, fontsize=8)
        ax.set_title(f"{name}: requests per size", fontsize=10)
        ax.set_ylabel("requests (log)")
        ax.legend(fontsize=8)
    return _png(fig)


def rank_time_figure(f: dict) -> str:
    """Time per rank in reads, writes, sync and metadata: the fastest, mean and slowest rank (the statistics
    keep these three, reduced over the ranks)."""
    t = f.get("time") or {}
    if not any(float((t.get(k) or {}).get("max", 0) or 0) for k in _KINDS):
        return ""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 2.8))
    for i, (stat, color) in enumerate((("min", "tab:green"), ("avg", "tab:blue"), ("max", "tab:red"))):
        ax.bar([k + (i - 1) * 0.27 for k in range(len(_KINDS))],
               [float((t.get(k) or {}).get(stat, 0) or 0) for k in _KINDS], width=0.27, color=color,
               label={"min": "fastest rank", "avg": "mean", "max": "slowest rank"}[stat])
    ax.set_xticks(range(len(_KINDS)), list(_KINDS))
    ax.set_ylabel("seconds")
    ax.set_title(f"time per rank ({f.get('ranks', '?')} ranks)", fontsize=10)
    ax.legend(fontsize=8)
    return _png(fig)


def throttle_figure(rows: list[dict]) -> str:
    """The throttle's level over the job, per target and direction (its phases), when it searched."""
    rows = [r for r in rows if r["phases"]]
    if not rows:
        return ""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 2.8))
    for r in rows:
        phases = r["phases"]
        xs = [float(p.get("start_seconds", 0) or 0) for p in phases]
        ys = [p.get("level", 0) for p in phases]
        xs.append(xs[-1] + float(phases[-1].get("io_seconds", 0) or 0))     # the last phase's end
        ys.append(ys[-1])
        ax.step(xs, ys, where="post", marker="o", label=f"{r['target'][:8]} {r['direction']}s")
    ax.set_xlabel("seconds since MPI_Init")
    ax.set_ylabel("level (processes at once)")
    ax.set_title("throttle level over time", fontsize=10)
    ax.legend(fontsize=8)
    return _png(fig)


def _table(head: list[str], rows: list[list], num: set[int] = frozenset()) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td{' class=num' if i in num else ''}>{_e(c)}</td>" for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _layers(f: dict) -> str:
    """One file's bytes and time at the MPI-IO layer and at the POSIX layer under it."""
    rows = []
    t = f.get("time") or {}
    rows.append(["MPI-IO", f"{int(f.get('bytes_read', 0)):,}", f"{int(f.get('bytes_written', 0)):,}"]
                + [f"{float((t.get(k) or {}).get('max', 0) or 0):.4f}" for k in _KINDS])
    p = f.get("posix")
    if isinstance(p, dict):
        pt = p.get("time") or {}
        rows.append(["POSIX", f"{int(p.get('bytes_read', 0)):,}", f"{int(p.get('bytes_written', 0)):,}"]
                    + [f"{float((pt.get(k) or {}).get('max', 0) or 0):.4f}" for k in _KINDS])
    return _table(["layer", "bytes read", "bytes written"] + [f"{k} s (slowest rank)" for k in _KINDS], rows,
                  set(range(1, 7)))


def _model(stats: dict) -> str:
    """The selector's predictions per call signature: predicted and measured ms per candidate, and the budget."""
    budget = settings_of(stats)[("collective", "exam_budget")]
    rows = []
    for f in stats.get("files") or []:
        for d in f.get("decisions") or []:
            g = d.get("signature") or {}
            m = d.get("model") if isinstance(d.get("model"), dict) else {}
            pred, meas = m.get("predicted_s") or {}, m.get("measured_s") or {}
            mbs = d.get("throughputs") or {}
            cands = list(dict.fromkeys([*pred, *meas, *mbs])) or [d.get("strategy") or "-"]
            for c in cands:
                rows.append([f"{g.get('op')} {g.get('bytes', 0):,} B in {g.get('requests')} pieces",
                             c + (" (serving)" if c == d.get("strategy") else ""),
                             f"{pred[c] * 1e3:.3g}" if c in pred else "-",
                             f"{meas[c] * 1e3:.3g}" if c in meas else "-",
                             f"{mbs[c]:.1f}" if c in mbs else "-"])
    if not rows:
        return ""
    return (f"<h3>Collective strategy per call signature</h3><p>Examination budget: {budget:.0%} of a signature's "
            f"I/O time ({_e(settings_of(stats)['from'])}).</p>"
            + _table(["call", "strategy", "predicted ms", "measured ms", "measured MB/s"], rows, {2, 3, 4}))


def render_run_page(stats: dict, source: str) -> str:
    """The page for one run's statistics (`source` names the file in the title)."""
    s = summarize(stats)
    top = s["summary"]
    head = (f"<p>{_e(s.get('nprocs'))} ranks, {_e(s.get('mpi'))}; configuration {_e(s.get('config') or 'none')}"
            f"</p>" + _table(["bytes read", "bytes written", "I/O s", "bandwidth"],
                             [[f"{top['bytes_read']:,}", f"{top['bytes_written']:,}", f"{top['io_seconds']:.4f}",
                               fmt_bandwidth(run_bandwidth(stats))]], {0, 1, 2, 3})
            + f"<p><small>{_e(DEFINITION)}</small></p>")
    files = []
    for f in stats.get("files") or []:
        files.append(f"<h3>{_e(f.get('path', '?'))}</h3>{_layers(f)}{histogram_figure(f)}{rank_time_figure(f)}")
    why = _table(["module", "about", "decision"], [[r["module"], r["about"], r["decision"]] for r in decided(stats)])
    th = throttle_rows(stats)
    st = staging_times(stats)
    staging = "" if not st else (
        "<h3>Staging: write time visible to the application against hidden behind it</h3>"
        + _table(["visible s (waiting for room, sync, close)", "hidden s (flush no process waited for)",
                  "flusher s", "bytes staged", "calls"],
                 [[f"{st['visible_s']:.4f}", f"{st['hidden_s']:.4f}", f"{st['flush_s']:.4f}", f"{st['bytes']:,}",
                   st["calls"]]], {0, 1, 2, 3, 4}))
    hints = hints_rows(stats)
    hints_html = "<h3>MPI-IO hints</h3>" + (_table(
        ["file", "set by the configuration", "the MPI library's (MPI_File_get_info at the first open)"],
        [[h["path"], _words(h["set"]) or "none", "not recorded" if h["taken"] is None else _words(h["taken"])]
         for h in hints]) if hints else "<p>None set on the files, none recorded.</p>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>iotame run: {_e(source)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>iotame run: {_e(source)}</h1>{head}"
            f"<h2>What the runtime decided, and why</h2>{why}{_model(stats)}"
            + (f"<h3>Throttle</h3>{throttle_figure(th)}" if any(r["phases"] for r in th) else "")
            + f"{staging}{hints_html}<h2>Files</h2>{''.join(files)}</body></html>\n")


def make_run_page(stats_path: str | Path, out: str | Path | None = None) -> Path:
    """Writes the page for the statistics file (default: beside it, STATS.html) and returns its path."""
    stats_path = Path(stats_path)
    stats = load_stats(stats_path)
    page = Path(out) if out else stats_path.with_suffix(".html")
    page.write_text(render_run_page(stats, stats_path.name), encoding="utf-8")
    return page
