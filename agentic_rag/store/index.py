"""`AgenticIndex`: chunk → embed → upsert, kept in step with a BM25 index.

Layout under `config.home`: `store-<kind>/` (vector store), `cache/embeddings.sqlite`
(embedding cache), `lexical/` (BM25 + the chunk list in matrix order), and three small
files that keep the parts in step:

- `.write.lock`: writers (`add_documents`, `delete`, saving BM25) take this file lock, so
  two processes indexing into one home run one after the other; a writer that waits
  longer than `lock_timeout_s` fails with `IndexLocked`, which names the home.
- `index-journal.json`: written (fsync'd) before a write touches the store, naming the
  documents it is about to change, and removed once the write is complete. A journal
  left behind by a crash (kill -9) is recovered by the next writer: those documents'
  chunks are deleted, so a document is either whole in the index or absent — rerunning
  the same `index` command then adds it again. Nothing is half written.
- `index-state.json`: a version bumped by every completed write. BM25 records the
  version it was built from and is rebuilt from the store when they differ (or when a
  journal is pending), so BM25 never serves another version's chunks even when the
  chunk count happens to match. A state file that does not parse is an `IndexStateError`
  naming the file and the mend, never read as version 0.

Re-adding a document replaces its chunks (old ones are deleted first, so nothing
stale is left); re-adding an unchanged document with the same chunking and
embedder is a no-op. Every chunk records an `index_sig` for that check. Documents
with no indexable text are recorded in `IndexReport.skipped`; duplicate document
ids in one call raise `DocumentError` before anything is written.

Threads: searches may run while another thread adds documents; lazy components and
the BM25 rebuild are guarded by locks.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from agentic_rag.config import RAGConfig
from agentic_rag.documents import Chunk, Document, DocumentError, Hit
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.ingest.embeddings import Embedder, make_embedder, one_thread_vector
from agentic_rag.store.backends import make_store
from agentic_rag.store.base import VectorStore, Where
from agentic_rag.store.index_state import (  # noqa: F401 - IndexLocked, IndexStateError: re-exported
    JOURNAL_FILE,
    LEXICAL_VERSION_FILE,
    LOCK_FILE,
    STATE_FILE,
    IndexLocked,
    IndexReport,
    IndexStateError,
    read_json,
    read_version,
    write_json,
)
from agentic_rag.store.lexical import LexicalIndex
from agentic_rag.store.sections import SectionMap

log = logging.getLogger(__name__)

# home → the index version this process's stores last saw. A store library may cache state
# per process and path (chromadb does), so a new store object for a home that another
# process wrote to since is refreshed before use.
_SEEN_VERSION: dict[str, int] = {}
_SEEN_LOCK = threading.Lock()


def check_unique_ids(docs: list[Document]) -> None:
    dup = {i: n for i, n in Counter(d.id for d in docs).items() if n > 1}
    if dup:
        shown = ", ".join(f"{i!r} ({n}×)" for i, n in list(dup.items())[:5])
        raise DocumentError(f"duplicate document ids: {shown}; every document needs a unique id "
                            "(nothing was written)")


class AgenticIndex:
    def __init__(self, config: RAGConfig, embedder: Embedder | None = None,
                 store: VectorStore | None = None, lock_timeout_s: float = 600.0) -> None:
        self.config = config
        self.home = Path(config.home)
        self.chunker = AgenticChunker(config.chunking)
        self.lock_timeout_s = lock_timeout_s
        self._embedder = embedder
        self._store = store
        self._store_version: int | None = None
        self._lexical: LexicalIndex | None = None
        self._lexical_version: int | None = None
        self._version_seen: tuple[tuple[int, int, int], int] | None = None  # (stat, version)
        self._mutex = threading.RLock()  # lazy components
        self._lex_mutex = threading.Lock()  # one BM25 rebuild at a time
        self._file_lock = None

    # -- components (opened lazily, never in __init__) --------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._mutex:
                if self._embedder is None:
                    self._embedder = make_embedder(self.config.embedding, self.home / "cache")
        return self._embedder

    @property
    def store(self) -> VectorStore:
        if self._store is None:
            with self._mutex:
                if self._store is None:
                    store = make_store(self.config.store, self.home)
                    opener = getattr(store, "open", None)
                    if opener:
                        opener()  # opened once, under the lock: threads share one client
                    version = self.version()
                    with _SEEN_LOCK:
                        seen = _SEEN_VERSION.get(self._home_key)
                        _SEEN_VERSION[self._home_key] = version
                    if seen is not None and seen != version:
                        self._refresh(store)  # this process saw an older version of this home
                    self._store_version = version
                    self._store = store
        return self._store

    @property
    def _home_key(self) -> str:
        return str(self.home.resolve())

    @staticmethod
    def _refresh(store: VectorStore) -> None:
        refresh = getattr(store, "refresh", None)
        if refresh is not None:
            refresh()

    def _fresh_store(self) -> VectorStore:
        """The store for a read or a write. When another process completed a write since we
        last looked, the store's in-memory search state is stale: a store that offers
        `refresh()` is asked to reload it (Chroma's per-process cache otherwise keeps
        serving the old vectors)."""
        store = self.store
        version = self.version()
        if self._store_version != version:
            self._refresh(store)
            self._store_version = version
            with _SEEN_LOCK:
                _SEEN_VERSION[self._home_key] = version
        return store

    def _sig(self, doc: Document) -> str:
        parts = [doc.content_hash, self.config.chunking.model_dump_json(),
                 self.config.embedding.model, self.config.embedding.kind]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]

    # -- write lock, journal, version -------------------------------------------------
    def _lock(self):  # noqa: ANN202 - filelock.FileLock
        if self._file_lock is None:
            with self._mutex:
                if self._file_lock is None:
                    from filelock import FileLock

                    self.home.mkdir(parents=True, exist_ok=True)
                    self._file_lock = FileLock(str(self.home / LOCK_FILE))
        return self._file_lock

    @contextlib.contextmanager
    def _writing(self) -> Iterator[IndexReport]:
        """Hold the write lock; recover a crashed write first. Yields a report to fill."""
        from filelock import Timeout

        try:
            self._lock().acquire(timeout=self.lock_timeout_s)
        except Timeout:
            raise IndexLocked(f"{self.home}: another process has been writing to this index for "
                              f"over {self.lock_timeout_s:.0f}s (lock {self.home / LOCK_FILE}); "
                              "wait for it to finish, or stop it") from None
        try:
            self._fresh_store()  # another process may have written since we last looked
            report = IndexReport()
            report.recovered_documents = self.recover()
            yield report
        finally:
            self._lock().release()

    def version(self) -> int:
        """Bumped by every completed write to this home (by any process). The file is
        re-read only when its stat (mtime, size, inode) changed: every search asks."""
        path = self.home / STATE_FILE
        try:
            st = path.stat()
        except OSError:
            return 0
        sig = (st.st_mtime_ns, st.st_size, st.st_ino)
        cached = self._version_seen
        if cached is not None and cached[0] == sig:
            return cached[1]
        version = read_version(path)
        self._version_seen = (sig, version)
        return version

    def pending_journal(self) -> list[str] | None:
        """Documents of an unfinished (crashed or running) write, or None."""
        j = read_json(self.home / JOURNAL_FILE)
        if j is None and (self.home / JOURNAL_FILE).exists():
            return []  # torn journal: written before any store change (fsync'd first)
        return None if j is None else list(j.get("docs", []))

    def _begin(self, doc_ids: list[str]) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        write_json(self.home / JOURNAL_FILE, {"pid": os.getpid(), "docs": doc_ids})

    def _commit(self) -> None:
        version = self.version() + 1
        write_json(self.home / STATE_FILE, {"version": version})
        (self.home / JOURNAL_FILE).unlink(missing_ok=True)
        if self._store_version == version - 1:
            self._store_version = version  # our own write: our store object saw it
            with _SEEN_LOCK:
                if _SEEN_VERSION.get(self._home_key) == version - 1:
                    _SEEN_VERSION[self._home_key] = version

    def recover(self) -> int:
        """Undo a write that did not complete (call with the write lock held; `add_documents`
        and `delete` do): the journaled documents' chunks are deleted. Returns their number."""
        docs = self.pending_journal()
        if docs is None:
            return 0
        for doc_id in docs:
            self.store.delete({"doc_id": doc_id})
        if docs:
            log.warning("%s: removed %d document(s) left half-indexed by an interrupted write; "
                        "add them again", self.home, len(docs))
        self._commit()
        return len(docs)

    def _undo_or_report(self, exc: BaseException) -> None:
        """After a write failed with `exc`: leave its documents out rather than half in. When
        that undo fails too, the documents may be half indexed until the next write (which
        recovers the journal first): say so in the log and on `exc`, which is raised."""
        try:
            self.recover()
        except Exception as undo:  # noqa: BLE001 - reported here; the write's error is raised
            docs = self.pending_journal() or []
            note = (f"{self.home}: undoing the failed write also failed ({undo!r}): "
                    f"{len(docs)} document(s) may be half indexed until the next write to "
                    f"this index, which removes them first (they are listed in "
                    f"{self.home / JOURNAL_FILE}); then add them again")
            log.error(note)
            exc.add_note(note)

    # -- writes -----------------------------------------------------------------------
    def add_document(self, doc: Document) -> IndexReport:
        return self.add_documents([doc])

    def add_documents(self, docs: Iterable[Document], batch_size: int = 256,
                      progress: bool = False) -> IndexReport:
        docs = list(docs)
        check_unique_ids(docs)
        with self._writing() as report:
            pending: list[Chunk] = []
            changed: list[tuple[Document, bool]] = []  # (doc, has old chunks)
            for doc in docs:  # plan first: nothing is written until every doc is chunked
                report.documents += 1
                sig = self._sig(doc)
                old = self.store.get({"doc_id": doc.id}, limit=1)
                if old and old[0].metadata.get("index_sig") == sig:
                    report.unchanged_documents += 1
                    continue
                try:
                    chunks = self.chunker.chunk(doc)
                except RecursionError:
                    raise DocumentError(f"{doc.id}: too deeply nested to chunk "
                                        "(nothing was written)") from None
                if not chunks:
                    report.skipped[doc.id] = "no indexable text (empty or whitespace only)"
                if not chunks and not old:
                    continue
                changed.append((doc, bool(old)))
                pending.extend(c.model_copy(update={"metadata": {**c.metadata, "index_sig": sig}})
                               for c in chunks)
            dup = [i for i, n in Counter(c.id for c in pending).items() if n > 1]
            if dup:
                raise DocumentError(f"chunk ids repeat ({dup[:3]}): a chunker bug, "
                                    "nothing was written")
            if not changed:
                return report
            self._begin([d.id for d, _ in changed])
            try:
                for doc, had_old in changed:
                    if had_old:
                        report.deleted_chunks += self.store.delete({"doc_id": doc.id})
                texts = [c.index_text(self.config.chunking.contextual_headers) for c in pending]
                bar = _progress(len(pending), "embedding chunks", enabled=progress)
                for i in range(0, len(pending), batch_size):
                    vecs = self.embedder.embed(texts[i:i + batch_size])
                    self.store.upsert(pending[i:i + batch_size], vecs)
                    bar.update(len(vecs))
                bar.close()
            except BaseException as exc:
                self._undo_or_report(exc)
                raise
            self._commit()
        report.added_chunks = len(pending)
        for c in pending:
            report.by_type[c.chunk_type] = report.by_type.get(c.chunk_type, 0) + 1
        return report

    def delete(self, doc_id: str) -> int:
        with self._writing():
            self._begin([doc_id])
            n = self.store.delete({"doc_id": doc_id})
            self._commit()
        return n

    # -- lexical ----------------------------------------------------------------------
    @property
    def lexical(self) -> LexicalIndex:
        version = self.version()
        lex = self._lexical
        if lex is not None and self._lexical_version == version:
            return lex
        with self._lex_mutex:
            version = self.version()
            if self._lexical is not None and self._lexical_version == version:
                return self._lexical
            self._lexical = self._load_or_build_lexical(version)
            self._lexical_version = version
            return self._lexical

    def _load_or_build_lexical(self, version: int) -> LexicalIndex:
        folder = self.home / "lexical"
        saved = read_json(folder / LEXICAL_VERSION_FILE)
        if (saved and saved.get("version") == version and self.pending_journal() is None
                and (folder / "chunks.jsonl").exists()):
            try:
                lex = LexicalIndex.load(folder)
            except Exception as exc:  # noqa: BLE001 - derived data: rebuilt below, and said so
                log.warning("%s: saved BM25 index unreadable (%r); rebuilding it from the "
                            "vector store", folder, exc)
            else:
                if len(lex) == self.store.count():
                    return lex
        # save only when no write is running (ours or another process's); else keep in memory.
        # Only a held lock means "running": any other lock error (a lock path that cannot be
        # opened, a full disk) is raised, not taken for a busy writer.
        from filelock import Timeout

        got = False
        try:
            self._lock().acquire(timeout=0)
            got = True
        except Timeout:
            pass
        try:
            version = self.version() if got else version
            chunks = sorted(self.store.get(), key=lambda c: c.id)
            texts = [c.index_text(self.config.chunking.contextual_headers) for c in chunks]
            lex = LexicalIndex(self.config.lexical).build(chunks, texts)
            if got and self.pending_journal() is None:
                (folder / LEXICAL_VERSION_FILE).unlink(missing_ok=True)
                lex.save(folder)
                write_json(folder / LEXICAL_VERSION_FILE, {"version": version})
            return lex
        finally:
            if got:
                self._lock().release()

    # -- reads ------------------------------------------------------------------------
    def embed_query(self, query: str) -> np.ndarray:
        """Queries bypass the on-disk cache: they are one-offs, and a sweep's latencies must
        not depend on which config happened to embed a query first."""
        return one_thread_vector(getattr(self.embedder, "inner", self.embedder), query)

    def search(self, query: str, k: int = 5, where: Where | None = None,
               vector: np.ndarray | None = None) -> list[Hit]:
        """Dense search; scores are cosine similarities clipped to [0, 1]. `vector`: the
        query's embedding when the caller already has it."""
        vec = self.embed_query(query) if vector is None else vector
        return self._fresh_store().query(vec, k, where)

    def search_lexical(self, query: str, k: int = 5, where: Where | None = None) -> list[Hit]:
        return self.lexical.search(query, k, where)

    def _derived(self, name: str, build):  # noqa: ANN001, ANN202
        """A structure derived from the BM25 index's chunk list (the field index, the section
        map), built once per index version, in memory."""
        lex = self.lexical
        cache = self.__dict__.setdefault("_derived_cache", {})
        got = cache.get(name)
        if got is None or got[0] is not lex:
            with self._mutex:
                got = cache.get(name)
                if got is None or got[0] is not lex:
                    got = cache[name] = (lex, build(lex))
        return got[1]

    @property
    def fields(self) -> LexicalIndex:
        """BM25 over each chunk's title field (document title, heading path, API names):
        the `title` retriever (`lexical.field_text`)."""
        return self._derived("fields", lambda lex: lex.fields())

    def search_fields(self, query: str, k: int = 5, where: Where | None = None,
                      score: str = "bm25") -> list[Hit]:
        """The `title` retriever: BM25 over the title field (`score="bm25"`), or the share of
        each name field the query covers (`score="coverage"`, `store/coverage.py`)."""
        if score == "coverage":
            from agentic_rag.store.coverage import TitleCoverage

            return self._derived("coverage", TitleCoverage).search(query, k, where)
        if score != "bm25":
            raise ValueError(f"fusion.title_score: unknown score {score!r} (bm25, coverage)")
        return self.fields.search(query, k, where)

    def named_documents(self, question: str, match: str | None = None) -> list[str]:
        """The documents about the product, plan, function or command `question` names
        (`coverage.TitleCoverage.named_documents`, `match` as `fusion.named_match`: this
        index's config's when not given); empty when it names none."""
        from agentic_rag.store.coverage import TitleCoverage

        match = match or self.config.fusion.named_match
        return self._derived("coverage", TitleCoverage).named_documents(question, match=match)

    def shared_name_share(self) -> float:
        """The share of this index's documents whose name another document shares
        (`coverage.shared_name_share`): `fusion.named_scope: auto` scopes from 0.25 up."""
        from agentic_rag.store.coverage import shared_name_share

        return self._derived("shared_names",
                             lambda lex: shared_name_share(c.doc_id for c in lex.chunks))

    def sections(self) -> SectionMap:
        """Every chunk by document and section, in text order (small-to-big's parents)."""
        return self._derived("sections", lambda lex: SectionMap(lex.chunks))

    def count(self) -> int:
        return self._fresh_store().count()


def _progress(total: int, desc: str, enabled: bool):  # noqa: ANN202
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="chunk", disable=not enabled or total == 0)
