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
