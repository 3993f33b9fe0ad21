"""The runtime configuration (IOTAME_CONFIG): reading, and validation with the messages of docs/formats.md.

The C runtime (runtime/src/core/config.c) validates the same schema, runtime/settings.json, independently, so
every message comes from the few small functions in the first part of this module and must stay character for
character what the C side prints:

    iotame: config FILE: KEYPATH: message

Conventions shared with C: a got-value is shown as compact JSON when it is a scalar (`"four"`, `4.5`, `true`)
and by its type name when it is a container (`array`, `object`); lists of expected keys are sorted; enum values
keep the order of settings.json. Parsing rejects what jansson rejects: duplicate keys, NaN/Infinity, integers
outside 64 bits, real overflow, a top level that is neither an object nor an array.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .settings import Schema, Section, Setting, load_schema

__all__ = ["validate", "load_config", "check_config", "parse_config_text", "save_config", "format_error",
           "json_type", "render_value", "TOP_KEYS", "MATCH_KEY", "OVERRIDE_KEY"]

TOP_KEYS = ("version", "defaults", "files", "meta")
MATCH_KEY = "match"          # required in files[] rules, not accepted in defaults
OVERRIDE_KEY = "override"
MISSING = "missing required key"
PROCESS_WIDE = "the section sets the whole process: allowed in defaults only"


# --- message text: the one place that formats what the C runtime formats too -------------------------------

def format_error(filename: str, where: str, message: str) -> str:
    """`iotame: config FILE: WHERE: message`; WHERE is a key path or `line L, column C`, empty for the root."""
    return f"iotame: config {filename}: {where}: {message}" if where else f"iotame: config {filename}: {message}"


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value: object, array, string, integer, number, boolean, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _json_string(s: str) -> str:
    """A string as jansson dumps it: UTF-8 kept, `/` not escaped, other control characters as \\u00XX."""
    return '"' + "".join(_ESCAPES.get(c) or (f"\\u{ord(c):04X}" if ord(c) < 0x20 else c) for c in s) + '"'


def _json_real(x: float) -> str:
    """A real as jansson dumps it: %.17g, `.0` added when it would read back as an integer, exponent trimmed."""
    s = f"{x:.17g}"
    if "." not in s and "e" not in s:
        s += ".0"
    return re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", s)


def render_value(value: Any) -> str:
    """A got-value in a message: scalars as compact JSON, containers by their type name."""
    if isinstance(value, (dict, list)):
        return json_type(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, float):
        return _json_real(value)
    return json.dumps(value)


def _expected_value(what: str, got: Any) -> str:
    return f"expected {what}, got {render_value(got)}"


def _expected_type(what: str, got: Any) -> str:
    return f"expected {what}, got {json_type(got)}"


def _unknown_key(expected) -> str:
    return f"unknown key (expected one of: {', '.join(sorted(expected))})"


def _reserved_key(section: str) -> str:
    return f"unknown key (section {section} has no settings yet)"


def _bound(x) -> str:
    """A bound as C's %.15g prints it (integers of up to 15 digits exactly)."""
    return f"{x:.15g}"


def _describe(setting: Setting) -> str:
    """What a typed setting accepts: `an integer >= 1`, `one of enable, disable, automatic`, ..."""
    if setting.type in ("integer", "number"):
        what = "an integer" if setting.type == "integer" else "a number"
        if setting.min is not None and setting.max is not None:
            return f"{what} from {_bound(setting.min)} to {_bound(setting.max)}"
        if setting.min is not None:
            return f"{what} >= {_bound(setting.min)}"
        if setting.max is not None:
            return f"{what} <= {_bound(setting.max)}"
        return what
    if setting.type == "enum":
        return "one of " + ", ".join(setting.values)
    if setting.type == "list":
        return "a list of " + _describe(setting.items)
    if setting.type == "rules":
        return 'a list of rules (objects with "match")'
    return {"string": "a string", "boolean": "true or false"}[setting.type]


FREE_VALUE = "a string or an integer"
MATCH_VALUE = "a non-empty string (a glob)"
TOP_OBJECT = "an object at the top level"


# --- reading -------------------------------------------------------------------------------------------------

class _Rejected(ValueError):
    """Valid for Python's json but not for jansson: (kind, detail)."""

    def __init__(self, kind: str, detail: str):
        super().__init__(kind, detail)
        self.kind, self.detail = kind, detail


def _pairs(pairs):
    seen = set()
    for k, _ in pairs:
        if k in seen:
            raise _Rejected("duplicate", k)
        seen.add(k)
    return dict(pairs)


def _int(s: str) -> int:
    v = int(s)
    if not -(2 ** 63) <= v < 2 ** 63:
        raise _Rejected("integer", s)
    return v


def _float(s: str) -> float:
    v = float(s)
    if math.isinf(v):
        raise _Rejected("real", s)
    return v


