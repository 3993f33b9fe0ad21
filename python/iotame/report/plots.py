"""The report's plots (matplotlib, Agg backend, PNG): the objective per trial with the best-so-far line, the
effect of each parameter, and default against tuned per phase."""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .data import ReportData  # noqa: E402

__all__ = ["plot_trials", "params_figure", "plot_params", "plot_phases"]


def plot_trials(data: ReportData, path: Path) -> Path | None:
    """Objective per trial (default and seeds marked, failed trials as crosses) and the best-so-far line."""
    trials = sorted(data.trials, key=lambda t: t.number)
    done = [t for t in trials if t.value is not None]
    if not done:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.2))
    plain = [t for t in done if not t.default and not t.seed]
    ax.scatter([t.number for t in plain], [t.value for t in plain], s=18, color="tab:blue", label="trial")
    seeds = [t for t in done if t.seed]
    if seeds:
        ax.scatter([t.number for t in seeds], [t.value for t in seeds], s=30, marker="s", color="tab:purple",
                   label="from the knowledge base")
    defaults = [t for t in done if t.default]
    if defaults:
        ax.scatter([t.number for t in defaults], [t.value for t in defaults], s=60, marker="*",
                   color="tab:orange", label="default", zorder=3)
    failed = [t for t in trials if t.state == "failed"]
    if failed:
        low = min(t.value for t in done)
        ax.scatter([t.number for t in failed], [low] * len(failed), marker="x", color="tab:red", label="failed")
    pick = max if data.direction == "maximize" else min
    xs, ys, best = [], [], None
    for t in done:
        best = t.value if best is None else pick(best, t.value)
        xs.append(t.number)
        ys.append(best)
    ax.step(xs, ys, where="post", color="tab:green", label="best so far")
    ax.set_xlabel("trial")
    ax.set_ylabel(f"{data.objective} ({data.unit})" if data.unit else data.objective)
    ax.set_title(f"{data.study.get('study', '')}: {data.objective} per trial")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _order(values: list) -> list:
    """unset first, then numbers ascending, then strings."""
    def key(v):
        if v == "unset":
            return (0, 0, "")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return (1, v, "")
        return (2, 0, str(v))
    return sorted(set(values), key=key)


def _label(v) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1024 and v % 1024 == 0:
        return f"{v // 1048576}M" if v % 1048576 == 0 else f"{v // 1024}k"
    return str(v)


def params_figure(data: ReportData):
    """One panel per parameter: the objective of the complete trials by the parameter's value (box and points);
    None without a parameter. The caller closes the figure."""
    done = [t for t in data.trials if t.value is not None and not t.default and t.reused_from is None]
    keys = sorted({k for t in done for k in t.params})
    if not keys:
        return None
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    # a constrained layout keeps the figure's title above the panels' own titles (tight_layout ignores it)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows + 0.4), squeeze=False, layout="constrained")
    for ax, key in zip(axes.flat, keys):
        values = _order([t.params[key] for t in done if key in t.params])
        groups = [[t.value for t in done if t.params.get(key) == v] for v in values]
        ax.boxplot(groups, showfliers=False, widths=0.5)
        for i, g in enumerate(groups, start=1):
            ax.scatter([i] * len(g), g, s=10, alpha=0.6, color="tab:blue")
        ax.set_xticks(range(1, len(values) + 1), [_label(v) for v in values], rotation=45, fontsize=7)
        ax.set_title(key, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.suptitle(f"{data.objective} ({data.unit}) of the trials by each parameter's value", fontsize=10)
    return fig


def plot_params(data: ReportData, path: Path) -> Path | None:
    """params_figure as a PNG at path; None when there is no parameter."""
    fig = params_figure(data)
    if fig is None:
        return None
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_phases(default: dict[str, float], tuned: dict[str, float], path: Path, title: str) -> Path | None:
    """Bars of MB/s per kernel phase, default against tuned (phases both have)."""
    names = [n for n in default if n in tuned]
    if not names:
        return None
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * len(names) + 2), 3.8))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], [default[n] for n in names], width=0.4, label="default", color="tab:orange")
    ax.bar([x + 0.2 for x in xs], [tuned[n] for n in names], width=0.4, label="tuned", color="tab:green")
    for x, n in zip(xs, names):
        if default[n] > 0:
            ax.annotate(f"{tuned[n] / default[n]:.2f}x", (x + 0.2, tuned[n]), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("MB/s (median)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
