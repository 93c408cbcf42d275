"""The detector-vs-people study's pure parts: the binarisation of the 1-4 votes, Krippendorff's
α against its published example, the stratified order, the decision statistics, and the report
on the committed files without an LLM."""

from __future__ import annotations

import math

import numpy as np

from agentic_rag.studies.detectors.human import (
    decision_stats,
    faithful,
    human_rows,
    judge_order,
    krippendorff_alpha,
    order,
)


def test_binarisation() -> None:
    assert faithful([4, 3, 1], "majority>=3") == 1.0
    assert faithful([4, 2, 1], "majority>=3") == 0.0
    assert math.isnan(faithful([4, 2], "majority>=3"))  # a two-rater tie
    assert faithful([3, 3, 2], "majority>=4") == 0.0
    assert faithful([4, 1], "mean>=2.5") == 1.0


def test_krippendorff_alpha_published_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers, 12 units
    units = [[1, 1, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
             [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [5, 5, 5], [1, 1], [3]]
    assert round(krippendorff_alpha(units, "nominal"), 3) == 0.743
    assert round(krippendorff_alpha(units, "interval"), 3) == 0.849


def test_rows_and_stratified_order() -> None:
    rows = human_rows()
    assert len(rows) == 477 and rows["label"].sum() == 74  # unfaithful under majority >= 3
    o = order(rows, seed=0)
    assert sorted(o) == sorted(rows["qid"]) and o == order(rows, seed=0)
    first = rows.set_index("qid").loc[o[:12]]
    assert first.groupby(["model_id", "collection"]).size().eq(1).all()  # one per stratum


def test_decision_stats() -> None:
    y = np.array([0, 0, 1, 1, 0, 1])
    st = decision_stats(y, y.copy(), np.arange(6), score=y.astype(float))
    assert st["accuracy"] == st["balanced_accuracy"] == st["kappa"] == st["auroc"] == 1.0
    st = decision_stats(y, np.zeros(6, int), np.arange(6))
    assert st["balanced_accuracy"] == 0.5 and st["kappa"] == 0.0


def test_judge_order_whole_tasks() -> None:
    rows = human_rows()
    o = judge_order(rows, seed=0)
    assert sorted(o) == sorted(rows["qid"])
    first = rows.set_index("qid").loc[o[:24]]  # 8 tasks, all three responses each, 2 per collection
    assert first.groupby("task_id").size().eq(3).all()
    assert first.groupby("collection")["task_id"].nunique().eq(2).all()
