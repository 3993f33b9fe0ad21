"""Rich tables for what the commands print (statistics summaries, benchmark phases)."""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import IO, Iterable, Iterator

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from .bandwidth import DEFINITION, bandwidth, fmt_bandwidth
from .decisions import pick_way
from .stats import partial_banner

__all__ = ["PIPE_WIDTH", "READ_WIDTH", "status", "console", "stats_header", "stats_tables", "print_stats", "phase_table", "fmt_bytes", "fmt_size", "fmt_seconds", "fmt_mbs"]


def _model_basis(rows: list) -> str:
    """What each profile's predictions rest on: the strategies its fit measured, and the measurements of the
    corrections the knowledge file kept of it."""
    lines = []
    for profile in dict.fromkeys(m.get("profile") for m in rows if "refused" not in m):
        m = next(r for r in rows if r.get("profile") == profile)
        c = m.get("corrections") or {}
        fitted = m.get("fitted_strategies", 0)
        lines.append(f"profile {profile}: " + (f"{fitted} strategies fitted to calibrate's measurements" if fitted
                                                else "no strategy measurements (the model's equations alone; "
                                                     "iotame calibrate measures them)") +
                     f"; corrections rest on {c.get('measurements', 0)} measurement(s) of earlier jobs in "
                     f"{c.get('classes', 0)} class(es)")
    return "\n".join(lines)


# A console that is not a terminal (a file, a pipe) prints tables at READ_WIDTH columns ($COLUMNS if set), wrapping cells at spaces
# and never cutting a value: a table whose longest unbreakable words (a path, a number) need more takes what they
# need. Other text is not wrapped (PIPE_WIDTH), so a long path on a line stays whole; --json has every value.
READ_WIDTH = 80
PIPE_WIDTH = 1 << 14


def _render_isatty(f: IO[str]) -> bool:
    try:
        return f.isatty()
    except (AttributeError, ValueError):
        return False


class _PipeConsole(Console):
    """A Console for files and pipes: each Table at READ_WIDTH, or at the least width that breaks no word."""

    def status(self, label, **_kw) -> contextlib.AbstractContextManager:
        """Console.status for a file or a pipe, where rich's spinner prints nothing: lines (see status())."""
        return _line_status(str(label))

    def print(self, *objects, **kw) -> None:
        for obj in objects:
            if isinstance(obj, Table) and "width" not in kw:
                super().print(obj, width=_table_width(self, obj), **kw)
            else:
                super().print(obj, **kw)


def _table_width(c: Console, table: Table) -> int:
    """Folds every column's cells (no `…`) and returns the width to print `table` at: READ_WIDTH, or the width
    its longest word in each column needs with padding and borders, when that is wider."""
    need = 1
    for col in table.columns:
        if col.overflow == "ellipsis":
            col.overflow = "fold"
        words = [w for cell in (col.header, *col.cells) for w in _plain(cell).split()]
        col.min_width = max([cell_len(w) for w in words] + [col.min_width or 1])
        need += col.min_width + 3
    return max(read_width(), need)


def read_width() -> int:
    """READ_WIDTH, or $COLUMNS when it is set to a number (as a shell exports it)."""
    try:
        return max(int(os.environ.get("COLUMNS", "")), 20)
    except ValueError:
        return READ_WIDTH


def _plain(cell) -> str:
    return cell if isinstance(cell, str) else getattr(cell, "plain", "")


def console(file: IO[str] | None = None, stderr: bool = False) -> Console:
    """A console on the current sys.stdout/sys.stderr (looked up at call time, so tests can capture it): a
    terminal's width on a terminal; elsewhere tables at READ_WIDTH columns (see _PipeConsole), nothing cut."""
    f = file or (sys.stderr if stderr else sys.stdout)
    if _render_isatty(f):
        return Console(file=f, highlight=False, soft_wrap=False)
    return _PipeConsole(file=f, highlight=False, soft_wrap=False, width=PIPE_WIDTH)


def fmt_bytes(n: int | float) -> str:
    return f"{int(n):,}"


def fmt_size(n: int | float) -> str:
    """A size as a person reads it, in decimal units (MB is 10^6 bytes, as Darshan's tools print): `25 GB`,
    `78 KB`, `512 B`."""
    n = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" or abs(n) >= 100 else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def fmt_seconds(s: float) -> str:
    return f"{s:.4f}"


def fmt_mbs(m: float) -> str:
    return f"{m:.1f}"


def stats_header(summary: dict, title: str = "iotame statistics") -> str:
    """`TITLE: N ranks, MPI` (printed above the tables rather than as their title, which would wrap)."""
    ranks = f"{summary['nprocs']} ranks" if summary.get("nprocs") is not None else None
    partial = summary.get("partial")
    if ranks and isinstance(partial, dict) and isinstance(partial.get("ranks"), list):
        ranks += f" (statistics of {len(partial['ranks'])})"   # an aborted job: the ranks that wrote theirs
    about = [ranks, summary.get("mpi")]
    about = ", ".join(str(a) for a in about if a)
    return f"{title}: {about}" if about else title


