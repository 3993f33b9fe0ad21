"""Where the parts of iotame are: the runtime library, the kernel program, the configuration validator and the
settings description.

The Python package runs either from a checkout (python/iotame/ of the repository, built by make setup into
build/) or installed with pip anywhere, beside a runtime installed by `cmake --install build --prefix P`. The
runtime is looked for, first found wins:

    1. IOTAME_LIB, IOTAME_KERNEL, IOTAME_CONFIG_TOOL, IOTAME_SETTINGS: one part each, given explicitly
    2. IOTAME_PREFIX: an install prefix P (P/lib*/libiotame.so, P/bin, P/share/iotame/settings.json)
    3. the checkout the package runs from, once built (build/runtime, build/kernels, runtime/settings.json)
    4. the prefix the package was built with (IOTAME_PREFIX set at `pip install` time, kept in _built.py)
    5. the Python environment's own prefix (sys.prefix), where Spack and module installs put both
    6. pkg-config's iotame.pc (PKG_CONFIG_PATH)

`locate()` says which one was used (`iotame info`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import MissingFileError

__all__ = ["Runtime", "locate", "repo_root", "checkout_root", "lib_path", "kernel_path", "config_tool_path",
           "settings_path", "require_lib", "require_kernel", "require_config_tool", "require_settings", "ENV_LIB",
           "ENV_KERNEL", "ENV_CONFIG_TOOL", "ENV_SETTINGS", "ENV_PREFIX"]

ENV_LIB = "IOTAME_LIB"
ENV_KERNEL = "IOTAME_KERNEL"
ENV_CONFIG_TOOL = "IOTAME_CONFIG_TOOL"
ENV_SETTINGS = "IOTAME_SETTINGS"
ENV_PREFIX = "IOTAME_PREFIX"

_HINT = f"run make setup in a checkout, or install the runtime (cmake --install) and set {ENV_PREFIX}"


@dataclass(frozen=True)
class Runtime:
    """The runtime's parts (each may be missing on disk) and where they were found: `source` is one of "checkout",
    "IOTAME_PREFIX", "built-in prefix", "python prefix", "pkg-config", or "not found" (then the paths are where a
    checkout build would put them)."""

    lib: Path
    kernel: Path
    config_tool: Path
    settings: Path
    source: str
    prefix: Path | None = None


def repo_root() -> Path:
    """The directory two levels above the package: the repository root when the package runs from a checkout."""
    return Path(__file__).resolve().parent.parent.parent


def checkout_root() -> Path | None:
    """The repository root when the package runs from a checkout, else None."""
    root = repo_root()
    return root if (root / "runtime" / "settings.json").is_file() and (root / "python").is_dir() else None


def _in_checkout(root: Path, source: str = "checkout") -> Runtime:
    return Runtime(root / "build" / "runtime" / "libiotame.so", root / "build" / "kernels" / "iotame-kernel",
                   root / "build" / "runtime" / "iotame-config", root / "runtime" / "settings.json", source)


def _in_prefix(prefix: Path, source: str) -> Runtime:
    """The parts under an install prefix: libiotame.so in the first of lib, lib64, lib/<triplet> that has it."""
    libs = [prefix / d / "libiotame.so" for d in ("lib", "lib64")] + sorted(prefix.glob("lib/*/libiotame.so"))
    lib = next((p for p in libs if p.is_file()), libs[0])
    return Runtime(lib, prefix / "bin" / "iotame-kernel", prefix / "bin" / "iotame-config",
                   prefix / "share" / "iotame" / "settings.json", source, prefix)


def _built_prefix() -> str | None:
    try:
        from ._built import PREFIX       # written when the package was built with IOTAME_PREFIX set (setup.py)
    except ImportError:
        return None
    return PREFIX or None


def _pkg_config_prefix() -> str | None:
    if shutil.which("pkg-config") is None:
        return None
    try:
        p = subprocess.run(["pkg-config", "--variable=prefix", "iotame"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


def locate() -> Runtime:
    """The runtime by the order in the module's description. An explicit IOTAME_PREFIX is kept even when it holds
    nothing, so that the error names it."""
    env = os.environ.get(ENV_PREFIX)
    if env:
        return _in_prefix(Path(env).resolve(), ENV_PREFIX)
    root = checkout_root()
    if root is not None and _in_checkout(root).lib.is_file():
        return _in_checkout(root)
    for source, prefix in (("built-in prefix", _built_prefix), ("python prefix", lambda: sys.prefix),
                           ("pkg-config", _pkg_config_prefix)):
        where = prefix()
        found = _in_prefix(Path(where).resolve(), source) if where else None
        if found is not None and found.lib.is_file():
            return found
    return _in_checkout(root or repo_root(), "checkout" if root else "not found")


def _part(env: str, found: Path) -> Path:
    given = os.environ.get(env)
    return Path(given).resolve() if given else found


def lib_path() -> Path:
    """libiotame.so ($IOTAME_LIB, else locate()); it may not exist."""
    return _part(ENV_LIB, locate().lib)


def kernel_path() -> Path:
    """iotame-kernel ($IOTAME_KERNEL, else locate()); it may not exist."""
    return _part(ENV_KERNEL, locate().kernel)


def config_tool_path() -> Path:
    """iotame-config, the runtime's configuration validator as a program ($IOTAME_CONFIG_TOOL, else locate())."""
    return _part(ENV_CONFIG_TOOL, locate().config_tool)


def settings_path() -> Path:
    """settings.json, the one description of every runtime setting ($IOTAME_SETTINGS, else locate())."""
    return _part(ENV_SETTINGS, locate().settings)


def _require(path: Path, what: str, env: str) -> Path:
    if path.is_file():
        return path
    raise MissingFileError(f"{what} not found at {path} ({_HINT}, or set {env})")


def require_lib() -> Path:
    """lib_path(), or MissingFileError telling how to get it."""
    return _require(lib_path(), "libiotame.so", ENV_LIB)


def require_kernel() -> Path:
    """kernel_path(), or MissingFileError telling how to get it."""
    return _require(kernel_path(), "iotame-kernel", ENV_KERNEL)


def require_config_tool() -> Path:
    """config_tool_path(), or MissingFileError telling how to get it."""
    return _require(config_tool_path(), "iotame-config (the configuration validator)", ENV_CONFIG_TOOL)


def require_settings() -> Path:
    """settings_path(), or MissingFileError."""
    return _require(settings_path(), "settings.json (the runtime's settings)", ENV_SETTINGS)
