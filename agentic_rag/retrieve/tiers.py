"""A hot / warm / cold tiered index.

- hot: in memory, each item with its own expiry (TTL); expired items are purged on
  every read and never returned;
- warm: the persistent `AgenticIndex` (Chroma/Qdrant + BM25);
- cold: a gzip JSONL archive of chunks and vectors on disk, loaded lazily the first
  time a query needs it.

Routing on `add`: an explicit `ttl_s` → hot; `last_updated` older than
`cold_after_days` → cold; otherwise warm. Queries read hot, then warm, and cold
only while the confidence of what they have is below `cold_below_confidence`.
Hits whose `last_updated` is older than `stale_after_days` carry a warning.
The clock is injectable, so expiry is tested without sleeping.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from agentic_rag.config import TiersConfig
from agentic_rag.documents import Chunk, Document, Hit
from agentic_rag.jsonl import append_rows, read_lines, read_rows
from agentic_rag.retrieve.gate import confidence_top_mean
from agentic_rag.store.base import row_dots
from agentic_rag.store.index import AgenticIndex
from agentic_rag.store.lexical import matches_where

DAY = 86400.0


class TieredResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    hits: list[Hit]
    tiers: list[str]  # tiers queried, in order
    confidence: float
    cold_loaded: bool


def _age_days(last_updated: str | None, now: float) -> float | None:
    if not last_updated:
        return None
    ts = datetime.fromisoformat(last_updated)
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return (now - ts.timestamp()) / DAY


class _Matrix:
    """Brute-force cosine search over a small in-memory set of chunks."""

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self.vectors = np.zeros((0, 0), dtype=np.float32)

    def add(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        keep = {c.id for c in chunks}
        old = [(c, v) for c, v in zip(self.chunks, self.vectors) if c.id not in keep]
        self.chunks = [c for c, _ in old] + list(chunks)
        rows = [v for _, v in old] + list(vectors)
        self.vectors = np.stack(rows).astype(np.float32) if rows else np.zeros((0, 0), np.float32)

    def remove(self, ids: set[str]) -> None:
        pairs = [(c, v) for c, v in zip(self.chunks, self.vectors) if c.id not in ids]
        self.chunks = [c for c, _ in pairs]
        self.vectors = np.stack([v for _, v in pairs]) if pairs else np.zeros((0, 0), np.float32)

    def search(self, q: np.ndarray, k: int, where: dict | None, retriever: str) -> list[Hit]:
        if not self.chunks:
            return []
        sims = row_dots(self.vectors, q)
        order = np.argsort(-sims, kind="stable")
        out: list[Hit] = []
        for i in order:
            c = self.chunks[i]
            if where and not matches_where(c, where):
                continue
            out.append(Hit(chunk=c, score=float(min(1.0, max(0.0, sims[i]))), rank=len(out) + 1,
                           retriever=retriever))
            if len(out) == k:
                break
        return out


class TieredIndex:
    def __init__(self, config: TiersConfig, warm: AgenticIndex,
                 clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.warm = warm
        self.clock = clock
        self.hot = _Matrix()
        self._expires: dict[str, float] = {}
        self._cold: _Matrix | None = None
        self._cold_repaired = False
        self.cold_path = Path(warm.home) / config.cold_file

    # -- writes -----------------------------------------------------------------------
    def route(self, doc: Document, ttl_s: float | None = None) -> str:
        if ttl_s is not None:
            return "hot"
        age = _age_days(doc.metadata.get("last_updated"), self.clock())
        return "cold" if age is not None and age > self.config.cold_after_days else "warm"

    def add(self, docs: Iterable[Document], ttl_s: float | None = None) -> dict[str, int]:
        counts = {"hot": 0, "warm": 0, "cold": 0}
        warm_docs, cold_rows = [], []
        for doc in docs:
            tier = self.route(doc, ttl_s)
            if tier == "warm":
                warm_docs.append(doc)
                continue
            chunks = [self._stamp(c, doc) for c in self.warm.chunker.chunk(doc)]
            if not chunks:
                continue
            vecs = self.warm.embedder.embed(
                [c.index_text(self.warm.config.chunking.contextual_headers) for c in chunks])
            counts[tier] += len(chunks)
            if tier == "hot":
                self.hot.add(chunks, vecs)
                expiry = self.clock() + ttl_s  # type: ignore[operator]
                self._expires.update({c.id: expiry for c in chunks})
            else:
                cold_rows.extend(zip(chunks, vecs))
        if warm_docs:
            counts["warm"] = self.warm.add_documents(warm_docs).added_chunks
        if cold_rows:
            self._append_cold(cold_rows)
        return counts

    @staticmethod
    def _stamp(c: Chunk, doc: Document) -> Chunk:
        lu = doc.metadata.get("last_updated")
        return c.model_copy(update={"metadata": {**c.metadata, "last_updated": lu}}) if lu else c

    def _append_cold(self, rows: list[tuple[Chunk, np.ndarray]]) -> None:
        self.cold_path.parent.mkdir(parents=True, exist_ok=True)
        if self._cold is None and not self._cold_repaired:
            read_lines(self.cold_path)  # a torn last row (kill -9 mid-append) cut off first,
            self._cold_repaired = True  # so that the rows appended after it stay readable
        append_rows(self.cold_path, (
            {"chunk": c.model_dump(mode="json"),
             "vec": base64.b64encode(np.asarray(v, dtype=np.float32).tobytes()).decode()}
            for c, v in rows))
        if self._cold is not None:  # keep a loaded archive in step
            self._cold.add([c for c, _ in rows], np.stack([v for _, v in rows]))

    def _load_cold(self) -> _Matrix:
        if self._cold is None:
            self._cold = _Matrix()
            rows = read_rows(self.cold_path)  # a torn last row (kill -9 mid-append) cut off
            if rows:
                self._cold.add([Chunk.model_validate(r["chunk"]) for r in rows],
                               np.stack([np.frombuffer(base64.b64decode(r["vec"]),
                                                       dtype=np.float32) for r in rows]))
        return self._cold

    @property
    def cold_loaded(self) -> bool:
        return self._cold is not None

    # -- reads ------------------------------------------------------------------------
    def _purge_expired(self) -> None:
        now = self.clock()
        dead = {cid for cid, exp in self._expires.items() if exp <= now}
        if dead:
            self.hot.remove(dead)
            for cid in dead:
                del self._expires[cid]

    def _annotate(self, hit: Hit, tier: str) -> Hit:
        age = _age_days(hit.chunk.metadata.get("last_updated"), self.clock())
        warning = None
        if age is not None and age > self.config.stale_after_days:
            warning = f"stale: last updated {age:.0f} days ago"
        return hit.model_copy(update={"retriever": f"{tier}:{hit.retriever}", "warning": warning})

    def search(self, query: str, k: int = 5, where: dict[str, Any] | None = None) -> TieredResult:
        self._purge_expired()
        q = self.warm.embed_query(query)
        pool: dict[str, Hit] = {}
        tiers: list[str] = []

        def take(hits: list[Hit], tier: str) -> None:
            tiers.append(tier)
            for h in hits:
                if h.chunk.id not in pool or h.score > pool[h.chunk.id].score:
                    pool[h.chunk.id] = self._annotate(h, tier)

        take(self.hot.search(q, k, where, "dense"), "hot")
        take(self.warm.store.query(q, k, where) if self.warm.count() else [], "warm")
        conf = confidence_top_mean([h.score for h in pool.values()])
        if conf < self.config.cold_below_confidence:
            take(self._load_cold().search(q, k, where, "dense"), "cold")
            conf = confidence_top_mean([h.score for h in pool.values()])
        hits = sorted(pool.values(), key=lambda h: (-h.score, h.chunk.id))[:k]
        hits = [h.model_copy(update={"rank": r}) for r, h in enumerate(hits, 1)]
        return TieredResult(hits=hits, tiers=tiers, confidence=conf, cold_loaded=self.cold_loaded)
