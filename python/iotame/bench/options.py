"""A kernel's option table, as `iotame-kernel KERNEL --describe` prints it, and checking values against it.

The description is {"kernel", "summary", "options": [{"name", "type", "default", "min", "max", "choices",
"help"}]} with type one of flag, integer, size, number, string, enum. Sizes take k, m, g suffixes (powers of
1024), as the kernels do. Checking here lets `iotame bench` and the tuner reject a bad `--set` or `--sweep`
before anything is launched, with the same wording as the kernel.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Option", "parse_description", "parse_size", "TRUE", "FALSE", "OPTION_TYPES", "SIZE_SYNTAX"]

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})
OPTION_TYPES = ("flag", "integer", "size", "number", "string", "enum")
SIZE_SYNTAX = "a size (bytes, or with a k, m or g suffix: 4096, 64k, 1m, 2g)"

_SIZE = re.compile(r"(\d+)([kmg]?)", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_size(text: str) -> int:
    """"4096", "64k", "1M", "2g" -> bytes (powers of 1024); ValueError otherwise."""
    m = _SIZE.fullmatch(str(text).strip())
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def _parse_int(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", str(text).strip()):
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


_PARSERS = {"integer": _parse_int, "size": parse_size, "number": float}


@dataclass
class Option:
    """One kernel option. `default`, `min` and `max` are written as on the command line ("1m", "4")."""

    name: str
    type: str
    default: str | None = None
    min: str | None = None
    max: str | None = None
    choices: list[str] = field(default_factory=list)
    help: str = ""

    def expected(self) -> str:
        """What a value must be, in words: "an integer >= 1", "one of posix, mpiio", ..."""
        if self.type == "flag":
            return "1 or 0 (a flag: present or not)"
        if self.type == "enum":
            return "one of " + ", ".join(self.choices)
        if self.type == "string":
            return "a string"
        what = {"integer": "an integer", "size": "a size", "number": "a number"}[self.type]
        if self.min is not None and self.max is not None:
            what += f" from {self.min} to {self.max}"
        elif self.min is not None:
            what += f" >= {self.min}"
        elif self.max is not None:
            what += f" <= {self.max}"
        return what + SIZE_SYNTAX[len("a size"):] if self.type == "size" else what

    def check(self, value: str) -> str | None:
        """None when `value` is acceptable, else what was expected (for a message)."""
        v = str(value).strip()
        if self.type == "flag":
            return None if v.lower() in TRUE | FALSE else self.expected()
        if self.type == "enum":
            return None if v.lower() in {c.lower() for c in self.choices} else self.expected()
        if self.type == "string":
            return None
        parse = _PARSERS[self.type]
        try:
            x = parse(v)
            lo = parse(self.min) if self.min is not None else None
            hi = parse(self.max) if self.max is not None else None
        except ValueError:
            return self.expected()
        if self.type == "number" and x != x:          # NaN
            return self.expected()
        if (lo is not None and x < lo) or (hi is not None and x > hi):
            return self.expected()
        return None

    def is_on(self, value: str) -> bool:
        """For a flag: whether `value` asks for it."""
        return str(value).strip().lower() in TRUE


def _text(v: Any) -> str | None:
    return None if v is None else str(v)


def parse_description(obj: Any) -> tuple[str, str, dict[str, Option]]:
    """(kernel, summary, {name: Option}) from a parsed `--describe` object; ValueError if it is not one."""
    if not isinstance(obj, dict) or not isinstance(obj.get("options"), list):
        raise ValueError('not a kernel description (expected an object with an "options" list)')
    options: dict[str, Option] = {}
    for i, o in enumerate(obj["options"]):
        if not isinstance(o, dict) or not isinstance(o.get("name"), str) or o.get("type") not in OPTION_TYPES:
            raise ValueError(f"options[{i}]: expected {{\"name\", \"type\": one of {', '.join(OPTION_TYPES)}}}")
        options[o["name"]] = Option(o["name"], o["type"], _text(o.get("default")), _text(o.get("min")),
                                    _text(o.get("max")), [str(c) for c in o.get("choices") or []],
                                    str(o.get("help") or ""))
    return str(obj.get("kernel", "")), str(obj.get("summary") or ""), options
