"""Retrieval metrics.

Document level: chunk hits are mapped to their document (a document ranks where its
best chunk ranks) and scored with `ir-measures` (pytrec_eval underneath): recall@k,
precision@k, nDCG@10, MRR@10 — not hand-rolled.

Span level: the gold spans (doc id + character offsets) against the character spans of
the top-k chunks, so chunkings of different sizes are compared on the same ground truth
(a small-to-big parent counts the spans it serves, `metadata["spans"]`, not the gaps
between them):
`span_recall` = covered gold chars / gold chars, `span_precision` = retrieved chars that
are gold / retrieved chars, `span_iou` = intersection / union.
"""

from __future__ import annotations

from collections.abc import Sequence

import ir_measures
from ir_measures import MRR, P, R, nDCG

from agentic_rag.documents import GoldSpan, Hit
from agentic_rag.store.sections import served_spans

RETRIEVAL_MEASURES = {"recall@5": R @ 5, "recall@10": R @ 10, "precision@5": P @ 5,
                      "ndcg@10": nDCG @ 10, "mrr@10": MRR @ 10}


def doc_run(hits: Sequence[Hit]) -> dict[str, float]:
    """Document scores for ir-measures: the best rank of each document's chunks, as a
    strictly decreasing score (so ties in similarity cannot reorder documents)."""
    out: dict[str, float] = {}
    for h in sorted(hits, key=lambda h: h.rank):
        if h.chunk.doc_id not in out:
            out[h.chunk.doc_id] = float(1000 - len(out))
    return out


def ir_metrics(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
               measures: dict[str, object] | None = None) -> dict[str, dict[str, float]]:
    """Per-query values {query id: {metric: value}}; queries without hits score 0."""
    measures = measures or RETRIEVAL_MEASURES
    names = {str(m): name for name, m in measures.items()}
    out: dict[str, dict[str, float]] = {qid: {name: 0.0 for name in measures} for qid in qrels}
    run = {q: r for q, r in run.items() if r and q in qrels}
    if run:
        for m in ir_measures.iter_calc(list(measures.values()), qrels, run):
            out[m.query_id][names[str(m.measure)]] = float(m.value)
    return out


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def _length(spans: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in spans)


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def span_overlap(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    """Characters that two sets of [start, end) spans of one document have in common (each
    set merged first, so a character covered twice counts once)."""
    return _overlap(_merge(list(a)), _merge(list(b)))


def span_metrics(hits: Sequence[Hit], gold: Sequence[GoldSpan], k: int) -> dict[str, float]:
    """Character-level recall / precision / IoU of the top-k chunks against gold spans."""
    top = sorted(hits, key=lambda h: h.rank)[:k]
    docs = {g.doc_id for g in gold} | {h.chunk.doc_id for h in top}
    inter = gold_len = ret_len = 0
    for d in docs:
        g = _merge([(s.start, s.end) for s in gold if s.doc_id == d])
        r = _merge([sp for h in top if h.chunk.doc_id == d for sp in served_spans(h.chunk)])
        inter += _overlap(g, r)
        gold_len += _length(g)
        ret_len += _length(r)
    union = gold_len + ret_len - inter
    return {f"span_recall@{k}": inter / gold_len if gold_len else 0.0,
            f"span_precision@{k}": inter / ret_len if ret_len else 0.0,
            f"span_iou@{k}": inter / union if union else 0.0}


def per_type_hits(hits: Sequence[Hit], relevant_docs: set[str], k: int) -> dict[str, float]:
    """For each chunk type among the top k: how many hits, and how many are from a gold doc."""
    out: dict[str, float] = {}
    for h in sorted(hits, key=lambda h: h.rank)[:k]:
        t = h.chunk.chunk_type
        out[f"hits_{t}"] = out.get(f"hits_{t}", 0) + 1
        if h.chunk.doc_id in relevant_docs:
            out[f"relevant_hits_{t}"] = out.get(f"relevant_hits_{t}", 0) + 1
    return out
