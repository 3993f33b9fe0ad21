"""The machine profile: what `iotame calibrate` measured on one file system and node layout (docs/formats.md,
Machine profile). validate_profile() lists every problem with its key and what was expected; load_profile() reads a
file and refuses it with the file's name in front of each problem."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = ["PROFILE_VERSION", "PROFILE_KIND", "DIRECTIONS", "PATTERNS", "READS_FROM", "ProfileError",
           "validate_profile", "load_profile", "save_profile", "profile_json", "curve_at"]

PROFILE_VERSION = 1
PROFILE_KIND = "iotame-machine-profile"
DIRECTIONS = ("write", "read")
PATTERNS = ("sequential", "scattered")
READS_FROM = ("storage", "page cache")


class ProfileError(ConfigError):
    """A machine profile is missing, unreadable or invalid; `errors` holds one `FILE: KEY: expected ...` line per
    problem (exit status 2, like a bad configuration)."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and v == v and v not in (float("inf"), float("-inf"))


def _got(v: Any) -> str:
    text = json.dumps(v) if not isinstance(v, (dict, list)) else type(v).__name__.replace("dict", "object").replace(
        "list", "array")
    return text if len(text) <= 40 else text[:37] + "..."


class _Checker:
    """Collects `KEY: expected WHAT, got VALUE` problems."""

    def __init__(self):
        self.problems: list[str] = []

    def fail(self, key: str, expected: str, value: Any = None, missing: bool = False) -> None:
        self.problems.append(f"{key}: expected {expected}, " + ("missing" if missing else f"got {_got(value)}"))

    def section(self, obj: dict, key: str, parent: str = "") -> dict | None:
        name = f"{parent}.{key}" if parent else key
        if key not in obj:
            self.fail(name, "an object", missing=True)
            return None
        if not isinstance(obj[key], dict):
            self.fail(name, "an object", obj[key])
            return None
        return obj[key]

    def value(self, obj: dict, key: str, parent: str, ok, expected: str) -> None:
        name = f"{parent}.{key}"
        if key not in obj:
            self.fail(name, expected, missing=True)
        elif not ok(obj[key]):
            self.fail(name, expected, obj[key])

    def rows(self, obj: dict, key: str, name: str, expected: str):
        """obj[key] when it is a non-empty array, else None (the problem recorded)."""
        rows = obj.get(key)
        if key not in obj or not isinstance(rows, list) or not rows:
            self.fail(name, expected, rows, missing=key not in obj)
            return None
        return rows

    def curve(self, obj: dict, key: str, parent: str, x_ok, x_expected: str) -> None:
        """A non-empty array of [x, MB/s] pairs, x strictly increasing, MB/s > 0."""
        name = f"{parent}.{key}"
        points = self.rows(obj, key, name, f"a non-empty array of [{x_expected}, MB/s > 0] pairs")
        if points is None:
            return
        last = None
        for i, point in enumerate(points):
            if not (isinstance(point, list) and len(point) == 2 and x_ok(point[0]) and _is_number(point[1])
                    and point[1] > 0):
                self.fail(f"{name}[{i}]", f"[{x_expected}, MB/s > 0]", point)
                return
            if last is not None and point[0] <= last:
                self.fail(f"{name}[{i}][0]", f"more than {last} (increasing)", point[0])
                return
            last = point[0]


def _check_filesystem(c: _Checker, fs: dict) -> None:
    p = "filesystem"
    c.value(fs, "path", p, lambda v: isinstance(v, str) and v != "", "a path")
    c.value(fs, "type", p, lambda v: isinstance(v, str) and v != "", "a file-system type name")
    c.value(fs, "magic", p, lambda v: isinstance(v, str) and v.startswith("0x") and _hex(v[2:]),
            'the statfs magic as "0x..." hexadecimal')
    c.value(fs, "device", p, lambda v: isinstance(v, str) and len(v.split(":")) == 2 and all(
        s.isdigit() for s in v.split(":")), '"major:minor"')
    c.value(fs, "targets", p, lambda v: _is_int(v) and v >= 1, "an integer >= 1")
    c.value(fs, "stripe_unit", p, lambda v: _is_int(v) and v >= 0, "an integer >= 0 (bytes; 0: no striping)")


def _hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return text != ""


def _check_storage(c: _Checker, st: dict) -> None:
    for direction in DIRECTIONS:
        curves = c.section(st, direction, "storage")
        if curves is not None:
            for pattern in PATTERNS:
                c.curve(curves, pattern, f"storage.{direction}", lambda v: _is_int(v) and v > 0, "request bytes > 0")
    streams = c.section(st, "streams", "storage")
    if streams is not None:
        for direction in DIRECTIONS:
            c.curve(streams, direction, "storage.streams", lambda v: _is_int(v) and v >= 1, "streams >= 1")
    wb = c.section(st, "write_back", "storage")
    if wb is not None:
        c.value(wb, "absorbed_bytes", "storage.write_back", lambda v: _is_int(v) and v >= 0, "an integer >= 0")
        c.value(wb, "absorbed_mbs", "storage.write_back", lambda v: _is_number(v) and v >= 0, "a number >= 0")
    c.value(st, "reads_from", "storage", lambda v: v in READS_FROM, " or ".join(f'"{r}"' for r in READS_FROM))


