"""Metric values against hand-computed cases and against ir-measures."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from agentic_rag.documents import Chunk, GoldSpan, Hit
from agentic_rag.evaluation.answers import exact_match, token_f1
from agentic_rag.evaluation.detection import auroc
from agentic_rag.evaluation.retrieval import doc_run, ir_metrics, span_metrics
from agentic_rag.experiments.stats import bootstrap_ci, paired_bootstrap, pareto_front


def hit(doc, start, end, rank, ctype="prose"):
    c = Chunk(id=f"{doc}#{ctype}@{start}-{end}", doc_id=doc, text="x", chunk_type=ctype,
              start_char=start, end_char=end, token_count=1)
    return Hit(chunk=c, score=1.0 / rank, rank=rank)


def test_doc_level_metrics_hand_computed():
    # ranking of chunks → docs: d2 (rank 1), d1 (rank 2; its 2nd chunk at rank 3 ignored), d3
    hits = [hit("d2", 0, 5, 1), hit("d1", 0, 5, 2), hit("d1", 5, 9, 3), hit("d3", 0, 5, 4)]
    assert list(doc_run(hits)) == ["d2", "d1", "d3"]
    m = ir_metrics({"q": {"d1": 1, "d3": 1}}, {"q": doc_run(hits)})["q"]
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    idcg = 1 / math.log2(2) + 1 / math.log2(3)
    assert m["ndcg@10"] == pytest.approx(dcg / idcg)
    assert m["mrr@10"] == pytest.approx(0.5)
    assert m["recall@5"] == pytest.approx(1.0) and m["precision@5"] == pytest.approx(2 / 5)
    assert ir_metrics({"q": {"d9": 1}}, {"q": {}})["q"]["ndcg@10"] == 0.0


def test_span_metrics_hand_computed():
    gold = [GoldSpan(doc_id="d", start=100, end=200)]
    hits = [hit("d", 50, 150, 1), hit("d", 140, 160, 2), hit("e", 0, 100, 3)]
    m = span_metrics(hits, gold, k=3)
    # retrieved in d: [50,160) = 110 chars, in e: 100 chars; overlap with gold [100,160) = 60
    assert m["span_recall@3"] == pytest.approx(60 / 100)
    assert m["span_precision@3"] == pytest.approx(60 / 210)
    assert m["span_iou@3"] == pytest.approx(60 / (100 + 210 - 60))
    assert span_metrics(hits, gold, k=1)["span_recall@1"] == pytest.approx(50 / 100)


def test_squad_em_and_f1():
    assert exact_match("The Delhi!", ["delhi"]) == 1.0
    assert exact_match("New Delhi", ["Delhi"]) == 0.0
    assert token_f1("New Delhi", ["Delhi"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("Paris", ["London", "paris"]) == 1.0
    assert token_f1("", ["x"]) == 0.0


def test_auroc_and_bootstrap_and_pareto():
    assert auroc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == pytest.approx(0.75)
    assert auroc([0, 1], [0.5, 0.5]) == pytest.approx(0.5)
    # the judge's 0/1 verdicts: 3 of 4 hallucinated answers flagged, 1 of 4 right ones; the
    # ties count half: (3·3 greater + 0.5·(3·1 + 1·3) ties) / 16 pairs
    assert auroc([1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 1, 0, 0, 0]) == pytest.approx(12 / 16)
    assert math.isnan(auroc([1, 1, 1], [0.2, 0.9, 0.5]))  # one class: undefined, not 0.5
    assert math.isnan(auroc([], []))
    with pytest.raises(ValueError, match="3 labels vs 2 scores"):
        auroc([0, 1, 1], [0.1, 0.2])
    lo, hi = bootstrap_ci([1.0] * 10)
    assert lo == hi == 1.0
    lo, hi = bootstrap_ci([0.0, 1.0] * 50)
    assert lo < 0.5 < hi
    pb = paired_bootstrap([0.9, 0.8, 0.7, 0.9], [0.5, 0.5, 0.5, 0.5])
    assert pb["diff"] == pytest.approx(0.325) and pb["ci_low"] > 0 and pb["p_le_0"] == 0.0
    df = pd.DataFrame({"q": [0.9, 0.8, 0.7, 0.85], "lat": [10, 5, 1, 12], "tok": [1, 1, 1, 1]})
    assert pareto_front(df, "q", ["lat", "tok"]).tolist() == [True, True, True, False]


def test_ragas_non_llm_metrics_hand_cases():
    from agentic_rag.evaluation.ragas_metrics import non_llm_scores

    gold = "The Oberoi Group is a hotel company with its head office in Delhi."
    right = non_llm_scores("It is Delhi", "Delhi", [gold, "Paris is nice"], [gold])
    assert right["ragas_string_presence"] == 1.0 and right["ragas_exact_match"] == 0.0
    assert right["ragas_nonllm_context_recall"] == pytest.approx(1.0)
    wrong = non_llm_scores("Mumbai", "Delhi", ["Paris is nice"], [gold])
    assert wrong["ragas_string_presence"] == 0.0 and wrong["ragas_rouge"] == 0.0
    assert wrong["ragas_nonllm_context_recall"] == pytest.approx(0.0)


def test_a_failing_ragas_metric_is_recorded_as_an_error_not_a_score():
    from types import SimpleNamespace as NS

    from agentic_rag.config_llm import LLMConfig
    from agentic_rag.evaluation.ragas_metrics import RagasScorer

    class Metric:  # ragas' `ascore` interface, with a scripted result
        def __init__(self, result):
            self.result = result

        async def ascore(self, **_):
            if isinstance(self.result, Exception):
                raise self.result
            return NS(value=self.result)

    def score(result):
        scorer = RagasScorer(LLMConfig(), ("faithfulness",))
        scorer._metrics = {"faithfulness": Metric(result)}  # instead of ragas' LLM metric
        return scorer.score("q", "a", ["ctx"])

    ok = score(0.5)
    assert ok["ragas_faithfulness"] == 0.5 and "ragas_faithfulness_error" not in ok
    for result, error in [(ValueError("parse failed"), "ValueError: parse failed"),
                          (float("nan"), "ValueError: ragas returned NaN")]:
        out = score(result)
        assert "ragas_faithfulness" not in out and out["ragas_faithfulness_error"] == error
        assert "ragas_faithfulness_seconds" in out  # timed even when it fails


@pytest.mark.parametrize("pred,ref", [("Delhi", "Delhi"), ("delhi", "Delhi"), ("New Delhi", "Delhi")])
def test_exact_match_agrees_with_ragas_on_plain_strings(pred, ref):
    import asyncio

    from agentic_rag.evaluation.ragas_metrics import _ragas

    _ragas()
    from ragas.metrics.collections import ExactMatch

    theirs = asyncio.run(ExactMatch().ascore(reference=ref, response=pred)).value
    ours = exact_match(pred, [ref])
    # ragas compares raw strings; ours normalises case/punctuation/articles (SQuAD)
    assert theirs == (pred == ref) and ours >= theirs
