"""ragas Faithfulness on set (ii)'s subsample: balanced and seeded, resumable, failures
recorded not scored, AUROC beside the other detectors on the same answers. The ragas scorer
is a fake here (the real one needs the LLM for minutes per answer)."""

from __future__ import annotations

import json

import pytest

from agentic_rag.studies.detectors.ragas import ragas_sample, ragas_summary, score_ragas


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def own(tmp_path):
    qids = [f"q{i:03d}" for i in range(12)]
    unsupported = set(qids[:5])
    _write(tmp_path / "answers.jsonl", [
        {"qid": q, "question": f"question {q}", "answer": f"answer {q}",
         "context": f"context of {q}"} for q in qids])
    _write(tmp_path / "labels-pass1.jsonl", [
        {"qid": q, "supported": int(q not in unsupported)} for q in qids])
    # the judge separates the classes perfectly, lexical not at all
    _write(tmp_path / "scored.jsonl", [
        {"qid": q, "graded_judge": 0.1 if q in unsupported else 0.9, "lexical": 1.0,
         "lexical_numbers": 1.0} for q in qids])
    return tmp_path, unsupported


class FakeScorer:
    def __init__(self, unsupported, fail=()):
        self.unsupported, self.fail, self.calls = unsupported, set(fail), []

    def score(self, question, answer, contexts):
        qid = answer.split()[-1]
        self.calls.append(qid)
        assert contexts == [f"context of {qid}"] and question == f"question {qid}"
        if qid in self.fail:
            return {"ragas_faithfulness_error": "TimeoutError: ", "ragas_faithfulness_seconds": 600.0}
        # wrong on one unsupported answer: faithfulness 1.0
        value = 0.0 if qid in self.unsupported and qid != "q000" else 1.0
        return {"ragas_faithfulness": value, "ragas_faithfulness_seconds": 30.0}


def test_sample_is_balanced_and_seeded(own):
    out, unsupported = own
    pick = ragas_sample(out, 6, seed=1)
    assert len(pick) == 6 and sum(q in unsupported for q in pick) == 3
    assert pick == ragas_sample(out, 6, seed=1) and pick != ragas_sample(out, 6, seed=2)
    assert sum(q in unsupported for q in ragas_sample(out, 40)) == 5  # all there are


def test_scores_resume_record_failures_and_compare_on_the_same_answers(own):
    out, unsupported = own
    pick = ragas_sample(out, 8)
    failing = next(q for q in pick if q not in unsupported)
    first = FakeScorer(unsupported, fail={failing})
    score_ragas(None, out, 8, scorer=first, log=lambda *a: None)
    assert sorted(first.calls) == pick
    again = FakeScorer(unsupported)
    score_ragas(None, out, 8, scorer=again, log=lambda *a: None)
    assert again.calls == []  # resumed: nothing scored twice (the failure stays recorded)
    s = ragas_summary(out)
    assert s["answers"] == 8 and s["failures"] == 1 and s["ragas_faithfulness"]["n"] == 7
    assert s["seconds_total"] == pytest.approx(7 * 30.0 + 600.0)
    # the other detectors are scored on the same 7 answers, not on all 12
    assert s["graded_judge"]["n"] == 7 and s["graded_judge"]["auroc"] == 1.0
    assert s["lexical"]["auroc"] == 0.5
    from sklearn.metrics import roc_auc_score

    ok = [q for q in pick if q != failing]
    y = [int(q in unsupported) for q in ok]
    hallucination = [1.0 - (0.0 if q in unsupported and q != "q000" else 1.0) for q in ok]
    assert s["ragas_faithfulness"]["auroc"] == pytest.approx(roc_auc_score(y, hallucination))
