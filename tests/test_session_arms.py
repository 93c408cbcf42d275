"""studies/session_arms.py, the figures a session study's rule reads, on hand-made rows: the
paired differences vs the default arm pair the same sessions, and the abstention reasons count
who abstained where the gold passage ranked."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from agentic_rag.studies.session_arms import abstention_reasons, arm_figures


def _rows() -> pd.DataFrame:
    rows = []
    # 8 ANSWERABLE sessions: the default abstains on 4 (a0-a3), the other arm on 2 (a0, a1);
    # 4 UNANSWERABLE: the default abstains on all, the other arm on 2 (u0, u1)
    for arm, abst_a, abst_u in (("message", 4, 4), ("rewrite", 2, 2)):
        for i in range(8):
            rows.append({"arm": arm, "query_id": f"a{i}", "answerability": "ANSWERABLE",
                         "agent_abstained": float(i < abst_a), "agent_clarifying": 0.0,
                         "agent_rouge_l": 0.2 if arm == "message" else 0.3,
                         "agent_prompt_tokens": 1000, "latency_agent_ms": 5000.0})
        for i in range(4):
            rows.append({"arm": arm, "query_id": f"u{i}", "answerability": "UNANSWERABLE",
                         "agent_abstained": float(i < abst_u), "agent_clarifying": 0.0,
                         "agent_rouge_l": 0.0, "agent_prompt_tokens": 1000,
                         "latency_agent_ms": 5000.0})
    return pd.DataFrame(rows)


def test_arm_figures_pair_the_same_sessions_against_the_default():
    df = _rows()
    shuffled = df.sample(frac=1, random_state=1)  # row order must not matter
    default, other = arm_figures(shuffled, "message")
    assert default["arm"] == "message" and "abstained_on_answerable_vs_default" not in default
    assert default["abstained_on_answerable"] == 0.5 and default["recall"] == 1.0
    assert other["abstained_on_answerable"] == 0.25 and other["recall"] == 0.5
    a = other["abstained_on_answerable_vs_default"]
    assert a["n"] == 8 and a["diff"] == pytest.approx(-0.25)
    assert a["ci_low"] <= -0.25 <= a["ci_high"] <= 0  # every pair moves one way or not at all
    r = other["recall_vs_default"]
    assert r["n"] == 4 and r["diff"] == pytest.approx(-0.5) and r["ci_high"] <= 0
    q = other["rouge_l_answerable_vs_default"]
    assert q["diff"] == pytest.approx(0.1) and q["ci_low"] == pytest.approx(0.1)
    assert other["latency_agent_s_median"] == 5.0


def test_abstention_reasons_count_who_abstained_where_the_gold_ranked():
    qrels = {"q1": {"g": 1}, "q2": {"g": 1}, "q3": {"g": 1}, "q4": {"g": 1}}
    df = pd.DataFrame([
        {"query_id": "q1", "answerability": "ANSWERABLE", "agent_abstained": 1.0,
         "retrieved_docs": json.dumps(["g", "x"]), "agent_answer": "I don't know."},
        {"query_id": "q2", "answerability": "ANSWERABLE", "agent_abstained": 1.0,
         "retrieved_docs": json.dumps(["x", "g"]),
         "agent_answer": "I don't know: I searched for the fee and found no figure."},
        {"query_id": "q3", "answerability": "ANSWERABLE", "agent_abstained": 0.0,
         "retrieved_docs": json.dumps(["x"]), "agent_answer": "It is $5 [a1b2c]."},
        {"query_id": "q4", "answerability": "UNANSWERABLE", "agent_abstained": 1.0,
         "retrieved_docs": json.dumps(["g"]), "agent_answer": "I don't know."},
    ])
    assert abstention_reasons(df, qrels) == {
        "abstained, gold at 2-10, gate": 1, "abstained, gold first, model": 1,
        "answered, gold not in the top 10": 1}
