"""The whole advice for a log: the log's header, the summary's records shown (the job, the groups within --top, what
was skipped), the findings and the configuration. Its to_json() is the --json document (docs/advise.md)."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from .load import DarshanLog
from .records import AdvisedSetting, Finding, Prediction, Unanswered
from .summary_records import GroupSummary, JobSummary, SkippedFiles

__all__ = ["LogInfo", "SkippedGroups", "Advice"]


@dataclass
class LogInfo:
    """The log as the advice names it: its path, format version, Darshan's version, the executable, job id,
    processes, run time (s), and the modules it holds."""

    path: str
    format: str
    darshan: str
    exe: str | None
    jobid: int
    nprocs: int | None
    run_seconds: float
    modules: list[str]
    # issue 49 (reading, wt-49a; /work/notes/contract49.md): Darshan's partial modules and notes on the log as read
    partial_modules: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, log: DarshanLog, path: str) -> LogInfo:
        j = log.job
        nprocs = j.nprocs if j.nprocs or not j.nprocs_recorded else None   # None: the log's count is damaged
        return cls(path, j.log_ver, j.lib_ver, log.exe, j.jobid, nprocs, j.run_time, log.modules,
                   list(log.partial_modules), list(log.notes))


@dataclass
class SkippedGroups:
    """The groups beyond --top: how many, their files, bytes and seconds, the first 20 globs, and their findings
    counted by id."""

    groups: int
    group_files: int
    group_bytes: int
    group_seconds: float
    matches: list[str]
    findings: dict[str, int]

    @classmethod
    def of(cls, rest: list[GroupSummary]) -> SkippedGroups:
        return cls(len(rest), sum(g.files for g in rest), sum(g.totals.moved for g in rest),
                   sum(g.totals.io_seconds for g in rest), [g.match for g in rest[:20]],
                   dict(Counter(f.id for g in rest for f in g.findings)))


@dataclass
class Advice:
    """The whole advice for a log. `job`, `files` (the groups shown, each with its findings) and the skipped files
    and groups are the summary's records; `config` the configuration for `iotame run`."""

    log: LogInfo
    job: JobSummary
    files: list[GroupSummary]
    skipped_files: SkippedFiles | None
    skipped_groups: SkippedGroups | None
    notes: list[str]
    findings: list[Finding]
    settings: list[AdvisedSetting]
    unanswered: list[Unanswered]
    prediction: Prediction
    config: dict[str, Any]
    version: int = field(default=1)

    def skipped_json(self) -> dict[str, Any] | None:
        """The document's `skipped`: the files beyond --max-files and the groups beyond --top, None for neither."""
        out = {**(self.skipped_files.to_json() if self.skipped_files else {}),
               **(asdict(self.skipped_groups) if self.skipped_groups else {})}
        return out or None

    def to_json(self) -> dict[str, Any]:
        """The --json document (docs/advise.md)."""
        return {
            "version": self.version, "kind": "iotame-advice", "log": asdict(self.log), "job": self.job.to_json(),
            "files": [g.to_json() for g in self.files], "skipped": self.skipped_json(), "notes": self.notes,
            "findings": [f.to_json() for f in self.findings], "settings": [s.to_json() for s in self.settings],
            "unanswered": [u.to_json() for u in self.unanswered], "prediction": self.prediction.to_json(),
            "config": self.config,
        }
