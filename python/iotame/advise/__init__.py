"""`iotame advise LOG.darshan`: a Darshan log read (load), its files' records added up (files), summarized per
group of files and for the job (summary, measures), its problems found (findings) and answered by a configuration
for `iotame run` (recommend), printed as tables or JSON (render). What passes between them are dataclasses: the
typed log (load), the summary's records (summary_records), the findings and the configuration (records), the whole
advice (advice). docs/advise.md is the manual."""
from __future__ import annotations

from pathlib import Path

from ..calibrate.discover import find_profile
from ..calibrate.profile import ProfileError, load_profile
from ..config import validate
from ..errors import IotameError
from .advice import Advice, LogInfo, SkippedGroups
from .findings import find
from .load import DarshanLog, load_log
from .records import AdvisedConfig, AdvisedSetting, Finding, Prediction, Unanswered
from .recommend import build_config
from .summary import MAX_FILES, summarize_log

__all__ = ["ADVICE_VERSION", "advise", "advise_loaded", "resolve_profile", "Advice", "AdvisedConfig",
           "AdvisedSetting", "Finding", "Prediction", "Unanswered"]

ADVICE_VERSION = 1      # the version of the --json document (docs/advise.md); a change of its keys bumps it


def resolve_profile(named: str | None) -> tuple[dict | None, str | None, str]:
    """(profile, its path, what was done): the profile named with --profile (an unusable one is an error), else the
    one the runtime would find for a file in the current directory (where the rerun is assumed to write)."""
    if named:
        # ProfileError (a ConfigError): one `iotame: profile FILE: KEY: ...` line per problem, exit status 2
        return load_profile(named), str(named), f"the machine profile {named} (--profile)"
    found, why = find_profile(Path.cwd())
    if found is None:
        return None, None, f"no machine profile ({why}): no gain is predicted; measure this machine with " \
                           f"`iotame calibrate` or name a profile with --profile"
    try:
        return load_profile(found), str(found), f"the machine profile {found}, found for the current directory"
    except ProfileError:
        return None, None, f"the profile found ({found}) cannot be read: no gain is predicted"


def advise(log_path: str, top: int = 10, profile: str | None = None, max_files: int = MAX_FILES) -> Advice:
    """The whole advice for a log: LogError for a log that cannot be read."""
    return advise_loaded(load_log(log_path), str(log_path), top, profile, max_files)


def advise_loaded(log: dict, log_path: str, top: int = 10, profile: str | None = None,
                  max_files: int = MAX_FILES) -> Advice:
    """The advice for a log load_log read (or a test made from one)."""
    loaded = DarshanLog.of(log)
    summary = summarize_log(loaded, max_files=max_files, module_bytes=log.get("module_bytes"),
                            partial=log.get("partial"),
                            partial_modules=(log.get("header") or {}).get("partial_modules"))
    findings = find(summary)
    prof, prof_path, prof_note = resolve_profile(profile)
    rec = build_config(summary, findings, top, prof, prof_path, prof_note, str(log_path))
    errors = validate(rec.config, "<advice>")
    if errors:     # a bug of advise's: the runtime would refuse what it wrote
        raise IotameError("advise made a configuration the runtime refuses: " + "; ".join(errors))
    shown, rest = summary.groups[:top], summary.groups[top:]
    # the findings of the groups shown and the job's; those of the groups beyond --top are counted in `skipped`
    shown_matches = {g.match for g in shown}
    findings = [f for f in findings if f.match is None or f.match in shown_matches]
    return Advice(
        log=LogInfo.of(loaded, str(log_path)), job=summary.job, files=shown, skipped_files=summary.skipped,
        skipped_groups=SkippedGroups.of(rest) if rest else None, notes=summary.notes, findings=findings,
        settings=rec.settings, unanswered=rec.unanswered, prediction=rec.prediction, config=rec.config,
        version=ADVICE_VERSION)
