"""The plot of a sweep: MB/s against the swept value, one line per phase (median, error bars min to max over
the repeats), and the device's limit from fio.json as horizontal lines. PNG, matplotlib's Agg backend."""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Sequence

from .results import RUNTIME_ROW

__all__ = ["plot_sweep"]

_FIO_STYLES = (":", "--", "-.")


def _points(sweep: Sequence[tuple[str, Sequence[str]]]) -> tuple[list[str], list[tuple], list[str]]:
    keys = [k for k, _ in sweep]
    points = list(itertools.product(*[vs for _, vs in sweep]))
    labels = [p[0] if len(keys) == 1 else ", ".join(f"{k}={v}" for k, v in zip(keys, p)) for p in points]
    return keys, points, labels


def plot_sweep(rows: Sequence[dict], sweep: Sequence[tuple[str, Sequence[str]]], path: str | Path,
               fio: dict | None = None, title: str = "") -> Path:
    """Draws summarize_phases() rows of a sweep ([(key, [values])], the x axis in that order) into `path`.
    `fio` is a loaded fio.json (see fio.py) or None."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    keys, points, labels = _points(sweep)
    index = {p: i for i, p in enumerate(points)}
    fig = Figure(figsize=(8, 5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    names = list(dict.fromkeys(r["name"] for r in rows if r["name"] != RUNTIME_ROW))
    for name in names:
        found = []
        for r in rows:
            point = tuple(str(r["point"].get(k)) for k in keys)
            if r["name"] == name and point in index:
                found.append((index[point], r))
        if not found:
            continue
        found.sort(key=lambda item: item[0])
        x = [i for i, _ in found]
        y = [r["median"] for _, r in found]
        err = [[r["median"] - r["min"] for _, r in found], [r["max"] - r["median"] for _, r in found]]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=4, label=name)
    for style, row in zip(itertools.cycle(_FIO_STYLES), (fio or {}).get("results", [])):
        ax.axhline(row["mbs"], linestyle=style, color="grey", linewidth=1,
                   label=f"fio {row.get('label', row.get('name'))} (O_DIRECT): {row['mbs']:.0f} MB/s")
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels(labels, rotation=30 if len(labels) > 6 or len(keys) > 1 else 0)
    ax.set_xlabel(", ".join(keys))
    ax.set_ylabel("MB/s (10^6 bytes/s): median, min to max")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, format="png", dpi=110)
    return path
