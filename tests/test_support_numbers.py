"""Numbers in the lexical support detectors: canonicalised in answer and context alike
("$10.00" = "$10" = "10"), and `lexical_numbers`, which gives 0 to an answer whose number is
not in the context (issue 20's wire-fee case). EM/F1 keep SQuAD's normalisation."""

import json
import math

import pandas as pd
import pytest

from agentic_rag.evaluation.answers import exact_match, normalize_answer, token_f1
from agentic_rag.evaluation.support import (
    SUPPORT_DETECTORS,
    canonical_number,
    combine_support,
    content_words,
    detector_inputs,
    lexical_numbers_support,
    lexical_support,
    numbers,
    support_score,
    support_tokens,
)
from agentic_rag.llm.types import ChatReply
from agentic_rag.studies.detectors.own import score_own
from agentic_rag.studies.detectors.scoring import run_validation

# The τ²-banking passages of the case (tests/test_support_flag.py renders them from the corpus)
NO_AMOUNT = ("You may see one or more of the following fees on your Lime Green Account:\n\n"
             "- Monthly maintenance fee if your balance does not meet the waiver threshold\n"
             "- Fees for sending domestic or international wire transfers")
STATES_10 = ("Wire Transfer Pricing\n- Domestic outgoing wire: $10.00 per transfer.\n"
             "- International outgoing wire: $25.00 per transfer.")
WRONG, RIGHT = "The domestic wire fee is $15.", "The domestic wire fee is $10."


@pytest.mark.parametrize("raw, canonical", [
    ("10", "10"), ("10.00", "10"), ("10.0", "10"), ("10.50", "10.5"), ("1,000", "1000"),
    ("1,000,000.25", "1000000.25"), ("100", "100"), ("007", "7"), ("0.50", "0.5"), ("0", "0"),
    ("0.00", "0")])
def test_canonical_number(raw, canonical):
    assert canonical_number(raw) == canonical


@pytest.mark.parametrize("text, found", [
    ("$10.00", ["10"]), ("$10", ["10"]), ("10", ["10"]), ("a fee of 1,000 dollars", ["1000"]),
    ("$10.50.", ["10.5"]), ("In 1990, he moved; in 2001 he left.", ["1990", "2001"]),
    ("1,2,3", ["1", "2", "3"]), ("4.5%", ["4.5"]), ("2010-05-03", ["2010", "5", "3"]),
    ("the 10th, the 1990s, B2B and MP3", []), ("no number", [])])
def test_numbers_stand_alone_and_are_canonical(text, found):
    assert numbers(text) == found


def test_support_tokens_keep_one_token_per_number_and_squad_words_otherwise():
    assert support_tokens("Domestic outgoing wire: $10.00") == ["domestic", "outgoing", "wire", "10"]
    assert support_tokens("$10.00") == support_tokens("$10") == support_tokens("10") == ["10"]
    assert support_tokens("The 1,000 cats") == ["1000", "cats"]
    assert support_tokens("Costs 10.50 (not 105)") == ["costs", "10.5", "not", "105"]
    text = "Arthur's Magazine was an American literary periodical, the 10th in Philadelphia."
    assert support_tokens(text) == normalize_answer(text).split()  # no number: SQuAD's words
    assert content_words(WRONG) == ["domestic", "wire", "fee", "15"]


def test_em_and_f1_keep_squads_normalisation():
    assert normalize_answer("$10.00") == "1000" and normalize_answer("1,000") == "1000"
    assert normalize_answer("The fee is 10.50 dollars.") == "fee is 1050 dollars"
    assert exact_match("$10", ["$10.00"]) == 0.0 and exact_match("$1,000", ["1000"]) == 1.0
    assert token_f1("10.50", ["1050"]) == 1.0 and token_f1("10.5", ["10.50"]) == 0.0


def test_wire_fee_case():
    """$15 against a passage stating no amount: the lexical share stays 3 of 4 (0.75, not
    flagged at 0.5), `lexical_numbers` gives 0 (flagged). $10 against "$10.00": supported
    (domestic, wire, 10 found; not "fee")."""
    assert lexical_support(NO_AMOUNT, WRONG) == lexical_support(NO_AMOUNT, RIGHT) == 0.75
    assert support_score("lexical_numbers", None, NO_AMOUNT, WRONG) == 0.0 < 0.5
    assert support_score("lexical_numbers", None, NO_AMOUNT, RIGHT) == 0.0
    assert lexical_support(STATES_10, RIGHT) == 0.75  # was 0.5: "$10.00" read as "1000"
    assert support_score("lexical_numbers", None, STATES_10, RIGHT) == 0.75 >= 0.5
    assert lexical_support(STATES_10, WRONG) == 0.5
    assert support_score("lexical_numbers", None, STATES_10, WRONG) == 0.0


