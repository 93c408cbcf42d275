"""Vector store backends behind one `VectorStore` protocol.

- `ChromaStore`: ChromaDB `PersistentClient` (telemetry off, cosine space), the
  embedded default; with `store.url` an `HttpClient` on a Chroma server (`chroma run
  --path DIR --host H --port P`), so several processes or machines read the same
  collections (same results: exact search ranks the same matrix either way). A server
  that cannot be reached is a `StoreUnavailable` naming its URL, after at most
  `store.connect_timeout_s` to connect; a later call, once it is back, works. We always
  pass vectors ourselves: chromadb's default embedding function downloads a model and
  fails offline.
- `QdrantStore` (in `stores_qdrant`): `qdrant-client`, local on-disk mode (`path`) for tests and
  laptops, or a server `url` for production. Qdrant point ids must be UUIDs or
  integers, so a chunk id maps to `uuid5(chunk id)` and is kept in the payload.

Scores: every backend returns a similarity in [0, 1], higher is better. Both
compute cosine similarity of L2-normalised vectors (Chroma reports the
distance `1 - cos`); we return `max(0, cos)`: a negative cosine means "unrelated"
as much as zero does, and clipping keeps thresholds readable on the cosine scale.

Search (`store.search`): `exact` scores every stored vector with one numpy
matrix-vector product (recall 1.0, and the same ranking in every process); `ann` uses
the store's HNSW graph (`hnsw_m`, `hnsw_ef_construction`, `hnsw_ef_search`), which is
approximate and, for Chroma, not stable across processes; `auto` (default) is exact up
to `exact_max_chunks`. Every ranking breaks ties by chunk id, so equal scores never
reorder between runs.

Filters: `where` is a flat dict of metadata field → value or list of values
(`{"chunk_type": ["table", "table_row"], "doc_id": "a.md"}`), AND-ed together.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .config import StoreConfig
from .documents import Chunk, Hit

Where = dict[str, Any]
_CHROMA_MAX_BATCH = 5000  # chromadb rejects batches over 5,461


class StoreUnavailable(RuntimeError):  # noqa: N818 - a state of the server, named as such
    """The store's server could not be reached or stopped answering; names its URL."""


@runtime_checkable
class VectorStore(Protocol):
    def upsert(self, chunks: list[Chunk], vectors: np.ndarray) -> None: ...

    def query(self, vector: np.ndarray, k: int, where: Where | None = None) -> list[Hit]: ...

    def get(self, where: Where | None = None, limit: int | None = None) -> list[Chunk]: ...

    def delete(self, where: Where) -> int: ...

    def count(self) -> int: ...


def _to_similarity(cos: float) -> float:
    return float(min(1.0, max(0.0, cos)))


def matches_meta(meta: dict[str, Any], where: Where) -> bool:
    """The flat AND-of-values filter every store applies, on a metadata dict."""
    for key, want in where.items():
        have = meta.get(key)
        if isinstance(want, (list, tuple, set)):
            if have not in want:
                return False
        elif have != want:
            return False
    return True


def sort_hits(hits: list[Hit]) -> list[Hit]:
    """Best score first, ties by chunk id; ranks re-assigned from 1."""
    ordered = sorted(hits, key=lambda h: (-h.score, h.chunk.id))
    return [h if h.rank == r else h.model_copy(update={"rank": r})
            for r, h in enumerate(ordered, 1)]


@dataclass(frozen=True)
class _Matrix:
    """Every stored vector, rows in chunk-id order, for exact search."""

    ids: list[str]
    vectors: np.ndarray  # (n, d) float32, L2-normalised as stored
    texts: list[str]
    metas: list[dict[str, Any]]
    _chunks: dict[int, Chunk] = field(default_factory=dict, compare=False, repr=False)

    def search(self, vector: np.ndarray, k: int, where: Where | None) -> list[Hit]:
        if k <= 0 or not self.ids:
            return []
        sims = row_dots(self.vectors, vector)
        if where:
            mask = np.fromiter((matches_meta(m, where) for m in self.metas), bool, len(self.metas))
            rows = np.flatnonzero(mask)
            sims = sims[rows]
        else:
            rows = np.arange(len(self.ids))
        order = top_k_stable(sims, k)
        return [Hit(chunk=self.chunk(int(rows[i])), score=_to_similarity(float(sims[i])), rank=r,
                    retriever="dense") for r, i in enumerate(order, 1)]

    def chunk(self, row: int) -> Chunk:
        """The stored chunk of `row`, built once and shared by every later hit."""
        c = self._chunks.get(row)
        if c is None:
            c = self._chunks[row] = Chunk.from_store(self.ids[row], self.texts[row],
                                                     self.metas[row])
        return c


