"""Detectors judged on held-out decisions: thresholds chosen on other folds, a fitted
combination never scored on its own training rows, undefined scores not flagged, and the
committed decision table recomputed from the committed labels and scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentic_rag.config import SupportConfig
from agentic_rag.studies.detectors import decisions as d

REPO = Path(__file__).resolve().parents[1]
OWN = REPO / "experiments/detectors/halueval-own"


def test_folds_are_stratified_and_seeded():
    y = np.array([1] * 20 + [0] * 30)
    f = d.stratified_folds(y, 5, 0)
    assert all(((f == k) & (y == 1)).sum() == 4 and ((f == k) & (y == 0)).sum() == 6
               for k in range(5))
    assert (f == d.stratified_folds(y, 5, 0)).all()


def test_threshold_and_flags():
    y = np.array([1, 1, 0, 0])
    s = np.array([0.1, 0.3, 0.6, 0.9])
    t = d.choose_threshold(s, y)
    assert 0.3 < t < 0.6 and (d.flags_at(s, t) == y).all()
    assert d.flags_at(np.array([np.nan, 0.1]), 0.5).tolist() == [0, 1]  # undefined: no flag
    assert d.balanced_accuracy(y, np.zeros(4, dtype=int)) == 0.5


def test_a_threshold_never_sees_the_label_it_is_scored_on():
    """A detector whose score IS the label, but only on one fold: a threshold fitted on that
    fold would be perfect there; held out, each fold is decided by the other folds' choice,
    so noise folds stay at chance."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    s = rng.random(400)  # no signal at all
    fold = d.stratified_folds(y, 5, 0)
    flags, ts = d.held_out_flags(s, y, fold)
    assert len(ts) == 5
    assert abs(d.balanced_accuracy(y, flags) - 0.5) < 0.08  # in-sample choice would overfit
    in_sample = d.flags_at(s, d.choose_threshold(s, y))
    assert d.balanced_accuracy(y, in_sample) > d.balanced_accuracy(y, flags)


def _rows(n: int = 200, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    jq = np.clip(0.6 - 0.3 * y + rng.normal(0, 0.15, n), 0, 1)
    return pd.DataFrame({"qid": [f"q{i}" for i in range(n)], "label": y, "graded_judge_q": jq,
                         "graded_judge": jq, "lexical_numbers": np.where(y == 1, 0.5, 1.0),
                         "answer": ["two words"] * n})


def test_logistic_is_scored_on_held_out_rows_only(monkeypatch):
    """Every prediction of the fitted combination comes from a model whose training rows
    exclude the predicted row."""
    from sklearn import linear_model

    rows = _rows()
    y = rows["label"].to_numpy(int)
    fold = d.stratified_folds(y, 5, 0)
    seen: list[tuple[set, set]] = []
    real = linear_model.LogisticRegression

    class Spy(real):
        def fit(self, x, t):
            self._train = {tuple(r) for r in np.round(x, 12)}
            return super().fit(x, t)

        def predict_proba(self, x):
            seen.append((self._train, {tuple(r) for r in np.round(x, 12)}))
            return super().predict_proba(x)

    monkeypatch.setattr(linear_model, "LogisticRegression", Spy)
    flags, _ = d.logistic_held_out(rows, y, fold)
    held_out = [test for train, test in seen if test != train]
    assert len(held_out) == 5
    x = {tuple(r) for r in np.round(d.features(rows), 12)}
    assert set().union(*held_out) == x
    assert d.balanced_accuracy(y, flags) > 0.8  # the signal is real


def test_decision_table_beside_calling_everything_supported():
    t = d.decision_table(_rows(), candidates=("graded_judge_q", "lexical_numbers"))
    by = t.set_index("detector")
    base = by.loc["call everything supported"]
    assert base["balanced_accuracy"] == 0.5 and base["recall_unsupported"] == 0
    assert by.loc["graded_judge_q", "balanced_accuracy_ci_low"] > 0.5
    assert by.loc["lexical_numbers", "llm_calls_per_answer"] == 0
    assert by.loc["graded_judge_q", "llm_calls_per_answer"] == 1
    assert d.winner(t, ("graded_judge_q", "lexical_numbers")) in ("graded_judge_q",
                                                                  "lexical_numbers")


def test_committed_decisions_recompute_and_the_default_wins():
    """decisions.csv is what the committed labels and scores give, and the default detector
    and threshold are the winner's."""
    from agentic_rag.studies.detectors.own import own_rows

    committed = pd.read_csv(OWN / "decisions.csv")
    again = d.decision_table(own_rows(OWN))
    cols = ["detector", "accuracy", "balanced_accuracy", "recall_unsupported", "coverage"]
    pd.testing.assert_frame_equal(committed[cols], again[cols], check_exact=False, atol=1e-9)
    assert SupportConfig().detector == d.winner(again)
    row = again.set_index("detector").loc[SupportConfig().detector]
    assert SupportConfig().threshold == pytest.approx(row["threshold_all"], abs=5e-4)
    # no question-blind detector decides an answer without checkable words
    rows = own_rows(OWN)
    short = ~rows["checkable"]
    assert short.sum() > 0
    for det in ("graded_judge", "lexical_numbers", "mean_numbers", "lexical", "mean"):
        assert rows.loc[short, det].isna().all()
    assert rows.loc[short, "mean_numbers_q"].equals(rows.loc[short, "graded_judge_q"])
