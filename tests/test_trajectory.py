"""Trajectory metrics (`evaluation/trajectory.py`) on hand-worked cases and against ragas'
`ToolCallF1` (the peer whose set precision / recall they follow); pass@k and pass^k against
the closed forms on constructed counts (and against enumerating every k-subset of trials)."""

from __future__ import annotations

import asyncio
import itertools
import math

import pytest

from agentic_rag.evaluation import metrics
from agentic_rag.evaluation.trajectory import (
    NAMES,
    first_search_gold,
    normalise_query,
    pass_at_k,
    pass_hat_k,
    repeated_queries,
    served_doc_scores,
    trajectory_metrics,
)


def test_every_trajectory_metric_is_declared():
    for name in NAMES:
        m = metrics.metric(name)
        assert m.group == "agent" and m.mean and m.paired
    assert metrics.metric("repeated_queries").direction == "lower"
    assert metrics.metric("llm_turns").direction == "lower"


def test_repeated_queries_counts_searches_of_a_query_already_searched():
    assert normalise_query("  Gold card: late FEE? ") == "gold card late fee"
    assert repeated_queries([]) == 0
    assert repeated_queries(["gold card fee", "Gold card fee?", "silver card fee",
                             "gold  card FEE", None]) == 2
    assert repeated_queries(["a", "b", "c"]) == 0


def test_first_search_gold_reads_only_the_first_search_and_is_undefined_without_one():
    by_search = [["doc_b#prose@0-10", "doc_c#list@5-9"], ["doc_a#prose@1-2"]]
    assert first_search_gold(by_search, {"doc_a"}) == 0.0  # found, but by the second search
    assert first_search_gold(by_search, {"doc_c"}) == 1.0
    assert first_search_gold([], {"doc_a"}) is None  # no search: undefined, not a miss
    assert first_search_gold(by_search, set()) is None  # no gold


def test_served_document_precision_and_recall_worked_by_hand():
    # 4 chunks of 3 documents served; 2 gold documents, one of them served
    served = ["d1#prose@0-5", "d1#list@9-20", "d2#prose@0-3", "d3#prose@0-1"]
    s = served_doc_scores(served, ["d1", "d9"])
    assert s["served_doc_precision"] == pytest.approx(1 / 3)
    assert s["served_doc_recall"] == pytest.approx(1 / 2)
    assert s["served_doc_f1"] == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    nothing = served_doc_scores([], ["d1"])
    assert nothing["served_doc_precision"] is None and nothing["served_doc_recall"] == 0.0
    assert served_doc_scores(served, [])["served_doc_recall"] is None


def test_trajectory_metrics_of_one_run():
    m = trajectory_metrics(["fee of gold card", "Fee of Gold card"],
                           [["d2#p@0-1"], ["d1#p@0-1", "d2#p@3-4"]], ["d1"], llm_turns=3)
    assert m == {"repeated_queries": 1.0, "first_search_gold": 0.0, "llm_turns": 3.0,
                 "served_doc_precision": 0.5, "served_doc_recall": 1.0,
                 "served_doc_f1": pytest.approx(2 / 3)}


@pytest.mark.parametrize(("served", "gold"), [
    (["d1", "d2", "d3"], ["d1", "d9"]),
    (["d1"], ["d1"]),
    (["d4", "d5"], ["d1", "d2", "d3"]),
    (["d1", "d2", "d3", "d4"], ["d2", "d4"]),
])
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # ragas 0.4 moves the import in 1.0
def test_served_document_f1_equals_ragas_tool_call_f1(served, gold):
    """Each served document as one `retrieve(doc=…)` call, each gold document as one expected
    call: ragas' ToolCallF1 (set tp / fp / fn) gives the same F1."""
    from ragas.dataset_schema import MultiTurnSample
    from ragas.messages import AIMessage, HumanMessage, ToolCall
    from ragas.metrics import ToolCallF1

    sample = MultiTurnSample(
        user_input=[HumanMessage(content="q"),
                    AIMessage(content="", tool_calls=[ToolCall(name="retrieve", args={"doc": d})
                                                       for d in served])],
        reference_tool_calls=[ToolCall(name="retrieve", args={"doc": d}) for d in gold])
    theirs = asyncio.run(ToolCallF1().multi_turn_ascore(sample))
    ours = served_doc_scores(served, gold)["served_doc_f1"]
    assert ours == pytest.approx(theirs, abs=1e-4)


@pytest.mark.parametrize(("n", "c", "k", "at", "hat"), [
    (4, 4, 4, 1.0, 1.0),
    (4, 0, 1, 0.0, 0.0),
    (4, 2, 1, 0.5, 0.5),  # k = 1: both are the success rate
    (4, 2, 2, 1 - 1 / 6, 1 / 6),  # C(2,2)/C(4,2); 1 − C(2,2)/C(4,2)
    (4, 3, 2, 1.0, 3 / 6),  # fewer failures than k: pass@k = 1
    (4, 3, 4, 1.0, 0.0),
    (5, 4, 3, 1.0, 4 / 10),  # 4 of 5: pass^3 = C(4,3)/C(5,3) = 0.4
])
def test_pass_at_k_and_pass_hat_k_closed_forms(n, c, k, at, hat):
    assert pass_at_k(n, c, k) == pytest.approx(at)
    assert pass_hat_k(n, c, k) == pytest.approx(hat)
    # the unbiased estimators are the shares of k-subsets of the n trials with ≥ 1 / all passes
    trials = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(trials, k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))
    assert pass_hat_k(n, c, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))
    assert pass_hat_k(n, c, k) == pytest.approx(math.comb(c, k) / math.comb(n, k))


def test_pass_k_refuses_impossible_counts():
    for n, c, k in ((4, 5, 1), (4, 2, 5), (4, 2, 0), (3, -1, 1)):
        with pytest.raises(ValueError, match=f"n={n} c={c} k={k}"):
            pass_hat_k(n, c, k)