def test_lexical_numbers_is_lexical_when_every_number_is_in_the_context():
    ctx = "Arthur's Magazine (1844-1846) was an American literary periodical in Philadelphia."
    for answer in ("Philadelphia magazine", "It was published in Boston", "from 1844 to 1846"):
        assert lexical_numbers_support(ctx, answer) == lexical_support(ctx, answer)
    assert lexical_support(ctx, "from 1844 to 1850") > 0
    assert lexical_numbers_support(ctx, "from 1844 to 1850") == 0.0
    assert lexical_numbers_support("It cost 1,000 dollars.", "1000 dollars") == 1.0


class _Chat:
    model_id = "fake@test"

    def __init__(self, p):
        self.p, self.calls = p, 0

    def chat(self, messages, **kw):
        self.calls += 1
        return ChatReply(content="yes", top_logprobs=[{"yes": math.log(self.p),
                                                       "no": math.log(1 - self.p)}])


def test_every_detector_is_defined_and_mean_numbers_averages_judge_and_numbers():
    assert set(SUPPORT_DETECTORS) == {"graded_judge", "lexical", "mean", "lexical_numbers",
                                      "mean_numbers", "graded_judge_q", "mean_numbers_q"}
    assert detector_inputs("mean_numbers") == ("graded_judge", "lexical_numbers")
    assert detector_inputs("mean_numbers_q") == ("graded_judge_q", "lexical_numbers")
    assert support_score("mean_numbers", _Chat(0.8), NO_AMOUNT, WRONG) == pytest.approx(0.4)
    assert support_score("mean", _Chat(0.8), NO_AMOUNT, WRONG) == pytest.approx(0.775)
    cols = combine_support("mean_numbers", {"graded_judge": pd.Series([0.2, 1.0]),
                                            "lexical_numbers": pd.Series([0.0, 0.5])})
    assert cols.tolist() == [0.1, 0.75]
    with pytest.raises(ValueError, match="needs a chat model"):
        support_score("mean_numbers", None, NO_AMOUNT, WRONG)
    with pytest.raises(ValueError, match="unknown support detector 'numbers'"):
        support_score("numbers", None, NO_AMOUNT, WRONG)


def test_a_pass_recomputes_stale_lexical_scores_and_keeps_the_judges(tmp_path):
    """Rows scored by an older lexical detector are rescored from (context, answer) and the
    file rewritten; the judge's scores stay and the judge is not asked again."""
    items = [{"qid": "w", "context": STATES_10, "right": RIGHT, "hallucinated": WRONG}]
    judge = _Chat(0.7)
    run_validation(judge, items, tmp_path, log=lambda *a: None)
    path = tmp_path / "rows.jsonl"
    stale = [dict(json.loads(x), lexical=0.5) for x in path.read_text().splitlines()]
    for r in stale:
        del r["lexical_numbers"]
    path.write_text("".join(json.dumps(r) + "\n" for r in stale))
    rows = run_validation(None, items, tmp_path, log=lambda *a: None).set_index("label")
    assert judge.calls == 2
    assert rows.loc[0, "lexical"] == 0.75 and rows.loc[1, "lexical_numbers"] == 0.0
    assert rows["graded_judge"].tolist() == pytest.approx([0.7, 0.7])
    on_disk = [json.loads(x) for x in path.read_text().splitlines()]
    assert [r["lexical"] for r in on_disk] == [0.75, 0.5] and len(on_disk) == 2
    # set (ii): the same on scored.jsonl, from the answers' contexts
    own = tmp_path / "own"
    own.mkdir()
    (own / "answers.jsonl").write_text(json.dumps(
        {"qid": "w", "context": STATES_10, "answer": RIGHT}) + "\n")
    (own / "scored.jsonl").write_text(json.dumps(
        {"qid": "w", "lexical": 0.5, "graded_judge": 0.3}) + "\n")
    scored = score_own(None, own, log=lambda *a: None)
    assert scored.iloc[0][["lexical", "lexical_numbers", "graded_judge"]].tolist() == [
        0.75, 0.75, 0.3]
