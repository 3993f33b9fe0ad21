"""The knowledge base: the best configuration found for each workload signature, in one SQLite file shared by
every study of a user, so that a new study of a similar workload starts from what worked before.

Where: --knowledge PATH, else $IOTAME_KNOWLEDGE, else $XDG_CACHE_HOME/iotame/knowledge.sqlite (default
~/.cache/iotame/knowledge.sqlite). Similar workloads (iotame.tune.workload.similar): same process count, file
system, bytes read and written within the same power-of-two bucket, and the same most frequent request-size
bucket per direction; the closest first (collective fraction and file count), then the largest speedup.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .space import config_key
from .workload import distance, similar

__all__ = ["ENV_KNOWLEDGE", "KnowledgeBase", "Known", "default_knowledge_path"]

ENV_KNOWLEDGE = "IOTAME_KNOWLEDGE"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS workloads (
    id INTEGER PRIMARY KEY,
    created REAL NOT NULL,
    study TEXT NOT NULL,
    command TEXT NOT NULL,
    objective TEXT NOT NULL,
    nprocs INTEGER, fs TEXT, read_bytes INTEGER, write_bytes INTEGER, read_size INTEGER, write_size INTEGER,
    signature TEXT NOT NULL,
    config TEXT NOT NULL,
    default_value REAL, best_value REAL, speedup REAL
)"""
_MATCH = ("nprocs", "fs", "read_bytes", "write_bytes", "read_size", "write_size")


def default_knowledge_path() -> Path:
    """$IOTAME_KNOWLEDGE, else $XDG_CACHE_HOME/iotame/knowledge.sqlite, else ~/.cache/iotame/knowledge.sqlite."""
    env = os.environ.get(ENV_KNOWLEDGE)
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "iotame" / "knowledge.sqlite"


@dataclass(frozen=True)
class Known:
    """A best configuration the knowledge base holds, with where it came from."""

    signature: dict
    config: dict
    study: str
    objective: str
    speedup: float | None
    created: float


class KnowledgeBase:
    """Records and looks up best configurations by workload signature (see the module's documentation)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30)
        db.execute(_SCHEMA)
        return db

    def record(self, sig: Mapping[str, Any], config: Mapping[str, Any], *, study: str, objective: str,
               command: Sequence[str], default_value: float | None, best_value: float | None,
               speedup: float | None) -> None:
        """Stores a study's best configuration for its workload (replacing what the same study stored before)."""
        with closing(self._connect()) as db, db:
            db.execute("DELETE FROM workloads WHERE study = ? AND signature = ?",
                       (study, json.dumps(dict(sig), sort_keys=True)))
            db.execute("INSERT INTO workloads (created, study, command, objective, nprocs, fs, read_bytes, "
                       "write_bytes, read_size, write_size, signature, config, default_value, best_value, speedup) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (time.time(), study, json.dumps(list(command)), objective,
                        *(sig.get(k) for k in _MATCH), json.dumps(dict(sig), sort_keys=True),
                        json.dumps(dict(config), sort_keys=True), default_value, best_value, speedup))

    def lookup(self, sig: Mapping[str, Any], limit: int = 3, exclude_study: str | None = None) -> list[Known]:
        """Up to `limit` distinct configurations of similar workloads that beat their default (speedup > 1),
        closest workload first, then largest speedup."""
        if not self.path.exists():
            return []
        where = " AND ".join(f"{k} IS ?" for k in _MATCH)
        with closing(self._connect()) as db:
            rows = db.execute(f"SELECT signature, config, study, objective, speedup, created FROM workloads "
                              f"WHERE {where} AND speedup > 1", tuple(sig.get(k) for k in _MATCH)).fetchall()
        found = []
        for s, c, study, objective, speedup, created in rows:
            other = json.loads(s)
            if study == exclude_study or not similar(sig, other):
                continue
            found.append(Known(other, json.loads(c), study, objective, speedup, created))
        found.sort(key=lambda k: (distance(sig, k.signature), -(k.speedup or 0), -k.created))
        out, seen = [], set()
        for k in found:
            key = config_key(k.config)
            if key not in seen:
                seen.add(key)
                out.append(k)
        return out[:limit]
