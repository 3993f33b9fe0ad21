"""The advice as a person reads it in a terminal: the job and the files that matter as short lines, each finding as
a panel with the figure that decides it (its normalised quantity against its threshold), the settings, the notes.
Everything fits 80 columns (WIDTH); values are never cut (long paths fold onto the next line). The whole values
are in --json (advice.to_json), the figures in --html (render_html.py)."""
from __future__ import annotations

import textwrap

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from ..render import fmt_size
from .advice import Advice
from .records import Finding
from .summary_records import Access, GroupSummary, Histogram, MpiioCalls, Striping

__all__ = ["WIDTH", "print_advice", "figure_line", "unread_line"]

WIDTH = 80              # what the output is laid out for, on a terminal or in a file
_SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


def _render_secs(s: float | None) -> str:
    return "-" if s is None else f"{s:,.2f} s"


def _render_hist(h: Histogram) -> str:
    parts = []
    for d, bins in h.directions().items():
        if bins:
            parts.append(f"{d} " + ", ".join(f"{b} {n:,}" for b, n in bins.items()))
    return "; ".join(parts) or "-"


def _render_access(a: Access | None) -> str:
    if not a:
        return "-"
    out = []
    for d in ("read", "write"):
        x = a.of(d)
        if x.requests:
            out.append(f"{d} {x.consecutive:,} consecutive, {x.sequential:,} sequential, {x.random:,} random")
    return "; ".join(out) or "-"


def _render_mpiio(m: MpiioCalls | None) -> str:
    if not m:
        return "no MPI-IO"
    return (f"collective r/w {m.collective_reads:,}/{m.collective_writes:,}, "
            f"independent r/w {m.independent_reads:,}/{m.independent_writes:,}")


def _render_lustre(lu: Striping | None) -> str:
    if not lu:
        return ""
    return f"; Lustre {lu.stripe_count} x {fmt_size(lu.stripe_size)} stripes, {len(lu.osts)} OSTs"


def _render_value(v: float | None) -> str:
    if v is None:
        return "-"
    if float(v).is_integer() and abs(v) >= 1:
        return f"{int(v):,}"
    return f"{v:.0%}" if 0 < abs(v) < 1 else f"{v:,.3g}"


def figure_line(f: Finding) -> str:
    """The figure a finding rests on: `quantity: value (threshold T)`."""
    if f.quantity is None:
        return ""
    return f"{f.quantity}: {_render_value(f.value)} (threshold {_render_value(f.threshold)})"


def unread_line(a: Advice) -> str:
    """The modules advise does not analyse, with their bytes: `STDIO: 1.8 GB, not analysed`."""
    parts = [f"{u.module}: {fmt_size(u.moved)}" if u.error is None else f"{u.module}: unreadable ({u.error})"
             for u in a.job.unread]
    return "; ".join(parts) + ", not analysed" if parts else ""


def _render_wrap(console: Console, text: str, indent: str = "") -> None:
    """A paragraph wrapped at WIDTH, words kept whole (a path longer than a line stays one line)."""
    lines = textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                          break_long_words=False, break_on_hyphens=False) or [""]
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _render_job(console: Console, a: Advice) -> None:
    j, log = a.job, a.log
    t = j.totals
    _render_wrap(console, f"job: {j.nprocs:,} processes, {j.run_seconds:,.0f} s, Darshan {log.darshan} (format "
                          f"{log.format}), modules {', '.join(log.modules)}")
    per = f", {j.io_seconds_per_process:,.2f} s per process" if j.io_seconds_per_process is not None else ""
    _render_wrap(console, f"{j.files:,} file(s) ({j.shared_files:,} shared, {j.per_process_files:,} per process); "
                          f"read {fmt_size(t.bytes_read)}, written {fmt_size(t.bytes_written)}; I/O "
                          f"{t.io_seconds:,.2f} s summed over the ranks{per}; metadata {t.meta_share:.0%} of it",
                 "  ")
    unread = unread_line(a)
    if unread:
        _render_wrap(console, f"other modules: {unread}", "  ")


