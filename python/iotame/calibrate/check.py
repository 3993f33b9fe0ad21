"""`iotame calibrate --check`: re-measure two points of a profile (durable sequential writes and sequential reads
at one request size) on the same file system and say whether the profile still holds within a tolerance; and the
cross-validated error of the model (its fit and anchors) on the strategies' measurements, as the profile stores it
(fit.py)."""
from __future__ import annotations

import os
from typing import Callable

from ..errors import IotameError
from .emulated import EmulatedStorage, state_dir
from .filesystem import fs_identity
from ..tune.job import Job
from .measure import QUICK, Calibration, Settings
from .network import check_point
from .profile import curve_at

__all__ = ["CHECK_REQUEST", "DEFAULT_TOLERANCE", "check_request", "judge", "identity_problems", "check_profile",
           "fit_report"]

CHECK_REQUEST = 1 << 20
DEFAULT_TOLERANCE = 0.5


def check_request(profile: dict) -> int:
    """The request size re-measured: 1 MiB when both sequential curves have it, else the largest size both have."""
    st = profile["storage"]
    common = {x for x, _ in st["write"]["sequential"]} & {x for x, _ in st["read"]["sequential"]}
    if not common:
        raise IotameError("calibrate --check: the profile's sequential write and read curves share no request size")
    return CHECK_REQUEST if CHECK_REQUEST in common else max(common)


def judge(profile: dict, measured: dict[str, float], request: int, tolerance: float) -> list[dict]:
    """One row per re-measured direction: the profile's MB/s at `request`, the measured MB/s, their ratio and
    whether it lies within [1 / (1 + tolerance), 1 + tolerance]."""
    rows = []
    for direction, mbs in measured.items():
        expected = curve_at(profile["storage"][direction]["sequential"], request)
        ratio = mbs / expected if expected else float("inf")
        rows.append({"point": f"{direction} sequential", "request_bytes": request, "profile_mbs": expected,
                     "measured_mbs": round(mbs, 2), "ratio": round(ratio, 3),
                     "holds": 1 / (1 + tolerance) <= ratio <= 1 + tolerance})
    return rows


def identity_problems(profile: dict, identity: dict) -> list[str]:
    """Why the file system measured now is not the one the profile describes (type, magic, device), if it is not."""
    problems = []
    for key in ("type", "magic", "device"):
        if profile["filesystem"].get(key) != identity.get(key):
            problems.append(f"filesystem.{key}: the profile has {profile['filesystem'].get(key)!r}, "
                            f"{identity['path']} has {identity.get(key)!r}")
    return problems


def fit_report(profile: dict) -> list[dict] | None:
    """The stored fit's error per strategy: {"strategy", "rows", "cv_median", "cv_max", "setup"} for each fitted
    strategy (setup: the seconds a handle's first call adds per operation, {} when not measured), then each
    measured one without a fit (too few rows: cv None). None when the profile has no strategies.fit."""
    section = profile.get("strategies") or {}
    fit = section.get("fit")
    if not isinstance(fit, dict):
        return None
    report = [{"strategy": name, "rows": entry.get("rows"), "cv_median": entry.get("cv_median"),
               "cv_max": entry.get("cv_max"), "setup": entry.get("setup") or {}}
              for name, entry in (fit.get("strategies") or {}).items()]
    unfitted: dict[str, int] = {}
    for row in section.get("measured") or []:
        if row.get("strategy") not in {r["strategy"] for r in report}:
            unfitted[row.get("strategy")] = unfitted.get(row.get("strategy"), 0) + 1
    return report + [{"strategy": name, "rows": n, "cv_median": None, "cv_max": None, "setup": {}}
                     for name, n in unfitted.items()]


def _settings(profile: dict) -> Settings:
    """The profile's own measurement settings when it recorded them, else the quick ones."""
    recorded = (profile.get("measurement") or {}).get("settings")
    try:
        return Settings(**{k: tuple(v) if isinstance(v, list) else v for k, v in recorded.items()})
    except (TypeError, AttributeError):
        return QUICK


def check_profile(profile: dict, directory: str | os.PathLike, tolerance: float = DEFAULT_TOLERANCE,
                  on_step: Callable[[str], None] | None = None, drop: str | bool = "files",
                  network_job: Job | None = None) -> dict:
    """Re-measures durable sequential writes and sequential reads at check_request() on `directory`, and with
    `network_job` one network point (network.check_point), and judges them against the profile: {"holds",
    "identity": [problems], "layout": [the network job's node layout against the profile's], "points": judge()'s
    rows and the network's, "reads_from", "network_note", "strategies": fit_report()}."""
    identity = fs_identity(directory)
    request = check_request(profile)
    emulated = EmulatedStorage(profile["emulated"], state_dir(), "the profile's emulated section") \
        if profile.get("emulated") else None     # re-measured under the emulation it was measured under
    cal = Calibration(directory, _settings(profile), on_step=on_step, drop=drop,
                      env=emulated.env if emulated else None)
    try:
        cal.layout()
        measured = {d: cal.point(d, "sequential", request) for d in ("write", "read")}
    finally:
        cal.cleanup()
        if emulated is not None:
            emulated.cleanup()
    points = judge(profile, measured, request, tolerance)
    problems = identity_problems(profile, identity)
    if on_step and network_job is not None and profile.get("network") is not None:
        on_step("network")
    network_rows, layout_problems, network_note = check_point(profile, network_job, tolerance)
    points += network_rows
    return {"holds": not problems and not layout_problems and all(p["holds"] for p in points),
            "tolerance": tolerance, "identity": problems, "layout": layout_problems, "points": points,
            "filesystem": identity, "reads_from": "storage" if cal.drop_reason is None else "page cache",
            "network_note": network_note, "strategies": fit_report(profile)}
