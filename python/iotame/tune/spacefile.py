"""Search spaces in TOML: one table per layer, one key per parameter.

    base = "builtin"                         # optional: start from the built-in space (default "empty")
    [mpiio]
    romio_cb_write = ["enable", "disable"]   # a list of values
    cb_buffer_size = {pow2 = [1048576, 16777216]}
    cb_nodes = {pow2 = [1, "nprocs"]}        # powers of two up to the process count
    cb_config_list = false                   # with base = "builtin": leave the parameter out
    [striping]
    striping_factor = {values = [4, 8, 16]}
    [iotame.collective]                      # the iotame layer has one sub-table per section

Every parameter also gets the value "unset" (leave the setting to the system default); "unset" or "default" in a
list mean the same (unless the setting has a value of that name, as HDF5's alloc_time has "default"). Errors
name the file, the table and the key, one per line, like configuration errors, and every value must be one the
runtime accepts: every value of the document is checked by the runtime's own validator, in one run of it
(iotame.config.validate_many).
"""
from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: the same parser from PyPI
    import tomli as tomllib
from pathlib import Path
from typing import Any

from ..config import format_error, render_value, validate_many
from ..errors import ConfigError
from ..settings import Schema, Setting, load_schema
from .builtin import FILE_SYSTEMS, NPROCS, builtin_space, make_param, tunable_settings
from .layers import LAYERS, STRIPING_HINTS
from .space import UNSET, Param, Space, is_pow2, pow2_values

__all__ = ["SpaceError", "load_space", "parse_space", "BASES", "UNSET_WORDS"]

BASES = ("builtin", "empty")
UNSET_WORDS = (UNSET, "default")
_SPEC = 'expected a list of values, {pow2 = [lo, hi]}, {values = [...]} or false'


class SpaceError(ConfigError):
    """A search space file is invalid; `errors` holds one `iotame: space FILE: WHERE: message` line per problem."""


def _message(filename: str, where: str, message: str) -> str:
    return format_error(filename, where, message).replace("iotame: config ", "iotame: space ", 1)


def _show(v: Any) -> str:
    """A value in a message: scalars as JSON, containers by their TOML type name."""
    return _type(v) if isinstance(v, (list, dict)) else render_value(v)


