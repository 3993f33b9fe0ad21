"""The runtime configuration (IOTAME_CONFIG): reading and writing it, validated by the runtime's own validator.

There is one validator, the runtime's (runtime/src/core/config.c, the code libiotame.so runs in MPI_Init). Python
runs it through the `iotame-config` program built beside libiotame.so (paths.config_tool_path(); see
docs/design/config-validator.md), so `iotame config check`, `iotame run/bench --config` and the tuner accept
exactly what the runtime accepts, and every problem reads as the runtime prints it:

    iotame: config FILE: KEYPATH: message

Many documents are validated by one run of the program (validate_many), which is what the tuner's space check
does with its candidate values.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from .errors import ConfigError, IotameError
from .paths import require_config_tool, settings_path
from .settings import Schema

__all__ = ["validate", "validate_many", "load_config", "check_config", "check_configs", "save_config",
           "format_error", "render_value", "run_config_tool"]


def format_error(filename: str, where: str, message: str) -> str:
    """`iotame: config FILE: WHERE: message` (WHERE empty for the whole file), the runtime's layout; the tuner's
    space files use it for their own messages."""
    return f"iotame: config {filename}: {where}: {message}" if where else f"iotame: config {filename}: {message}"


def render_value(value: Any) -> str:
    """A value in a Python-made message (space files): scalars as JSON, containers by their JSON type name."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return json.dumps(value, ensure_ascii=False)


# --- running the runtime's validator --------------------------------------------------------------------------

_TEXT = json.JSONEncoder(ensure_ascii=False)     # a configuration as the runtime would read it from a file
_REQUEST = json.JSONEncoder()                    # ASCII: one request per line, whatever the text holds

@contextmanager
def _settings_args(schema: Schema | None) -> Iterator[list[str]]:
    """`--settings FILE` when `schema` is not this checkout's runtime/settings.json (which the program embeds)."""
    if schema is None or (schema.raw is None and schema.path is None) or schema.path == settings_path():
        yield []
    elif schema.raw is None:
        yield ["--settings", str(schema.path)]
    else:
        fd, name = tempfile.mkstemp(prefix="iotame-settings-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(schema.raw, f)
            yield ["--settings", name]
        finally:
            os.unlink(name)


def run_config_tool(args: list[str], data: str | None = None) -> subprocess.CompletedProcess:
    """`iotame-config ARGS…` with `data` on its standard input, its output as text. MissingFileError when the
    program is not built, IotameError when it cannot be run."""
    tool = require_config_tool()                 # MissingFileError: "... (run make setup, ...)"
    try:
        return subprocess.run([str(tool), *args], input=data, capture_output=True, text=True, encoding="utf-8",
                              errors="replace")
    except OSError as e:
        raise IotameError(f"cannot run {tool}: {e.strerror}") from None


def _run(requests: list[dict], schema: Schema | None) -> list[list[str]]:
    """The errors of each request ({"name", "text"} or {"name", "path"}), from one run of `iotame-config batch`."""
    if not requests:
        return []
    tool = require_config_tool()
    data = "\n".join(map(_REQUEST.encode, requests)) + "\n"
    with _settings_args(schema) as extra:
        p = run_config_tool(["batch", *extra], data)
    lines = p.stdout.splitlines()
    if p.returncode != 0 or len(lines) != len(requests):
        why = p.stderr.strip() or f"exit status {p.returncode}, {len(lines)} answers to {len(requests)} requests"
        raise IotameError(f"{tool} failed: {why}")
    out = []
    for line in lines:
        answer = json.loads(line)
        if "request_error" in answer:
            raise IotameError(f"{tool}: {answer['request_error']}")
        out.append(answer["errors"])
    return out


def validate_many(objs: Iterable[Any], filename: str, schema: Schema | None = None) -> list[list[str]]:
    """The errors of each parsed configuration in `objs` (named `filename` in messages), in one run of the
    validator."""
    name = str(filename)
    return _run([{"name": name, "text": _TEXT.encode(o)} for o in objs], schema)


def validate(obj: Any, filename: str, schema: Schema | None = None) -> list[str]:
    """Every error in a parsed configuration, one line each as the runtime prints it (empty list: valid)."""
    return validate_many([obj], filename, schema)[0]


def check_configs(paths: Iterable[str | Path], schema: Schema | None = None) -> list[list[str]]:
    """The errors of each configuration file (unreadable, invalid JSON, or invalid), in one run of the
    validator."""
    return _run([{"name": str(p), "path": str(p)} for p in paths], schema)


def check_config(path: str | Path, schema: Schema | None = None) -> list[str]:
    """Every error of the configuration file at `path`; [] if valid."""
    return check_configs([path], schema)[0]


def load_config(path: str | Path, schema: Schema | None = None) -> dict:
    """The parsed, valid configuration at `path`; raises ConfigError holding every error otherwise."""
    errors = check_config(path, schema)
    if errors:
        raise ConfigError(errors)
    return json.loads(Path(path).read_bytes())   # the runtime accepted it: plain JSON, UTF-8


def save_config(obj: dict, path: str | Path, schema: Schema | None = None) -> Path:
    """Validates `obj` and writes it to `path` as JSON (what the tuner does with a trial configuration)."""
    errors = validate(obj, str(path), schema)
    if errors:
        raise ConfigError(errors)
    path = Path(path)
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
