"""Hybrid retrieval over an `AgenticIndex`: dense, BM25 and metadata-filtered dense,
each optional, fused with RRF or score fusion (`fusion.py`).

`FusionRetriever.search(query, k, where)` has the `SearchFn` signature, so the
confidence gate (`gate.py`) can drive hybrid search exactly like dense search.

Retrievers (`FusionConfig.retrievers`):
- `dense`, `bm25`: apply `where` themselves, unless `filtered` is also listed, in
  which case they run unfiltered and `filtered` supplies the filtered view;
- `filtered`: dense search restricted by `where` (contributes nothing without one).

Scores of fused hits: `raw_score` is the fused value; `score` divides it by the value
an item ranked first by every retriever would get (RRF: Σw / (k + 1)), so it lies in
[0, 1] and 1.0 means "first everywhere". For score fusion it already lies in [0, 1].
"""

from __future__ import annotations

from typing import Any

from .config import FusionConfig
from .documents import Hit
from .fusion import rrf, score_fusion
from .index import AgenticIndex


class FusionRetriever:
    def __init__(self, config: FusionConfig, index: AgenticIndex) -> None:
        self.config = config
        self.index = index

    def _run(self, name: str, query: str, where: dict[str, Any] | None) -> list[Hit]:
        depth = self.config.candidates
        separate = "filtered" in self.config.retrievers
        if name == "dense":
            return self.index.search(query, depth, None if separate else where)
        if name == "bm25":
            return self.index.search_lexical(query, depth, None if separate else where)
        if name == "filtered":
            return self.index.search(query, depth, where) if where else []
        raise ValueError(f"fusion.retrievers: unknown retriever {name!r}")

    def search(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[Hit]:
        cfg = self.config
        runs = {name: self._run(name, query, where) for name in cfg.retrievers}
        if len(runs) == 1:
            return next(iter(runs.values()))[:k]
        by_id = {}
        for hits in runs.values():
            for h in hits:
                by_id.setdefault(h.chunk.id, h.chunk)
        weights = list(cfg.weights) if cfg.weights else [1.0] * len(runs)
        if cfg.method == "rrf":
            fused = rrf([[h.chunk.id for h in hits] for hits in runs.values()], cfg.rrf_k, weights)
            best = sum(weights) / (cfg.rrf_k + 1)
        else:
            total = sum(weights)
            fused = score_fusion(
                [{h.chunk.id: (h.raw_score if h.raw_score is not None else h.score) for h in hits}
                 for hits in runs.values()], [w / total for w in weights], cfg.normalise)
            best = 1.0
        return [Hit(chunk=by_id[cid], score=min(1.0, s / best), raw_score=s, rank=r,
                    retriever="+".join(runs)) for r, (cid, s) in enumerate(fused[:k], 1)]
