"""answer_in_context / answer@k: whole-token containment of the normalised reference."""

import math

import pytest

from agentic_rag.documents import Chunk, Hit
from agentic_rag.evaluation.answers import token_f1
from agentic_rag.evaluation.containment import answer_at_k, answer_in_context, contains_answer


def _hit(text: str, heading: str = "", source: str = "fees.md", score: float = 1.0) -> Hit:
    c = Chunk(id=f"c-{abs(hash((text, heading)))}", doc_id="fees", text=text, chunk_type="prose",
              heading_path=heading, source=source, start_char=0, end_char=len(text),
              token_count=len(text.split()))
    return Hit(chunk=c, score=score, rank=1)


def test_whole_tokens_after_normalisation():
    assert contains_answer("The domestic wire fee is $10.", ["$10"]) == 1.0
    assert contains_answer("The domestic wire fee is $100.", ["$10"]) == 0.0
    assert contains_answer("Founded by THE Beatles, in 1960", ["beatles"]) == 1.0
    assert contains_answer("nothing here", ["Blue Account", "10"]) == 0.0
    assert contains_answer("fee: 10", ["Blue Account", "10"]) == 1.0  # any reference counts


def test_no_usable_reference_is_nan_not_zero():
    assert math.isnan(contains_answer("anything", []))
    assert math.isnan(contains_answer("anything", ["", "the", "!!"]))  # normalise to nothing


def test_answer_at_k_counts_headings_and_cutoff():
    hits = [_hit("Monthly maintenance: waived."), _hit("It costs $10 per transfer.",
                                                          heading="Lime Green > Domestic wire")]
    assert answer_at_k(hits, ["$10"], k=1) == 0.0
    assert answer_at_k(hits, ["$10"], k=2) == 1.0
    # the answer is only in the heading of the second chunk
    assert answer_at_k(hits, ["Lime Green"], k=2) == 1.0
    assert answer_at_k(hits, ["Lime Green"], k=1) == 0.0
    # per chunk: a reference split across two chunks is not found
    split = [_hit("the answer is Blue"), _hit("Account holders only")]
    assert answer_at_k(split, ["Blue Account"], k=2) == 0.0
    assert answer_in_context("the answer is Blue\n\nAccount holders only", ["Blue Account"]) == 1.0
    with pytest.raises(ValueError, match="k must be"):
        answer_at_k(hits, ["$10"], k=0)


def test_containment_bounds_token_f1_of_an_extractive_answer():
    """An extractive answer equal to the reference has token F1 1 and must be contained in
    a context that holds it; the reverse direction is what the agreement check measures."""
    ctx = "Arthur's Magazine was started in 1844."
    assert answer_in_context(ctx, ["1844"]) == 1.0 and token_f1("1844", ["1844"]) == 1.0
    assert answer_in_context(ctx, ["1845"]) == 0.0