def _check_pair(c: _Checker, net: dict, kind: str, allowed_null: bool, why_null: str) -> None:
    """network.intra or network.inter: {latency_us > 0, mbs > 0}, null only where the layout has no such pair."""
    name = f"network.{kind}"
    expected = "an object {latency_us, mbs}" + (f" or null ({why_null})" if allowed_null else
                                                 f" (null only with {why_null})")
    if kind not in net:
        c.fail(name, expected, missing=True)
    elif net[kind] is None:
        if not allowed_null:
            c.fail(name, expected, None)
    elif not isinstance(net[kind], dict):
        c.fail(name, expected, net[kind])
    else:
        for key, what in (("latency_us", "a number > 0 (one-way microseconds)"), ("mbs", "a number > 0 (MB/s)")):
            c.value(net[kind], key, name, lambda v: _is_number(v) and v > 0, what)


def _check_collective(c: _Checker, net: dict, key: str, unit: str) -> None:
    """A non-empty array of [processes >= 1, bytes >= 0, microseconds >= 0]."""
    name = f"network.{key}"
    rows = c.rows(net, key, name, f"a non-empty array of [processes >= 1, {unit} >= 0, microseconds >= 0]")
    for i, row in enumerate(rows or []):
        if not (isinstance(row, list) and len(row) == 3 and _is_int(row[0]) and row[0] >= 1 and _is_int(row[1])
                and row[1] >= 0 and _is_number(row[2]) and row[2] >= 0):
            c.fail(f"{name}[{i}]", f"[processes >= 1, {unit} >= 0, microseconds >= 0]", row)
            return


def _check_network(c: _Checker, net: dict, nodes: dict) -> None:
    """The measured network, consistent with `nodes`: inter null exactly when there is one node, intra null only
    with one process per node."""
    count, ppn = nodes.get("count"), nodes.get("processes_per_node")
    _check_pair(c, net, "intra", ppn == 1, "1 process per node")
    if count == 1:
        if "inter" not in net or net["inter"] is not None:
            c.fail("network.inter", "null (nodes.count is 1: no pair across nodes)", net.get("inter"),
                   missing="inter" not in net)
    else:
        _check_pair(c, net, "inter", False, "nodes.count 1")
    _check_collective(c, net, "allgather", "bytes per rank")
    _check_collective(c, net, "alltoallv", "bytes per pair")


def validate_profile(obj: Any) -> list[str]:
    """Every problem of a profile as `KEY: expected WHAT, got VALUE` (empty when valid). Keys this version does not
    know are allowed (they are kept for later versions' fields)."""
    c = _Checker()
    if not isinstance(obj, dict):
        c.fail("(top level)", "an object", obj)
        return c.problems
    if obj.get("kind") != PROFILE_KIND:
        c.fail("kind", f'"{PROFILE_KIND}"', obj.get("kind"), missing="kind" not in obj)
        return c.problems            # not a profile at all: the rest would be noise
    if not (_is_int(obj.get("version")) and obj["version"] == PROFILE_VERSION):
        c.fail("version", f"the integer {PROFILE_VERSION}", obj.get("version"), missing="version" not in obj)
        return c.problems
    fs = c.section(obj, "filesystem")
    if fs is not None:
        _check_filesystem(c, fs)
    nodes = c.section(obj, "nodes")
    if nodes is not None:
        for key in ("count", "processes_per_node"):
            c.value(nodes, key, "nodes", lambda v: _is_int(v) and v >= 1, "an integer >= 1")
    st = c.section(obj, "storage")
    if st is not None:
        _check_storage(c, st)
    mem = c.section(obj, "memory")
    if mem is not None:
        c.value(mem, "copy_mbs", "memory", lambda v: _is_number(v) and v > 0, "a number > 0 (MB/s)")
    if "network" not in obj:
        c.fail("network", "null (not measured) or an object", missing=True)
    elif obj["network"] is not None and not isinstance(obj["network"], dict):
        c.fail("network", "null (not measured) or an object", obj["network"])
    elif obj["network"] is not None:
        _check_network(c, obj["network"], nodes if isinstance(nodes, dict) else {})
    if "emulated" in obj and not isinstance(obj["emulated"], dict):
        c.fail("emulated", "an object (the emulate section the storage was measured under)", obj["emulated"])
    return c.problems


def load_profile(path: str | os.PathLike) -> dict:
    """The profile in `path`, validated. ProfileError (one `PATH: KEY: expected ...` line per problem) when the
    file cannot be read, is not JSON, or is not a valid profile."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ProfileError([f"iotame: profile {path}: cannot read: {e.strerror or e}"]) from None
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise ProfileError([f"iotame: profile {path}: not JSON: {e}"]) from None
    problems = validate_profile(obj)
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
