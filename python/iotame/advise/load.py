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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LogError

__all__ = ["DARSHAN_MAGIC", "FORMAT_LAYOUTS", "HEADER_BYTES", "LOAD_TIMEOUT", "NPROCS_MAX", "HeaderLayout", "LogHeader",
           "LogJob", "DarshanLog", "check_header", "load_log"]

DARSHAN_MAGIC = 6567223        # darshan-log-format.h DARSHAN_MAGIC_NR, after the 8-byte version string
HEADER_BYTES = 16              # version string (8 bytes) and the magic number (int64)
LOAD_TIMEOUT = 600.0           # seconds the child may take: logs of millions of records take minutes
NPROCS_MAX = 2**31 - 1         # an MPI job's size is an int: a larger count in the job record is damage


@dataclass(frozen=True)
class HeaderLayout:
    """Where a log format keeps its partial flag (a bit per module id) and its maps ({offset, length} uint64 pairs:
    the name map, then one per module id), and the header's size (the job record follows it), as darshan-util's
    darshan-log-format.h defines the header of each format."""

    partial_at: int
    partial_bytes: int
    maps_at: int
    modules: int
    header_bytes: int


# Formats 3.00 to 3.21: comp_type, a 32-bit partial flag, 16 module maps and 16 module versions (uint32).
# Format 3.41 (Darshan 3.4.1 and later, 3.5 included): a 64-bit partial flag, 64 module maps and versions.
LAYOUT_16 = HeaderLayout(partial_at=20, partial_bytes=4, maps_at=24, modules=16, header_bytes=24 + 17 * 16 + 16 * 4)
LAYOUT_64 = HeaderLayout(partial_at=24, partial_bytes=8, maps_at=32, modules=64, header_bytes=32 + 65 * 16 + 64 * 4)
FORMAT_LAYOUTS = {"3.00": LAYOUT_16, "3.01": LAYOUT_16, "3.02": LAYOUT_16, "3.10": LAYOUT_16, "3.21": LAYOUT_16,
                  "3.41": LAYOUT_64}


@dataclass
class LogJob:
    """The job as the log's header has it: processes (0: unknown, the job record's value `nprocs_recorded` is
    impossible), run time (s), job id, the log's format and Darshan's version."""

    nprocs: int
    run_time: float
    jobid: int
    log_ver: str
    lib_ver: str
    nprocs_recorded: int = 0


@dataclass
class DarshanLog:
    """A loaded log as advise reads it: the job, the executable, the modules the log holds, the records of the
    modules advise reads (as _worker.py prints them: counters by Darshan's names, a LUSTRE record's layout), the
    names of the records' files by record id, the modules Darshan flagged partial, per file (record id) the partial
    modules its data may be short in, and notes on the log as read (load_log's document, /work/notes/contract49.md)."""

    job: LogJob
    exe: str | None
    modules: list[str]
    records: dict[str, list[dict[str, Any]]]
    names: dict[str, str]
    partial_modules: list[str] = field(default_factory=list)
    partial: dict[str, dict[str, bool]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, data: dict[str, Any]) -> DarshanLog:
        """The typed log of load_log's document (which replay reads as it is)."""
        j = data["job"]
        header = data.get("header") or {}
        return cls(LogJob(int(j.get("nprocs") or 0), float(j.get("run_time") or 0.0), j["jobid"], j["log_ver"],
                          j["lib_ver"], int(j.get("nprocs_recorded", j.get("nprocs") or 0))),
                   data.get("exe"), data.get("modules", []), data.get("records", {}), data.get("names", {}),
                   list(header.get("partial_modules", [])), dict(data.get("partial", {})),
                   list(header.get("notes", [])))


@dataclass
class LogHeader:
    """What the header says before the darshan library reads the log: the format, its layout (None: a format this
    module does not know, left to the library), the partial flag's bits, the file's size and the end of the regions
    the maps promise (0 when not known), and notes on what does not add up without making the log unreadable."""

    format: str
    layout: HeaderLayout | None
    partial_flag: int
    file_bytes: int
    mapped_bytes: int
    notes: list[str]

    def to_json(self) -> dict:
        return {"format": self.format, "header_bytes": self.layout.header_bytes if self.layout else None,
                "file_bytes": self.file_bytes, "mapped_bytes": self.mapped_bytes, "partial_flag": self.partial_flag,
                "notes": list(self.notes)}


def _header_read(path: Path) -> tuple[bytes, int]:
    try:
        with open(path, "rb") as f:
            head = f.read(LAYOUT_64.header_bytes)
        return head, path.stat().st_size
    except OSError as e:
        raise LogError(f"darshan log {path}: cannot read: {e.strerror or e}") from None


