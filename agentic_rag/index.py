"""`AgenticIndex`: chunk → embed → upsert, kept in step with a BM25 index.

Layout under `config.home`: `store-<kind>/` (vector store), `cache/embeddings.sqlite`
(embedding cache), `lexical/` (BM25 + the chunk list in matrix order).

Re-adding a document replaces its chunks (old ones are deleted first, so nothing
stale is left); re-adding an unchanged document with the same chunking and
embedder is a no-op. Every chunk records an `index_sig` for that check.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .chunking import AgenticChunker
from .config import RAGConfig
from .documents import Chunk, Document, Hit
from .embeddings import Embedder, make_embedder
from .lexical import LexicalIndex
from .stores import VectorStore, Where, make_store

log = logging.getLogger(__name__)


@dataclass
class IndexReport:
    documents: int = 0
    added_chunks: int = 0
    deleted_chunks: int = 0
    unchanged_documents: int = 0
    by_type: dict[str, int] = field(default_factory=dict)

    def merge(self, other: IndexReport) -> None:
        self.documents += other.documents
        self.added_chunks += other.added_chunks
        self.deleted_chunks += other.deleted_chunks
        self.unchanged_documents += other.unchanged_documents
        for k, v in other.by_type.items():
            self.by_type[k] = self.by_type.get(k, 0) + v


class AgenticIndex:
    def __init__(self, config: RAGConfig, embedder: Embedder | None = None,
                 store: VectorStore | None = None) -> None:
        self.config = config
        self.home = Path(config.home)
        self.chunker = AgenticChunker(config.chunking)
        self._embedder = embedder
        self._store = store
        self._lexical: LexicalIndex | None = None
        self._lexical_dirty = False

    # -- components (opened lazily, never in __init__) --------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self.config.embedding, self.home / "cache")
        return self._embedder

    @property
    def store(self) -> VectorStore:
        if self._store is None:
            self._store = make_store(self.config.store, self.home)
        return self._store

    def _sig(self, doc: Document) -> str:
        parts = [doc.content_hash, self.config.chunking.model_dump_json(),
                 self.config.embedding.model, self.config.embedding.kind]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]

    # -- writes -----------------------------------------------------------------------
    def add_document(self, doc: Document) -> IndexReport:
        return self.add_documents([doc])

    def add_documents(self, docs: Iterable[Document], batch_size: int = 256,
                      progress: bool = False) -> IndexReport:
        report = IndexReport()
        pending: list[Chunk] = []
        for doc in docs:
            report.documents += 1
            sig = self._sig(doc)
            old = self.store.get({"doc_id": doc.id}, limit=1)
            if old and old[0].metadata.get("index_sig") == sig:
                report.unchanged_documents += 1
                continue
            if old:
                report.deleted_chunks += self.store.delete({"doc_id": doc.id})
            for c in self.chunker.chunk(doc):
                pending.append(c.model_copy(update={"metadata": {**c.metadata, "index_sig": sig}}))
        texts = [c.index_text(self.config.chunking.contextual_headers) for c in pending]
        bar = _progress(len(pending), "embedding chunks", enabled=progress)
        for i in range(0, len(pending), batch_size):
            vecs = self.embedder.embed(texts[i:i + batch_size])
            self.store.upsert(pending[i:i + batch_size], vecs)
            bar.update(len(vecs))
        bar.close()
        report.added_chunks = len(pending)
        for c in pending:
            report.by_type[c.chunk_type] = report.by_type.get(c.chunk_type, 0) + 1
        if report.added_chunks or report.deleted_chunks:
            self._lexical_dirty = True
        return report

    def delete(self, doc_id: str) -> int:
        n = self.store.delete({"doc_id": doc_id})
        if n:
            self._lexical_dirty = True
        return n

    # -- lexical ----------------------------------------------------------------------
    @property
    def lexical(self) -> LexicalIndex:
        folder = self.home / "lexical"
        if self._lexical is None and not self._lexical_dirty and (folder / "chunks.jsonl").exists():
            self._lexical = LexicalIndex.load(folder)
            if len(self._lexical) != self.store.count():
                self._lexical_dirty = True  # the store changed behind our back: rebuild
        if self._lexical is None or self._lexical_dirty:
            chunks = sorted(self.store.get(), key=lambda c: c.id)
            texts = [c.index_text(self.config.chunking.contextual_headers) for c in chunks]
            self._lexical = LexicalIndex(self.config.lexical).build(chunks, texts)
            self._lexical.save(folder)
            self._lexical_dirty = False
        return self._lexical

    # -- reads ------------------------------------------------------------------------
    def embed_query(self, query: str) -> np.ndarray:
        """Queries bypass the on-disk cache: they are one-offs, and a sweep's latencies must
        not depend on which config happened to embed a query first."""
        return getattr(self.embedder, "inner", self.embedder).embed([query])[0]

    def search(self, query: str, k: int = 5, where: Where | None = None) -> list[Hit]:
        """Dense search; scores are cosine similarities clipped to [0, 1]."""
        return self.store.query(self.embed_query(query), k, where)

    def search_lexical(self, query: str, k: int = 5, where: Where | None = None) -> list[Hit]:
        return self.lexical.search(query, k, where)

    def count(self) -> int:
        return self.store.count()


def _progress(total: int, desc: str, enabled: bool):  # noqa: ANN202
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="chunk", disable=not enabled or total == 0)
