"""The Chroma store (`store.kind: chroma`, the default): ChromaDB `PersistentClient` (telemetry off,
cosine space) in the index home, or an `HttpClient` on a Chroma server at `store.url` (`chroma run
--path DIR --host H --port P`). A server that cannot be reached is a `StoreUnavailable` naming its
URL, after at most `store.connect_timeout_s`. We always pass vectors ourselves: chromadb's default
embedding function downloads a model and fails offline. Search is `base.ExactSearch` or the HNSW
graph (`store.search`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from agentic_rag.config import StoreConfig
from agentic_rag.documents import Chunk, Hit
from agentic_rag.store.base import ExactSearch, StoreUnavailable, Where, sort_hits, to_similarity

_CHROMA_MAX_BATCH = 5000  # chromadb rejects batches over 5,461


def chroma_address(url: str) -> tuple[str, int, bool]:
    """(host, port, ssl) of a Chroma server URL (`http://127.0.0.1:8000`); a URL without
    scheme or host is a ValueError naming `store.url`."""
    from urllib.parse import urlparse

    u = urlparse(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError(f"store.url: {url!r} is not an http(s)://host:port URL of a Chroma "
                         "server (start one with `chroma run --path DIR --port N`)")
    try:
        port = u.port or (443 if u.scheme == "https" else 8000)
    except ValueError as exc:
        raise ValueError(f"store.url: {url!r}: {exc}") from None
    return u.hostname, port, u.scheme == "https"


class ChromaStore(ExactSearch):
    def __init__(self, config: StoreConfig, path: str | Path) -> None:
        self.config = config
        self.path = Path(path)
        self._col = None
        self._matrix_lock = threading.Lock()

    def open(self) -> ChromaStore:
        if self._col is None:
            with self._server():
                self._col = self._collection()
        return self

    @contextmanager
    def _server(self) -> Iterator[None]:
        """Around every call to a Chroma server: a transport failure (refused, reset,
        timed out) becomes `StoreUnavailable` naming the URL, not chromadb's internals."""
        if not self.config.url:
            yield
            return
        import httpx

        try:
            yield
        except (httpx.TransportError, ConnectionError, ValueError) as exc:
            if isinstance(exc, ValueError) and not isinstance(exc.__context__,
                                                              httpx.TransportError):
                raise  # a bad request, not the server going away
            raise StoreUnavailable(
                f"Chroma server {self.config.url} (store.url) unreachable: "
                f"{type(exc).__name__}: {str(exc) or 'no reply'}; start it with `chroma run --path "
                f"DIR --host HOST --port PORT`, then rerun (a sweep resumes)") from None

    def _client(self):  # noqa: ANN202 - chromadb ClientAPI
        import chromadb
        from chromadb.config import Settings

        if not self.config.url:
            self.path.mkdir(parents=True, exist_ok=True)
            return chromadb.PersistentClient(
                path=str(self.path), settings=Settings(anonymized_telemetry=False))
        import httpx

        host, port, ssl = chroma_address(self.config.url)
        # chromadb connects while constructing, with no timeout and a message without the
        # URL: check the server first, within the connect timeout
        httpx.get(f"{self.config.url.rstrip('/')}/api/v2/heartbeat",
                  timeout=httpx.Timeout(self.config.read_timeout_s,
                                        connect=self.config.connect_timeout_s))
        client = chromadb.HttpClient(host=host, port=port, ssl=ssl,
                                     settings=Settings(anonymized_telemetry=False))
        # chromadb's session waits forever (timeout=None): bound the connect, keep reads long
        session = getattr(getattr(client, "_server", None), "_session", None)
        if session is not None:
            session.timeout = httpx.Timeout(self.config.read_timeout_s,
                                            connect=self.config.connect_timeout_s)
        return client

    def _collection(self):  # noqa: ANN202 - chromadb Collection
        client = self._client()
        cfg = self.config
        return client.get_or_create_collection(
            cfg.collection, embedding_function=None,
            metadata={"hnsw:space": cfg.space, "hnsw:M": cfg.hnsw_m,
                      "hnsw:construction_ef": cfg.hnsw_ef_construction,
                      "hnsw:search_ef": cfg.hnsw_ef_search})

    @staticmethod
    def _where(where: Where | None) -> dict | None:
        if not where:
            return None
        clauses = [{k: {"$in": list(v)}} if isinstance(v, (list, tuple, set)) else {k: v}
                   for k, v in where.items()]
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def refresh(self) -> None:
        """Reload after another process wrote to the same folder: chromadb keeps one
        System per path per process, serving the vectors it saw. A new System and
        collection replace the old ones in one assignment, so threads still querying the
        old collection finish undisturbed."""
        from chromadb.api.shared_system_client import SharedSystemClient

        with self._matrix_lock:
            if self._col is not None and not self.config.url:  # a server is always current
                SharedSystemClient._identifier_to_system.pop(str(self.path), None)
                self._col = self._collection()
            self._matrix = None

    def upsert(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        self.open()
        with self._writing(), self._server():
            for i in range(0, len(chunks), _CHROMA_MAX_BATCH):
                part = chunks[i:i + _CHROMA_MAX_BATCH]
                self._col.upsert(ids=[c.id for c in part],
                                 embeddings=vectors[i:i + _CHROMA_MAX_BATCH].tolist(),
                                 documents=[c.text for c in part],
                                 metadatas=[c.store_metadata() for c in part])

    def _all_rows(self) -> list[tuple[str, list[float], str, dict[str, Any]]]:
        rows = []
        with self._server():
            total = self._col.count()
            for offset in range(0, total, _CHROMA_MAX_BATCH):
                res = self._col.get(limit=_CHROMA_MAX_BATCH, offset=offset,
                                    include=["embeddings", "documents", "metadatas"])
                rows += list(zip(res["ids"], res["embeddings"], res["documents"],
                                 res["metadatas"]))
        return rows

    def query(self, vector: np.ndarray, k: int, where: Where | None = None) -> list[Hit]:
        self.open()
        if k <= 0:
            return []
        if self._use_exact():  # no store round trip once the matrix is loaded
            return self._exact(vector, k, where)
        with self._server():
            if self._col.count() == 0:
                return []
            res = self._col.query(
                query_embeddings=[np.asarray(vector, dtype=np.float32).tolist()],
                n_results=k, where=self._where(where),
                include=["documents", "metadatas", "distances"])
        hits = []
        for rank, (cid, text, meta, dist) in enumerate(zip(
                res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0]), 1):
            hits.append(Hit(chunk=Chunk.from_store(cid, text, meta),
                            score=to_similarity(1.0 - dist), rank=rank, retriever="dense"))
        return sort_hits(hits)

    def get(self, where: Where | None = None, limit: int | None = None) -> list[Chunk]:
        """Stored chunks matching `where`, read in pages: one unpaged `get` of more than
        ~32k rows fails inside Chroma ("too many SQL variables"; benchmarks/RESULTS.md)."""
        self.open()
        out: list[Chunk] = []
        offset = 0
        while limit is None or len(out) < limit:
            page = _CHROMA_MAX_BATCH if limit is None else min(_CHROMA_MAX_BATCH,
                                                               limit - len(out))
            with self._server():
                res = self._col.get(where=self._where(where), limit=page, offset=offset,
                                    include=["documents", "metadatas"])
            out += [Chunk.from_store(i, t, m)
                    for i, t, m in zip(res["ids"], res["documents"], res["metadatas"])]
            if len(res["ids"]) < page:
                break
            offset += page
        return out

    def delete(self, where: Where) -> int:
        self.open()
        self._invalidate()
        with self._server():
            ids = self._col.get(where=self._where(where), include=[])["ids"]
            for i in range(0, len(ids), _CHROMA_MAX_BATCH):
                self._col.delete(ids=ids[i:i + _CHROMA_MAX_BATCH])
        return len(ids)

    def count(self) -> int:
        self.open()
        with self._server():
            return self._col.count()
