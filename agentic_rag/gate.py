"""Layer 3: confidence-gated iterative retrieval.

`DynamicRetriever.retrieve(query, filters)` searches, measures confidence on the
similarity scores (all in [0, 1], see `stores.py`), and while confidence is below
`min_confidence` applies the configured expansions in order:

- `widen_k`: k ← min(max_k, ceil(k · growth)), repeated until max_k;
- `relax_filters`: drop the metadata filters (once);
- `rewrite_query`: ask the rewriter for a new query (once, if it changes it).

Every iteration is recorded (query, k, filters, scores, confidence, decision), hits
are de-duplicated by chunk id (the seed keyed on an always-empty `meta["id"]`),
and `mode="static"` is one fixed top-k pass, so gated vs static compare fairly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from .config import GateConfig
from .documents import Hit

SearchFn = Callable[[str, int, dict[str, Any] | None], list[Hit]]


def confidence_top_mean(scores: Sequence[float]) -> float:
    """The seed's rule: 0.5 · top-1 + 0.5 · mean(top-3); 0 for no scores."""
    if not scores:
        return 0.0
    top = sorted(scores, reverse=True)
    return 0.5 * top[0] + 0.5 * sum(top[:3]) / len(top[:3])


def confidence_margin(scores: Sequence[float]) -> float:
    """Top-1 minus top-2: high when one result clearly wins; top-1 itself if alone."""
    if not scores:
        return 0.0
    top = sorted(scores, reverse=True)
    return top[0] - (top[1] if len(top) > 1 else 0.0)


CONFIDENCE: dict[str, Callable[[Sequence[float]], float]] = {
    "top_mean": confidence_top_mean,
    "margin": confidence_margin,
}


class IterationRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    iteration: int
    query: str
    k: int
    filters: dict[str, Any] | None
    scores: list[float]
    dropped_below_threshold: int
    confidence: float
    decision: str  # "stop" or the expansion applied next
    reason: str


class RetrievalResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    hits: list[Hit]
    trace: list[IterationRecord]
    stop_reason: str  # confident | max_iterations | exhausted | static
    confidence: float

    @property
    def iterations(self) -> int:
        return len(self.trace)


class DynamicRetriever:
    def __init__(self, config: GateConfig, search: SearchFn,
                 rewrite: Callable[[str], str] | None = None) -> None:
        self.config = config
        self.search = search
        self.rewrite = rewrite
        self.confidence = CONFIDENCE[config.confidence]

    def retrieve(self, query: str, filters: dict[str, Any] | None = None,
                 min_confidence: float | None = None) -> RetrievalResult:
        cfg = self.config
        target = cfg.min_confidence if min_confidence is None else min_confidence
        k, q, where = cfg.initial_k, query, (dict(filters) if filters else None)
        relaxed = rewritten = False
        pool: dict[str, Hit] = {}
        trace: list[IterationRecord] = []
        max_iter = 1 if cfg.mode == "static" else cfg.max_iterations
        stop_reason, conf = "max_iterations", 0.0
        for it in range(1, max_iter + 1):
            used_q, used_k, used_where = q, k, where
            raw = self.search(q, k, where)
            kept = [h for h in raw if h.score >= cfg.min_score_threshold]
            for h in kept:
                if h.chunk.id not in pool or h.score > pool[h.chunk.id].score:
                    pool[h.chunk.id] = h
            scores = [h.score for h in kept]
            conf = self.confidence(scores)
            if cfg.mode == "static":
                decision, reason, stop_reason = "stop", "static mode: one fixed top-k pass", "static"
            elif conf >= target:
                decision, reason, stop_reason = "stop", f"confidence {conf:.3f} >= {target}", \
                    "confident"
            elif it == max_iter:
                decision, reason = "stop", f"confidence {conf:.3f} < {target} after {it} iterations"
                stop_reason = "max_iterations"
            else:
                decision, reason = "stop", "no expansion left"
                for step in cfg.expansions:
                    if step == "widen_k" and k < cfg.max_k:
                        new_k = min(cfg.max_k, math.ceil(k * cfg.growth))
                        decision, reason, k = "widen_k", f"k {k} -> {new_k}", new_k
                        break
                    if step == "relax_filters" and where and not relaxed:
                        decision, reason, where, relaxed = "relax_filters", \
                            f"dropped filters {where}", None, True
                        break
                    if step == "rewrite_query" and self.rewrite and not rewritten:
                        rewritten = True
                        new_q = self.rewrite(q)
                        if new_q and new_q != q:
                            decision, reason, q = "rewrite_query", f"query -> {new_q!r}", new_q
                            break
                if decision == "stop":
                    stop_reason = "exhausted"
                reason = f"confidence {conf:.3f} < {target}; {reason}"
            trace.append(IterationRecord(
                iteration=it, query=used_q, k=used_k, filters=used_where,
                scores=[round(sc, 6) for sc in scores], dropped_below_threshold=len(raw) - len(kept),
                confidence=conf, decision=decision, reason=reason))
            if decision == "stop":
                break
        hits = sorted(pool.values(), key=lambda h: (-h.score, h.chunk.id))[:k]
        ranked = [h.model_copy(update={"rank": r}) for r, h in enumerate(hits, 1)]
        return RetrievalResult(hits=ranked, trace=trace, stop_reason=stop_reason, confidence=conf)

