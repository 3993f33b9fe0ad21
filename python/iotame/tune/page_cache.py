"""Dropping the page cache before each run (root only), so that reads come from storage, not memory."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from ..bench.caches import DROP_CACHES, drop_caches

__all__ = ["PageCache", "DROP_CACHES"]


class PageCache:
    """drop() syncs and drops clean caches when enabled and possible; the first time it is not possible it calls
    `on_note` once with the reason. `status` says what happened, for the summary."""

    def __init__(self, enabled: bool = True, on_note: Callable[[str], None] | None = None, path: str | Path = DROP_CACHES):
        self.enabled, self.on_note, self.path = enabled, on_note, path
        self.reason: str | None = None if enabled else "--no-drop-caches"
        self._lock = threading.Lock()
        self.dropped = 0

    def drop(self) -> bool:
        with self._lock:
            if self.reason is not None:
                return False
            why = drop_caches(Path(self.path))
            if why is not None:
                return self._fail(why)
            self.dropped += 1
            return True

    def _fail(self, reason: str) -> bool:
        self.reason = reason
        if self.on_note:
            self.on_note(f"page cache not dropped between runs ({reason}): reads may be served from memory")
        return False

    @property
    def status(self) -> str:
        if self.reason is None:
            return "dropped before every run" if self.dropped else "to be dropped before every run"
        return f"not dropped ({self.reason})"
