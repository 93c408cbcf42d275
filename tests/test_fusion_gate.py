"""Pure ranking math and the confidence gate, with exact expected values."""

from __future__ import annotations

import pytest

from agentic_rag.config import GateConfig
from agentic_rag.documents import Chunk, Hit
from agentic_rag.retrieve.evidence import Evidence
from agentic_rag.retrieve.fusion import rrf, score_fusion
from agentic_rag.retrieve.gate import DynamicRetriever, confidence_margin, confidence_top_mean


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
def _hit(cid: str, score: float, ctype: str = "prose", raw: float | None = None) -> Hit:
    c = Chunk(id=cid, doc_id=cid.split("#")[0], text=cid, chunk_type=ctype, start_char=0,
              end_char=1, token_count=1)
    return Hit(chunk=c, score=score, rank=1, raw_score=raw)


class FakeEvidence:
    """An evidence source driven by a table (query, where-or-None, retrievers) -> hits."""

    def __init__(self, table):
        self.table = table
        self.calls = []

    def evidence(self, query, k, where, retrievers, filter_mode):
        use = where if filter_mode != "off" else None
        self.calls.append((query, use, retrievers, filter_mode))
        hits = self.table(query, use, retrievers)
        return Evidence(hits=hits, runs={"dense": hits}, filtered=bool(use), k=k)


def _conf_top1(ev):  # a simple, transparent confidence for gate-logic tests
    return ev.hits[0].score if ev.hits else 0.0


def _gate(table, conf=_conf_top1, **cfg):
    src = FakeEvidence(table)
    kw = {"confidence": "top_mean", **cfg}
    return DynamicRetriever(GateConfig(**kw), src, rewrite=lambda q: q + " kw",
                            retrievers=("dense",), confidence=conf), src


def test_gate_stops_when_confident_first_pass():
    gate, src = _gate(lambda q, w, r: [_hit("a#1", 0.9), _hit("b#1", 0.8), _hit("c#1", 0.7)],
                      min_confidence=0.6)
    res = gate.retrieve("q", k=3)
    assert res.stop_reason == "confident" and res.iterations == 1 and len(src.calls) == 1
    assert [h.chunk.id for h in res.hits] == ["a#1", "b#1", "c#1"]
    assert res.widened_to is None


def test_defaults_reach_every_evidence_changing_expansion_in_order():
    # never confident: the default order relaxes the filter, adds BM25, rewrites the query,
    # and each of those searches something new (the seed's defaults spent every iteration
    # on widen_k and never reached relax_filters / rewrite_query)
    def table(q, w, r):
        return [_hit(f"{q}|{w is not None}|{len(r)}#1", 0.1)]

    gate, src = _gate(table, min_confidence=0.9)
    res = gate.retrieve("q", filters={"chunk_type": "table"}, k=3)
    assert res.expansions == ["relax_filters", "add_retriever", "rewrite_query"]
    assert res.iterations == 4 and res.stop_reason == "max_iterations"
    assert src.calls == [("q", {"chunk_type": "table"}, ("dense",), "hard"),
                         ("q", None, ("dense",), "off"),
                         ("q", None, ("dense", "bm25"), "off"),
                         ("q kw", None, ("dense", "bm25"), "off")]
    assert res.widened_to == 6  # coverage widened once at the end (3 × growth 2)


def test_widen_k_alone_is_never_an_iteration_and_never_raises_confidence():
    # the seed counted "widen k" as an iteration although confidence read only the top 3
    calls = []

    def table(q, w, r):
        calls.append(q)
        return [_hit(f"x{i}#1", 0.3 - i / 100) for i in range(30)]

    gate, _ = _gate(table, min_confidence=0.9, expansions=("widen_k",), max_k=20)
    res = gate.retrieve("q", k=5)
    assert res.iterations == 1 and len(calls) == 1
    assert res.stop_reason == "exhausted" and res.widened_to == 10 and len(res.hits) == 10
    assert res.confidence == pytest.approx(0.3)


def test_expansion_returning_the_same_list_is_skipped_not_counted():
    # the filter matched everything anyway: relaxing it returns the same list
    gate, src = _gate(lambda q, w, r: [_hit("a#1", 0.2), _hit("b#1", 0.1)],
                      min_confidence=0.9, expansions=("relax_filters", "rewrite_query"))
    res = gate.retrieve("q", filters={"chunk_type": "prose"}, k=2)
    assert len(src.calls) == 3 and res.iterations == 1
    assert res.skipped == ["relax_filters", "rewrite_query"] and res.expansions == []


