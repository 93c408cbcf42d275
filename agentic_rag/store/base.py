"""The vector store protocol (`VectorStore`) and what every backend shares: exact search over one
matrix (`ExactSearch`), the similarity scale, filters and the id tie-break. Backends: `chroma`,
`qdrant`; `backends.make_store` opens the configured one.

- `ChromaStore` (in `store.chroma`): ChromaDB `PersistentClient` (telemetry off, cosine space), the
  embedded default; with `store.url` an `HttpClient` on a Chroma server (`chroma run
  --path DIR --host H --port P`), so several processes or machines read the same
  collections (same results: exact search ranks the same matrix either way). A server
  that cannot be reached is a `StoreUnavailable` naming its URL, after at most
  `store.connect_timeout_s` to connect; a later call, once it is back, works. We always
  pass vectors ourselves: chromadb's default embedding function downloads a model and
  fails offline.
- `QdrantStore` (in `store.qdrant`): `qdrant-client`, local on-disk mode (`path`) for tests and
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
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agentic_rag.config import StoreConfig
from agentic_rag.documents import Chunk, Hit

Where = dict[str, Any]


class StoreUnavailable(RuntimeError):  # noqa: N818 - a state of the server, named as such
    """The store's server could not be reached or stopped answering; names its URL."""


@runtime_checkable
class VectorStore(Protocol):
    def upsert(self, chunks: list[Chunk], vectors: np.ndarray) -> None: ...

    def query(self, vector: np.ndarray, k: int, where: Where | None = None) -> list[Hit]: ...

    def get(self, where: Where | None = None, limit: int | None = None) -> list[Chunk]: ...

    def delete(self, where: Where) -> int: ...

    def count(self) -> int: ...


def to_similarity(cos: float) -> float:
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
        return [Hit(chunk=self.chunk(int(rows[i])), score=to_similarity(float(sims[i])), rank=r,
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


class ExactSearch:
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


