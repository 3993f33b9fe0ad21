"""`iotame report DIR`: an HTML page with PNG plots of a tuning directory (see make_report)."""
from __future__ import annotations

from pathlib import Path

from .data import ReportData, ReportTrial, load_report_data, phase_medians
from .page import render_page
from .plots import plot_params, plot_phases, plot_trials

__all__ = ["make_report", "ReportData", "ReportTrial", "load_report_data", "phase_medians", "render_page",
           "plot_trials", "plot_params", "plot_phases"]


def _run_dirs(data: ReportData, label: str, trial: int | None) -> list[Path]:
    """The runs of one configuration: its final re-runs when there were some, else its trial's runs."""
    final = sorted((data.directory / "final" / label).glob("run-*"))
    if final:
        return final
    t = data.trial(trial)
    return [Path(d) for d in (t.run_dirs if t else [])]


def make_report(directory: str | Path) -> Path:
    """Writes DIR/index.html and its PNGs (trials.png, params.png, phases.png when the command printed kernel
    results) and returns the page's path."""
    data = load_report_data(directory)
    out = data.directory
    images: dict[str, Path] = {}
    p = plot_trials(data, out / "trials.png")
    if p:
        images["Objective per trial"] = p
    p = plot_params(data, out / "params.png")
    if p:
        images["Effect of each parameter"] = p
    s = data.summary
    if s is not None and not s["best"].get("is_default"):
        default = phase_medians(_run_dirs(data, "default", s["default"]["trial"]))
        best_trial = s["best"]["trial"]
        tuned = phase_medians(_run_dirs(data, f"trial-{best_trial:04d}", best_trial))
        p = plot_phases(default, tuned, out / "phases.png", "default against tuned, per phase (kernel's own MB/s)")
        if p:
            images["Default against tuned, per phase"] = p
    page = out / "index.html"
    page.write_text(render_page(data, images), encoding="utf-8")
    return page
