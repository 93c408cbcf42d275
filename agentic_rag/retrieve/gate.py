"""Layer 3: confidence-gated iterative retrieval.

`DynamicRetriever.retrieve(query, filters, k=...)` searches once, measures confidence
on the *evidence* (the fused list and every retriever's own candidate list), and while
confidence is below `min_confidence` applies the configured expansions in order. Each
expansion changes what is searched, so it can change the evidence:

- `relax_filters`: intent filters hard → off (a soft filter becomes off as well);
- `rewrite_query`: search a rewritten query (keyword extraction, or the LLM rewriter);
- `add_retriever`: add the retrievers of `gate.add_retrievers` that are not running yet
  (dense → dense + BM25);
- `widen_k`: return more hits (k × growth up to max_k). Coverage only: it makes no
  search, is never counted as an iteration and never as raising confidence.

An expansion whose top-k list equals the previous one is recorded as `skipped` and not
counted as an iteration. Lists of the iterations are merged by `gate.merge`: `rrf`
(reciprocal rank fusion of the iteration lists), `best` (the list with the highest
confidence) or `last`. Modes: `static` (one pass), `gated` and `always_expand` (every
expansion whatever the confidence: the "no gating" baseline at the same budget).

Confidence rules (`gate.confidence`): `calibrated` (default: P(a relevant hit is in the
top 5), a logistic model over score features, fitted on dev qrels, `calibration.py`) is
on one scale for every retriever mix; the raw rules `top_mean` (0.5·top1 + 0.5·mean
top3) and `margin` (top1 − top2) read the fused scores, whose scale depends on the
retrievers (cosine, BM25/max, normalised RRF) — compare them only like with like.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from agentic_rag.config import GateConfig
from agentic_rag.documents import Hit
from agentic_rag.retrieve.evidence import Evidence  # also imported from here by retrievers and tests
from agentic_rag.retrieve.fusion import rrf

SearchFn = Callable[[str, int, dict[str, Any] | None], list[Hit]]


class EvidenceSearch(Protocol):
    def evidence(self, query: str, k: int, where: dict[str, Any] | None,
                 retrievers: tuple[str, ...] | None, filter_mode: str) -> Evidence: ...


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


def evidence_confidence(config: GateConfig) -> Callable[[Evidence], float]:
    """The configured confidence as a function of the evidence."""
    if config.confidence == "calibrated":
        from agentic_rag.retrieve.calibration import load_calibrator

        model = load_calibrator(config.calibration, config.calibration_sha256)
        return model.predict_evidence
    rule = CONFIDENCE[config.confidence]
    return lambda ev: rule([h.score for h in ev.hits])


class IterationRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    iteration: int
    query: str
    k: int
    filters: dict[str, Any] | None
    filter_mode: str
    retrievers: list[str]
    scores: list[float]
    dropped_below_threshold: int
    confidence: float
    decision: str  # "stop" or the expansion applied next
    reason: str


class RetrievalResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    hits: list[Hit]
    trace: list[IterationRecord]
    stop_reason: str  # confident | max_iterations | exhausted | static | always_expand
    confidence: float
    skipped: list[str] = []  # expansions that returned the same list (not iterations)
    widened_to: int | None = None  # widen_k: final k, when coverage was widened
    # LLM strategies (query expansion, rerank; pipeline.py): their calls' cost and any
    # failure (the strategy then served the list without it), {} when none ran
    strategy: dict[str, Any] = {}

    @property
    def iterations(self) -> int:
        return len(self.trace)

    @property
    def expansions(self) -> list[str]:
        return [r.decision for r in self.trace if r.decision != "stop"]


class _PlainSearch:
    """Adapts a plain `SearchFn` (query, k, where) → hits to the evidence interface."""

    def __init__(self, search: SearchFn, depth: int = 50) -> None:
        self.search = search
        self.depth = depth

    def evidence(self, query: str, k: int, where: dict[str, Any] | None,
                 retrievers: tuple[str, ...] | None, filter_mode: str) -> Evidence:
        use = where if filter_mode == "hard" else None
        hits = self.search(query, max(k, self.depth), use)
        return Evidence(hits=hits[:max(k, self.depth)], runs={"search": hits},
                        filtered=bool(use), k=k)


@dataclass
class _State:
    query: str
    where: dict[str, Any] | None
    filter_mode: str
    retrievers: tuple[str, ...] | None


def _ids(hits: Sequence[Hit], k: int) -> list[str]:
    return [h.chunk.id for h in hits[:k]]


class DynamicRetriever:
    def __init__(self, config: GateConfig, search: SearchFn | EvidenceSearch,
                 rewrite: Callable[[str], str] | None = None,
                 retrievers: tuple[str, ...] | None = None,
                 filter_mode: str = "hard",
                 confidence: Callable[[Evidence], float] | None = None) -> None:
        self.config = config
        self.source: EvidenceSearch = search if hasattr(search, "evidence") \
            else _PlainSearch(search)  # type: ignore[arg-type]
        self.rewrite = rewrite
        self.retrievers = tuple(retrievers) if retrievers else None
        self.filter_mode = filter_mode
        self.confidence = confidence or evidence_confidence(config)

    def _next(self, step: str, st: _State, done: set[str]) -> tuple[_State, str] | None:
        """The state after `step`, or None when the step cannot change anything."""
        cfg = self.config
        if step in done:
            return None
        if step == "relax_filters" and st.where and st.filter_mode != "off":
            return _State(st.query, st.where, "off", st.retrievers), \
                f"filters {st.where} {st.filter_mode} -> off"
        if step == "rewrite_query" and self.rewrite:
            new_q = self.rewrite(st.query)
            if new_q and new_q.strip() and new_q != st.query:
                return _State(new_q, st.where, st.filter_mode, st.retrievers), \
                    f"query -> {new_q!r}"
        if step == "add_retriever" and st.retrievers is not None:
            extra = tuple(r for r in cfg.add_retrievers if r not in st.retrievers)
            if extra:
                return _State(st.query, st.where, st.filter_mode, st.retrievers + extra), \
                    f"retrievers {list(st.retrievers)} -> {list(st.retrievers + extra)}"
        return None

    def retrieve(self, query: str, filters: dict[str, Any] | None = None,
                 min_confidence: float | None = None, k: int | None = None) -> RetrievalResult:
        cfg = self.config
        target = cfg.min_confidence if min_confidence is None else min_confidence
        out_k = k or cfg.initial_k
        st = _State(query, dict(filters) if filters else None,
                    self.filter_mode if filters else "off", self.retrievers)
        trace: list[IterationRecord] = []
        lists: list[tuple[list[Hit], float]] = []
        skipped: list[str] = []
        done: set[str] = set()
        max_iter = 1 if cfg.mode == "static" else cfg.max_iterations
        search_steps = [s for s in cfg.expansions if s != "widen_k"]
        stop_reason, conf, prev_ids, widen = "max_iterations", 0.0, None, False
        pending: tuple[str, str] | None = None  # (decision, reason) that led to this search
        while True:
            ev = self.source.evidence(st.query, out_k, st.where, st.retrievers, st.filter_mode)
            kept = [h for h in ev.hits if h.score >= cfg.min_score_threshold]
            ids = _ids(kept, out_k)
            if prev_ids is not None and ids == prev_ids:
                skipped.append(pending[0] if pending else "?")
            else:
                if trace and pending:  # the previous record's decision led here
                    trace[-1] = trace[-1].model_copy(
                        update={"decision": pending[0],
                                "reason": f"{trace[-1].reason}; {pending[1]}"})
                conf = float(self.confidence(Evidence(kept, ev.runs, ev.filtered, out_k)))
                lists.append((kept, conf))
                trace.append(IterationRecord(
                    iteration=len(trace) + 1, query=st.query, k=out_k, filters=st.where,
                    filter_mode=st.filter_mode, retrievers=list(st.retrievers or ev.runs),
                    scores=[round(h.score, 6) for h in kept[:out_k]],
                    dropped_below_threshold=len(ev.hits) - len(kept), confidence=conf,
                    decision="stop", reason=f"confidence {conf:.3f} vs {target}"))
                prev_ids = ids
            pending = None
            if cfg.mode == "static":
                stop_reason = "static"
                break
            if cfg.mode == "gated" and conf >= target:
                stop_reason = "confident"
                break
            if len(trace) >= max_iter:
                stop_reason = "max_iterations" if cfg.mode == "gated" else "always_expand"
                widen = True
                break
            nxt = None
            for step in search_steps:
                nxt = self._next(step, st, done)
                done.add(step)
                if nxt is not None:
                    pending = (step, nxt[1])
                    st = nxt[0]
                    break
            if nxt is None:
                stop_reason = "exhausted" if cfg.mode == "gated" else "always_expand"
                widen = True
                break
        hits = self._merge(lists)
        final_k = out_k
        if widen and "widen_k" in cfg.expansions and cfg.mode != "static":
            final_k = max(out_k, min(cfg.max_k, math.ceil(out_k * cfg.growth)))
        hits = hits[:final_k]
        ranked = [h.model_copy(update={"rank": r}) for r, h in enumerate(hits, 1)]
        return RetrievalResult(hits=ranked, trace=trace, stop_reason=stop_reason,
                               confidence=conf, skipped=skipped,
                               widened_to=final_k if final_k != out_k else None)

    def _merge(self, lists: list[tuple[list[Hit], float]]) -> list[Hit]:
        if len(lists) == 1:
            return list(lists[0][0])
        how = self.config.merge
        if how == "last":
            return list(lists[-1][0])
        if how == "best":  # highest confidence; ties → the earlier list
            return list(max(enumerate(lists), key=lambda t: (t[1][1], -t[0]))[1][0])
        return rrf_hits([hits for hits, _ in lists])


def rrf_hits(lists: Sequence[Sequence[Hit]], k: float = 60.0) -> list[Hit]:
    """Hit lists fused by RRF (the gate's iterations, a query's expansions): each id's first
    hit, `raw_score` its RRF value, `score` that value over an item first in every list."""
    by_id: dict[str, Hit] = {}
    for hits in lists:
        for h in hits:
            by_id.setdefault(h.chunk.id, h)
    fused = rrf([[h.chunk.id for h in hits] for hits in lists], k=k)
    top = len(lists) / (k + 1.0)
    return [by_id[cid].model_copy(update={"score": min(1.0, s / top), "raw_score": s})
            for cid, s in fused]
