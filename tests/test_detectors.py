"""Detector validation: resumable rows, failures counted apart, AUROC on scores with a CI."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from agentic_rag.experiments.detectors import auroc_ci, detector_table, run_validation
from agentic_rag.llm import ChatReply, LLMError

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


def test_own_answers_scored_against_hand_labels(tmp_path):
    """Set (ii): detectors on the model's own answers, against pass-1 labels; κ between
    passes over the answers both labelled; bad labels are refused with the file named."""
    from agentic_rag.experiments.detectors import cohens_kappa, own_table, read_labels, score_own

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
