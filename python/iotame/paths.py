"""Where the parts of iotame are: the runtime library, the kernel program, the configuration validator and the
settings description.

The package lives in `python/iotame/` of the repository, so the repository root is two levels above this
directory. `IOTAME_LIB`, `IOTAME_KERNEL` and `IOTAME_CONFIG_TOOL` override the built files' locations.
"""
from __future__ import annotations

import os
from pathlib import Path

from .errors import MissingFileError

__all__ = ["repo_root", "lib_path", "kernel_path", "config_tool_path", "settings_path", "require_lib",
           "require_kernel", "require_config_tool", "require_settings", "ENV_LIB", "ENV_KERNEL",
           "ENV_CONFIG_TOOL"]

ENV_LIB = "IOTAME_LIB"
ENV_KERNEL = "IOTAME_KERNEL"
ENV_CONFIG_TOOL = "IOTAME_CONFIG_TOOL"

_HINT = "run make setup"


def repo_root() -> Path:
    """The repository root: two levels above the package directory."""
    return Path(__file__).resolve().parent.parent.parent


def lib_path() -> Path:
    """libiotame.so: $IOTAME_LIB, else build/runtime/libiotame.so (it may not exist)."""
    env = os.environ.get(ENV_LIB)
    return Path(env).resolve() if env else repo_root() / "build" / "runtime" / "libiotame.so"


def kernel_path() -> Path:
    """iotame-kernel: $IOTAME_KERNEL, else build/kernels/iotame-kernel (it may not exist)."""
    env = os.environ.get(ENV_KERNEL)
    return Path(env).resolve() if env else repo_root() / "build" / "kernels" / "iotame-kernel"


def config_tool_path() -> Path:
    """iotame-config, the runtime's configuration validator as a program: $IOTAME_CONFIG_TOOL, else
    build/runtime/iotame-config (it may not exist)."""
    env = os.environ.get(ENV_CONFIG_TOOL)
    return Path(env).resolve() if env else repo_root() / "build" / "runtime" / "iotame-config"


def settings_path() -> Path:
    """runtime/settings.json, the one description of every runtime setting."""
    return repo_root() / "runtime" / "settings.json"


def _require(path: Path, what: str, how: str) -> Path:
    if path.is_file():
        return path
    raise MissingFileError(f"{what} not found at {path} ({how})")


def require_lib() -> Path:
    """lib_path(), or MissingFileError telling how to build it."""
    return _require(lib_path(), "libiotame.so", f"{_HINT}, or set {ENV_LIB}")


def require_kernel() -> Path:
    """kernel_path(), or MissingFileError telling how to build it."""
    return _require(kernel_path(), "iotame-kernel", f"{_HINT}, or set {ENV_KERNEL}")


def require_config_tool() -> Path:
    """config_tool_path(), or MissingFileError telling how to build it."""
    return _require(config_tool_path(), "iotame-config (the configuration validator)",
                    f"{_HINT}, or set {ENV_CONFIG_TOOL}")


def require_settings() -> Path:
    """settings_path(), or MissingFileError."""
    return _require(settings_path(), "runtime/settings.json", "the package must run from an iotame checkout")
