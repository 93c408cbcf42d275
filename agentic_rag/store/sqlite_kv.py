"""One SQLite file behind a lock: the storage of the LLM reply cache (`llm.ChatCache`) and
the sweep row cache (`experiments.row_cache.RowCache`).

The connection is opened on first use (creating the folder and the tables) and shared by
the threads of a process one at a time; other processes open their own. Statements run in
autocommit mode unless the caller opens a transaction (`with db.connect() as conn, conn:`).
`wal=True` puts the file in write-ahead-log mode, so readers of other processes are not
blocked by a writer (the row cache, written by parallel sweeps).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


class SQLiteFile:
    def __init__(self, path: str | Path, tables: Sequence[str], *, wal: bool = False,
                 timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.tables, self.wal, self.timeout_s = tuple(tables), wal, timeout_s
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=self.timeout_s, check_same_thread=False,
                             isolation_level=None if self.wal else "")
        if self.wal:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        for table in self.tables:
            db.execute(f"CREATE TABLE IF NOT EXISTS {table}")
        return db

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """The shared connection, held under the lock for the `with` block."""
        with self._lock:
            if self._db is None:
                self._db = self._open()
            yield self._db

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