def test_always_expand_ignores_confidence_and_static_is_one_pass():
    def table(q, w, r):
        return ([_hit(f"{q}{len(r)}{w is None}#1", 0.95), _hit("b#1", 0.5)])
    res, _ = _gate(table, mode="always_expand", min_confidence=0.1)
    res = res.retrieve("q", filters={"chunk_type": "code"}, k=2)
    assert res.stop_reason == "always_expand"
    assert res.expansions == ["relax_filters", "add_retriever", "rewrite_query"]
    gated, _ = _gate(table, mode="gated", min_confidence=0.1)
    assert gated.retrieve("q", filters={"chunk_type": "code"}, k=2).iterations == 1
    static, src = _gate(lambda q, w, r: [_hit("a#1", 0.1)], mode="static", min_confidence=0.9)
    res = static.retrieve("q", k=2)
    assert res.stop_reason == "static" and res.iterations == 1 and len(src.calls) == 1


def test_static_and_gated_return_the_same_budget():
    def table(q, w, r):
        return ([_hit(f"{q}{i}#1", 0.2 - i / 100) for i in range(15)])
    for mode in ("static", "gated", "always_expand"):
        gate, _ = _gate(table, mode=mode, min_confidence=0.9, expansions=("rewrite_query",))
        assert len(gate.retrieve("q", k=10).hits) == 10, mode


def test_merge_modes():
    def table(q, w, r):
        return [_hit("a#1", 0.3), _hit("b#1", 0.2)] if q == "q" else \
            [_hit("c#1", 0.5), _hit("a#1", 0.4)]

    ids = {}
    for merge in ("rrf", "best", "last"):
        gate, _ = _gate(table, min_confidence=0.9, expansions=("rewrite_query",), merge=merge)
        ids[merge] = [h.chunk.id for h in gate.retrieve("q", k=3).hits]
    assert ids["rrf"] == ["a#1", "c#1", "b#1"]  # a: 1/61 + 1/62 beats c: 1/61
    assert ids["best"] == ["c#1", "a#1"] == ids["last"]


def test_raw_rule_on_bm25_never_fires_but_calibrated_confidence_does(banking):
    # BM25 scores are divided by the query's best score, so the top hit scores 1.0 for any
    # query that matches a single word: on BM25 alone the raw rule reads a nonsense query
    # as confident as a real question, and the gate never expands it. The calibrated
    # confidence reads the raw BM25 scores and tells them apart. (Real banking chunks.)
    from agentic_rag.config import ChunkingConfig
    from agentic_rag.ingest.chunking import AgenticChunker
    from agentic_rag.retrieve.calibration import load_calibrator
    from agentic_rag.retrieve.gate import evidence_confidence
    from agentic_rag.store.lexical import LexicalIndex

    chunker = AgenticChunker(ChunkingConfig())
    lex = LexicalIndex().build([c for d in banking[:40] for c in chunker.chunk(d)])
    nonsense, question = "zebra quantum account", "monthly maintenance fee Blue Account"
    weak, strong = lex.search(nonsense, k=5), lex.search(question, k=5)
    assert weak[0].score == strong[0].score == 1.0
    assert weak[0].raw_score < strong[0].raw_score / 4  # only "account" matched
    ev_weak, ev_strong = (Evidence(h, {"bm25": h}, False, 5) for h in (weak, strong))
    top_mean = evidence_confidence(GateConfig(confidence="top_mean"))
    assert top_mean(ev_weak) >= top_mean(ev_strong) >= GateConfig().min_confidence
    gate = DynamicRetriever(GateConfig(confidence="top_mean"), lambda q, k, w: lex.search(q, k, w))
    res = gate.retrieve(nonsense, k=5)
    assert res.stop_reason == "confident" and res.iterations == 1
    cal = load_calibrator()
    assert 0.0 < cal.predict_evidence(ev_weak) < cal.predict_evidence(ev_strong) < 1.0


