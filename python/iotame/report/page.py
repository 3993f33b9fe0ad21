"""The report's HTML page (index.html): the result, the best configuration, the plots and every trial."""
from __future__ import annotations

import html
import json
from pathlib import Path

from ..bandwidth import fmt_bandwidth
from .data import ReportData

__all__ = ["render_page"]

_STYLE = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f3f3f3}td.num{text-align:right}tr.failed{color:#b00}tr.default{background:#fff6e0}
pre{background:#f6f6f6;padding:8px;overflow-x:auto}img{max-width:100%;border:1px solid #eee;margin:6px 0}"""


def _e(x) -> str:
    return html.escape(str(x))


def _num(v, unit: str) -> str:
    if v is None:
        return "-"
    return fmt_bandwidth(v) if unit == "MB/s" else f"{v:.4g} {unit}"


def _result(data: ReportData) -> str:
    s = data.summary
    if s is None:
        return "<p>The study has not finished (no summary.json yet): the plots show the trials so far.</p>"
    d, b = s["default"], s["best"]
    speed = f"{s['speedup']:.2f}x" if s.get("speedup") is not None else "-"
    if s.get("speedup_interval"):
        speed += " [{:.2f}, {:.2f}] by round".format(*s["speedup_interval"])
    rows = [("default", d["objective"], d["trial"], "(system default)"),
            ("best", b["objective"], b["trial"],
             "(system default)" if b.get("is_default") else " ".join(f"{k.split('.', 1)[-1]}={v}"
                                                                     for k, v in b["params"].items()))]
    body = "".join(f"<tr><td>{_e(n)}</td><td class=num>{_e(_num(v, s['unit']))}</td><td class=num>{_e(t)}</td>"
                   f"<td>{_e(c)}</td></tr>" for n, v, t, c in rows)
    tr = s["trials"]
    return (f"<table><tr><th></th><th>{_e(s['objective'])}</th><th>trial</th><th>configuration</th></tr>{body}"
            f"</table><p><b>speedup {speed}</b> ({_e(s['measured'])}). Trials: {tr['total']} ({tr['complete']} "
            f"complete, {tr['failed']} failed, {tr['reused']} reused); sampler {_e(s['sampler'])}; page cache "
            f"{_e(s['page_cache'])}; {'writes made durable at close' if s.get('durable') else 'writes not synced'}"
            f".</p>{_ablation(s.get('ablation'))}<h2>best.json</h2>"
            f"<pre>{_e(json.dumps(s['best']['config'], indent=1))}</pre>")


def _ablation(a: dict | None) -> str:
    """What each setting of the best configuration carries (the ablation's runs), the largest first."""
    if not a:
        return ""

    def effect(e: dict) -> str:
        return "-" if e["effect"] is None else f"{e['effect'] * 100:+.1f} %"

    def interval(e: dict) -> str:
        low_high = e.get("interval")
        return "-" if not low_high else f"{low_high[0] * 100:+.1f} .. {low_high[1] * 100:+.1f} %"

    def verdict(e: dict) -> str:
        return ("kept" if e["kept"] else "left out of best.json") + (" (uncertain)" if e.get("uncertain") else "")

    rows = "".join(f"<tr><td>{_e(e['setting'].split('.', 1)[-1])}={_e(e['value'])}</td><td class=num>"
                   f"{_e(effect(e))}</td><td class=num>{_e(interval(e))}</td><td class=num>{e.get('rounds', '')}"
                   f"</td><td>{_e(verdict(e))}</td></tr>" for e in a["effects"])
    return (f"<h2>What carries the gain</h2><p>Each setting of the best configuration removed in turn, side by side "
            f"with it, {a['rounds']} rounds at most; the effect is the median of the rounds' paired ratios, the "
            f"interval their least and largest; noise {a['noise'] * 100:.1f} %.</p><table><tr><th>setting</th>"
            f"<th>effect</th><th>interval</th><th>rounds</th><th></th></tr>{rows}</table>")


def _trials(data: ReportData) -> str:
    keys = sorted({k for t in data.trials for k in t.params})
    head = "".join(f"<th>{_e(k.split('.', 1)[-1])}</th>" for k in keys)
    rows = []
    for t in sorted(data.trials, key=lambda t: t.number):
        cls = "failed" if t.state == "failed" else ("default" if t.default else "")
        note = "default" if t.default else (t.seed or (f"as trial {t.reused_from}" if t.reused_from is not None
                                                       else ""))
        value = _num(t.value, data.unit) if t.value is not None else (t.error or t.state)
        cells = "".join(f"<td>{_e(t.params.get(k, ''))}</td>" for k in keys)
        rows.append(f"<tr class='{cls}'><td class=num>{t.number}</td><td>{_e(t.state)}</td>"
                    f"<td class=num>{_e(value)}</td><td>{_e(note)}</td>{cells}</tr>")
    return (f"<table><tr><th>trial</th><th>state</th><th>{_e(data.objective)}</th><th>note</th>{head}</tr>"
            + "".join(rows) + "</table>")


def render_page(data: ReportData, images: dict[str, Path]) -> str:
    """The page; `images` maps a section title to a PNG in the same directory."""
    study = data.study
    figs = "".join(f"<h2>{_e(title)}</h2><img src='{_e(p.name)}' alt='{_e(title)}'>" for title, p in images.items())
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>iotame tune: {_e(study.get('study'))}"
            f"</title><style>{_STYLE}</style></head><body><h1>iotame tune: {_e(study.get('study'))}</h1>"
            f"<p><code>{_e(' '.join(study.get('command', [])))}</code><br>{_e(study.get('nprocs'))} processes, "
            f"file system {_e(study.get('fs'))}, objective {_e(data.objective)} ({_e(study.get('direction'))}), "
            f"storage <code>{_e(study.get('storage'))}</code></p>"
            f"<h2>Result</h2>{_result(data)}{figs}<h2>Trials</h2>{_trials(data)}</body></html>\n")
