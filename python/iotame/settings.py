"""The settings schema, read from runtime/settings.json (the one description of every runtime setting).

The tuner builds its spaces from it. Configurations are not validated here: the C runtime embeds the same file
and validates against it, and Python runs that validator (iotame.config), so `iotame config check`, the runtime
and the tuner's built-in spaces agree.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import IotameError
from .paths import require_settings

__all__ = ["Setting", "Section", "Schema", "load_schema", "schema_from_dict", "check_requires", "TYPES",
           "REQUIRES_UNSET"]

TYPES = ("integer", "number", "enum", "string", "boolean", "list", "rules")


@dataclass(frozen=True)
class Setting:
    """One typed setting: `integer` or `number` (min/max), `enum` (values), `string`, `boolean`, `list` (of
    `items`, a Setting, with min_items/max_items) or `rules` (objects with "match" and the nested `settings`)."""

    name: str
    type: str
    min: float | None = None
    max: float | None = None
    values: tuple[str, ...] = ()
    default: Any = None
    doc: str = ""
    tune: dict | None = None
    fs: tuple[str, ...] | None = None
    items: "Setting | None" = None
    min_items: int | None = None
    max_items: int | None = None
    settings: dict = field(default_factory=dict)
    # the settings this one acts through: ((section, name, values), ...); it acts only when one of them (any one
    # suffices) has one of its values, an unset one counting as its default, or as "unset" when it has none
    requires: tuple[tuple[str, str, tuple], ...] = ()
    also: tuple = ()             # strings accepted besides the type (a throttle level's "auto")


@dataclass(frozen=True)
class Section:
    """A section of a rule (`mpiio_hints`, ...). `free`: any key, values unchecked but strings or integers.
    A section that is neither free nor has settings is reserved: only an empty object is accepted.
    `process`: the section sets the whole process, so it belongs in `defaults` only."""

    name: str
    doc: str = ""
    settings: dict[str, Setting] = field(default_factory=dict)
    free: bool = False
    process: bool = False

    @property
    def reserved(self) -> bool:
        return not self.free and not self.settings


@dataclass(frozen=True)
class Schema:
    """The whole description: the configuration version, the keys of a rule and the sections, in file order."""

    config_version: int
    rule_keys: dict[str, Setting]
    sections: dict[str, Section]
    path: Path | None = None
    raw: dict | None = field(default=None, compare=False, repr=False)   # the parsed file, for the validator

    def all_settings(self) -> list[tuple[str, Setting]]:
        """(section name, setting) for every typed setting, in file order (the tuner's built-in spaces)."""
        return [(s.name, st) for s in self.sections.values() for st in s.settings.values()]


def _bad(path, what: str) -> IotameError:
    return IotameError(f"settings {path}: {what}")


def _setting(path, where: str, name: str, d: Any) -> Setting:
    if not isinstance(d, dict):
        raise _bad(path, f"{where}.{name}: expected an object")
    typ = d.get("type")
    if typ not in TYPES:
        raise _bad(path, f"{where}.{name}.type: expected one of {', '.join(TYPES)}, got {json.dumps(typ)}")
    values = d.get("values", [])
    if typ == "enum" and (not isinstance(values, list) or not values or
                          not all(isinstance(v, str) for v in values)):
        raise _bad(path, f"{where}.{name}.values: an enum needs a non-empty list of strings")
    fs = d.get("fs")
    items = _setting(path, f"{where}.{name}", "items", d.get("items")) if typ == "list" else None
    nested = ({k: _setting(path, f"{where}.{name}.settings", k, v) for k, v in d.get("settings", {}).items()}
              if typ == "rules" else {})
    return Setting(name=name, type=typ, min=d.get("min"), max=d.get("max"), values=tuple(values),
                   default=d.get("default"), doc=d.get("doc", ""), tune=d.get("tune"),
                   fs=tuple(fs) if fs is not None else None, items=items, min_items=d.get("min_items"),
                   max_items=d.get("max_items"), settings=nested,
                   requires=_requires(path, f"{where}.{name}", d.get("requires")), also=tuple(d.get("also", ())))


def _requires(path, where: str, d: Any) -> tuple[tuple[str, str, tuple], ...]:
    """A setting's "requires": {"section.setting": [values], ...} (checked against the schema by check_requires)."""
    if d is None:
        return ()
    if not isinstance(d, dict) or not d:
        raise _bad(path, f"{where}.requires: expected an object of \"section.setting\": [values]")
    out = []
    for key, values in d.items():
        if not isinstance(key, str) or key.count(".") != 1:
            raise _bad(path, f"{where}.requires: {json.dumps(key)}: expected \"section.setting\"")
        if not isinstance(values, list) or not values:
            raise _bad(path, f"{where}.requires.{key}: expected a non-empty list of values")
        section, name = key.split(".")
        out.append((section, name, tuple(values)))
    return tuple(out)


REQUIRES_UNSET = "unset"  # in a "requires" list: the named setting left unset (one without a default)


def _value_fits(setting: Setting, v: Any) -> bool:
    """Whether v is a value of the setting's type (for "requires"; ranges are not checked)."""
    if isinstance(v, str) and (v == REQUIRES_UNSET or v in setting.also):
        return v in setting.also or setting.default is None
    if setting.type == "boolean":
        return isinstance(v, bool)
    if setting.type == "enum":
        return v in setting.values
    if setting.type == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if setting.type == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return setting.type == "string" and isinstance(v, str)


def check_requires(sections: dict[str, "Section"], path=None) -> None:
    """Every "requires" names an existing setting of the schema, with values of its type ("unset" only for one
    without a default), and no setting requires itself through others."""
    for sec in sections.values():
        for st in sec.settings.values():
            for section, name, values in st.requires:
                where = f"sections.{sec.name}.settings.{st.name}.requires.{section}.{name}"
                parent = sections.get(section, Section(section)).settings.get(name)
                if parent is None:
                    raise _bad(path, f"{where}: no such setting")
                bad = [v for v in values if not _value_fits(parent, v)]
                if bad:
                    raise _bad(path, f"{where}: {json.dumps(bad[0])} is not a value of {section}.{name} "
                                     f"({parent.type}{'' if parent.default is None else ', with a default'})")
            seen, todo = set(), [(s, n) for s, n, _ in st.requires]
            while todo:
                s, n = todo.pop()
                if (s, n) == (sec.name, st.name):
                    raise _bad(path, f"sections.{sec.name}.settings.{st.name}.requires: it requires itself")
                if (s, n) not in seen:
                    seen.add((s, n))
                    todo.extend((a, b) for a, b, _ in sections[s].settings[n].requires)


def schema_from_dict(d: dict, path: Path | None = None) -> Schema:
    """Builds a Schema from the parsed settings.json (raises IotameError if it is malformed)."""
    if not isinstance(d, dict) or not isinstance(d.get("sections"), dict):
        raise _bad(path, "expected an object with \"sections\"")
    version = d.get("config_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _bad(path, "config_version: expected an integer")
    rule_keys = {k: _setting(path, "rule_keys", k, v) for k, v in d.get("rule_keys", {}).items()}
    sections = {}
    for name, sd in d["sections"].items():
        if not isinstance(sd, dict):
            raise _bad(path, f"sections.{name}: expected an object")
        settings = {k: _setting(path, f"sections.{name}.settings", k, v)
                    for k, v in sd.get("settings", {}).items()}
        sections[name] = Section(name=name, doc=sd.get("doc", ""), settings=settings, free=bool(sd.get("free")),
                                 process=bool(sd.get("process")))
    check_requires(sections, path)
    return Schema(config_version=version, rule_keys=rule_keys, sections=sections, path=path, raw=d)


@lru_cache(maxsize=None)
def _load(path: Path) -> Schema:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise _bad(path, f"cannot read: {e.strerror}") from None
    except ValueError as e:
        raise _bad(path, f"invalid JSON ({e})") from None
    return schema_from_dict(d, path)


def load_schema(path: str | Path | None = None) -> Schema:
    """The schema from `path`, by default runtime/settings.json of this checkout (cached)."""
    return _load(Path(path).resolve() if path is not None else require_settings())