def _render_group(console: Console, g: GroupSummary, a: Advice) -> None:
    t = a.job.totals
    share = g.totals.io_seconds / t.io_seconds if t.io_seconds else (g.totals.moved / t.moved if t.moved else 0)
    _render_wrap(console, f"{g.match}: {g.files:,} {g.kind} file(s), {g.ranks:,} ranks; read "
                          f"{fmt_size(g.totals.bytes_read)}, written {fmt_size(g.totals.bytes_written)}, "
                          f"{_render_secs(g.totals.io_seconds)} ({share:.0%} of the job)", "  ")
    if g.histogram_source:
        _render_wrap(console, f"requests ({g.histogram_source}): {_render_hist(g.histogram)}", "    ")
    _render_wrap(console, f"access: {_render_access(g.access)}; MPI-IO: {_render_mpiio(g.mpiio)}"
                          f"{_render_lustre(g.lustre)}", "    ")


def _render_finding(f: Finding) -> Panel:
    body = Text()
    fig = figure_line(f)
    if fig:
        body.append(fig + "\n", style="bold")
    body.append(f.message)
    title = Text(f" {f.id} · ", style="bold")
    title.append(f.severity, style=_SEVERITY_STYLE.get(f.severity, ""))
    title.append(f" · {f.match or 'the job'} ")
    return Panel(body, title=title, title_align="left", width=WIDTH, expand=False)


def _render_skipped(a: Advice) -> list[str]:
    """What was not analysed (files beyond --max-files) and not shown (groups beyond --top, and their findings)."""
    parts = []
    files, groups = a.skipped_files, a.skipped_groups
    if files:
        parts.append(f"{files.files:,} files beyond --max-files ({fmt_size(files.totals.moved)}, "
                     f"{files.totals.io_seconds:,.2f} s) not analysed")
    if groups and groups.findings:
        parts.append("findings on the groups not shown: " + ", ".join(f"{k} {n}" for k, n in groups.findings.items()))
    if groups:
        parts.append(f"{groups.groups} more group(s) of {groups.group_files:,} files beyond --top not shown "
                     f"({fmt_size(groups.group_bytes)}, {groups.group_seconds:,.2f} s): "
                     + ", ".join(groups.matches) + (" ..." if groups.groups > len(groups.matches) else ""))
    return parts


def _render_settings(console: Console, a: Advice) -> None:
    console.print("configuration (each setting answers findings):", markup=False, highlight=False)
    for s in a.settings:
        gain = f"; predicted {s.predicted_gain:.2f}x ({s.prediction})" if s.predicted_gain is not None else ""
        _render_wrap(console, f"{s.rule}: {s.key} = {s.value}  answers {', '.join(s.findings)}", "  ")
        _render_wrap(console, s.reason + gain, "    ")


def _render_line(console: Console, text: str) -> None:
    """A line as it is (a path in it stays whole and on the line that names it)."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def print_advice(a: Advice, console: Console, config_out: str | None = None) -> None:
    _render_line(console, f"iotame advise {a.log.path}")
    _render_job(console, a)
    if a.files:
        console.print("files that matter (by bytes and I/O time; seconds summed over the ranks):", markup=False,
                      highlight=False)
        for g in a.files:
            _render_group(console, g, a)
    if a.skipped_files or a.skipped_groups:
        _render_wrap(console, "skipped: " + "; ".join(_render_skipped(a)))
    for n in a.notes:
        _render_wrap(console, f"note: {n}")
    if a.findings:
        for f in a.findings:
            console.print(_render_finding(f))
    else:
        unread = unread_line(a)
        _render_wrap(console, "findings: none: no figure of what advise reads (POSIX, MPI-IO, LUSTRE, HDF5) crossed "
                              "its threshold (docs/advise.md lists them)" + (f"; {unread}" if unread else ""))
    if a.settings:
        _render_settings(console, a)
    for u in a.unanswered:
        _render_wrap(console, f"not answered: {u.finding} ({u.match or 'job'}): {u.why}")
    _render_wrap(console, f"prediction: {a.prediction.note}")
    _render_wrap(console, "rules match basenames (digits wildcarded for numbered files): the log's paths are those "
                          "of the machine that ran the job")
    if config_out:
        _render_line(console, f"configuration written to {config_out}")
        _render_line(console, f"  iotame run --config {config_out} -- ...")
