"""Lazy re-exports for a package's __init__: `from pkg import name` imports only the submodule that defines name,
so that a command that needs one small part of a package (iotame info needs calibrate.discover) does not pay for
the rest (optuna, matplotlib). Contract: same names, same objects, as the eager `from .sub import name` lines."""
from __future__ import annotations

import importlib
from typing import Callable

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """(__getattr__, __dir__) for `package`, whose exported names come from the submodules `where` maps them to
    (name -> submodule without the dot). A name is imported on first use and cached in the package's globals."""
    def getattr_(name: str) -> object:
        sub = where.get(name)
        if sub is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{sub}"), name)
        vars(importlib.import_module(package))[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(vars(importlib.import_module(package))) | set(where))

    return getattr_, dir_