def _type(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "table"
    return type(v).__name__


class _Parser:
    def __init__(self, filename: str, schema: Schema, fs: str, nprocs: int):
        self.filename, self.schema, self.fs, self.nprocs = filename, schema, fs, nprocs
        self.errors: list[str | list[str]] = []   # a list: where check_values puts its messages
        self.notes: list[str] = []
        self.pending: list[tuple[list[str], str, str, Setting, list]] = []
        self.known = tunable_settings(schema)

    def error(self, where: str, message: str) -> None:
        self.errors.append(_message(self.filename, where, message))

    # --- the document --------------------------------------------------------------------------------------

    def document(self, doc: dict) -> Space:
        base = doc.get("base", "empty")
        if base not in BASES:
            self.error("base", f'expected "builtin" or "empty", got {_show(base)}')
            base = "empty"
        chosen: dict[str, Param | None] = {}   # key -> Param, or None: left out
        for layer, table in doc.items():
            if layer == "base":
                continue
            if layer not in LAYERS:
                self.error(layer, f"unknown layer (expected one of: {', '.join(sorted(LAYERS))})")
                continue
            if not isinstance(table, dict):
                self.error(layer, f"expected a table of parameters, got {_type(table)}")
                continue
            if layer == "iotame":
                self.iotame(table, chosen)
            else:
                for name, spec in table.items():
                    self.parameter(layer, f"{layer}.{name}", name, spec, chosen)
        self.check_values()
        errors = [m for e in self.errors for m in (e if isinstance(e, list) else [e])]
        if errors:
            raise SpaceError(errors)
        params: list[Param] = []
        if base == "builtin":
            built = builtin_space(self.fs, self.nprocs, self.schema)
            self.notes.extend(built.notes)
            for p in built:
                if p.key in chosen:
                    replaced = chosen.pop(p.key)
                    if replaced is not None:
                        params.append(replaced)
                else:
                    params.append(p)
        params.extend(p for p in chosen.values() if p is not None)
        notes = dict.fromkeys(self.notes)        # the built-in space may say the same
        return Space(tuple(params), tuple(notes))

    def iotame(self, table: dict, chosen: dict) -> None:
        sections = LAYERS["iotame"]
        for section, sub in table.items():
            where = f"iotame.{section}"
            if section not in sections:
                self.error(where, f"unknown section (expected one of: {', '.join(sorted(sections))})")
            elif not isinstance(sub, dict):
                self.error(where, f"expected a table of parameters, got {_type(sub)}")
            else:
                for name, spec in sub.items():
                    self.parameter("iotame", f"{where}.{name}", name, spec, chosen, section=section)

    # --- one parameter -------------------------------------------------------------------------------------

    def _lookup(self, layer: str, where: str, name: str, section: str | None):
        settings = self.known.get(layer, {})
        if section is not None:
            settings = {k: v for k, v in settings.items() if v[0] == section}
        if name in settings:
            return settings[name]
        if layer == "mpiio" and name in STRIPING_HINTS:
            self.error(where, "unknown parameter (it belongs to the striping table)")
        elif layer == "striping" and name in self.known.get("mpiio", {}):
            self.error(where, "unknown parameter (it belongs to the mpiio table)")
        elif not settings:
            what = f"{layer} {section}" if section else layer
            self.error(where, f"unknown parameter (the runtime has no {what} settings yet)")
        else:
            self.error(where, f"unknown parameter (expected one of: {', '.join(sorted(settings))})")
        return None

    def parameter(self, layer: str, where: str, name: str, spec: Any, chosen: dict,
                  section: str | None = None) -> None:
        found = self._lookup(layer, where, name, section)
        if found is None:
            return
        section, setting = found
        param = Param(layer, section, name, ())
        if spec is False:
            chosen[param.key] = None
            return
        values = self.values(where, setting, spec)
        if values is None:
            return
        slot: list[str] = []                   # the runtime's verdicts arrive later, in this place
        self.errors.append(slot)
        self.pending.append((slot, where, section, setting, values))
        if setting.fs is not None and self.fs not in setting.fs:
            self.notes.append(f"{name} left out: it matters on {', '.join(setting.fs)} only, and this is "
                              f"{self.fs}")
            chosen[param.key] = None
            return
        chosen[param.key] = make_param(self.schema, layer, section, setting, values)

    def values(self, where: str, setting: Setting, spec: Any) -> list | None:
        if isinstance(spec, dict):
            extra = sorted(set(spec) - {"pow2", "values"})
            if extra or len(spec) != 1:
                what = f"unknown key {extra[0]}" if extra else "needs exactly one of pow2, values"
                self.error(where, f"{what} (expected {{pow2 = [lo, hi]}} or {{values = [...]}})")
                return None
            if "pow2" in spec:
                return self.pow2(f"{where}.pow2", setting, spec["pow2"])
            spec, where = spec["values"], f"{where}.values"
        if not isinstance(spec, list):
            self.error(where, f"{_SPEC}, got {_type(spec)}")
            return None
        if not spec:
            self.error(where, "empty list of values")
            return None
        out: list = []
        structured = setting.type in ("list", "rules")        # values are arrays or tables themselves
        for v in spec:
            if not isinstance(v, (str, int, float, bool, list, dict)) or (isinstance(v, (list, dict))
                                                                         and not structured):
                self.error(where, f"values must be strings, numbers or booleans, got {_type(v)}")
                return None
            if isinstance(v, str) and v in UNSET_WORDS and v not in setting.values:   # hdf5 alloc_time has "default"
                continue
            if v not in out:
                out.append(v)
        return out

    def pow2(self, where: str, setting: Setting, rng: Any) -> list | None:
        if setting.type != "integer":
            self.error(where, f"{setting.name} is not an integer setting (give a list of values)")
            return None
        if not isinstance(rng, list) or len(rng) != 2:
            got = _type(rng) if not isinstance(rng, list) else f"{len(rng)} items"
            self.error(where, f"expected [lo, hi], got {got}")
            return None
        lo, hi = rng
        if not is_pow2(lo):
            self.error(where, f"lo must be a power of two >= 1, got {_show(lo)}")
            return None
        if hi == NPROCS:
            return pow2_values(lo, self.nprocs, include_hi=True) or [lo]
        if not is_pow2(hi):
            self.error(where, f'hi must be a power of two or "nprocs", got {_show(hi)}')
            return None
        if lo > hi:
            self.error(where, f"lo {lo} is greater than hi {hi}")
            return None
        return pow2_values(lo, hi)

    def check_values(self) -> None:
        """Every value of the document through the runtime's validator, in one run of it."""
        docs = [{"version": self.schema.config_version, "defaults": {section: {setting.name: v}}}
                for _, _, section, setting, values in self.pending for v in values]
        verdicts = iter(validate_many(docs, "space", self.schema))
        for slot, where, section, setting, values in self.pending:
            for v in values:
                problems = next(verdicts)
                if problems:
                    detail = problems[0].split(f"defaults.{section}.{setting.name}: ", 1)[-1]
                    slot.append(_message(self.filename, where, f"value {_show(v)} rejected by the runtime: {detail}"))


def parse_space(doc: dict, filename: str, *, fs: str = "local", nprocs: int = 1,
                schema: Schema | None = None) -> Space:
    """The space a parsed TOML document describes; SpaceError with every problem otherwise."""
    if fs not in FILE_SYSTEMS:
        raise ValueError(f"unknown file system {fs!r}")
    return _Parser(filename, schema or load_schema(), fs, nprocs).document(doc)


def load_space(path: str | Path, *, fs: str = "local", nprocs: int = 1, schema: Schema | None = None) -> Space:
    """The space in the TOML file at `path` (see the module's documentation)."""
    filename = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise SpaceError([_message(filename, "", f"cannot read: {e.strerror}")]) from None
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise SpaceError([_message(filename, "", "invalid TOML (not UTF-8)")]) from None
    except tomllib.TOMLDecodeError as e:
        raise SpaceError([_message(filename, "", f"invalid TOML ({e})")]) from None
    return parse_space(doc, filename, fs=fs, nprocs=nprocs, schema=schema)
