"""Pure ranking math and the confidence gate, with exact expected values."""

from __future__ import annotations

import pytest

from agentic_rag.config import GateConfig
from agentic_rag.documents import Chunk, Hit
from agentic_rag.fusion import rrf, score_fusion
from agentic_rag.gate import DynamicRetriever, confidence_margin, confidence_top_mean


# ---- RRF -----------------------------------------------------------------------------
def test_rrf_worked_example():
    # dense: a b c ; bm25: b c d  (k = 60)
    fused = dict(rrf([["a", "b", "c"], ["b", "c", "d"]], k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)  # 0.032522...
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 62)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["d"] == pytest.approx(1 / 63)
    assert [i for i, _ in rrf([["a", "b", "c"], ["b", "c", "d"]])] == ["b", "c", "a", "d"]


def test_rrf_scores_each_ranking_separately_not_the_concatenation():
    # the seed ranked dense+bm25 concatenated: "x" at position 4 of the joint list.
    # Scored per list, x is rank 1 in the second list and ties with "a".
    fused = rrf([["a", "b", "c"], ["x"]], k=60)
    assert fused[0][1] == fused[1][1] == pytest.approx(1 / 61)
    assert {fused[0][0], fused[1][0]} == {"a", "x"}


def test_rrf_weights_and_ties_deterministic():
    fused = rrf([["a", "b"], ["b", "a"]], k=0, weights=[2.0, 1.0])
    assert fused == [("a", pytest.approx(2.5)), ("b", pytest.approx(2.0))]
    assert rrf([["a"], ["b"]]) == rrf([["a"], ["b"]])
    assert [i for i, _ in rrf([["b"], ["a"]])] == ["a", "b"]  # tie → id order
    with pytest.raises(ValueError, match="weights"):
        rrf([["a"]], weights=[1.0, 2.0])


def test_score_fusion_minmax_convex():
    fused = dict(score_fusion([{"a": 0.9, "b": 0.5, "c": 0.1}, {"b": 12.0, "d": 4.0}],
                              weights=[0.5, 0.5]))
    # minmax: dense a=1, b=0.5, c=0 ; bm25 b=1, d=0
    assert fused == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.0, "d": 0.0})


# ---- confidence ----------------------------------------------------------------------
def test_confidence_functions():
    assert confidence_top_mean([0.9, 0.6, 0.3, 0.1]) == pytest.approx(0.5 * 0.9 + 0.5 * 0.6)
    assert confidence_top_mean([0.8]) == pytest.approx(0.8)
    assert confidence_top_mean([]) == 0.0
    assert confidence_margin([0.9, 0.6, 0.3]) == pytest.approx(0.3)
    assert confidence_margin([0.4]) == pytest.approx(0.4)


# ---- gate ----------------------------------------------------------------------------
def _hit(cid: str, score: float, ctype: str = "prose") -> Hit:
    c = Chunk(id=cid, doc_id=cid.split("#")[0], text=cid, chunk_type=ctype, start_char=0,
              end_char=1, token_count=1)
    return Hit(chunk=c, score=score, rank=1)


class FakeSearch:
    """Scores grow with k (more candidates found), filtered search finds weaker hits."""

    def __init__(self, table):
        self.table = table
        self.calls = []

    def __call__(self, query, k, where):
        self.calls.append((query, k, where))
        return self.table(query, k, where)


def test_gate_stops_when_confident_first_pass():
    search = FakeSearch(lambda q, k, w: [_hit("a#1", 0.9), _hit("b#1", 0.8), _hit("c#1", 0.7)])
    res = DynamicRetriever(GateConfig(min_confidence=0.6), search).retrieve("q")
    assert res.stop_reason == "confident" and res.iterations == 1
    assert res.confidence == pytest.approx(0.5 * 0.9 + 0.5 * 0.8)
    assert [h.chunk.id for h in res.hits] == ["a#1", "b#1", "c#1"]


