"""Vector store backends behind one `VectorStore` protocol.

- `ChromaStore`: ChromaDB `PersistentClient` (telemetry off, cosine space), the
  embedded default. We always pass vectors ourselves: chromadb's default
  embedding function downloads a model and fails offline.
- `QdrantStore`: `qdrant-client`, local on-disk mode (`path`) for tests and
  laptops, or a server `url` for production. Qdrant point ids must be UUIDs or
  integers, so a chunk id maps to `uuid5(chunk id)` and is kept in the payload.

Scores: every backend returns a similarity in [0, 1], higher is better. Both
compute cosine similarity of L2-normalised vectors (Chroma reports the
distance `1 - cos`); we return `max(0, cos)`: a negative cosine means "unrelated"
as much as zero does, and clipping keeps thresholds readable on the cosine scale.

Filters: `where` is a flat dict of metadata field → value or list of values
(`{"chunk_type": ["table", "table_row"], "doc_id": "a.md"}`), AND-ed together.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .config import StoreConfig
from .documents import Chunk, Hit

Where = dict[str, Any]
_CHROMA_MAX_BATCH = 5000  # chromadb rejects batches over 5,461


@runtime_checkable
class VectorStore(Protocol):
    def upsert(self, chunks: list[Chunk], vectors: np.ndarray) -> None: ...

    def query(self, vector: np.ndarray, k: int, where: Where | None = None) -> list[Hit]: ...

    def get(self, where: Where | None = None, limit: int | None = None) -> list[Chunk]: ...

    def delete(self, where: Where) -> int: ...

    def count(self) -> int: ...


def _to_similarity(cos: float) -> float:
    return float(min(1.0, max(0.0, cos)))


class ChromaStore:
    def __init__(self, config: StoreConfig, path: str | Path) -> None:
        self.config = config
        self.path = Path(path)
        self._col = None

    def open(self) -> ChromaStore:
        if self._col is None:
            import chromadb
            from chromadb.config import Settings

            self.path.mkdir(parents=True, exist_ok=True)
            client = chromadb.PersistentClient(
                path=str(self.path), settings=Settings(anonymized_telemetry=False))
            self._col = client.get_or_create_collection(
                self.config.collection, embedding_function=None,
                metadata={"hnsw:space": "cosine"})
        return self

    @staticmethod
    def _where(where: Where | None) -> dict | None:
        if not where:
            return None
        clauses = [{k: {"$in": list(v)}} if isinstance(v, (list, tuple, set)) else {k: v}
                   for k, v in where.items()]
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def upsert(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        self.open()
        for i in range(0, len(chunks), _CHROMA_MAX_BATCH):
            part = chunks[i:i + _CHROMA_MAX_BATCH]
            self._col.upsert(ids=[c.id for c in part],
                             embeddings=vectors[i:i + _CHROMA_MAX_BATCH].tolist(),
                             documents=[c.text for c in part],
                             metadatas=[c.store_metadata() for c in part])

    def query(self, vector: np.ndarray, k: int, where: Where | None = None) -> list[Hit]:
        self.open()
        if k <= 0 or self._col.count() == 0:
            return []
        res = self._col.query(query_embeddings=[np.asarray(vector, dtype=np.float32).tolist()],
                              n_results=k, where=self._where(where),
                              include=["documents", "metadatas", "distances"])
        hits = []
        for rank, (cid, text, meta, dist) in enumerate(zip(
                res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0]), 1):
            hits.append(Hit(chunk=Chunk.from_store(cid, text, meta),
                            score=_to_similarity(1.0 - dist), rank=rank, retriever="dense"))
        return hits

    def get(self, where: Where | None = None, limit: int | None = None) -> list[Chunk]:
        self.open()
        res = self._col.get(where=self._where(where), limit=limit,
                            include=["documents", "metadatas"])
        return [Chunk.from_store(i, t, m)
                for i, t, m in zip(res["ids"], res["documents"], res["metadatas"])]

    def delete(self, where: Where) -> int:
        self.open()
        ids = self._col.get(where=self._where(where), include=[])["ids"]
        for i in range(0, len(ids), _CHROMA_MAX_BATCH):
            self._col.delete(ids=ids[i:i + _CHROMA_MAX_BATCH])
        return len(ids)

    def count(self) -> int:
        return self.open()._col.count()


class QdrantStore:
    def __init__(self, config: StoreConfig, path: str | Path) -> None:
        self.config = config
        self.path = Path(path)
        self._client = None

    def open(self) -> QdrantStore:
        if self._client is None:
            import os

            from qdrant_client import QdrantClient

            if self.config.url:
                key = os.environ.get(self.config.api_key_env) if self.config.api_key_env else None
                self._client = QdrantClient(url=self.config.url, api_key=key)
            else:
                self.path.mkdir(parents=True, exist_ok=True)
                self._client = QdrantClient(path=str(self.path))
        return self

    def _exists(self) -> bool:
        return self._client.collection_exists(self.config.collection)

    @staticmethod
    def _filter(where: Where | None):  # noqa: ANN205 - qdrant Filter | None
        if not where:
            return None
        from qdrant_client import models as qm

        must = []
        for key, value in where.items():
            if isinstance(value, (list, tuple, set)):
                must.append(qm.FieldCondition(key=key, match=qm.MatchAny(any=list(value))))
            else:
                must.append(qm.FieldCondition(key=key, match=qm.MatchValue(value=value)))
        return qm.Filter(must=must)

    @staticmethod
    def _point_id(chunk_id: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, chunk_id))

    @staticmethod
    def _chunk(payload: dict) -> Chunk:
        meta = {k: v for k, v in payload.items() if k not in ("chunk_id", "text")}
        return Chunk.from_store(payload["chunk_id"], payload["text"], meta)

    def upsert(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        from qdrant_client import models as qm

        self.open()
        if not chunks:
            return
        if not self._exists():
            self._client.create_collection(
                self.config.collection,
                vectors_config=qm.VectorParams(size=int(vectors.shape[1]),
                                               distance=qm.Distance.COSINE))
        points = [qm.PointStruct(id=self._point_id(c.id), vector=v.tolist(),
                                 payload={**c.store_metadata(), "chunk_id": c.id, "text": c.text})
                  for c, v in zip(chunks, vectors)]
        for i in range(0, len(points), 1000):
            self._client.upsert(self.config.collection, points=points[i:i + 1000])

    def query(self, vector: np.ndarray, k: int, where: Where | None = None) -> list[Hit]:
        self.open()
        if k <= 0 or not self._exists():
            return []
        res = self._client.query_points(self.config.collection,
                                        query=np.asarray(vector, dtype=np.float32).tolist(),
                                        limit=k, query_filter=self._filter(where),
                                        with_payload=True)
        return [Hit(chunk=self._chunk(p.payload), score=_to_similarity(p.score), rank=r,
                    retriever="dense") for r, p in enumerate(res.points, 1)]

    def get(self, where: Where | None = None, limit: int | None = None) -> list[Chunk]:
        self.open()
        if not self._exists():
            return []
        out: list[Chunk] = []
        offset = None
        while True:
            batch = 1000 if limit is None else min(1000, limit - len(out))
            points, offset = self._client.scroll(self.config.collection,
                                                 scroll_filter=self._filter(where), limit=batch,
                                                 offset=offset, with_payload=True,
                                                 with_vectors=False)
            out.extend(self._chunk(p.payload) for p in points)
            if offset is None or (limit is not None and len(out) >= limit):
                return out

    def delete(self, where: Where) -> int:
        from qdrant_client import models as qm

        self.open()
        if not self._exists():
            return 0
        n = self._client.count(self.config.collection, count_filter=self._filter(where),
                               exact=True).count
        if n:
            self._client.delete(self.config.collection,
                                points_selector=qm.FilterSelector(filter=self._filter(where)))
        return n

    def count(self) -> int:
        self.open()
        return self._client.count(self.config.collection).count if self._exists() else 0

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


STORES = {"chroma": ChromaStore, "qdrant": QdrantStore}


def make_store(config: StoreConfig, home: str | Path) -> VectorStore:
    path = Path(config.path) if config.path else Path(home) / f"store-{config.kind}"
    return STORES[config.kind](config, path)
