"""Keeping each run's reads off the page cache, politely (iotame.bench.caches): by default the files a run's
statistics list are written back and evicted after the run (and the files known so far again before the next),
which needs no root and leaves other processes' cached data alone; "machine" empties the whole machine's page cache
before each run (root, on explicit request, with a warning); "off" does nothing."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from ..bench.caches import CACHE_MODES, DROP_CACHES, MACHINE_WARNING, drop_caches, evict, stats_files

__all__ = ["PageCache", "DROP_CACHES", "CACHE_MODES"]


class PageCache:
    """`drop()` before a run and `after_run(stats, cwd)` after it, in the mode given ("files", "machine", "off";
    True/False mean "files"/"off"). The first problem is noted once through `on_note`; `status` says what happened,
    for the summary."""

    def __init__(self, mode: str | bool = "files", on_note: Callable[[str], None] | None = None,
                 path: str | Path = DROP_CACHES):
        mode = {True: "files", False: "off"}.get(mode, mode) if isinstance(mode, bool) else mode
        if mode not in CACHE_MODES:
            raise ValueError(f"page cache mode {mode!r}: expected one of {', '.join(CACHE_MODES)}")
        self.mode, self.on_note, self.path = mode, on_note, path
        self.reason: str | None = "--cache off" if mode == "off" else None
        self._lock = threading.Lock()
        self.dropped = 0               # machine drops, or runs whose files were evicted
        self.known: set[Path] = set()  # every file a run's statistics listed
        self._warned = False

    def drop(self) -> bool:
        """Before a run: empties the machine's cache ("machine") or evicts the files known so far ("files")."""
        with self._lock:
            if self.reason is not None:
                return False
            if self.mode == "files":
                evict(sorted(self.known))
                return bool(self.known)
            if not self._warned and self.on_note:
                self._warned = True
                self.on_note(MACHINE_WARNING)
            why = drop_caches(Path(self.path))
            if why is not None:
                return self._fail(why)
            self.dropped += 1
            return True

    def after_run(self, stats: dict | None, cwd: str | Path | None = None) -> int:
        """After a run ("files"): writes back and evicts the files its statistics list; how many were evicted."""
        if self.mode != "files":
            return 0
        files = stats_files(stats, cwd)
        with self._lock:
            self.known.update(files)
            done = evict(files)
            self.dropped += done.files > 0
        return done.files

    def _fail(self, reason: str) -> bool:
        self.reason = reason
        if self.on_note:
            self.on_note(f"page cache not dropped between runs ({reason}): reads may be served from memory")
        return False

    @property
    def status(self) -> str:
        if self.mode == "files":
            return "the job's own files evicted after every run (posix_fadvise DONTNEED)"
        if self.reason is None:
            return "machine's page cache dropped before every run" if self.dropped else \
                "machine's page cache to be dropped before every run"
        return f"not dropped ({self.reason})"
