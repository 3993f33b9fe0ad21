"""Reading a Darshan log: its header checked here, its records read by pydarshan in a child process (_worker.py).

pydarshan's C library prints "Error: ..." to stderr and returns empty modules on a truncated log, and can abort
the process (darshan_log_close's assertion); so the records are read in a child and any message it prints, or any
failure, makes the log unreadable: a clear LogError naming the file, never a traceback or a silent empty result.
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LogError

__all__ = ["DARSHAN_MAGIC", "HEADER_BYTES", "LOAD_TIMEOUT", "LogJob", "DarshanLog", "check_header", "load_log"]

DARSHAN_MAGIC = 6567223        # darshan-log-format.h DARSHAN_MAGIC_NR, after the 8-byte version string
HEADER_BYTES = 16              # version string (8 bytes) and the magic number (int64)
MAP_OFFSET = 24                # the name map's {offset, length} (uint64 each) after comp_type and partial_flag
MAPS = 17                      # the name map and 16 module maps (DARSHAN_MAX_MODS of the 3.x formats; a format
                               # with more modules starts with these, so their end still bounds the log's size)
LOAD_TIMEOUT = 600.0           # seconds the child may take: logs of millions of records take minutes


@dataclass
class LogJob:
    """The job as the log's header has it: processes, run time (s), job id, the log's format and Darshan's version."""

    nprocs: int
    run_time: float
    jobid: int
    log_ver: str
    lib_ver: str


@dataclass
class DarshanLog:
    """A loaded log as advise reads it: the job, the executable, the modules the log holds, the records of the
    modules advise reads (as _worker.py prints them: counters by Darshan's names, a LUSTRE record's layout) and the
    names of the records' files by record id."""

    job: LogJob
    exe: str | None
    modules: list[str]
    records: dict[str, list[dict[str, Any]]]
    names: dict[str, str]

    @classmethod
    def of(cls, data: dict[str, Any]) -> DarshanLog:
        """The typed log of load_log's document (which replay reads as it is)."""
        j = data["job"]
        return cls(LogJob(int(j.get("nprocs") or 0), float(j.get("run_time") or 0.0), j["jobid"], j["log_ver"],
                          j["lib_ver"]),
                   data.get("exe"), data.get("modules", []), data.get("records", {}), data.get("names", {}))


def check_header(path: Path) -> str:
    """The log's format version ("3.21"); LogError when `path` is not a Darshan log of a version 3 format (the
    darshan library reads 3.00 and later; 2.x logs need darshan-convert of an old darshan-util), or is shorter
    than the regions its header maps (a truncated log: the library would read what is left without a word)."""
    try:
        with open(path, "rb") as f:
            head = f.read(MAP_OFFSET + 16 * MAPS)
        size = path.stat().st_size
    except OSError as e:
        raise LogError(f"darshan log {path}: cannot read: {e.strerror or e}") from None
    if len(head) < HEADER_BYTES:
        raise LogError(f"darshan log {path}: not a Darshan log: {len(head)} bytes, shorter than a log's header")
    magic_le, = struct.unpack("<q", head[8:16])
    magic_be, = struct.unpack(">q", head[8:16])
    if DARSHAN_MAGIC not in (magic_le, magic_be):
        raise LogError(f"darshan log {path}: not a Darshan log: expected Darshan's magic number {DARSHAN_MAGIC} "
                       f"after the version string")
    version = head[:8].split(b"\0", 1)[0].decode("ascii", "replace")
    if not version.startswith("3."):
        raise LogError(f"darshan log {path}: format version {version!r}: the darshan library reads version 3 "
                       f"logs (3.00 and later); convert older logs with darshan-convert")
    order = "<" if magic_le == DARSHAN_MAGIC else ">"
    if len(head) < MAP_OFFSET + 16 * MAPS:
        raise LogError(f"darshan log {path}: truncated: {size} bytes, shorter than a log's header")
    maps = [struct.unpack(order + "QQ", head[MAP_OFFSET + 16 * i: MAP_OFFSET + 16 * (i + 1)]) for i in range(MAPS)]
    end = max(off + length for off, length in maps)
    if end > size:
        raise LogError(f"darshan log {path}: truncated: its header maps {end} bytes, the file has {size}")
    return version


def _load_messages(stderr: str) -> str:
    """The C library's messages, one line ("Error: a; Error: b"), the worker's traceback reduced to its last line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(("Error", "python:", "darshan"))]
    picked = errors or lines[-1:]
    return "; ".join(dict.fromkeys(picked))


def load_log(path: str | os.PathLike, timeout: float = LOAD_TIMEOUT, dxt: bool = False) -> dict:
    """The log's job data, module list, records (POSIX, MPI-IO, H5F, H5D, LUSTRE; with dxt also DXT_POSIX and
    DXT_MPIIO) and names, as _worker.py prints them (advise types it with DarshanLog.of). LogError when the log
    cannot be read whole."""
    path = Path(path)
    if not path.is_file():
        raise LogError(f"darshan log {path}: no such file" if not path.exists() else
                       f"darshan log {path}: not a regular file")
    version = check_header(path)
    cmd = [sys.executable, "-m", "iotame.advise._worker", str(path), *(["--dxt"] if dxt else [])]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace",
                           env={**os.environ, "PYTHONPATH": _load_pythonpath()})
    except subprocess.TimeoutExpired:
        raise LogError(f"darshan log {path}: not read within {timeout:.0f} s") from None
    messages = _load_messages(p.stderr)
    if p.returncode != 0 or messages.startswith(("Error", "python:", "darshan")):
        why = messages or f"the reader ended with status {p.returncode}"
        if "ModuleNotFoundError" in why and "darshan" in why:
            raise LogError(f"darshan log {path}: the Python package darshan is not installed (pip install "
                           f"darshan; make setup installs it)")
        if "incompatible" in why or "expected version" in why:
            raise LogError(f"darshan log {path}: format version {version}, which the installed darshan library "
                           f"cannot read: {why}")
        raise LogError(f"darshan log {path} (format {version}): damaged or truncated, the darshan library "
                       f"could not read it whole: {why}")
    try:
        data = json.loads(p.stdout)
    except ValueError:
        raise LogError(f"darshan log {path}: the reader's output is not JSON") from None
    data["path"] = str(path)
    return data


def _load_pythonpath() -> str:
    """The child imports this very package (the checkout's, not another installed one)."""
    here = str(Path(__file__).resolve().parents[2])
    rest = os.environ.get("PYTHONPATH")
    return here + (os.pathsep + rest if rest else "")
