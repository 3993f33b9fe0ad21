"""What `iotame info` reports: where the runtime's parts are and where they were found (paths.locate), the MPI
and HDF5 versions, the Python version, and which machine profile the runtime would use for a file in a directory
(calibrate/discover.py)."""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from . import __version__
from .calibrate.basis import model_basis
from .calibrate.discover import discovery_report
from .paths import (ENV_CONFIG_TOOL, ENV_KERNEL, ENV_LIB, ENV_SETTINGS, checkout_root, config_tool_path,
                    kernel_path, lib_path, locate, settings_path)

__all__ = ["gather_info", "mpi_info", "hdf5_info"]


def _output(argv: list[str]) -> str | None:
    """stdout+stderr of a short version query, or None when the program is missing or fails."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (p.stdout or "") + (p.stderr or "")


def parse_mpi_version(text: str) -> dict:
    """{"implementation", "version"} from `mpichversion` or `mpiexec --version` output (MPICH, Open MPI)."""
    m = re.search(r"MPICH Version:\s*(\S+)", text)
    if m:
        return {"implementation": "MPICH", "version": m.group(1)}
    m = re.search(r"\((?:Open MPI|OpenRTE)\)\s*(\S+)", text)
    if m:
        return {"implementation": "Open MPI", "version": m.group(1)}
    m = re.search(r"HYDRA build details:.*?Version:\s*(\S+)", text, re.S)
    if m:
        return {"implementation": "MPICH", "version": m.group(1)}
    m = re.search(r"Intel\(R\) MPI Library.*?Version\s+(\S+)", text)
    if m:
        return {"implementation": "Intel MPI", "version": m.group(1)}
    return {"implementation": None, "version": None}


@lru_cache(maxsize=None)
def _mpi_info() -> tuple:
    mpiexec = shutil.which("mpiexec")
    for argv in (["mpichversion"], ["mpiexec", "--version"]):
        text = _output(argv)
        if text:
            found = parse_mpi_version(text)
            if found["implementation"]:
                return mpiexec, found["implementation"], found["version"], " ".join(argv)
    return mpiexec, None, None, None


def mpi_info() -> dict:
    """{"mpiexec": path or None, "implementation": "MPICH"/"Open MPI"/None, "version", "source"} (cached)."""
    mpiexec, impl, version, source = _mpi_info()
    return {"mpiexec": mpiexec, "implementation": impl, "version": version, "source": source}


def hdf5_info() -> dict:
    """{"version", "source"}: from the parallel compiler wrapper's -showconfig, else pkg-config."""
    for argv in (["h5pcc", "-showconfig"], ["h5cc", "-showconfig"]):
        text = _output(argv)
        m = re.search(r"HDF5 Version:\s*(\S+)", text or "")
        if m:
            return {"version": m.group(1), "source": " ".join(argv)}
    for module in ("hdf5-mpich", "hdf5-openmpi", "hdf5-mpi", "hdf5"):
        text = _output(["pkg-config", "--modversion", module])
        if text and re.match(r"\d", text.strip()):
            return {"version": text.strip(), "source": f"pkg-config {module}"}
    return {"version": None, "source": None}


def _part(path, env: str, found_by: str) -> dict:
    """A part's path, whether it exists and where it came from: the variable naming it, else how locate() found
    the runtime."""
    return {"path": str(path), "exists": path.is_file(), "from": env if os.environ.get(env) else found_by}


def gather_info(profile_dir: str | os.PathLike | None = None, knowledge: str | os.PathLike | None = None) -> dict:
    """Everything `iotame info --json` prints; "profile" is for a file in `profile_dir` (the current directory when
    None), with what its predictions rest on ("basis": its fit, and the corrections the knowledge file
    `knowledge` keeps of it)."""
    runtime = locate()
    root = checkout_root()
    return {
        "iotame_version": __version__,
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "package": str(Path(__file__).resolve().parent),
        "checkout": str(root) if root else None,
        "runtime": {"source": runtime.source, "prefix": str(runtime.prefix) if runtime.prefix else None},
        "libiotame": _part(lib_path(), ENV_LIB, runtime.source),
        "kernel": _part(kernel_path(), ENV_KERNEL, runtime.source),
        "config_tool": _part(config_tool_path(), ENV_CONFIG_TOOL, runtime.source),
        "settings": _part(settings_path(), ENV_SETTINGS, runtime.source),
        "mpi": mpi_info(),
        "hdf5": hdf5_info(),
        "profile": _with_basis(discovery_report(Path(profile_dir) if profile_dir is not None else Path.cwd()),
                               knowledge),
    }


def _with_basis(found: dict, knowledge: str | os.PathLike | None) -> dict:
    """The discovery report with the used profile's basis (calibrate/basis.py)."""
    found["basis"] = model_basis(found["used"], knowledge) if found["used"] else None
    return found