def row_dots(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """`matrix @ vector` (float32), the same bits at any thread count. numpy's `@` calls
    OpenBLAS, whose result depends on how many threads it runs: a Ray actor (OMP_NUM_THREADS
    = 1) and a 2-thread local run scored some chunks 1 ulp apart, which moved `confidence`
    in 10 of the quick sweep's 1,800 rows. `einsum` is numpy's own loop: as fast here
    (2,579 × 384: 0.2 ms; 20,000 × 384: 1.8 ms vs 1.9–3.5 ms) and thread-count free."""
    return np.einsum("ij,j->i", matrix, np.asarray(vector, dtype=np.float32))


def top_k_stable(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the `k` best scores, best first, ties in position order: exactly
    `np.argsort(-scores, kind="stable")[:k]`, without sorting every score (a partition
    finds the k-th best; only the candidates at or above it are sorted)."""
    n = len(scores)
    if k >= n:
        return np.argsort(-scores, kind="stable")
    kth = np.partition(scores, n - k)[n - k]  # the k-th largest value
    cand = np.flatnonzero(scores >= kth)  # ascending positions, boundary ties included
    return cand[np.argsort(-scores[cand], kind="stable")][:k]


def _build_matrix(rows: list[tuple[str, list[float], str, dict[str, Any]]]) -> _Matrix:
    rows.sort(key=lambda r: r[0])
    vecs = np.asarray([r[1] for r in rows], dtype=np.float32) if rows else np.zeros((0, 0),
                                                                                   np.float32)
    return _Matrix(ids=[r[0] for r in rows], vectors=vecs, texts=[r[2] for r in rows],
                   metas=[dict(r[3]) for r in rows])


class _ExactSearch:
    """Mixin: exact search over a matrix loaded once from the store and dropped on every
    write made through this object (a write by another process needs a new object)."""

    config: StoreConfig
    _matrix: _Matrix | None = None
    _matrix_lock: threading.Lock

    def _use_exact(self) -> bool:
        mode = self.config.search
        if mode == "auto":
            if self._matrix is not None:
                return True
            return self.count() <= self.config.exact_max_chunks
        return mode == "exact"

    _writes: int = 0  # bumped before and after every write made through this object

    def _invalidate(self) -> None:
        self._writes += 1
        self._matrix = None

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Around a write: a matrix built while it runs is used once and never kept."""
        self._invalidate()
        try:
            yield
        finally:
            self._invalidate()

    def _exact(self, vector: np.ndarray, k: int, where: Where | None) -> list[Hit]:
        matrix = self._matrix
        if matrix is None:
            with self._matrix_lock:
                matrix = self._matrix
                if matrix is None:
                    before = self._writes
                    matrix = _build_matrix(self._all_rows())
                    # a write that started or ended meanwhile: use this matrix once, keep none
                    if self._writes == before and before % 2 == 0:
                        self._matrix = matrix
        return matrix.search(vector, k, where)

    def _all_rows(self) -> list[tuple[str, list[float], str, dict[str, Any]]]:
        raise NotImplementedError


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


class ChromaStore(_ExactSearch):
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
                            score=_to_similarity(1.0 - dist), rank=rank, retriever="dense"))
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


STORES = ("chroma", "qdrant")


def make_store(config: StoreConfig, home: str | Path) -> VectorStore:
    path = Path(config.path) if config.path else Path(home) / f"store-{config.kind}"
    if config.kind == "qdrant":
        from .stores_qdrant import QdrantStore

        return QdrantStore(config, path)
    return ChromaStore(config, path)
