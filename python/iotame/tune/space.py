"""A search space: the parameters a study varies, each a list of values plus UNSET (leave the setting to the
system default), and the runtime configuration a point of the space stands for."""
from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable, Mapping

from .layers import param_key

__all__ = ["UNSET", "Requirement", "Param", "Space", "apply_base", "same_value", "pow2_values", "config_for",
           "is_pow2", "encode", "decode", "config_key", "CONFIG_VERSION", "JSON_PREFIX"]

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


def same_value(a: Any, b: Any) -> bool:
    """Equal as configuration values: True is not 1 (a boolean is not a number)."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


@dataclass(frozen=True)
class Requirement:
    """A setting another one acts through (settings.json's "requires"): the other acts when this one has one of
    `values`. `unset` is what it counts as when the point leaves it unset (its default, a base configuration's value,
    or "unset"); `anywhere`: a rule of the base configuration sets it, so the other may act whatever the point says."""

    section: str
    name: str
    values: tuple
    unset: Any = UNSET
    anywhere: bool = False

    def met_by(self, value: Any) -> bool:
        return self.anywhere or any(same_value(value, v) for v in self.values)

    def to_json(self) -> dict:
        return {"section": self.section, "name": self.name, "values": list(self.values), "unset": self.unset,
                "anywhere": self.anywhere}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Requirement":
        return cls(d["section"], d["name"], tuple(d["values"]), d.get("unset", UNSET), bool(d.get("anywhere")))


@dataclass(frozen=True)
class Param:
    """One tunable setting: its layer, configuration section, name, and the values tried besides UNSET; `requires`:
    it acts only when one of these is met (none: always); `default`: the value it has when unset (None: not known),
    which set explicitly changes nothing."""

    layer: str
    section: str
    name: str
    values: tuple
    requires: tuple[Requirement, ...] = ()
    default: Any = None

    @property
    def key(self) -> str:
        return param_key(self.layer, self.section, self.name)

    @property
    def choices(self) -> list:
        """What a sampler chooses from: UNSET first, then the values (encoded: see encode())."""
        return [UNSET, *map(encode, self.values)]

    def to_json(self) -> dict:
        d = {"layer": self.layer, "section": self.section, "name": self.name, "values": list(self.values)}
        if self.requires:
            d["requires"] = [r.to_json() for r in self.requires]
        if self.default is not None:
            d["default"] = self.default
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Param":
        return cls(d["layer"], d["section"], d["name"], tuple(d["values"]),
                   tuple(Requirement.from_json(r) for r in d.get("requires", ())), d.get("default"))


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
        """The number of configurations (UNSET counted as a value), a parameter counted only where it can act
        (count_configurations)."""
        return self.count_configurations()

    def default_point(self) -> dict:
        """Every parameter UNSET: the system default."""
        return {p.key: UNSET for p in self.params}

    def config(self, point: Mapping[str, Any], meta: Mapping[str, Any] | None = None) -> dict:
        """The runtime configuration of a point (parameters missing from the point are left unset, and so are
        those that cannot act in it: see canonical())."""
        point = self.canonical(point)
        return config_for(((p, point[p.key]) for p in self.params), meta)

    # --- the conditional space: which parameters can act in a point ---------------------------------------------

    def find(self, section: str, name: str) -> Param | None:
        return self._by_setting.get((section, name))

    @cached_property
    def _by_setting(self) -> dict[tuple[str, str], Param]:
        return {(p.section, p.name): p for p in self.params}

    def acts(self, param: Param, point: Mapping[str, Any]) -> bool:
        """Whether `param` can act in `point`: one of its requirements is met by the value the point gives the
        setting it names (an unset or missing one counting as the requirement's `unset`)."""
        if not param.requires:
            return True
        for r in param.requires:
            parent = self.find(r.section, r.name)
            choice = point.get(parent.key, UNSET) if parent is not None else UNSET
            if r.met_by(r.unset if choice == UNSET else decode(choice)):
                return True
        return False

    def canonical(self, point: Mapping[str, Any], no_op: bool = True) -> dict:
        """The point with every parameter that cannot act in it left unset: one whose requirements the point does
        not meet (a setting it acts through being unset or itself unable to act) and, with no_op, one set to the
        value it has when unset. Two points with the same canonical point are the same configuration."""
        out = {p.key: point.get(p.key, UNSET) for p in self.params}
        if no_op:
            for p in self.params:
                if out[p.key] != UNSET and p.default is not None and same_value(decode(out[p.key]), p.default):
                    out[p.key] = UNSET
        changed = True
        while changed:            # a parameter left unset may leave others unable to act
            changed = False
            for p in self.params:
                if out[p.key] != UNSET and not self.acts(p, out):
                    out[p.key], changed = UNSET, True
        return out

    def inactive(self, point: Mapping[str, Any]) -> list[str]:
        """The parameters set in `point` whose requirements it does not meet (the sampler never draws them)."""
        canon = self.canonical(point, no_op=False)
        return [p.key for p in self.params if point.get(p.key, UNSET) != UNSET and canon[p.key] == UNSET]

    def never_acting(self) -> Space:
        """The space without the parameters no point of it lets act (what they act through is not in the space,
        or never with a value that lets them act), each named in a note."""
        drop, notes = set(), []
        changed = True
        while changed:           # a parameter left out may leave others that act through it unable to act
            changed = False
            for p in self.params:
                if p.key in drop or not p.requires:
                    continue
                if not any(self._can_meet(r, drop) for r in p.requires):
                    drop.add(p.key)
                    changed = True
                    need = "; ".join(f"{r.section}.{r.name} is {', '.join(map(_shown, r.values))}" for r in p.requires)
                    notes.append(f"{p.name} left out: it acts only when {need}, which no configuration of the "
                                 f"space sets")
        return Space(tuple(p for p in self.params if p.key not in drop), self.notes + tuple(notes)) if drop else self

    def _can_meet(self, r: Requirement, drop: set) -> bool:
        """Whether some point of the space (without `drop`) meets requirement r."""
        if r.met_by(r.unset):
            return True
        parent = self.find(r.section, r.name)
        return parent is not None and parent.key not in drop and any(r.met_by(decode(c)) for c in parent.choices)

    def sampling_order(self) -> list[Param]:
        """The parameters with every one after those it acts through, so that a sampler knows, when it comes to a
        parameter, whether it can act (otherwise the space's order)."""
        order: list[Param] = []

        def visit(p: Param, path: tuple) -> None:
            if p in order or p in path:
                return
            for r in p.requires:
                parent = self.find(r.section, r.name)
                if parent is not None:
                    visit(parent, path + (p,))
            order.append(p)

        for p in self.params:
            visit(p, ())
        return order

    def sample(self, suggest) -> dict:
        """A point drawn define-by-run: suggest(param) is asked only for the parameters that can act given those
        drawn before them (the others are UNSET, and a sampler never sees them)."""
        point = {p.key: UNSET for p in self.params}
        for p in self.sampling_order():
            if self.acts(p, point):
                point[p.key] = suggest(p)
        return point

    def count_configurations(self) -> int:
        """The number of distinct points in which no parameter is set that cannot act (UNSET counted as a value;
        a value equal to the default counted too, as the sampler sees it): the product of the choices over the
        settings others act through, each assignment weighted by the choices of the parameters that act in it."""
        parents = [p for p in self.params if any(self.find(r.section, r.name) is p
                                                  for q in self.params for r in q.requires)]
        conditional = [p for p in self.params if p not in parents and p.requires]
        constant = math.prod(len(p.choices) for p in self.params if p not in parents and not p.requires)
        checked = [p for p in parents if p.requires]
        total = 0
        for combo in itertools.product(*[p.choices for p in parents]):
            point = {p.key: c for p, c in zip(parents, combo)}
            if any(point[p.key] != UNSET and not self.acts(p, point) for p in checked):
                continue         # a parent set where it cannot act: not a distinct point
            total += math.prod(len(p.choices) if self.acts(p, point) else 1 for p in conditional)
        return total * constant

    def point_from_config(self, config: Mapping[str, Any]) -> dict:
        """The point of this space closest to a configuration's `defaults`: each parameter takes the configured
        value when it is one of its values, UNSET otherwise (settings outside the space are dropped)."""
        defaults = config.get("defaults") or {}
        point = {}
        for p in self.params:
            v = encode((defaults.get(p.section) or {}).get(p.name, UNSET))
            point[p.key] = v if v in p.choices else UNSET
        return point

    def left_out(self, config: Mapping[str, Any]) -> list[str]:
        """The settings of a configuration's `defaults` that point_from_config drops (`section.name`): not
        parameters of this space, or values it does not try."""
        point = self.point_from_config(config)
        kept = {(p.section, p.name) for p in self.params if point[p.key] != UNSET}
        return [f"{section}.{name}" for section, values in (config.get("defaults") or {}).items()
                if isinstance(values, Mapping) for name in values if (section, name) not in kept]

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


def _shown(v: Any) -> str:
    """A value in a note: strings as they are, the rest as JSON (true, not True)."""
    return v if isinstance(v, str) else json.dumps(v)


def config_key(config: Mapping[str, Any]) -> str:
    """What makes two configurations of the tuner the same: their defaults (the tuner's unit; meta aside)."""
    return json.dumps(config.get("defaults") or {}, sort_keys=True)


def flatten_rules(config: Mapping[str, Any]) -> dict:
    """A configuration as one set of `defaults`, the tuner's unit: per-file rules in their order (the first rule
    that sets a value wins, as for the first file it matches), then the defaults for what no rule sets."""
    flat: dict[str, dict[str, Any]] = {}
    for layer in [*(config.get("files") or []), config.get("defaults") or {}]:
        for section, values in layer.items():
            if isinstance(values, Mapping):
                for name, value in values.items():
                    flat.setdefault(section, {}).setdefault(name, value)
    return {"defaults": flat}


def apply_base(space: Space, base: Mapping[str, Any] | None) -> Space:
    """The space as seen over a base configuration (the tuner's --base): a setting the base sets in `defaults`
    has that value when a point leaves it unset, and one a `files` rule sets may act anywhere (the rule may
    hold for some file), so what requires it may act."""
    if not base:
        return space
    defaults = base.get("defaults") or {}
    ruled = {(section, name) for rule in base.get("files") or [] if isinstance(rule, Mapping)
             for section, values in rule.items() if isinstance(values, Mapping) for name in values}

    def unset(section: str, name: str, fallback: Any) -> Any:
        return (defaults.get(section) or {}).get(name, fallback)

    params = []
    for p in space.params:
        reqs = tuple(Requirement(r.section, r.name, r.values, unset(r.section, r.name, r.unset),
                                 r.anywhere or (r.section, r.name) in ruled) for r in p.requires)
        params.append(Param(p.layer, p.section, p.name, p.values, reqs, unset(p.section, p.name, p.default)))
    return Space(tuple(params), space.notes)


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