def _constant(s: str):
    raise _Rejected("constant", s)


_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?)'
                    r'|(?P<const>-?Infinity|NaN)|(?P<punct>[{}\[\]:,])|(?P<word>true|false|null))', re.S)


def _near(message: str, token: str) -> str:
    """jansson's `MESSAGE near 'TOKEN'` (the token is left out when longer than 20 characters)."""
    return f"{message} near '{token}'" if token and len(token) <= 20 else message


def _locate(text: str, problem: _Rejected) -> tuple[int, str]:
    """(offset of the last character of the offending token, jansson's message) for a _Rejected problem,
    found by walking the tokens in order, as Python's parser met them."""
    stack: list[list] = []          # [is_object, keys seen, expecting a key]
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == m.start():
            break
        pos = m.end()
        tok = m.group(m.lastgroup)
        last = pos - 1
        if m.lastgroup == "punct":
            if tok in "{[":
                stack.append([tok == "{", set(), tok == "{"])
            elif tok in "}]" and stack:
                stack.pop()
            elif tok == "," and stack and stack[-1][0]:
                stack[-1][2] = True
        elif m.lastgroup == "str" and stack and stack[-1][0] and stack[-1][2]:
            stack[-1][2] = False
            key = json.loads(tok)
            if key in stack[-1][1]:
                return last, _near("duplicate object key", tok)
            stack[-1][1].add(key)
        elif m.lastgroup == "num" and problem.kind in ("integer", "real") and tok == problem.detail:
            if problem.kind == "real":
                return last, _near("real number overflow", tok)
            return last, _near("too big negative integer" if tok.startswith("-") else "too big integer", tok)
        elif m.lastgroup == "const":
            return last, _near("invalid token", tok)
    return 0, {"duplicate": "duplicate object key", "integer": "too big integer",
               "real": "real number overflow"}.get(problem.kind, "invalid token")


_WORD = re.compile(r"[A-Za-z0-9_.+-]+")


def _token_last(text: str, pos: int) -> int:
    """The last character of the token starting at `pos`: jansson reports where it stopped reading, Python
    where the offending token starts."""
    m = _TOKEN.match(text, pos)
    if m and m.lastgroup and m.start(m.lastgroup) == pos:
        return m.end() - 1
    m = _WORD.match(text, pos)
    return m.end() - 1 if m else pos


def _line_col(text: str, pos: int) -> tuple[int, int]:
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _invalid(filename: str, text: str, pos: int, why: str) -> ConfigError:
    line, col = _line_col(text, pos)
    return ConfigError([format_error(filename, f"line {line}, column {col}", f"invalid JSON ({why})")])


def parse_config_text(text: str, filename: str) -> Any:
    """Parses JSON text as the runtime does; raises ConfigError with `line L, column C: invalid JSON (...)`."""
    try:
        obj = json.loads(text, object_pairs_hook=_pairs, parse_int=_int, parse_float=_float,
                         parse_constant=_constant)
    except json.JSONDecodeError as e:
        raise _invalid(filename, text, _token_last(text, e.pos), e.msg) from None
    except _Rejected as e:
        pos, why = _locate(text, e)
        raise _invalid(filename, text, pos, why) from None
    if not isinstance(obj, (dict, list)):
        m = _TOKEN.match(text)
        tok = m.group(m.lastgroup) if m and m.lastgroup else ""
        raise _invalid(filename, text, (m.end() - 1) if m else 0, _near("'[' or '{' expected", tok))
    return obj


def _read(path: str | Path, filename: str) -> Any:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError([format_error(filename, "", f"cannot read: {e.strerror}")]) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ConfigError([format_error(filename, f"line {line}, column {col}",
                                        f"invalid JSON (unable to decode byte 0x{data[e.start]:x})")]) from None
    return parse_config_text(text, filename)


# --- validation ----------------------------------------------------------------------------------------------

def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _value_ok(setting: Setting, v: Any) -> bool:
    """Whether a scalar value fits its setting."""
    if setting.type in ("integer", "number"):
        return ((_is_int(v) if setting.type == "integer" else _is_number(v))
                and (setting.min is None or v >= setting.min) and (setting.max is None or v <= setting.max))
    if setting.type == "enum":
        return isinstance(v, str) and v in setting.values
    if setting.type == "string":
        return isinstance(v, str)
    return isinstance(v, bool)


