"""The records advise passes from its findings to its configuration and its output: a finding, a setting that
answers findings, a finding left unanswered, the prediction's source, and the configuration (the summary's records
are in summary_records.py, the whole advice in advice.py). Modules read their fields; to_json() gives the --json
document's keys (docs/advise.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SEVERITIES", "FINDING_IDS", "Finding", "AdvisedSetting", "Unanswered", "Prediction", "AdvisedConfig"]

SEVERITIES = ("info", "warning", "critical")
FINDING_IDS = ("small_requests", "unaligned_requests", "independent_shared", "interleaved_no_collective",
               "collective_small_requests", "stripe_count", "ost_imbalance", "rank_imbalance",
               "read_modify_write", "metadata_share", "many_small_files", "small_hdf5_chunks", "unread_modules")


@dataclass
class Finding:
    """What the counters show to be wrong: `match` is a group's glob (None: the whole job), `message` the sentence,
    `counters` the evidence as shown (counter name: value). What the configuration is built from is in fields:
    `osts` the OSTs the log shows (stripe_count), `streams` the most files one OST served (ost_imbalance).
    `quantity`, `value`, `threshold`: the normalised figure the finding rests on (per rank, per byte, per second),
    its value and the threshold it crossed (findings.py)."""

    id: str
    severity: str
    match: str | None
    message: str
    counters: dict[str, Any]
    osts: int | None = None
    streams: int | None = None
    quantity: str | None = None
    value: float | None = None
    threshold: float | None = None

    def __post_init__(self) -> None:
        assert self.id in FINDING_IDS and self.severity in SEVERITIES

    def to_json(self) -> dict:
        return {"id": self.id, "severity": self.severity, "match": self.match, "message": self.message,
                "quantity": self.quantity, "value": self.value, "threshold": self.threshold,
                "counters": self.counters}


@dataclass
class AdvisedSetting:
    """A setting of the configuration: in the rule of `rule` (a glob, or "defaults"), `key` (section.name), with
    the findings it answers, why, and the gain the profile predicts (None: not predicted, `prediction` says why)."""

    rule: str
    key: str
    value: Any
    findings: list[str]
    reason: str
    predicted_gain: float | None
    prediction: str

    def to_json(self) -> dict:
        return {"rule": self.rule, "key": self.key, "value": self.value, "findings": self.findings,
                "reason": self.reason, "predicted_gain": self.predicted_gain, "prediction": self.prediction}


@dataclass
class Unanswered:
    """A finding no setting answers, and why."""

    finding: str
    match: str | None
    why: str

    def to_json(self) -> dict:
        return {"finding": self.finding, "match": self.match, "why": self.why}


@dataclass
class Prediction:
    """The machine profile the gains are predicted with (None: none), and what was done to find it."""

    profile: str | None
    note: str

    def to_json(self) -> dict:
        return {"profile": self.profile, "note": self.note}


@dataclass
class AdvisedConfig:
    """The configuration advise writes, its settings (each with the findings it answers), the findings no setting
    answers, and where the predictions come from."""

    config: dict[str, Any]
    settings: list[AdvisedSetting]
    unanswered: list[Unanswered]
    prediction: Prediction
