"""BM25 via bm25s, checked against rank_bm25 (the reference implementation)."""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi, BM25Plus

from agentic_rag.config import LexicalConfig
from agentic_rag.documents import Chunk
from agentic_rag.lexical import LexicalIndex

TEXTS = [
    "the wire transfer fee is twenty five dollars",
    "reset your password from the settings page",
    "atm withdrawals are free at partner banks",
    "international wire transfers need a swift code",
    "open a savings account online in minutes",
    "checking account monthly maintenance fee waived",
    "report a lost debit card immediately",
    "the savings account pays interest monthly",
]


def _chunks(texts):
    return [Chunk(id=f"d{i}#prose@0-{len(t)}", doc_id=f"d{i}", text=t, chunk_type="prose",
                  start_char=0, end_char=len(t), token_count=len(t.split()))
            for i, t in enumerate(texts)]


def _plain():
    return dict(stopwords="none", stemmer="none")


@pytest.mark.parametrize("query", ["wire transfer fee", "savings account interest", "lost card"])
def test_bm25plus_scores_equal_rank_bm25(query):
    idx = LexicalIndex(LexicalConfig(method="bm25+", **_plain())).build(_chunks(TEXTS))
    ours = idx.scores(query)
    corpus, q = idx._tokenize(TEXTS), idx._tokenize([query])[0]  # same tokens for both
    ref = BM25Plus(corpus, k1=1.5, b=0.75, delta=0.5).get_scores(q)
    np.testing.assert_allclose(ours, ref, rtol=1e-5)


@pytest.mark.parametrize("query", ["wire transfer fee", "savings account interest", "lost card"])
def test_robertson_matches_okapi_up_to_k1_plus_1(query):
    # rank_bm25's BM25Okapi multiplies every term by (k1 + 1); bm25s' robertson does not.
    # Same ranking, constant ratio. (Query terms here occur in < half the docs: no negative idf.)
    idx = LexicalIndex(LexicalConfig(method="robertson", **_plain())).build(_chunks(TEXTS))
    ours = idx.scores(query)
    corpus, q = idx._tokenize(TEXTS), idx._tokenize([query])[0]
    ref = BM25Okapi(corpus, k1=1.5, b=0.75).get_scores(q)
    np.testing.assert_allclose(ours * 2.5, ref, rtol=1e-5)


def test_search_ranks_filters_and_normalises(tmp_path):
    chunks = _chunks(TEXTS)
    chunks[3] = chunks[3].model_copy(update={"chunk_type": "table_row"})
    idx = LexicalIndex().build(chunks)
    hits = idx.search("wire transfer", k=3)
    assert {h.chunk.doc_id for h in hits[:2]} == {"d0", "d3"}
    assert hits[0].score == 1.0 and hits[0].raw_score > 0
    assert all(h.retriever == "bm25" for h in hits)
    only_rows = idx.search("wire transfer", k=3, where={"chunk_type": "table_row"})
    assert [h.chunk.doc_id for h in only_rows] == ["d3"]
    assert idx.search("zebra quantum", k=3) == []
    idx.save(tmp_path / "lex")
    again = LexicalIndex.load(tmp_path / "lex")
    np.testing.assert_allclose(again.scores("monthly fee"), idx.scores("monthly fee"))
    assert again.chunk_ids == idx.chunk_ids


def test_stemming_and_stopwords_on_by_default():
    idx = LexicalIndex().build(_chunks(TEXTS))
    assert idx.search("transferring wires", k=1)[0].chunk.doc_id in {"d0", "d3"}
    assert idx.search("the", k=3) == []
