"""Detector validation: resumable rows, failures counted apart, AUROC on scores with a CI."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from agentic_rag.llm.types import ChatReply, LLMError
from agentic_rag.studies.detectors.scoring import run_validation
from agentic_rag.studies.detectors.stats import auroc_ci, detector_table

ITEMS = [{"qid": f"q{i}", "context": f"The fee of plan {i} is {i} dollars.",
          "right": f"{i} dollars", "hallucinated": f"{i + 50} euros"} for i in range(6)]


class _Judge:
    """P(yes) high when the answer's first word is in the context; fails on q3's right answer."""
    model_id = "fake-judge"

    def __init__(self):
        self.calls = 0

    def chat(self, messages, **kw):
        self.calls += 1
        ctx, user = messages[0]["content"], messages[1]["content"]
        answer = user.rsplit("Answer: ", 1)[1]
        if "plan 3" in ctx and answer.startswith("3 "):
            raise LLMError("HTTP 500", "transport", 4)
        p = 0.9 if answer.split()[0] in ctx else 0.2
        return ChatReply(content="yes", top_logprobs=[{"yes": math.log(p), "no": math.log(1 - p)}])


def test_rows_resume_and_failures_are_not_scored(tmp_path):
    lexical_only = run_validation(None, ITEMS[:2], tmp_path, log=lambda *a: None)
    assert len(lexical_only) == 4 and "graded_judge" not in lexical_only
    (tmp_path / "rows.jsonl").unlink()
    judge = _Judge()
    part = run_validation(judge, ITEMS, tmp_path, log=lambda *a: None, max_calls=5)
    assert len(part) == 5 and judge.calls == 5
    # a torn last line (kill -9 mid-write) is dropped and that answer redone
    path = tmp_path / "rows.jsonl"
    path.write_text(path.read_text() + '{"qid": "q2", "lab')
    rows = run_validation(judge, ITEMS, tmp_path, log=lambda *a: None)
    assert len(rows) == 12 and judge.calls == 12
    assert rows[["qid", "label"]].duplicated().sum() == 0
    failed = rows[rows["graded_judge"].isna()]
    assert list(failed["qid"]) == ["q3"] and failed["error"].iloc[0].startswith("transport")
    again = run_validation(judge, ITEMS, tmp_path, log=lambda *a: None)
    assert judge.calls == 12 and len(again) == 12  # finished: read, not re-run
    table = detector_table(rows).set_index("detector")
    assert table.loc["graded_judge", "failures"] == 1 and table.loc["graded_judge", "n"] == 11
    assert table.loc["graded_judge", "auroc"] == 1.0  # separates perfectly on this toy set
    assert table.loc["lexical", "n"] == 12
    assert all(json.loads(x)["judge_version"] for x in path.read_text().splitlines()
               if x.endswith("}"))


def test_auroc_ci_resamples_questions_and_brackets_the_point():
    rng = np.random.default_rng(1)
    y = np.tile([0, 1], 100)
    s = y + rng.normal(0, 0.8, size=200)
    groups = np.repeat(np.arange(100), 2)
    a, lo, hi = auroc_ci(y, s, groups)
    assert lo < a < hi and 0.5 < lo and hi < 1.0
    assert auroc_ci(y, -s, groups)[0] == pytest.approx(1 - a)
    assert detector_table(pd.DataFrame({"qid": [], "label": []})).empty


class _SlowJudge(_Judge):
    """Replies after a delay that varies by answer, so concurrent calls finish out of order."""

    def chat(self, messages, **kw):
        import time

        time.sleep(0.002 * (hash(messages[1]["content"]) % 7))
        return super().chat(messages, **kw)


def test_concurrency_does_not_change_rows(tmp_path):
    """The same rows, in the same order, at 1 and at 4 calls in flight (timings aside)."""
    drop = ["judge_s"]
    one = run_validation(_SlowJudge(), ITEMS, tmp_path / "c1", log=lambda *a: None)
    four = run_validation(_SlowJudge(), ITEMS, tmp_path / "c4", log=lambda *a: None,
                          max_concurrency=4)
    pd.testing.assert_frame_equal(one.drop(columns=drop), four.drop(columns=drop))
    lines = [(tmp_path / d / "rows.jsonl").read_text().splitlines() for d in ("c1", "c4")]
    strip = [[{k: v for k, v in json.loads(x).items() if k not in drop} for x in ls]
             for ls in lines]
    assert strip[0] == strip[1]


def test_own_answers_scored_against_their_labels(tmp_path):
    """Set (ii): detectors on the model's own answers, against pass-1 labels; κ between
    passes over the answers both labelled; bad labels are refused with the file named."""
    from agentic_rag.studies.detectors.own import own_table, read_labels, score_own
    from agentic_rag.studies.detectors.stats import cohens_kappa

    answers = [{"qid": f"q{i}", "context": f"The fee of plan {i} is {i} dollars.",
                "answer": f"{i} dollars" if i % 2 else f"{i + 50} euros"} for i in range(8)]
    answers.append({"qid": "q9", "context": "x", "answer": None, "error": "transport: down"})
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    scored = score_own(_Judge(), tmp_path, log=lambda *a: None, max_concurrency=3)
    assert list(scored["qid"]) == [f"q{i}" for i in range(8)]  # the failed answer is not scored
    first = [{"qid": f"q{i}", "supported": i % 2, "labeller": "t", "pass": 1} for i in range(8)]
    second = [dict(r, supported=1 - r["supported"] if r["qid"] == "q0" else r["supported"],
                   **{"pass": 2}) for r in first[:6]]
    for n, rows in ((1, first), (2, second)):
        (tmp_path / f"labels-pass{n}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows))
    table, info = own_table(tmp_path)
    t = table.set_index("detector")
    assert t.loc["lexical", "n"] == 8 and t.loc["lexical", "auroc"] == 1.0
    assert "mean" in t.index
    assert info["double_labelled"] == 6 and info["agreement"] == 5 / 6
    assert info["kappa"] == pytest.approx(cohens_kappa([0, 1, 0, 1, 0, 1], [1, 1, 0, 1, 0, 1]))
    assert 0 < info["kappa"] < 1
    (tmp_path / "labels-pass1.jsonl").write_text('{"qid": "q1", "supported": "yes"}\n')
    with pytest.raises(ValueError, match="labels-pass1.jsonl.*0 or 1"):
        read_labels(tmp_path, 1)


def test_question_judge_is_added_to_rows_scored_before(tmp_path):
    """Rows scored by the question-blind judge get the question-aware one on the next pass:
    only the missing judge is asked, the row is replaced (read back once per question), and
    the table gains `graded_judge_q` and `mean_numbers_q`."""
    from agentic_rag.evaluation import support
    from agentic_rag.studies.detectors.own import own_table, score_own

    answers = [{"qid": f"q{i}", "question": f"What is the fee of plan {i}?",
                "context": f"The fee of plan {i} is {i} dollars.",
                "answer": f"{i} dollars" if i % 2 else f"{i + 50} euros"} for i in range(6)]

    def write_answers(rows):
        (tmp_path / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in rows))
    (tmp_path / "labels-pass1.jsonl").write_text("".join(
        json.dumps({"qid": f"q{i}", "supported": i % 2, "labeller": "t", "pass": 1}) + "\n"
        for i in range(6)))
    seen = []

    class _Seeing(_Judge):
        def chat(self, messages, **kw):
            seen.append(messages[1]["content"])
            return super().chat(messages, **kw)

    # an older pass, over answers kept without their question: the question-blind judge only
    write_answers([{k: v for k, v in a.items() if k != "question"} for a in answers])
    score_own(_Seeing(), tmp_path, log=lambda *a: None)
    assert len(seen) == 6 and not any("Question:" in s for s in seen)
    seen.clear()
    write_answers(answers)
    scored = score_own(_Seeing(), tmp_path, log=lambda *a: None)
    assert len(seen) == 6 and all(s.startswith(support.QUESTION_JUDGE_PROMPT) for s in seen)
    assert "Question: What is the fee of plan 3?\nAnswer: 3 dollars" in seen[3]
    # q3's "3 dollars" fails in the fake judge: a failure, recorded and not retried
    assert list(scored.loc[scored["graded_judge_q"].isna(), "qid"]) == ["q3"]
    assert scored["graded_judge"].notna().sum() == 5 and "transport" in scored["error"].iloc[3]
    assert set(scored["judge_q_version"]) == {support.QUESTION_JUDGE_VERSION}
    seen.clear()
    lines = (tmp_path / "scored.jsonl").read_text().splitlines()
    assert [json.loads(x)["qid"] for x in lines] == [f"q{i}" for i in range(6)]  # compacted
    assert len(score_own(_Seeing(), tmp_path, log=lambda *a: None)) == 6 and seen == []
    t = own_table(tmp_path)[0].set_index("detector")
    assert t.loc["graded_judge_q", "n"] == 5 and t.loc["graded_judge_q", "failures"] == 1
    assert t.loc["mean_numbers_q", "auroc"] == 1.0


def test_question_detectors_need_the_question():
    from agentic_rag.evaluation.support import judge_messages, support_score

    with pytest.raises(ValueError, match="reads the question"):
        support_score("mean_numbers_q", _Judge(), "The fee is 5 dollars.", "5 dollars")
    ctx = "The fee of plan 1 is 1 dollars."
    assert support_score("graded_judge_q", _Judge(), ctx, "1 dollars", "Fee of plan 1?") == \
        pytest.approx(0.9)
    blind, aware = judge_messages(ctx, "1"), judge_messages(ctx, "1", "Fee of plan 1?")
    assert blind[0] == aware[0]  # the same context prefix as the answer prompt
    assert "Question: Fee of plan 1?" in aware[1]["content"]
    assert "Question" not in blind[1]["content"]


def test_paired_auroc_difference_resamples_questions():
    """The paired difference equals the difference of the two AUROCs, its CI brackets it,
    and a detector against itself differs by exactly 0 on every draw."""
    from agentic_rag.evaluation.detection import auroc
    from agentic_rag.studies.detectors.stats import auroc_diff_ci, paired_table

    rng = np.random.default_rng(2)
    y = np.tile([0, 1], 80)
    groups = np.repeat(np.arange(80), 2)
    good, weak = y + rng.normal(0, 0.5, 160), y + rng.normal(0, 2.0, 160)
    d, lo, hi = auroc_diff_ci(y, good, weak, groups)
    assert d == pytest.approx(auroc(y, good) - auroc(y, weak)) and lo < d < hi and lo > 0
    assert auroc_diff_ci(y, good, good, groups) == (0.0, 0.0, 0.0)
    rows = pd.DataFrame({"qid": groups, "label": y, "graded_judge_q": 1 - good / 3,
                         "graded_judge": 1 - weak / 3})
    t = paired_table(rows)
    assert list(t["detector"]) == ["graded_judge_q"] and t["n"].iloc[0] == 160
    assert t["auroc_diff"].iloc[0] == pytest.approx(d)


def test_validate_judge_decides_at_the_threshold_and_counts_failures_apart():
    """`validate-judge`'s one path: the configured detector's support per answer; accuracy of
    its decisions (support < threshold), AUROC of 1 − support; an LLM failure is counted, not
    scored. The scripted judge: P(yes) 0.9 when the answer's first word is in the context,
    else 0.2; it fails on q3's right answer."""
    from agentic_rag.evaluation.llm_judge import validate_judge

    items = [(f"What is the fee of plan {i}?", it["context"], it["right"], it["hallucinated"])
             for i, it in enumerate(ITEMS)]
    res = validate_judge(_Judge(), items, "graded_judge_q", threshold=0.536)
    assert (res["n"], res["failures"], res["undefined"]) == (11, 1, 0)
    assert res["accuracy"] == 1.0 and res["auroc"] == 1.0
    assert res["flags_right"] == 0.0 and res["flags_hallucinated"] == 1.0
    # a threshold above every score flags all: right answers too, accuracy = share hallucinated
    high = validate_judge(_Judge(), items, "graded_judge_q", threshold=0.95)
    assert high["flags_right"] == 1.0 and high["accuracy"] == 6 / 11 and high["auroc"] == 1.0
    # the question-blind lexical detector leaves no answer undefined here (checkable words)
    lex = validate_judge(None, items, "lexical_numbers", threshold=0.5)
    assert lex["n"] == 12 and lex["failures"] == 0 and lex["accuracy"] == 1.0
