"""The built-in search spaces, derived from the "tune" entries of runtime/settings.json (one source of truth: a
runtime setting with a "tune" entry joins the built-in spaces with no change to the tuner).

A "tune" entry is {"values": [...]} or {"pow2": [lo, hi]}, where hi may be "nprocs" (the job's process count),
with "also": [...] for values outside the range (a throttle level's "auto");
"fs" lists the file systems where the setting matters. A setting is left out rather than tried when its "fs" does
not include the target's file system, or when its range collapses to a single value for this process count
(cb_nodes on one process).
"""
from __future__ import annotations

from ..settings import REQUIRES_UNSET, Schema, Setting, load_schema
from .layers import layer_of
from .space import UNSET, Param, Requirement, Space, pow2_values

__all__ = ["FILE_SYSTEMS", "NPROCS", "builtin_space", "tune_values", "tunable_settings", "make_param"]

FILE_SYSTEMS = ("local", "lustre", "gpfs", "cephfs")
NPROCS = "nprocs"          # the upper end of a pow2 range that means the job's process count


def tune_values(tune: dict, nprocs: int) -> list:
    """The values a "tune" entry stands for: its "values", or the powers of two of its "pow2" range (an upper end
    "nprocs" is the process count, itself included when it is not a power of two), then its "also" values."""
    also = list(tune.get("also", ()))
    if "values" in tune:
        return list(tune["values"]) + also
    lo, hi = tune["pow2"]
    if hi == NPROCS:
        return pow2_values(int(lo), int(nprocs), include_hi=True) + also
    return pow2_values(int(lo), int(hi)) + also


def tunable_settings(schema: Schema) -> dict[str, dict[str, tuple[str, Setting]]]:
    """layer -> {setting name -> (section, setting)} for every typed setting (with or without a "tune" entry)."""
    out: dict[str, dict[str, tuple[str, Setting]]] = {}
    for section, setting in schema.all_settings():
        layer = layer_of(section, setting.name)
        if layer is not None:
            out.setdefault(layer, {})[setting.name] = (section, setting)
    return out


def make_param(schema: Schema, layer: str, section: str, setting: Setting, values) -> Param:
    """The parameter of a setting with the given values, its requirements ("requires") and default from the
    schema."""
    reqs = []
    for sec, name, vals in setting.requires:
        parent = schema.sections[sec].settings[name]
        unset = UNSET if parent.default is None else parent.default
        reqs.append(Requirement(sec, name, tuple(UNSET if v == REQUIRES_UNSET and isinstance(v, str) else v
                                                 for v in vals), unset))
    return Param(layer, section, setting.name, tuple(values), tuple(reqs), setting.default)


def builtin_space(fs: str, nprocs: int, schema: Schema | None = None) -> Space:
    """Every setting with a "tune" entry that matters on file system `fs` (one of FILE_SYSTEMS)."""
    if fs not in FILE_SYSTEMS:
        raise ValueError(f"unknown file system {fs!r} (expected one of: {', '.join(FILE_SYSTEMS)})")
    schema = schema or load_schema()
    params, notes = [], []
    for layer, settings in tunable_settings(schema).items():
        for name, (section, setting) in settings.items():
            if not setting.tune:
                continue
            if setting.fs is not None and fs not in setting.fs:
                notes.append(f"{name} left out: it matters on {', '.join(setting.fs)} only, and this is {fs}")
                continue
            values = tune_values(setting.tune, nprocs)
            if len(values) < 2 and NPROCS in (setting.tune.get("pow2") or ()):
                notes.append(f"{name} left out: a single value for {nprocs} process{'es' if nprocs > 1 else ''}")
                continue
            params.append(make_param(schema, layer, section, setting, values))
    return Space(tuple(params), tuple(notes))
