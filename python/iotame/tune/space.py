"""A search space: the parameters a study varies, each a list of values plus UNSET (leave the setting to the
system default), and the runtime configuration a point of the space stands for."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .layers import param_key

__all__ = ["UNSET", "Param", "Space", "pow2_values", "config_for", "is_pow2", "encode", "decode",
           "CONFIG_VERSION", "JSON_PREFIX"]

UNSET = "unset"            # a parameter's value meaning: do not set it (the system default)
CONFIG_VERSION = 1
JSON_PREFIX = "json:"      # how a list or object value travels through optuna, which takes scalars only


def encode(value: Any) -> Any:
    """A value as a sampler's choice: scalars as they are, lists and objects as `json:` + compact JSON."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return JSON_PREFIX + json.dumps(value, sort_keys=True, separators=(",", ":"))


def decode(choice: Any) -> Any:
    """The value a sampler's choice stands for (the inverse of encode)."""
    if isinstance(choice, str) and choice.startswith(JSON_PREFIX):
        return json.loads(choice[len(JSON_PREFIX):])
    return choice


@dataclass(frozen=True)
class Param:
    """One tunable setting: its layer, configuration section, name, and the values tried besides UNSET."""

    layer: str
    section: str
    name: str
    values: tuple

    @property
    def key(self) -> str:
        return param_key(self.layer, self.section, self.name)

    @property
    def choices(self) -> list:
        """What a sampler chooses from: UNSET first, then the values (encoded: see encode())."""
        return [UNSET, *map(encode, self.values)]

    def to_json(self) -> dict:
        return {"layer": self.layer, "section": self.section, "name": self.name, "values": list(self.values)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Param":
        return cls(d["layer"], d["section"], d["name"], tuple(d["values"]))


@dataclass(frozen=True)
class Space:
    """Parameters in a fixed order; `notes` say what was left out and why."""

    params: tuple[Param, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __iter__(self):
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    def keys(self) -> list[str]:
        return [p.key for p in self.params]

    def get(self, key: str) -> Param | None:
        return next((p for p in self.params if p.key == key), None)

    def size(self) -> int:
        """The number of distinct configurations (UNSET counted as a value)."""
        n = 1
        for p in self.params:
            n *= len(p.choices)
        return n

    def default_point(self) -> dict:
        """Every parameter UNSET: the system default."""
        return {p.key: UNSET for p in self.params}

    def config(self, point: Mapping[str, Any], meta: Mapping[str, Any] | None = None) -> dict:
        """The runtime configuration of a point (parameters missing from the point are left unset)."""
        return config_for(((p, point.get(p.key, UNSET)) for p in self.params), meta)

    def point_from_config(self, config: Mapping[str, Any]) -> dict:
        """The point of this space closest to a configuration's `defaults`: each parameter takes the configured
        value when it is one of its values, UNSET otherwise (settings outside the space are dropped)."""
        defaults = config.get("defaults") or {}
        point = {}
        for p in self.params:
            v = encode((defaults.get(p.section) or {}).get(p.name, UNSET))
            point[p.key] = v if v in p.choices else UNSET
        return point

    def without(self, keys: Iterable[str], note: str | None = None) -> "Space":
        drop = set(keys)
        notes = self.notes + ((note,) if note else ())
        return Space(tuple(p for p in self.params if p.key not in drop), notes)

    def to_json(self) -> dict:
        return {"params": [p.to_json() for p in self.params]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Space":
        return cls(tuple(Param.from_json(p) for p in d.get("params", [])))

    def describe(self) -> list[str]:
        """One line per parameter: `mpiio.cb_nodes: unset, 1, 2`."""
        return [f"{p.key}: {', '.join(str(c) for c in p.choices)}" for p in self.params]


def config_for(items: Iterable[tuple[Param, Any]], meta: Mapping[str, Any] | None = None) -> dict:
    """A runtime configuration (`{"version": 1, "defaults": {section: {name: value}}}`) from (param, value or
    choice) pairs; UNSET values are left out, so all-UNSET gives the empty configuration."""
    defaults: dict[str, dict] = {}
    for p, v in items:
        if v != UNSET:
            defaults.setdefault(p.section, {})[p.name] = decode(v)
    config: dict[str, Any] = {"version": CONFIG_VERSION}
    if defaults:
        config["defaults"] = defaults
    if meta:
        config["meta"] = dict(meta)
    return config


def is_pow2(n: Any) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n >= 1 and n & (n - 1) == 0


def pow2_values(lo: int, hi: int, include_hi: bool = False) -> list[int]:
    """Powers of two from lo to hi (lo a power of two); with include_hi, hi itself ends the list even when it is
    not a power of two (a process count such as 6)."""
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    if include_hi and hi >= lo and (not out or out[-1] != hi):
        out.append(hi)
    return out
