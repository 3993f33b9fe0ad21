"""The machine profile: what `iotame calibrate` measured on one file system and node layout (docs/formats.md,
Machine profile). A profile is checked by the runtime's own reader (`iotame-config profile`), so that calibrate,
advise and the tuner accept exactly the profiles the runtime uses: validate_profile() lists every problem with its
key and what was expected; load_profile() reads a file and refuses it with the file's name in front of each
problem."""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from ..config import run_config_tool
from ..errors import ConfigError, IotameError

__all__ = ["PROFILE_VERSION", "PROFILE_KIND", "DIRECTIONS", "PATTERNS", "READS_FROM", "ProfileError",
           "validate_profile", "load_profile", "save_profile", "profile_json", "curve_at"]

PROFILE_VERSION = 2
PROFILE_KIND = "iotame-machine-profile"
DIRECTIONS = ("write", "read")
PATTERNS = ("sequential", "scattered")
READS_FROM = ("storage", "page cache")


class ProfileError(ConfigError):
    """A machine profile is missing, unreadable or invalid; `errors` holds one `FILE: KEY: expected ...` line per
    problem (exit status 2, like a bad configuration)."""


def _runtime_problems(path: Path) -> list[str]:
    """The runtime's verdict on the profile file at `path` (`iotame-config profile`, the reader libiotame.so runs:
    runtime/src/profile/load.c): one `iotame: profile PATH: KEY: expected WHAT, got VALUE` line per problem, the
    file unreadable or not JSON included; [] when it is valid."""
    p = run_config_tool(["profile", "--", str(path)])
    if p.returncode == 0:
        return []
    lines = p.stderr.splitlines()
    if p.returncode != 1 or not lines:
        raise IotameError(f"iotame-config profile {path}: {p.stderr.strip() or f'exit status {p.returncode}'}")
    return lines


def _python_problems(obj: dict) -> list[str]:
    """What the runtime does not read, and so does not check: `emulated`, calibrate's record of the emulation the
    storage was measured under (calibrate --check measures again under it)."""
    value = obj.get("emulated", {})
    if isinstance(value, dict):
        return []
    got = "array" if isinstance(value, list) else json.dumps(value)
    return ["emulated: expected an object (the emulate section the storage was measured under), got " +
            (got if len(got) <= 40 else got[:37] + "...")]


def validate_profile(obj: Any) -> list[str]:
    """Every problem of a profile as `KEY: expected WHAT, got VALUE` (empty when valid), from the runtime's reader.
    Keys this version does not know are allowed (they are kept for later versions' fields)."""
    with tempfile.TemporaryDirectory(prefix="iotame-profile-") as tmp:
        path = Path(tmp) / "profile.json"
        path.write_text(json.dumps(obj), encoding="utf-8")
        prefix = f"iotame: profile {path}: "
        problems = [line.removeprefix(prefix) for line in _runtime_problems(path)]
    return problems or (_python_problems(obj) if isinstance(obj, dict) else [])


def load_profile(path: str | os.PathLike) -> dict:
    """The profile in `path`, validated by the runtime's reader. ProfileError (one `iotame: profile PATH: KEY:
    expected ...` line per problem) when the file cannot be read, is not JSON, or is not a valid profile."""
    path = Path(path)
    problems = _runtime_problems(path)
    if problems:
        raise ProfileError(problems)
    obj = json.loads(path.read_text(encoding="utf-8"))
    problems = _python_problems(obj)
    if problems:
        raise ProfileError([f"iotame: profile {path}: {p}" for p in problems])
    return obj


def save_profile(profile: dict, path: str | os.PathLike) -> Path:
    """Writes a valid profile atomically (PATH.tmp, then rename). ValueError when it is not valid."""
    problems = validate_profile(profile)
    if problems:
        raise ValueError("not a valid profile: " + "; ".join(problems))
    path = Path(path)
    if path.parent != Path(""):
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(profile_json(profile) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def profile_json(profile: dict) -> str:
    """The profile as indented JSON with each [x, MB/s] pair on one line."""
    text = json.dumps(profile, indent=1)
    return re.sub(r"\[\s*(-?[0-9.eE+]+),\s*(-?[0-9.eE+]+)\s*\]", r"[\1, \2]", text)


def curve_at(points: list, x: int) -> float | None:
    """The MB/s of a curve at exactly `x`, or None when the curve has no such point."""
    for px, mbs in points:
        if px == x:
            return float(mbs)
    return None
