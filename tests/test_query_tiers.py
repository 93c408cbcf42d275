"""Layer 2 heuristics and the tiered index (fake embedder, real Chroma, injected clock)."""

from __future__ import annotations

import pytest

from agentic_rag.config import QueryConfig, RAGConfig, TiersConfig
from agentic_rag.documents import Chunk, Document, Hit
from agentic_rag.retrieve.query import (
    AgentQueryBuilder,
    apply_history_penalty,
    classify_intent_heuristic,
    rewrite_heuristic,
    word_overlap,
)
from agentic_rag.retrieve.tiers import TieredIndex
from agentic_rag.store.index import AgenticIndex

from .fakes import HashingEmbedder


@pytest.mark.parametrize("message,intent", [
    ("show me a code example of a list comprehension", "code"),
    ("how do I use sorted() with a key function", "code"),
    ("What is the monthly maintenance fee for Blue checking?", "data"),
    ("What are the steps to unlock a PIN locked card?", "procedure"),
    ("Who wrote the Python tutorial?", "fact"),
])
def test_heuristic_intent(message, intent):
    assert classify_intent_heuristic(message) == intent


def test_heuristic_rewrite_strips_framing():
    assert rewrite_heuristic("Hi, can you tell me how to reset my password? Thanks!") \
        == "how to reset my password?"
    assert rewrite_heuristic("please") == "please"  # never rewrites to nothing


def test_builder_filters_dedup_and_agent_state():
    b = AgentQueryBuilder(QueryConfig())
    intent = b.build_query("Could you tell me the wire transfer fee?")
    assert intent.intent == "data" and intent.filters == {"chunk_type": ["table", "table_row"]}
    assert intent.query == "the wire transfer fee?" and intent.classifier == "heuristic"
    again = b.build_query("the wire transfer fee", previous_retrievals=["wire transfer fee"])
    assert again.duplicate_of == "wire transfer fee"
    forced = b.build_query("anything", agent_state={"task_type": "code"})
    assert forced.intent == "code" and forced.classifier == "agent_state"
    assert word_overlap("reset my password", "how do I reset the password") == 1.0


def test_embedding_dedup():
    emb = HashingEmbedder()
    b = AgentQueryBuilder(QueryConfig(dedup="embedding", embedding_threshold=0.9), embed=emb.embed)
    assert b.build_query("fee wire transfer", previous_retrievals=["wire transfer fee"]) \
        .duplicate_of == "wire transfer fee"
    assert b.build_query("savings interest", previous_retrievals=["wire transfer fee"]) \
        .duplicate_of is None


def test_history_penalty_reranks():
    def hit(cid, s):
        c = Chunk(id=cid, doc_id=cid, text=cid, chunk_type="prose", start_char=0, end_char=1,
                  token_count=1)
        return Hit(chunk=c, score=s, rank=1)

    out = apply_history_penalty([hit("a", 0.9), hit("b", 0.8)], {"a"}, 0.5)
    assert [(h.chunk.id, round(h.score, 3), h.rank) for h in out] == [("b", 0.8, 1), ("a", 0.45, 2)]


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_tiers_route_expire_and_lazy_cold(tmp_path):
    clock = Clock(1_780_000_000.0)  # 2026-05-28
    warm = AgenticIndex(RAGConfig(home=str(tmp_path)), embedder=HashingEmbedder())
    tiers = TieredIndex(TiersConfig(cold_after_days=365, stale_after_days=180,
                                    cold_below_confidence=0.9), warm, clock=clock)
    counts = tiers.add([Document(id="news.md", text="flash sale on savings accounts today")],
                       ttl_s=60)
    assert counts["hot"] == 1
    counts = tiers.add([
        Document(id="policy.md", text="wire transfer fee policy",
                 metadata={"last_updated": "2026-03-01"}),
        Document(id="old.md", text="legacy wire transfer fee from long ago",
                 metadata={"last_updated": "2020-01-01"}),
    ])
    assert counts == {"hot": 0, "warm": 1, "cold": 1}
    assert not tiers.cold_loaded

    res = tiers.search("flash sale savings", k=3)
    assert res.hits[0].chunk.doc_id == "news.md" and res.hits[0].retriever == "hot:dense"

    res = tiers.search("legacy wire transfer fee long ago", k=3)  # warm is not confident → cold
    assert res.tiers == ["hot", "warm", "cold"] and res.cold_loaded
    old = next(h for h in res.hits if h.chunk.doc_id == "old.md")
    assert old.warning and old.warning.startswith("stale") and old.retriever == "cold:dense"

    clock.t += 61  # the hot item expires and is never returned again
    res = tiers.search("flash sale savings", k=5)
    assert all(h.chunk.doc_id != "news.md" for h in res.hits)


def test_tiers_skip_cold_when_confident(tmp_path):
    warm = AgenticIndex(RAGConfig(home=str(tmp_path)), embedder=HashingEmbedder())
    tiers = TieredIndex(TiersConfig(cold_below_confidence=0.5), warm)
    tiers.add([Document(id="a.md", text="alpha beta gamma")])
    res = tiers.search("alpha beta gamma", k=1)
    assert res.tiers == ["hot", "warm"] and not res.cold_loaded
