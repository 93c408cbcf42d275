"""Title coverage (issue 40): the title retriever scored by how much of each name the question
covers, on the real τ²-banking documents, where Blue, Light Blue, Navy Blue, True Blue, Sky
Blue, Cobalt Blue, World Blue and Bluest accounts share words."""

from __future__ import annotations

import pytest

from agentic_rag.config import FusionConfig, RAGConfig
from agentic_rag.documents import Chunk
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.store.coverage import TitleCoverage, chunk_fields, coverage
from agentic_rag.store.lexical import LexicalIndex

BLUE_FEE = "What is the monthly maintenance fee of the Blue checking account?"
LIME_WIRE = ("How much does a domestic outgoing wire cost on a Lime Green business checking "
             "account?")


@pytest.fixture(scope="module")
def bank(banking):
    cfg = RAGConfig()
    chunks = AgenticChunker(cfg.chunking).chunk_many(banking)
    lex = LexicalIndex(cfg.lexical).build(chunks, [c.index_text() for c in chunks])
    return lex, TitleCoverage(lex)


def _docs(hits, n):
    return [h.chunk.doc_id for h in hits[:n]]


def test_coverage_is_the_idf_weighted_share_of_the_field():
    idf = {"blue": 2.0, "account": 0.5, "world": 3.0}
    assert coverage(frozenset({"blue", "account"}), {"blue", "account", "fee"}, idf) == 1.0
    assert coverage(frozenset({"world", "blue"}), {"blue", "account"}, idf) == pytest.approx(0.4)
    assert coverage(frozenset(), {"blue"}, idf) == 0.0
    assert coverage(frozenset({"x"}), {"x"}, {}) == 0.0  # a word never indexed weighs nothing


def test_fields_are_name_title_and_headings(banking):
    doc = next(d for d in banking if d.id == "doc_checking_accounts_blue_account_003")
    chunk = AgenticChunker(RAGConfig().chunking).chunk(doc)[0]
    fields = chunk_fields(chunk)
    assert fields[0] == "checking accounts blue account"
    assert "Blue Account features and fees" in fields


def test_blue_account_beats_world_blue_and_navy_blue(bank):
    """The issue's case: BM25 over the title field ranks other Blue accounts first; coverage
    ranks the Blue Account's own documents first, its fee table among them."""
    lex, cov = bank
    top = _docs(cov.search(BLUE_FEE, 5), 5)
    assert all(d.startswith("doc_checking_accounts_blue_account_") for d in top), top
    assert top[0] == "doc_checking_accounts_blue_account_003"  # "Blue Account features and fees"
    bag = _docs(lex.fields().search(BLUE_FEE, 5), 5)
    assert not any(d.startswith("doc_checking_accounts_blue_account_") for d in bag)  # the bug


def test_blue_account_scores_above_each_other_blue(bank):
    _, cov = bank
    scores = cov.scores(BLUE_FEE)
    best: dict[str, float] = {}
    for c, s in zip(cov._chunks, scores):
        fam = c.doc_id.rsplit("_", 1)[0]
        best[fam] = max(best.get(fam, 0.0), float(s))
    blue = best["doc_checking_accounts_blue_account"]
    for other in ("doc_business_checking_accounts_world_blue", "doc_business_checking_accounts_"
                  "navy_blue", "doc_checking_accounts_light_blue_account",
                  "doc_checking_accounts_bluest_account"):
        assert blue > best[other], other


def test_lime_green_wire_pricing_first(bank):
    _, cov = bank
    assert _docs(cov.search(LIME_WIRE, 1), 1) == ["doc_business_checking_accounts_lime_green_004"]


def test_filters_apply_and_nothing_covered_is_not_ranked(bank):
    _, cov = bank
    assert cov.search("zzqx unknownword", 10) == []
    hits = cov.search(BLUE_FEE, 10, {"doc_id": "doc_checking_accounts_bluest_account_001"})
    assert hits and {h.chunk.doc_id for h in hits} == {"doc_checking_accounts_bluest_account_001"}
    assert all(h.retriever == "title" for h in hits) and hits[0].score == 1.0


def test_config_switch_validates():
    assert FusionConfig().title_score == "bm25"
    assert FusionConfig(title_score="coverage").title_score == "coverage"
    with pytest.raises(ValueError):
        FusionConfig(title_score="phrase")


def test_a_chunk_with_no_name_is_never_ranked():
    chunks = [Chunk(id="abcdef0123456789#prose@0-3", doc_id="abcdef0123456789", text="fee",
                    chunk_type="prose", start_char=0, end_char=3, token_count=1)]
    lex = LexicalIndex().build(chunks)
    assert TitleCoverage(lex).search("fee", 5) == []


def test_documents_without_a_name_are_not_ranked():
    """HaluEval's paragraphs: hash ids and a first-60-characters title name nothing."""
    text = "Blue Account fees are listed here"
    chunks = [Chunk(id="0123456789abcdef#prose@0-33", doc_id="0123456789abcdef", text=text,
                    chunk_type="prose", start_char=0, end_char=len(text), token_count=6,
                    metadata={"title": text})]
    lex = LexicalIndex().build(chunks)
    assert lex.fields().search("Blue Account fees", 5)  # the BM25 title field matches it
    assert TitleCoverage(lex).search("Blue Account fees", 5) == []


def test_an_empty_coverage_list_takes_no_part_in_fusion():
    """Where the title retriever names nothing (HaluEval), fusing it changes nothing: the
    fused list and its scores are the dense + BM25 fusion's own."""
    from agentic_rag.documents import Hit
    from agentic_rag.retrieve.retrievers import FusionRetriever

    chunks = [Chunk(id=f"d{i}#prose@0-3", doc_id=f"d{i}", text="abc", chunk_type="prose",
                    start_char=0, end_char=3, token_count=1) for i in range(3)]

    class Index:
        def embed_query(self, q):  # noqa: ANN001, ANN202
            return None

        def search(self, q, k, where, vector=None):  # noqa: ANN001, ANN202
            return [Hit(chunk=c, score=0.9 - i / 10, rank=i + 1) for i, c in enumerate(chunks)]

        def search_lexical(self, q, k, where):  # noqa: ANN001, ANN202
            return [Hit(chunk=c, score=1.0, rank=i + 1) for i, c in enumerate(chunks[::-1])]

        def search_fields(self, q, k, where, score="bm25"):  # noqa: ANN001, ANN202
            return []

    two = FusionConfig()
    three = FusionConfig(retrievers=("dense", "bm25", "title"), title_score="coverage",
                         weights={"dense": 1.0, "bm25": 0.3, "title": 1.0})
    a = FusionRetriever(two, Index()).evidence("q", 3).hits
    b = FusionRetriever(three, Index()).evidence("q", 3).hits
    assert [(h.chunk.id, h.score) for h in a] == [(h.chunk.id, h.score) for h in b]
    bm25_title = three.model_copy(update={"title_score": "bm25"})
    c = FusionRetriever(bm25_title, Index()).evidence("q", 3).hits
    assert [h.score for h in c] != [h.score for h in a]  # bm25 title: weight kept (unchanged)