def stats_tables(summary: dict) -> list[Table]:
    """Tables for stats.summarize(): the job summary, then one row per file (when there are files)."""
    s = summary["summary"]
    top = Table(title="summary", title_justify="left")
    for col in ("bytes read", "bytes written", "I/O s", "read calls MB/s", "write calls MB/s", "bandwidth MB/s"):
        top.add_column(col, justify="right")
    top.add_row(fmt_bytes(s["bytes_read"]), fmt_bytes(s["bytes_written"]), fmt_seconds(s["io_seconds"]),
                fmt_mbs(s["read_mbs"]), fmt_mbs(s["write_mbs"]), fmt_mbs(s["io_mbs"]))
    tables = [top]
    if summary["files"]:
        files = Table(title="files (time: slowest rank, read+write+sync+meta)", title_justify="left")
        files.add_column("path", overflow="fold")
        for col in ("read", "written", "ops", "time s"):
            files.add_column(col, justify="right")
        for f in summary["files"]:
            files.add_row(f["path"], fmt_bytes(f["bytes_read"]), fmt_bytes(f["bytes_written"]), str(f["ops"]),
                          fmt_seconds(f["seconds"]))
        tables.append(files)
    coll = summary.get("collective") or {}
    if coll.get("strategies"):
        t = Table(title="collective strategies (time: slowest rank)", title_justify="left")
        t.add_column("path", overflow="fold")
        t.add_column("strategy")
        for col in ("calls", "bytes", "MB/s"):
            t.add_column(col, justify="right")
        for r in coll["strategies"]:
            t.add_row(r["path"], r["strategy"], str(r["calls"]), fmt_bytes(r["bytes"]), fmt_mbs(r["mbs"]))
        tables.append(t)
    if coll.get("decisions"):
        t = Table(title="selector decisions (strategy auto; MB/s measured in the last examination)",
                  title_justify="left")
        t.add_column("path", overflow="fold")
        t.add_column("call")
        t.add_column("strategy")
        for col in ("calls", "examined", "waited", "re-exams", "handed back"):
            t.add_column(col, justify="right")
        t.add_column("MB/s per candidate")
        for d in coll["decisions"]:
            g = d.get("signature", {})
            call = f"{g.get('op')} {g.get('bytes', 0):,} B in {g.get('requests')} pieces, gap {g.get('gap')}"
            strategy = (d.get("strategy") or "-") + (" (knowledge)" if d.get("from_knowledge") else "") + \
                ("" if d.get("state") == "running" else " [examining]")
            measured = " ".join(f"{k} {v:.1f}" for k, v in (d.get("throughputs") or {}).items())
            t.add_row(d["path"], call, strategy, str(d.get("calls", 0)), str(d.get("examination_calls", 0)),
                      str(d.get("deferred_calls", 0)), str(d.get("reexaminations", 0)), str(d.get("handed_back", 0)),
                      measured)
        tables.append(t)
    if coll.get("model"):
        t = Table(title="the cost model (strategy auto with a machine profile): ms per call, predicted / measured",
                  title_justify="left")
        for col in ("path", "call", "strategy", "model's first", "error", "predicted / measured"):
            t.add_column(col, overflow="fold")
        for m in coll["model"]:
            if "refused" in m:
                t.add_row(m["path"], "-", "-", "-", "-", "profile refused: " + m["refused"].strip())
                continue
            g = m.get("signature", {})
            call = f"{g.get('op')} {g.get('bytes', 0):,} B in {g.get('requests')} pieces"
            pred, meas, errs = m.get("predicted_s") or {}, m.get("measured_s") or {}, m.get("errors") or {}
            times = "\n".join(f"{k} {pred[k] * 1e3:.3g} / " + (f"{meas[k] * 1e3:.3g}" if k in meas else "-") +
                              (f" (±{errs[k]:.0%})" if k in errs else "") for k in sorted(pred, key=pred.get))
            how = {"trusted": "served alone from the first call",
                   "explored": f"explored first: {m.get('explored')}, which no earlier job of its class measured",
                   "learned": "served first: its class's earlier jobs measured it",
                   "leads": "served first; candidates within its errors after",
                   "deferred": "deferred: its set-up loses a one-call phase; the configured first served first",
                   "untrusted": "not trusted: within the errors; configured order"}[pick_way(m)]
            first = str(m.get("first")) + ("" if "trusted" not in m else f" ({how})")
            t.add_row(m["path"], call, str(m.get("strategy") or "-"), first, f"{float(m.get('error', 0)):.2f}", times)
        tables.append(t)
        tables.append(_model_basis(coll["model"]))
    if coll.get("steady"):
        t = Table(title="steady windows (strategy auto: calls served without a collective of the runtime's)",
                  title_justify="left")
        t.add_column("path", overflow="fold")
        for col in ("calls", "windows measured", "windows changed"):
            t.add_column(col, justify="right")
        for r in coll["steady"]:
            t.add_row(r["path"], str(r["calls"]), str(r["measured"]), str(r["changed"]))
        tables.append(t)
    if summary.get("staging"):
        t = Table(title="staging (staging.enabled: whether the file's writes were staged, and why)",
                  title_justify="left")
        for col in ("path", "enabled", "writes", "reason", "profile"):
            t.add_column(col, overflow="fold")
        for r in summary["staging"]:
            enabled = "true" if r["enabled"] is True else str(r["enabled"])
            t.add_row(r["path"], enabled, r["writes"], r["reason"], r["profile"] or "-")
        tables.append(t)
    if summary.get("decided"):
        t = Table(title="what the runtime decided, and why", title_justify="left")
        for col in ("module", "about", "decision"):
            t.add_column(col, overflow="fold")
        for r in summary["decided"]:
            t.add_row(r["module"], r["about"], r["decision"])
        tables.append(t)
    if summary.get("hdf5"):
        t = Table(title="HDF5 properties", title_justify="left")
        for col in ("path", "driver", "applied", "not applied"):
            t.add_column(col, overflow="fold")
        for r in summary["hdf5"]:
            t.add_row(r["path"], str(r["driver"]), "\n".join(r["applied"]) or "-", "\n".join(r["not_applied"]) or "-")
        tables.append(t)
    return tables


