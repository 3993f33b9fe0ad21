"""One module per command of the CLI; each has NAME, add_parser(subparsers) and run(args) -> exit code.
The modules are imported only when needed (`iotame info` imports the info command alone), so that a quick command
stays quick: command_modules(argv) says which."""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Sequence

# In the order `iotame --help` lists them.
COMMAND_NAMES = ("info", "config", "run", "stats", "bench", "tune", "report", "calibrate", "advise", "replay")

__all__ = ["COMMAND_NAMES", "command_module", "command_modules", "all_commands"]


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


def all_commands() -> tuple[ModuleType, ...]:
    return tuple(command_module(n) for n in COMMAND_NAMES)


def command_modules(argv: Sequence[str]) -> tuple[ModuleType, ...]:
    """The command modules the parser needs for `argv`: the one its first word names; none for a bare
    `--version`; every one otherwise (`--help`, a usage error, an unknown command)."""
    word = next((a for a in argv if not a.startswith("-")), None)
    if word in COMMAND_NAMES:
        return (command_module(word),)
    if word is None and "--version" in argv and not {"-h", "--help"} & set(argv):
        return ()
    return all_commands()