def _header_regions(path: Path, head: bytes, order: str, layout: HeaderLayout) -> list[tuple[int, int]]:
    """The non-empty regions the maps promise, (offset, length) sorted; LogError when they cannot be a log's: one
    inside the header, or two overlapping (a damaged header, which the library would read as garbage)."""
    regions = []
    for i in range(layout.modules + 1):
        off, length = struct.unpack_from(order + "QQ", head, layout.maps_at + 16 * i)
        if length:
            regions.append((off, length))
    regions.sort()
    if not regions or regions[0][0] <= layout.header_bytes:
        where = regions[0][0] if regions else "nothing"
        raise LogError(f"darshan log {path}: damaged header: format {head[:4].decode('ascii', 'replace')} puts its "
                       f"job record after a {layout.header_bytes}-byte header, the name map starts at {where}")
    for (o1, n1), (o2, _) in zip(regions, regions[1:]):
        if o1 + n1 > o2:
            raise LogError(f"darshan log {path}: damaged header: the region at byte {o1} ({n1} bytes) overlaps "
                           f"the one at byte {o2}")
    return regions


def check_header(path: Path) -> LogHeader:
    """The log's header as its format lays it out. LogError when `path` is not a Darshan log of a version 3 format
    (the darshan library reads 3.00 and later; 2.x logs need darshan-convert of an old darshan-util), when its maps
    cannot be a log's, or when the file is shorter than the regions they promise (a cut log: the library would read
    what is left without a word). A file longer than its regions is read, with a note."""
    head, size = _header_read(path)
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
    layout = FORMAT_LAYOUTS.get(version)
    if layout is None:      # a format this reader does not know: the library says whether it reads it
        return LogHeader(version, None, 0, size, 0, [])
    if len(head) < layout.header_bytes:
        raise LogError(f"darshan log {path}: truncated: {size} bytes, shorter than the {layout.header_bytes}-byte "
                       f"header of format {version}")
    order = "<" if magic_le == DARSHAN_MAGIC else ">"
    flag, = struct.unpack_from(order + ("I" if layout.partial_bytes == 4 else "Q"), head, layout.partial_at)
    regions = _header_regions(path, head, order, layout)
    end = max(off + length for off, length in regions)
    if end > size:
        raise LogError(f"darshan log {path}: truncated: its header (format {version}) maps {end} bytes, the file "
                       f"has {size}")
    notes = [] if end == size else [f"the file has {size - end} bytes after the last region its header maps "
                                    f"({end} bytes): appended to or damaged; read up to byte {end}"]
    gaps = sum(b - (a + n) for (a, n), (b, _) in zip(regions, regions[1:]))
    if gaps:
        notes.append(f"{gaps} bytes between the regions the header maps belong to none of them")
    return LogHeader(version, layout, flag, size, end, notes)


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
    header = check_header(path)
    version = header.format
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
    return _load_finish(data, header)


# The modules whose records describe a file's I/O; a partial one may lack or shorten any file's record.
FILE_MODULES = ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR")


def _load_finish(data: dict, header: LogHeader) -> dict:
    """The worker's document with what the header says: `header` (format, sizes, partial modules, notes), the
    job's process count checked (null when impossible, the recorded value kept), and per file the partial modules
    its data may be short in (Darshan flags a module, not a record: the per-file map is derived from it)."""
    partial = list(data.pop("partial_modules", []))
    notes = list(header.notes)
    job = data["job"]
    recorded = int(job.get("nprocs") or 0)
    job["nprocs_recorded"] = recorded
    if not 1 <= recorded <= NPROCS_MAX:
        job["nprocs"] = None
        notes.append(f"the job record's process count ({recorded}) is impossible for an MPI job: the log's job "
                     f"record is damaged; the number of processes is unknown")
    if partial:
        notes.append(f"Darshan flagged {', '.join(partial)} partial: it ran out of memory for records, so "
                     f"files may be missing from {'it' if len(partial) == 1 else 'them'} or their records short")
    data["header"] = {**header.to_json(), "partial_modules": partial, "notes": notes}
    file_partial = {m: True for m in partial if m in FILE_MODULES}
    ids = {str(r["id"]) for mod in FILE_MODULES for r in data.get("records", {}).get(mod, [])}
    data["partial"] = {i: dict(file_partial) for i in sorted(ids)} if file_partial else {}
    return data


def _load_pythonpath() -> str:
    """The child imports this very package (the checkout's, not another installed one)."""
    here = str(Path(__file__).resolve().parents[2])
    rest = os.environ.get("PYTHONPATH")
    return here + (os.pathsep + rest if rest else "")