class _Validator:
    def __init__(self, schema: Schema, filename: str):
        self.schema, self.filename, self.errors = schema, filename, []

    def error(self, where: str, message: str) -> None:
        self.errors.append(format_error(self.filename, where, message))

    def value(self, where: str, setting: Setting, v: Any) -> None:
        if setting.type not in ("list", "rules"):
            if not _value_ok(setting, v):
                self.error(where, _expected_value(_describe(setting), v))
            return
        if not isinstance(v, list):
            self.error(where, _expected_value(_describe(setting), v))
            return
        lo, hi = setting.min_items, setting.max_items
        if (lo is not None and len(v) < lo) or (hi is not None and len(v) > hi):
            self.error(where, f"expected {lo or 0} to {hi if hi is not None else len(v)} items, got {len(v)}")
        for i, item in enumerate(v):
            if setting.type == "rules":
                self.settings_object(f"{where}[{i}]", setting.settings, item, with_match=True)
            elif not _value_ok(setting.items, item):
                self.error(f"{where}[{i}]", _expected_value(_describe(setting.items), item))

    def settings_object(self, path: str, settings: dict, obj: Any, with_match: bool) -> None:
        """An object whose keys are `settings` (and "match" for a rule of a `rules` setting)."""
        if not isinstance(obj, dict):
            self.error(path, _expected_type("an object", obj))
            return
        for key, v in obj.items():
            where = f"{path}.{key}"
            if with_match and key == MATCH_KEY:
                if not (isinstance(v, str) and v):
                    self.error(where, _expected_value(MATCH_VALUE, v))
            elif key in settings:
                self.value(where, settings[key], v)
            else:
                self.error(where, _unknown_key(list(settings) + ([MATCH_KEY] if with_match else [])))
        if with_match and MATCH_KEY not in obj:
            self.error(f"{path}.{MATCH_KEY}", MISSING)

    def top(self, obj: Any) -> None:
        if not isinstance(obj, dict):
            self.error("", _expected_type(TOP_OBJECT, obj))
            return
        for key, v in obj.items():
            if key == "version":
                if not (_is_int(v) and v == self.schema.config_version):
                    self.error(key, _expected_value(str(self.schema.config_version), v))
            elif key == "defaults":
                self.rule(key, v, in_files=False)
            elif key == "files":
                if not isinstance(v, list):
                    self.error(key, _expected_type("an array", v))
                else:
                    for i, rule in enumerate(v):
                        self.rule(f"files[{i}]", rule, in_files=True)
            elif key == "meta":
                if not isinstance(v, dict):
                    self.error(key, _expected_type("an object", v))
            else:
                self.error(key, _unknown_key(TOP_KEYS))
        if "version" not in obj:
            self.error("version", MISSING)

    def rule(self, path: str, obj: Any, in_files: bool) -> None:
        if not isinstance(obj, dict):
            self.error(path, _expected_type("an object", obj))
            return
        rule_keys = {k: s for k, s in self.schema.rule_keys.items() if k != MATCH_KEY or in_files}
        for key, v in obj.items():
            where = f"{path}.{key}"
            if key in self.schema.sections and in_files and self.schema.sections[key].process:
                self.error(where, PROCESS_WIDE)
            elif key in self.schema.sections:
                self.section(where, self.schema.sections[key], v)
            elif key == MATCH_KEY and in_files:
                if not (isinstance(v, str) and v):
                    self.error(where, _expected_value(MATCH_VALUE, v))
            elif key in rule_keys:
                self.value(where, rule_keys[key], v)
            else:
                self.error(where, _unknown_key(list(rule_keys) + list(self.schema.sections)))
        if in_files and MATCH_KEY not in obj:
            self.error(f"{path}.{MATCH_KEY}", MISSING)

    def section(self, path: str, section: Section, obj: Any) -> None:
        if not isinstance(obj, dict):
            self.error(path, _expected_type("an object", obj))
        elif section.free:
            for key, v in obj.items():
                if not (_is_int(v) or isinstance(v, str)):
                    self.error(f"{path}.{key}", _expected_value(FREE_VALUE, v))
        elif section.reserved:
            for key in obj:
                self.error(f"{path}.{key}", _reserved_key(section.name))
        else:
            self.settings_object(path, section.settings, obj, with_match=False)


def validate(obj: Any, filename: str, schema: Schema | None = None) -> list[str]:
    """Every error in a parsed configuration, formatted one per line (empty list: valid)."""
    v = _Validator(schema or load_schema(), str(filename))
    v.top(obj)
    return v.errors


def check_config(path: str | Path, schema: Schema | None = None) -> list[str]:
    """Every error of the configuration file at `path` (unreadable, invalid JSON, or invalid); [] if valid."""
    try:
        obj = _read(path, str(path))
    except ConfigError as e:
        return e.errors
    return validate(obj, str(path), schema)


def load_config(path: str | Path, schema: Schema | None = None) -> dict:
    """The parsed, valid configuration at `path`; raises ConfigError holding every error otherwise."""
    obj = _read(path, str(path))
    errors = validate(obj, str(path), schema)
    if errors:
        raise ConfigError(errors)
    return obj


def save_config(obj: dict, path: str | Path, schema: Schema | None = None) -> Path:
    """Validates `obj` and writes it to `path` as JSON (what the tuner does with a trial configuration)."""
    errors = validate(obj, str(path), schema)
    if errors:
        raise ConfigError(errors)
    path = Path(path)
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
