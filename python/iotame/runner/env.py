"""The environment that puts a job under the runtime: LD_PRELOAD, IOTAME_CONFIG, IOTAME_STATS."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

__all__ = ["runtime_env", "RUNTIME_VARS", "ENV_CONFIG", "ENV_STATS", "slurm_export"]

ENV_CONFIG = "IOTAME_CONFIG"
ENV_STATS = "IOTAME_STATS"
# Variables a launcher must forward to the ranks.
RUNTIME_VARS = ("LD_PRELOAD", ENV_CONFIG, ENV_STATS)
# srun's --export default; `sbatch --export=NONE` (or a list of names) sets it inside the job.
ENV_SLURM_EXPORT = "SLURM_EXPORT_ENV"


def slurm_export(value: str, names: list[str]) -> str:
    """SLURM_EXPORT_ENV with `names` added, so that srun passes them to the ranks: ALL passes them already; NONE
    (NIL) or a list of names would keep them out."""
    items = [i for i in value.split(",") if i.strip()]
    if any(i.strip().upper() == "ALL" for i in items):
        return value
    items = [i for i in items if i.strip().upper() not in ("NONE", "NIL")]
    return ",".join(items + [n for n in names if n not in items])


def runtime_env(lib: str | Path | None, config: str | Path | None = None, stats: str | Path | None = None,
                base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of `base` (default os.environ) with `lib` prepended to LD_PRELOAD, and IOTAME_CONFIG (absolute)
    and IOTAME_STATS (absolute) set when given, removed when not (so the caller's own settings do not leak in).
    With `lib`, a SLURM_EXPORT_ENV that would keep LD_PRELOAD and IOTAME_* from srun's ranks gets them added."""
    env = dict(os.environ if base is None else base)
    if lib is not None:
        old = env.get("LD_PRELOAD", "").strip()
        env["LD_PRELOAD"] = f"{lib}:{old}" if old else str(lib)
    for name, value in ((ENV_CONFIG, config), (ENV_STATS, stats)):
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(Path(value).resolve())
    if lib is not None and env.get(ENV_SLURM_EXPORT, "").strip():
        env[ENV_SLURM_EXPORT] = slurm_export(env[ENV_SLURM_EXPORT],
                                             [n for n in env if n == "LD_PRELOAD" or n.startswith("IOTAME_")])
    return env
