"""Dropping the page cache between a kernel's writes and its reads, so that reads come from storage.

`sync` then `echo 3 > /proc/sys/vm/drop_caches` (page cache, dentries and inodes). Only root can; elsewhere the
reason is returned and the caller says once that read figures may come from memory.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DROP_CACHES", "drop_caches"]

DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_caches(path: Path = DROP_CACHES) -> str | None:
    """Writes back dirty pages and drops the clean caches. None when done, else why it could not be."""
    os.sync()
    if os.geteuid() != 0:
        return "not root"
    try:
        with open(path, "w", encoding="ascii") as f:
            f.write("3\n")
    except OSError as e:
        return f"cannot write {path}: {e.strerror or e}"
    return None