def test_gate_widens_then_relaxes_then_rewrites_in_order():
    def table(q, k, where):
        if q == "better query":
            return [_hit("z#1", 0.95), _hit("y#1", 0.9)]
        if where:
            return [_hit("a#1", 0.3)]
        return [_hit("a#1", 0.3), _hit("b#1", 0.35)]

    search = FakeSearch(table)
    cfg = GateConfig(initial_k=2, max_k=8, growth=2.0, max_iterations=6, min_confidence=0.8)
    res = DynamicRetriever(cfg, search, rewrite=lambda q: "better query").retrieve(
        "q", filters={"chunk_type": "code"})
    assert [r.decision for r in res.trace] == ["widen_k", "widen_k", "relax_filters",
                                               "rewrite_query", "stop"]
    assert [c[1] for c in search.calls] == [2, 4, 8, 8, 8]
    assert search.calls[3] == ("q", 8, None) and search.calls[4] == ("better query", 8, None)
    assert res.trace[0].filters == {"chunk_type": "code"} and res.trace[3].filters is None
    assert res.stop_reason == "confident"
    # de-duplicated by chunk id across iterations; best score kept; ranks re-assigned
    ids = [h.chunk.id for h in res.hits]
    assert ids == ["z#1", "y#1", "b#1", "a#1"] and len(ids) == len(set(ids))
    assert [h.rank for h in res.hits] == [1, 2, 3, 4]


def test_gate_exhausted_and_max_iterations():
    low = FakeSearch(lambda q, k, w: [_hit("a#1", 0.2)])
    res = DynamicRetriever(GateConfig(initial_k=5, max_k=5, expansions=("widen_k",)), low).retrieve("q")
    assert res.stop_reason == "exhausted" and res.iterations == 1
    res = DynamicRetriever(GateConfig(initial_k=1, max_k=100, max_iterations=3), low).retrieve("q")
    assert res.stop_reason == "max_iterations" and [r.k for r in res.trace] == [1, 2, 4]


def test_threshold_drops_low_scores_and_static_mode():
    search = FakeSearch(lambda q, k, w: [_hit("a#1", 0.9), _hit("b#1", 0.1)])
    res = DynamicRetriever(GateConfig(mode="static", min_score_threshold=0.2), search).retrieve("q")
    assert res.stop_reason == "static" and res.iterations == 1
    assert [h.chunk.id for h in res.hits] == ["a#1"]
    assert res.trace[0].dropped_below_threshold == 1


# ---- hybrid retriever over a real index (fake embedder, real Chroma + bm25s) ----------
def test_fusion_retriever_hand_computed(tmp_path):
    from agentic_rag.config import FusionConfig, RAGConfig
    from agentic_rag.documents import Document
    from agentic_rag.index import AgenticIndex
    from agentic_rag.retrievers import FusionRetriever

    from .fakes import HashingEmbedder

    idx = AgenticIndex(RAGConfig(home=str(tmp_path)), embedder=HashingEmbedder())
    idx.add_documents([
        Document(id="a.md", text="wire transfer fee schedule"),
        Document(id="b.md", text="international wire codes"),
        Document(id="c.md", text="savings interest rates"),
    ])
    query = "wire transfer fee"
    dense = [h.chunk.id for h in idx.search(query, 50)]
    lexical = [h.chunk.id for h in idx.search_lexical(query, 50)]
    hybrid = FusionRetriever(FusionConfig(rrf_k=60), idx).search(query, 3)
    expected = rrf([dense, lexical], k=60)
    assert [h.chunk.id for h in hybrid] == [cid for cid, _ in expected][:3]
    assert hybrid[0].raw_score == pytest.approx(expected[0][1])
    assert hybrid[0].chunk.doc_id == "a.md"
    assert hybrid[0].score == pytest.approx(expected[0][1] / (2 / 61))
    assert all(0 <= h.score <= 1 for h in hybrid)
    # the gate drives hybrid search through the same SearchFn signature
    res = DynamicRetriever(GateConfig(initial_k=1, max_k=3, min_confidence=0.99),
                           FusionRetriever(FusionConfig(), idx).search).retrieve(query)
    # a.md is first for both retrievers: normalised fused score 1.0, so the gate stops at once
    assert res.stop_reason == "confident" and res.trace[0].scores == [1.0]
    res = DynamicRetriever(GateConfig(initial_k=1, max_k=3, min_confidence=0.999),
                           FusionRetriever(FusionConfig(), idx).search).retrieve("wire rates")
    # dense and BM25 disagree on "wire rates": fused top score 0.992 < 0.999 → widen to max_k
    assert [r.k for r in res.trace] == [1, 2, 3] and res.stop_reason == "exhausted"
