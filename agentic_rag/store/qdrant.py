"""The Qdrant store (`store.kind: qdrant`): local on disk, or a Qdrant server at `store.url`.
Same protocol and the same exact, stably ordered search as the Chroma store (`store.base`)."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from agentic_rag.config import StoreConfig
from agentic_rag.documents import Chunk, Hit
from agentic_rag.store.base import ExactSearch, Where, sort_hits, to_similarity


class QdrantStore(ExactSearch):
    def __init__(self, config: StoreConfig, path: str | Path) -> None:
        self.config = config
        self.path = Path(path)
        self._client = None
        self._matrix_lock = threading.Lock()

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

        self.open()
        if not chunks:
            return
        with self._writing():
            self._upsert_points(chunks, vectors)

    def _upsert_points(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        from qdrant_client import models as qm

        if not self._exists():
            cfg = self.config
            self._client.create_collection(
                cfg.collection,
                vectors_config=qm.VectorParams(
                    size=int(vectors.shape[1]),
                    distance=qm.Distance.COSINE if cfg.space == "cosine" else qm.Distance.DOT),
                hnsw_config=qm.HnswConfigDiff(m=cfg.hnsw_m, ef_construct=cfg.hnsw_ef_construction))
        points = [qm.PointStruct(id=self._point_id(c.id), vector=v.tolist(),
                                 payload={**c.store_metadata(), "chunk_id": c.id, "text": c.text})
                  for c, v in zip(chunks, vectors)]
        for i in range(0, len(points), 1000):
            self._client.upsert(self.config.collection, points=points[i:i + 1000])

    def _all_rows(self) -> list[tuple[str, list[float], str, dict[str, Any]]]:
        rows, offset = [], None
        while True:
            points, offset = self._client.scroll(self.config.collection, limit=1000,
                                                 offset=offset, with_payload=True,
                                                 with_vectors=True)
            for p in points:
                meta = {k: v for k, v in p.payload.items() if k not in ("chunk_id", "text")}
                rows.append((p.payload["chunk_id"], p.vector, p.payload["text"], meta))
            if offset is None:
                return rows

    def query(self, vector: np.ndarray, k: int, where: Where | None = None) -> list[Hit]:
        from qdrant_client import models as qm

        self.open()
        if k <= 0 or not self._exists():
            return []
        if self._use_exact():
            return self._exact(vector, k, where)
        res = self._client.query_points(
            self.config.collection, query=np.asarray(vector, dtype=np.float32).tolist(),
            limit=k, query_filter=self._filter(where), with_payload=True,
            # local mode is brute force already; hnsw_ef only means something on a server
            search_params=qm.SearchParams(hnsw_ef=self.config.hnsw_ef_search)
            if self.config.url else None)
        return sort_hits([Hit(chunk=self._chunk(p.payload), score=to_similarity(p.score),
                              rank=r, retriever="dense") for r, p in enumerate(res.points, 1)])

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
            with self._writing():
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
