"""The small files that keep an index home's parts in step (`AgenticIndex`, `index.py`):
their names, the atomic JSON write, the version read that refuses to guess, the errors a
writer or reader raises, and the report a write returns. See `index.py`'s docstring for what
each file is for."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

LOCK_FILE = ".write.lock"
JOURNAL_FILE = "index-journal.json"
STATE_FILE = "index-state.json"
LEXICAL_VERSION_FILE = "index-version.json"  # inside lexical/


class IndexLocked(RuntimeError):
    """Another process kept the index's write lock longer than the timeout."""


class IndexStateError(RuntimeError):
    """`index-state.json` cannot be read: the index cannot tell which version it is at."""


@dataclass
class IndexReport:
    documents: int = 0
    added_chunks: int = 0
    deleted_chunks: int = 0
    unchanged_documents: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # doc id → reason
    recovered_documents: int = 0  # documents of a crashed write removed before this one

    def merge(self, other: IndexReport) -> None:
        self.documents += other.documents
        self.added_chunks += other.added_chunks
        self.deleted_chunks += other.deleted_chunks
        self.unchanged_documents += other.unchanged_documents
        self.recovered_documents += other.recovered_documents
        self.skipped.update(other.skipped)
        for k, v in other.by_type.items():
            self.by_type[k] = self.by_type.get(k, 0) + v


def write_json(path: Path, data: dict) -> None:
    """Atomic and durable: a reader (or a crash) sees the old file or the new one."""
    tmp = path.with_name(path.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_version(path: Path) -> int:
    """The version in `index-state.json`. The file is only ever replaced whole, so one that
    does not parse was damaged from outside; guessing a version could serve a BM25 index
    of other chunks, so it is an error that says how to mend it."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        version = state["version"]
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise ValueError(f"version {version!r} is not a count")
    except FileNotFoundError:  # removed since its stat: a fresh home
        return 0
    except (OSError, ValueError, TypeError, KeyError) as exc:
        reason = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise IndexStateError(
            f"{path}: unreadable index state ({reason}). It only counts completed writes: "
            f"delete it and the folder {path.parent / 'lexical'} (BM25 is rebuilt from the "
            "vector store at the next search; the indexed documents are kept)") from None
    return version
