"""`iotame advise LOG --html FILE`: the advice as one self-contained HTML page (no script, no file beside it): the
job, the files that matter, the figures people look at (bytes and I/O time per file group, the request-size
histogram, as inline SVG), the findings with the figure each rests on, and the configuration."""
from __future__ import annotations

import html
import json

from ..render import fmt_size
from .advice import Advice
from .files import SIZE_BINS
from .render import figure_line, unread_line

__all__ = ["render_html", "BAR_WIDTH"]

BAR_WIDTH = 420         # pixels of the longest bar in a figure
_ROW = 22               # pixels per bar row

_STYLE = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f3f3f3}td.num{text-align:right;white-space:nowrap}
td.path{word-break:break-all}pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}
.finding{border:1px solid #ccc;border-left:6px solid #999;padding:6px 12px;margin:8px 0}
.finding.critical{border-left-color:#c00}.finding.warning{border-left-color:#e90}.finding.info{border-left-color:#39c}
.figure-line{font-weight:bold}figure{margin:1em 0}figcaption{font-size:13px;color:#555}
svg text{font-size:12px;font-family:sans-serif}"""


def _e(x) -> str:
    return html.escape(str(x))


def _bars(title: str, rows: list[tuple[str, float, str]], color: str) -> str:
    """A horizontal bar chart as inline SVG: (label, value, value as shown) per row, the longest bar BAR_WIDTH."""
    top = max((v for _, v, _ in rows), default=0) or 1.0
    label_w = 230
    h = _ROW * len(rows) + 8
    bars = []
    for i, (label, v, shown) in enumerate(rows):
        y = 4 + i * _ROW
        w = max(1.0, BAR_WIDTH * v / top) if v > 0 else 0.0
        short = label if len(label) <= 34 else label[:31] + "..."
        bars.append(f"<text x='{label_w - 6}' y='{y + 14}' text-anchor='end'><title>{_e(label)}</title>{_e(short)}"
                    f"</text><rect class='bar' x='{label_w}' y='{y + 2}' width='{w:.1f}' height='{_ROW - 6}' "
                    f"fill='{color}'><title>{_e(label)}: {_e(shown)}</title></rect>"
                    f"<text x='{label_w + w + 6:.1f}' y='{y + 14}'>{_e(shown)}</text>")
    width = label_w + BAR_WIDTH + 140
    return (f"<figure><svg class='chart' role='img' aria-label='{_e(title)}' width='{width}' height='{h}' "
            f"viewBox='0 0 {width} {h}'>{''.join(bars)}</svg><figcaption>{_e(title)}</figcaption></figure>")


def _figures(a: Advice) -> str:
    groups = a.files
    if not groups:
        return "<p>No files to show.</p>"
    out = [_bars("bytes moved per file group (read + written)",
                 [(g.match, g.totals.moved, fmt_size(g.totals.moved)) for g in groups], "#4878a8"),
           _bars("I/O seconds per file group (summed over the ranks)",
                 [(g.match, g.totals.io_seconds, f"{g.totals.io_seconds:,.2f} s") for g in groups], "#d08040")]
    h = a.job.histogram
    if a.job.histogram_source:
        for d, bins in h.directions().items():
            if bins:
                out.append(_bars(f"{d} requests per size bin ({a.job.histogram_source}, Darshan's bins, the job)",
                                 [(b, bins.get(b, 0), f"{bins.get(b, 0):,}") for b in SIZE_BINS], "#60a060"))
    return "".join(out)


def _job(a: Advice) -> str:
    j, log = a.job, a.log
    t = j.totals
    rows = [("log", log.path), ("executable", log.exe or "-"), ("processes", f"{j.nprocs:,}"),
            ("run time", f"{j.run_seconds:,.0f} s"), ("Darshan", f"{log.darshan} (format {log.format})"),
            ("modules", ", ".join(log.modules)),
            ("files", f"{j.files:,} ({j.shared_files:,} shared, {j.per_process_files:,} per process)"),
            ("bytes read / written", f"{fmt_size(t.bytes_read)} / {fmt_size(t.bytes_written)} "
                                     f"({t.bytes_read:,} / {t.bytes_written:,} bytes)"),
            ("I/O time", f"{t.io_seconds:,.2f} s summed over the ranks (read {t.seconds.read:,.2f}, write "
                         f"{t.seconds.write:,.2f}, metadata {t.seconds.meta:,.2f})")]
    unread = unread_line(a)
    if unread:
        rows.append(("other modules", unread))
    return "<table>" + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows) + "</table>"


def _files(a: Advice) -> str:
    head = ("file group", "files", "kind", "ranks", "read", "written", "I/O s", "requests", "MPI-IO calls c/i")
    rows = []
    for g in a.files:
        m = g.mpiio
        calls = "-" if not m else (f"{m.collective_reads + m.collective_writes:,} / "
                                   f"{m.independent_reads + m.independent_writes:,}")
        hist = "; ".join(f"{d} " + ", ".join(f"{b} {n:,}" for b, n in bins.items())
                         for d, bins in g.histogram.directions().items() if bins) or "-"
        rows.append(f"<tr><td class=path>{_e(g.match)}<br><small>{_e(g.example)}</small></td>"
                    f"<td class=num>{g.files:,}</td><td>{_e(g.kind)}</td><td class=num>{g.ranks:,}</td>"
                    f"<td class=num>{g.totals.bytes_read:,}</td><td class=num>{g.totals.bytes_written:,}</td>"
                    f"<td class=num>{g.totals.io_seconds:,.2f}</td><td>{_e(hist)}</td><td>{_e(calls)}</td></tr>")
    return ("<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>")


def _findings(a: Advice) -> str:
    if not a.findings:
        unread = unread_line(a)
        return (f"<p>None: no figure of what advise reads crossed its threshold{'; ' + _e(unread) if unread else ''}"
                f".</p>")
    out = []
    for f in a.findings:
        counters = ", ".join(f"{k}={v}" for k, v in f.counters.items())
        out.append(f"<div class='finding {_e(f.severity)}' id='finding-{_e(f.id)}'><b>{_e(f.id)}</b> · "
                   f"{_e(f.severity)} · {_e(f.match or 'the job')}<div class=figure-line>{_e(figure_line(f))}</div>"
                   f"<p>{_e(f.message)}</p><small>{_e(counters)}</small></div>")
    return "".join(out)


def _settings(a: Advice) -> str:
    rows = "".join(f"<tr><td>{_e(s.rule)}</td><td>{_e(s.key)}</td><td>{_e(s.value)}</td>"
                   f"<td>{_e(', '.join(s.findings))}</td><td>{_e(s.reason)}</td><td class=num>"
                   f"{_e(f'{s.predicted_gain:.2f}x' if s.predicted_gain is not None else '-')}</td></tr>"
                   for s in a.settings)
    unanswered = "".join(f"<li>{_e(u.finding)} ({_e(u.match or 'the job')}): {_e(u.why)}</li>" for u in a.unanswered)
    return ((f"<table><tr><th>rule</th><th>setting</th><th>value</th><th>answers</th><th>why</th>"
             f"<th>predicted gain</th></tr>{rows}</table>" if rows else "<p>No setting.</p>") +
            (f"<p>Not answered:</p><ul>{unanswered}</ul>" if unanswered else "") +
            f"<p>{_e(a.prediction.note)}</p><pre>{_e(json.dumps(a.config, indent=1))}</pre>")


def render_html(a: Advice) -> str:
    """The page for an advice: one string, every figure inline."""
    notes = "".join(f"<li>{_e(n)}</li>" for n in a.notes)
    return (f"<!doctype html><html lang=en><head><meta charset='utf-8'><title>iotame advise: {_e(a.log.path)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>iotame advise</h1>"
            f"<h2 id=job>The job</h2>{_job(a)}{f'<ul class=notes>{notes}</ul>' if notes else ''}"
            f"<h2 id=figures>Figures</h2>{_figures(a)}"
            f"<h2 id=files>The files that matter</h2>{_files(a)}"
            f"<h2 id=findings>Findings</h2>{_findings(a)}"
            f"<h2 id=configuration>The configuration</h2>{_settings(a)}</body></html>\n")
