"""`iotame calibrate --config CFG.json`: calibrate emulated storage (docs/emulate.md) instead of the real one. fio
runs with libiotame.so preloaded (and libiotame-start.so, which starts MPI and so the runtime in a program that never
calls MPI_Init) under a configuration derived from CFG's `defaults.emulate`: one target, a state file of its own,
and `posix.all_files`, so that every request fio makes waits as on ONE emulated target. The profile's `filesystem`
then describes CFG's layout (its targets and stripe unit), and `emulated` records the section."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..config import load_config, save_config
from ..errors import ConfigError, MissingFileError
from ..paths import lib_path

__all__ = ["START_LIB", "DEFAULT_TARGET_UNIT", "emulate_section", "derived_config", "emulated_layout", "state_dir",
           "EmulatedStorage"]

START_LIB = "libiotame-start.so"
DEFAULT_TARGET_UNIT = 1048576     # emulate.target_unit's default (runtime/settings.json)


def emulate_section(path: str | os.PathLike) -> dict:
    """CFG's `defaults.emulate`, the configuration validated by the runtime's validator. ConfigError naming the
    file and the key when the section is missing or emulates nothing."""
    config = load_config(path)
    section = (config.get("defaults") or {}).get("emulate")
    if not isinstance(section, dict):
        raise ConfigError([f"iotame: calibrate --config {path}: defaults.emulate: expected an object (the emulated "
                           f"storage, docs/emulate.md, e.g. {{\"device\": \"disk\"}}), missing"])
    if section.get("device", "none") == "none":
        got = '"none"' if "device" in section else "missing (the default, none, emulates nothing)"
        raise ConfigError([f"iotame: calibrate --config {path}: defaults.emulate.device: expected \"disk\" or "
                           f"\"raid5\" (an emulated device to calibrate), got {got}"])
    return section


def derived_config(section: dict, state: str | os.PathLike) -> dict:
    """The configuration fio runs under: the section with one target and its own state file, every regular file
    recorded (fio opens its files itself, not through MPI-IO)."""
    emulate = dict(section, targets=1, state=str(state))
    return {"version": 1, "defaults": {"emulate": emulate, "posix": {"all_files": True}}}


def emulated_layout(section: dict, source: str) -> dict:
    """The `filesystem` keys the emulated layout replaces: the section's targets and stripe unit."""
    return {"targets": int(section.get("targets", 1)),
            "stripe_unit": int(section.get("target_unit", DEFAULT_TARGET_UNIT)),
            "layout_from": f"emulate ({source})"}


def state_dir() -> Path:
    """Where the emulated device's state and configuration go: /dev/shm (the state is a mapped file), else /tmp."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


class EmulatedStorage:
    """The environment fio runs in under the emulation of `section` (an emulate section, from `source`: a
    configuration's path, or a profile's `emulated`), with its derived configuration and state file in `workdir`
    (removed by cleanup())."""

    def __init__(self, section: dict, workdir: str | os.PathLike, source: str):
        self.section, self.source = section, source
        lib = lib_path()
        start = lib.parent / START_LIB
        for part in (lib, start):
            if not part.is_file():
                raise MissingFileError(f"calibrate: emulated storage needs {part}, which is not built (make setup, "
                                       f"or cmake --build build)")
        self.workdir = Path(workdir)
        self.state = self.workdir / f"iotame-calibrate-{os.getpid()}.state"
        self.config = self.workdir / f"iotame-calibrate-{os.getpid()}.json"
        save_config(derived_config(self.section, self.state), self.config)
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"},
                    "LD_PRELOAD": f"{lib}:{start}", "IOTAME_CONFIG": str(self.config)}

    @classmethod
    def from_config(cls, config_path: str | os.PathLike, workdir: str | os.PathLike) -> "EmulatedStorage":
        """The emulation of a configuration's defaults.emulate (emulate_section())."""
        return cls(emulate_section(config_path), workdir, str(Path(config_path).resolve()))

    def layout(self) -> dict:
        return emulated_layout(self.section, self.source)

    def cleanup(self) -> None:
        for path in (self.state, self.config):
            path.unlink(missing_ok=True)