def print_stats(summary: dict, out: Console, title: str = "iotame statistics") -> None:
    """Prints a header (after the partial banner when the job aborted), stats_tables(), and the configuration
    error and pass-through reasons if any."""
    if summary.get("partial"):
        for line in partial_banner(summary["partial"]):
            out.print(line, markup=False, soft_wrap=True)
    out.print(stats_header(summary, title), markup=False)
    s = summary["summary"]
    out.print(f"bandwidth: {fmt_bandwidth(bandwidth(s['bytes'], s['io_seconds']))} "
              f"({DEFINITION})", markup=False, soft_wrap=True)
    for t in stats_tables(summary):
        out.print(t)
    if summary.get("config_error"):
        out.print(f"configuration not applied: {summary['config_error']}", markup=False)
    reasons = summary.get("passthrough_reasons") or {}
    if reasons:
        out.print("passed through: " + ", ".join(f"{k} ({v})" for k, v in reasons.items()), markup=False)


def phase_table(title: str, rows: Iterable[dict]) -> Table:
    """Benchmark phases: name, successful runs, median/min/max MB/s (rows from bench.summarize_phases)."""
    rows = list(rows)
    swept = any(r.get("point") for r in rows)
    t = Table(title=title, title_justify="left")
    if swept:
        t.add_column("settings")
    t.add_column("phase")
    for col in ("runs", "median MB/s", "min MB/s", "max MB/s"):
        t.add_column(col, justify="right")
    for r in rows:
        point = [" ".join(f"{k}={v}" for k, v in r.get("point", {}).items())] if swept else []
        t.add_row(*point, r["name"], str(r["runs"]), fmt_mbs(r["median"]), fmt_mbs(r["min"]), fmt_mbs(r["max"]))
    return t


class _LineStatus:
    """A status for a file or a pipe: once the command has run `after` seconds, each step shows as one line
    `iotame: TEXT (N s)` on stderr, and again every `every` seconds while it runs, so that a log says what a long
    command is doing while it does it; a command quicker than `after` prints nothing."""

    def __init__(self, label: str, after: float, every: float) -> None:
        self.started = time.monotonic()
        self.after, self.every = after, every
        self.timer: threading.Timer | None = None
        self.lock = threading.Lock()
        self.update(label)

    def update(self, text: str) -> None:
        """Shows `text` once the command has run `after` seconds: at once when it already has."""
        with self.lock:
            wait = self.after - (time.monotonic() - self.started)
            if wait > 0:
                self._schedule(text, wait)
            else:
                self._line(text)
                self._schedule(text, self.every)

    def _schedule(self, text: str, delay: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer = threading.Timer(delay, self._print, (text,))
        self.timer.daemon = True
        self.timer.start()

    def _print(self, text: str) -> None:
        with self.lock:
            if threading.current_thread() is not self.timer:       # superseded by an update or closed
                return
            self._line(text)
            self._schedule(text, self.every)

    def _line(self, text: str) -> None:
        print(f"iotame: {text} ({time.monotonic() - self.started:.0f} s)", file=sys.stderr, flush=True)

    def close(self) -> None:
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
            self.timer = None


@contextlib.contextmanager
def status(label: str, after: float = 2.0, every: float = 30.0) -> Iterator:
    """What a command that takes more than a moment is doing: a spinner with `label` on a terminal, lines on
    stderr elsewhere (each step once the command has run `after` seconds, again every `every` seconds); the
    object yielded has update(text)."""
    err = console(stderr=True)
    if err.is_terminal:
        with err.status(label) as s:
            yield s
        return
    with _line_status(label, after, every) as s:
        yield s


@contextlib.contextmanager
def _line_status(label: str, after: float = 2.0, every: float = 30.0) -> Iterator:
    s = _LineStatus(label, after, every)
    try:
        yield s
    finally:
        s.close()
