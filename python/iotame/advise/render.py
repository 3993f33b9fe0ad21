"""The advice as a person reads it: rich tables (job, files, findings, settings) and the notes."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..render import fmt_bytes
from .advice import Advice
from .summary_records import Access, Histogram, MpiioCalls, Striping

__all__ = ["print_advice"]


def _render_secs(s: float | None) -> str:
    return "-" if s is None else f"{s:,.2f}"


def _render_hist(h: Histogram) -> str:
    parts = []
    for d, bins in h.directions().items():
        if bins:
            parts.append(f"{d}: " + " ".join(f"{b} {n:,}" for b, n in bins.items()))
    return "; ".join(parts) or "-"


def _render_access(a: Access | None) -> str:
    if not a:
        return "-"
    out = []
    for d in ("read", "write"):
        x = a.of(d)
        if x.requests:
            out.append(f"{d}: {x.consecutive:,} consec, {x.sequential:,} seq, {x.random:,} random")
    return "; ".join(out) or "-"


def _render_mpiio(m: MpiioCalls | None) -> str:
    if not m:
        return "no MPI-IO"
    return (f"coll r/w {m.collective_reads:,}/{m.collective_writes:,}, "
            f"indep r/w {m.independent_reads:,}/{m.independent_writes:,}")


def _render_lustre(lu: Striping | None) -> str:
    if not lu:
        return "-"
    return f"{lu.stripe_count} x {fmt_bytes(lu.stripe_size)} B, {len(lu.osts)} OSTs"


def _render_job(a: Advice) -> Table:
    j, log = a.job, a.log
    t = Table(title=f"job: {log.nprocs} processes, {log.run_seconds:.0f} s, Darshan {log.darshan} "
                    f"(format {log.format}), modules {', '.join(log.modules)}", title_justify="left")
    for col in ("files", "shared", "per process", "bytes read", "bytes written", "read s", "write s", "meta s",
                "meta share"):
        t.add_column(col, justify="right")
    s = j.totals.seconds
    _render_row(t, str(j.files), str(j.shared_files), str(j.per_process_files), fmt_bytes(j.totals.bytes_read),
                fmt_bytes(j.totals.bytes_written), _render_secs(s.read), _render_secs(s.write), _render_secs(s.meta),
                f"{j.totals.meta_share:.0%}")
    return t


def _render_files(a: Advice) -> Table:
    t = Table(title="files that matter (by bytes and I/O time; seconds summed over ranks)", title_justify="left")
    t.add_column("match", overflow="fold")
    for col in ("files", "kind", "ranks", "read", "written", "I/O s"):
        t.add_column(col, justify="right")
    for col in ("requests (Darshan's bins)", "access", "MPI-IO", "Lustre"):
        t.add_column(col, overflow="fold")
    for g in a.files:
        _render_row(t, g.match, str(g.files), g.kind, str(g.ranks), fmt_bytes(g.totals.bytes_read),
                    fmt_bytes(g.totals.bytes_written), _render_secs(g.totals.io_seconds),
                    f"({g.histogram_source}) {_render_hist(g.histogram)}" if g.histogram_source else "-",
                    _render_access(g.access), _render_mpiio(g.mpiio), _render_lustre(g.lustre))
    return t


def _render_findings(a: Advice) -> Table:
    t = Table(title="findings", title_justify="left")
    for col in ("id", "severity", "match"):
        t.add_column(col)
    t.add_column("finding", overflow="fold")
    t.add_column("counters", overflow="fold")
    for f in a.findings:
        counters = ", ".join(f"{k}={v:,}" if isinstance(v, int) else
                             (f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}")
                             for k, v in f.counters.items())
        _render_row(t, f.id, f.severity, f.match or "(job)", f.message, counters)
    return t


def _render_settings(a: Advice) -> Table:
    t = Table(title="configuration (each setting answers a finding)", title_justify="left")
    for col in ("rule", "setting", "value", "answers"):
        t.add_column(col, overflow="fold")
    t.add_column("why", overflow="fold")
    t.add_column("predicted gain", overflow="fold")
    for s in a.settings:
        gain = f"{s.predicted_gain:.2f}x" if s.predicted_gain is not None else "-"
        _render_row(t, s.rule, s.key, str(s.value), ", ".join(s.findings), s.reason,
                    gain + (f" ({s.prediction})" if s.prediction and s.predicted_gain is not None else ""))
    return t


def _render_skipped(a: Advice) -> list[str]:
    """What was not analysed (files beyond --max-files) and not shown (groups beyond --top, and their findings)."""
    parts = []
    files, groups = a.skipped_files, a.skipped_groups
    if files:
        parts.append(f"{files.files:,} files beyond --max-files ({fmt_bytes(files.totals.moved)} bytes, "
                     f"{files.totals.io_seconds:,.2f} s) not analysed")
    if groups and groups.findings:
        parts.append("findings on the groups not shown: " + ", ".join(f"{k} {n}" for k, n in groups.findings.items()))
    if groups:
        parts.append(f"{groups.groups} more group(s) of {groups.group_files:,} files beyond --top not shown "
                     f"({fmt_bytes(groups.group_bytes)} bytes, {groups.group_seconds:,.2f} s): "
                     + ", ".join(groups.matches) + (" ..." if groups.groups > len(groups.matches) else ""))
    return parts


def _render_line(console: Console, text: str) -> None:
    """A line as it is: no markup (paths and names may hold brackets), not wrapped (paths stay whole)."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _render_row(t: Table, *cells: str) -> None:
    """A table row of plain text (no markup: file names may hold brackets)."""
    t.add_row(*(Text(c) for c in cells))


def print_advice(a: Advice, console: Console, config_out: str | None = None) -> None:
    _render_line(console, f"iotame advise {a.log.path}")
    console.print(_render_job(a))
    if a.files:
        console.print(_render_files(a))
    if a.skipped_files or a.skipped_groups:
        _render_line(console, "skipped: " + "; ".join(_render_skipped(a)))
    for n in a.notes:
        _render_line(console, f"note: {n}")
    if a.findings:
        console.print(_render_findings(a))
    else:
        _render_line(console, "findings: none (no counter crossed a threshold; docs/advise.md lists them)")
    if a.settings:
        console.print(_render_settings(a))
    for u in a.unanswered:
        _render_line(console, f"not answered: {u.finding} ({u.match or 'job'}): {u.why}")
    _render_line(console, f"prediction: {a.prediction.note}")
    _render_line(console, "rules match basenames (digits wildcarded for numbered files): the log's paths are those of the "
                  "machine that ran the job")
    if config_out:
        _render_line(console, f"configuration written to {config_out} (iotame run --config {config_out} -- ...)")
