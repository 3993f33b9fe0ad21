"""Keeping a measurement's reads off the page cache, politely: the files a job touched are written back and evicted
(`fdatasync`, then `posix_fadvise(POSIX_FADV_DONTNEED)`), which any user may do to their own files and which leaves
every other process's cached data where it is. Emptying the whole machine's page cache (`sync` then
`echo 3 > /proc/sys/vm/drop_caches`, root only) is done only on explicit request, with a warning, since on a shared
node it flushes other users' data too. `resident` counts a file's pages in the page cache (`mincore`), the check
that eviction worked.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

__all__ = ["DROP_CACHES", "CACHE_MODES", "MACHINE_WARNING", "Eviction", "drop_caches", "evict", "resident",
           "stats_files"]

DROP_CACHES = Path("/proc/sys/vm/drop_caches")
CACHE_MODES = ("files", "machine", "off")   # evict the job's files (default), empty the machine's cache, nothing
MACHINE_WARNING = ("emptying the whole machine's page cache before each run (drop_caches): other users' cached "
                   "data is flushed too")


def drop_caches(path: Path = DROP_CACHES) -> str | None:
    """Writes back dirty pages and drops the machine's clean caches. None when done, else why it could not be."""
    os.sync()
    if os.geteuid() != 0:
        return "not root"
    try:
        with open(path, "w", encoding="ascii") as f:
            f.write("3\n")
    except OSError as e:
        return f"cannot write {path}: {e.strerror or e}"
    return None


@dataclass
class Eviction:
    """What evict() did: regular files evicted, their bytes, and (path, reason) for files it could not evict."""

    files: int = 0
    bytes: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)


def _regular_files(paths: Iterable[str | Path]) -> Iterable[Path]:
    for p in map(Path, paths):
        if p.is_dir():
            yield from (q for q in sorted(p.rglob("*")) if q.is_file())
        elif p.is_file():
            yield p


def evict(paths: Iterable[str | Path]) -> Eviction:
    """Writes back and evicts from the page cache each regular file in `paths` (directories: every file under
    them). Missing files are skipped (a job may delete what it wrote); others' files are never touched."""
    out = Eviction()
    for p in _regular_files(paths):
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError as e:
            out.errors.append((str(p), e.strerror or str(e)))
            continue
        try:
            os.fdatasync(fd)                      # dirty pages cannot be evicted: write them back first
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            out.files += 1
            out.bytes += os.fstat(fd).st_size
        except OSError as e:
            out.errors.append((str(p), e.strerror or str(e)))
        finally:
            os.close(fd)
    return out


def stats_files(stats: dict | None, cwd: str | Path | None = None) -> list[Path]:
    """The files a run's statistics list (`files[].path`), relative paths taken from `cwd`."""
    base = Path(cwd) if cwd is not None else Path.cwd()
    paths = []
    for f in (stats or {}).get("files") or []:
        if isinstance(f, dict) and isinstance(f.get("path"), str):
            paths.append(base / f["path"])
    return paths


_libc = None


def _mincore():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        _libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte))
    return _libc.mincore


def resident(path: str | Path) -> tuple[int, int]:
    """(pages of `path` in the page cache, pages of the file), by mapping it and asking mincore(2)."""
    size = os.path.getsize(path)
    page = mmap.PAGESIZE
    pages = (size + page - 1) // page
    if pages == 0:
        return 0, 0
    # a private writable mapping lets ctypes take its address; nothing is written, so no page is copied
    with open(path, "rb") as f, mmap.mmap(f.fileno(), size, flags=mmap.MAP_PRIVATE,
                                          prot=mmap.PROT_READ | mmap.PROT_WRITE) as m:
        anchor = ctypes.c_char.from_buffer(m)
        try:
            vec = (ctypes.c_ubyte * pages)()
            if _mincore()(ctypes.addressof(anchor), size, vec) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"mincore({path}): {os.strerror(err)}")
            return sum(v & 1 for v in vec), pages
        finally:
            del anchor