def test_threshold_drops_low_scores():
    gate, _ = _gate(lambda q, w, r: [_hit("a#1", 0.9), _hit("b#1", 0.1)], mode="static",
                    min_score_threshold=0.2)
    res = gate.retrieve("q", k=5)
    assert [h.chunk.id for h in res.hits] == ["a#1"]
    assert res.trace[0].dropped_below_threshold == 1


def test_plain_search_function_still_drives_the_gate():
    res = DynamicRetriever(GateConfig(mode="static"), lambda q, k, w: [_hit("a#1", 0.9)]).retrieve(
        "q", k=1)
    assert [h.chunk.id for h in res.hits] == ["a#1"] and res.iterations == 1


# ---- hybrid retriever over a real index (fake embedder, real Chroma + bm25s) ----------
def test_fusion_retriever_hand_computed(tmp_path):
    from agentic_rag.config import FusionConfig, RAGConfig
    from agentic_rag.documents import Document
    from agentic_rag.retrieve.retrievers import FusionRetriever
    from agentic_rag.store.index import AgenticIndex

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
    hybrid = FusionRetriever(FusionConfig(rrf_k=60, weights=None), idx).search(query, 3)
    expected = rrf([dense, lexical], k=60)
    assert [h.chunk.id for h in hybrid] == [cid for cid, _ in expected][:3]
    assert hybrid[0].raw_score == pytest.approx(expected[0][1])
    assert hybrid[0].chunk.doc_id == "a.md"
    assert hybrid[0].score == pytest.approx(expected[0][1] / (2 / 61))
    assert all(0 <= h.score <= 1 for h in hybrid)
    # soft filters fuse a filtered dense list in: never empty, and a matching type is boosted
    ev = FusionRetriever(FusionConfig(rrf_k=60, weights=None), idx).evidence(query, 3, {"chunk_type": "table"},
                                                       None, "soft")
    assert len(ev.hits) == 3 and set(ev.runs) == {"dense", "bm25", "filtered"}
    assert ev.runs["filtered"] == []  # no table in this corpus; the fused list is unchanged
    assert [h.chunk.id for h in ev.hits] == [h.chunk.id for h in hybrid]
    hard = FusionRetriever(FusionConfig(), idx).evidence(query, 3, {"chunk_type": "table"},
                                                         None, "hard")
    assert hard.hits == []


def test_fusion_weights_by_retriever_name_survive_a_retriever_override():
    from agentic_rag.config import FusionConfig, RAGConfig

    assert FusionConfig().weight("bm25") == 0.3 and FusionConfig().weight("filtered") == 1.0
    assert FusionConfig(retrievers=("bm25", "dense"), weights=[2.0, 1.0]).weights == \
        {"bm25": 2.0, "dense": 1.0}
    # a sweep overriding retrievers to dense-only must not trip over the default weights
    cfg = RAGConfig().with_overrides({"fusion.retrievers": ["dense"]})
    assert cfg.fusion.retrievers == ("dense",)
    with pytest.raises(Exception, match="one entry per retriever"):
        FusionConfig(weights=[1.0])


def test_a_query_is_embedded_once_per_retrieval_however_often_it_is_searched(tmp_path):
    """Soft filters and relax_filters search the same query text again: one embedding."""
    from agentic_rag.config import FusionConfig, RAGConfig
    from agentic_rag.documents import Document
    from agentic_rag.retrieve.retrievers import FusionRetriever
    from agentic_rag.store.index import AgenticIndex

    from .fakes import HashingEmbedder

    emb = HashingEmbedder()
    idx = AgenticIndex(RAGConfig(home=str(tmp_path)), embedder=emb)
    idx.add_documents([Document(id="a.md", text="wire transfer fee schedule"),
                       Document(id="b.md", text="savings interest rates")])
    calls = []
    inner = emb.embed
    emb.embed = lambda texts: calls.append(list(texts)) or inner(texts)
    fr = FusionRetriever(FusionConfig(), idx)
    fr.evidence("wire fee", 3, {"chunk_type": "table"}, None, "soft")  # dense + filtered dense
    fr.evidence("wire fee", 3, {"chunk_type": "table"}, None, "hard")
    fr.evidence("wire fee", 3, None, None, "off")
    assert calls == [["wire fee"]]
    fr.evidence("fee wire", 3, None, None, "off")  # a rewritten query is a new embedding
    assert calls == [["wire fee"], ["fee wire"]]
