"""What a report shows, read from a tuning directory: study.json (where the study is), the trials from the
study's storage, summary.json (when the study finished) and the kernel results the runs printed (phases)."""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import optuna
from optuna.trial import TrialState

from ..errors import IotameError
from ..tune.kernel_output import find_result
from ..tune.study import ATTR_DEFAULT, ATTR_ERROR, ATTR_REUSED, ATTR_SEED, normalize_url, quiet_optuna, role

__all__ = ["ReportTrial", "ReportData", "load_report_data", "phase_medians"]


@dataclass
class ReportTrial:
    number: int
    state: str                 # complete, failed, running, waiting
    value: float | None
    params: dict
    default: bool = False
    seed: str | None = None
    reused_from: int | None = None
    error: str | None = None
    run_dirs: list[str] = field(default_factory=list)


@dataclass
class ReportData:
    directory: Path
    study: dict                         # study.json
    trials: list[ReportTrial]
    summary: dict | None                # summary.json, None while the study has not finished

    @property
    def direction(self) -> str:
        return self.study.get("direction", "maximize")

    @property
    def unit(self) -> str:
        return self.study.get("unit", "")

    @property
    def objective(self) -> str:
        return self.study.get("objective", "objective")

    def trial(self, number: int | None) -> ReportTrial | None:
        return next((t for t in self.trials if t.number == number), None)


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def load_report_data(directory: str | Path) -> ReportData:
    """Reads a directory `iotame tune --out` wrote; IotameError when it is not one."""
    directory = Path(directory)
    study_info = _read_json(directory / "study.json")
    if study_info is None:
        raise IotameError(f"report: {directory} is not a tuning directory (no readable study.json; "
                          f"iotame tune --out DIR writes one)")
    quiet_optuna()
    try:
        study = optuna.load_study(study_name=study_info["study"], storage=normalize_url(study_info["storage"]))
    except Exception as e:  # noqa: BLE001 - any storage problem becomes one message
        raise IotameError(f"report: cannot load study {study_info.get('study')} from "
                          f"{study_info.get('storage')}: {e}") from None
    trials = []
    for t in study.get_trials(deepcopy=False):
        if role(t) is not None:      # the final re-run's trial and trials asked but not run: not search trials
            continue
        state = {TrialState.COMPLETE: "complete", TrialState.FAIL: "failed", TrialState.RUNNING: "running",
                 TrialState.WAITING: "waiting"}.get(t.state, t.state.name.lower())
        runs = [r.get("dir") for r in t.user_attrs.get("runs", []) if isinstance(r, dict) and r.get("dir")]
        trials.append(ReportTrial(t.number, state, t.value if t.state == TrialState.COMPLETE else None,
                                  dict(t.params), bool(t.user_attrs.get(ATTR_DEFAULT)), t.user_attrs.get(ATTR_SEED),
                                  t.user_attrs.get(ATTR_REUSED), t.user_attrs.get(ATTR_ERROR), runs))
    return ReportData(directory, study_info, trials, _read_json(directory / "summary.json"))


def _phases(run_dir: Path) -> dict[str, float]:
    try:
        result = find_result((run_dir / "stdout.txt").read_text(errors="replace"))
    except OSError:
        return {}
    out = {}
    for ph in (result or {}).get("phases", []):
        if isinstance(ph, dict) and isinstance(ph.get("mbs"), (int, float)) and ph.get("name"):
            out[str(ph["name"])] = float(ph["mbs"])
    return out


def phase_medians(run_dirs: list[Path]) -> dict[str, float]:
    """Median MB/s per phase over the kernel results printed in these runs (empty when none printed one)."""
    values: dict[str, list[float]] = {}
    for d in run_dirs:
        for name, mbs in _phases(Path(d)).items():
            values.setdefault(name, []).append(mbs)
    return {name: statistics.median(v) for name, v in values.items()}
