"""BM25 via bm25s, checked against rank_bm25 (bm25+, robertson) and against Lucene's formula
written out in numpy (lucene, the default)."""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi, BM25Plus

from agentic_rag.config import LexicalConfig
from agentic_rag.documents import Chunk
from agentic_rag.store.lexical import LexicalIndex

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


# ---- the default method, lucene, against Lucene's formula written out in numpy ----------
# rank_bm25 has no Lucene variant. Lucene's BM25Similarity (since Lucene 8, which dropped the
# constant (k1 + 1) factor: the ranking is the same) scores a document d for a query q as
#   sum over the terms t of q:  idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl)),
#   idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)),
# with dl the document's length in tokens and a repeated query term counted each time.
# Lucene itself stores dl lossily (one byte); bm25s and this reference use it exactly.
# Tokens as bm25s makes them: lower case, words of 2+ word characters, English stopwords
# dropped, then the Snowball English stemmer.
LUCENE_QUERIES = ["What is the monthly maintenance fee of the Blue Account?",
                  "dispute a charge on my credit card", "overdraft protection transfer",
                  "international wire wire transfers", "how do I reset my online banking PIN",
                  "ATM withdrawal limits abroad"]


def lucene_tokens(text: str) -> list[str]:
    import re

    import Stemmer
    from bm25s.stopwords import STOPWORDS_EN

    words = [w for w in re.findall(r"(?u)\b\w\w+\b", text.lower()) if w not in STOPWORDS_EN]
    return Stemmer.Stemmer("english").stemWords(words)


def lucene_scores(corpus: list[list[str]], query: list[str], k1: float, b: float) -> np.ndarray:
    vocab = sorted({t for doc in corpus for t in doc})
    col = {t: j for j, t in enumerate(vocab)}
    tf = np.zeros((len(corpus), len(vocab)))
    for i, doc in enumerate(corpus):
        for t in doc:
            tf[i, col[t]] += 1
    n_docs, dl = len(corpus), tf.sum(axis=1)
    df = (tf > 0).sum(axis=0)
    idf = np.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    norm = k1 * (1 - b + b * dl / dl.mean())
    term = idf * tf / (tf + norm[:, None])
    return sum((term[:, col[t]] for t in query if t in col), np.zeros(n_docs))


@pytest.fixture(scope="module")
def banking_chunks(banking):
    from agentic_rag.config import ChunkingConfig
    from agentic_rag.ingest.chunking import AgenticChunker

    cfg = ChunkingConfig()
    chunks = [c for d in banking[:60] for c in AgenticChunker(cfg).chunk(d)]
    return chunks, [c.index_text(cfg.contextual_headers) for c in chunks]  # as the index does


def test_default_bm25_is_lucene_with_english_stopwords_and_stemming():
    assert LexicalConfig().model_dump(include={"method", "stopwords", "stemmer"}) == {
        "method": "lucene", "stopwords": "en", "stemmer": "english"}


def test_default_bm25_tokens_are_the_reference_tokens(banking_chunks):
    chunks, texts = banking_chunks
    idx = LexicalIndex()
    assert idx._tokenize(texts) == [lucene_tokens(t) for t in texts]
    assert idx._tokenize(LUCENE_QUERIES) == [lucene_tokens(q) for q in LUCENE_QUERIES]


@pytest.mark.parametrize("query", LUCENE_QUERIES)
def test_default_bm25_scores_and_ranks_as_lucene(banking_chunks, query):
    chunks, texts = banking_chunks
    cfg = LexicalConfig()
    idx = LexicalIndex(cfg).build(chunks, texts)
    ref = lucene_scores([lucene_tokens(t) for t in texts], lucene_tokens(query), cfg.k1, cfg.b)
    assert (ref > 0).sum() >= 10  # a real ranking, not a single match
    np.testing.assert_allclose(idx.scores(query), ref, rtol=1e-5)
    top = np.argsort(-ref, kind="stable")[:10]
    hits = idx.search(query, k=10)
    assert [h.chunk.id for h in hits] == [chunks[i].id for i in top]
    np.testing.assert_allclose([h.raw_score for h in hits], ref[top], rtol=1e-5)


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
