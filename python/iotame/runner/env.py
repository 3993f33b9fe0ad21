"""The environment that puts a job under the runtime: LD_PRELOAD, IOTAME_CONFIG, IOTAME_STATS."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

__all__ = ["runtime_env", "RUNTIME_VARS", "ENV_CONFIG", "ENV_STATS"]

ENV_CONFIG = "IOTAME_CONFIG"
ENV_STATS = "IOTAME_STATS"
# Variables a launcher must forward to the ranks.
RUNTIME_VARS = ("LD_PRELOAD", ENV_CONFIG, ENV_STATS)


def runtime_env(lib: str | Path | None, config: str | Path | None = None, stats: str | Path | None = None,
                base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of `base` (default os.environ) with `lib` prepended to LD_PRELOAD, and IOTAME_CONFIG (absolute)
    and IOTAME_STATS (absolute) set when given, removed when not (so the caller's own settings do not leak in)."""
    env = dict(os.environ if base is None else base)
    if lib is not None:
        old = env.get("LD_PRELOAD", "").strip()
        env["LD_PRELOAD"] = f"{lib}:{old}" if old else str(lib)
    for name, value in ((ENV_CONFIG, config), (ENV_STATS, stats)):
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(Path(value).resolve())
    return env
