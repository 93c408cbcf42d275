"""answer_in_context vs token F1: the agreement figures on a hand-checked set, the reader of a
file another process appends to, and the own-answers rows."""

from __future__ import annotations

import json
import math

import pytest

from agentic_rag.jsonl import read_rows
from agentic_rag.studies.containment_agreement import agreement, own_answer_rows, run_rows


def test_agreement_on_a_hand_checked_set():
    # in context: F1 1.0, 0.6, 0.2; not: 0.0, 0.5. "Right" (F1 ≥ 0.5): 1, 1, 0, 0, 1
    res = agreement([1, 1, 1, 0, 0], [1.0, 0.6, 0.2, 0.0, 0.5])
    assert res["n"] == 5 and res["share_in_context"] == pytest.approx(0.6)
    assert res["f1_in_context"] == pytest.approx(0.6) and res["n_in_context"] == 3
    assert res["f1_not_in_context"] == pytest.approx(0.25) and res["n_not_in_context"] == 2
    assert res["share_f1_at_threshold"] == pytest.approx(0.6)
    # pairs (right, not right): (1,1) ½ (1,0) 1, twice; (0,1) 0 (0,0) ½ → 3.5 / 6
    assert res["auroc"] == pytest.approx(3.5 / 6)
    # observed agreement 3/5, chance 0.6·0.6 + 0.4·0.4 = 0.52
    assert res["agreement"] == pytest.approx(0.6)
    assert res["kappa"] == pytest.approx((0.6 - 0.52) / 0.48)
    assert res["confusion"] == {"in_and_good": 2, "in_not_good": 1, "out_and_good": 1,
                                "out_not_good": 1}
    lo, hi = res["f1_in_context_ci"]
    assert lo <= 0.6 <= hi


def test_agreement_drops_nan_pairs_and_checks_its_input():
    res = agreement([1, math.nan, 0, 1], [0.9, 1.0, math.nan, 0.1], threshold=0.5)
    assert res["n"] == 2 and res["share_in_context"] == 1.0
    assert math.isnan(res["f1_not_in_context"]) and res["n_not_in_context"] == 0
    assert agreement([], [])["n"] == 0
    with pytest.raises(ValueError, match="2 containment values vs"):
        agreement([1, 0], [0.5])
    with pytest.raises(ValueError, match="0 or 1"):
        agreement([0.5, 1], [0.5, 1.0])


def test_perfect_agreement():
    res = agreement([1, 1, 0, 0], [1.0, 0.8, 0.0, 0.2])
    assert res["auroc"] == 1.0 and res["kappa"] == pytest.approx(1.0)


def test_read_complete_jsonl_skips_a_line_being_written_and_leaves_the_file(tmp_path):
    path = tmp_path / "answers.jsonl"
    raw = b'{"a": 1}\n{"a": 2}\n{"a": 3, "b"'
    path.write_bytes(raw)
    assert read_rows(path, repair=False) == [{"a": 1}, {"a": 2}]
    assert path.read_bytes() == raw  # read only: the writer's half line stays


def test_own_answer_rows(tmp_path):
    path = tmp_path / "answers.jsonl"
    rows = [{"qid": "q1", "reference": "Kirk Hammett", "context": "lead guitarist Kirk Hammett.",
             "served_tokens": 4, "answer": "Kirk Hammett"},
            {"qid": "q2", "reference": "1912", "context": "It opened in 1913.",
             "served_tokens": 99, "answer": "1912"},
            {"qid": "q3", "reference": "x", "context": "x", "answer": None, "error": "timeout"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    df = own_answer_rows(path, lambda t: len(t.split()))
    assert df["qid"].tolist() == ["q1", "q2"]  # a failed answer is not scored
    assert df["in_context"].tolist() == [1.0, 0.0]
    assert df["token_f1"].tolist() == [1.0, 1.0]
    assert df["served_view"].tolist() == [True, False]
    path.write_text(json.dumps({"qid": "q1", "answer": "a"}) + "\n")
    with pytest.raises(ValueError, match=r"answers.jsonl: row 1 has no \['reference', 'context'\]"):
        own_answer_rows(path)
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        own_answer_rows(tmp_path / "nope.jsonl")


def test_run_rows_keeps_rows_with_both_metrics(tmp_path):
    rows = [{"config_id": "c00", "query_id": "q1", "token_f1": 0.5, "answer_in_context": 1.0},
            {"config_id": "c00", "query_id": "q2", "answer_in_context": 0.0},  # no LLM sample
            {"config_id": "c01", "query_id": "q1", "token_f1": 0.0, "answer_in_context": 0.0}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    df = run_rows(tmp_path)
    assert df[["qid", "config_id", "in_context", "token_f1"]].values.tolist() == [
        ["q1", "c00", 1.0, 0.5], ["q1", "c01", 0.0, 0.0]]
    assert run_rows(tmp_path / "missing").empty


def test_the_command_takes_several_run_folders_after_one_flag(tmp_path, monkeypatch):
    """`--runs A B` (argparse-style, as before the typer command) reads both folders; the
    bare `--runs` reads none (not the default claim runs)."""
    from typer.testing import CliRunner

    from agentic_rag.cli.main import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "answers.jsonl").write_text("")
    for name in ("r1", "r2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "rows.jsonl").write_text(json.dumps(
            {"query_id": "q", "config_id": "c00", "token_f1": 1.0, "answer_in_context": 1.0})
            + "\n")
    both = CliRunner().invoke(app, ["containment-agreement", "--answers", "answers.jsonl",
                                    "--runs", "r1", "r2", "--threshold", "0.4"])
    assert both.exit_code == 0, both.output
    assert "r1: 1 rows" in both.output and "r2: 1 rows" in both.output
    none = CliRunner().invoke(app, ["containment-agreement", "--answers", "answers.jsonl",
                                    "--runs"])
    assert none.exit_code == 0 and "runs: no claim" in none.output and "r1" not in none.output
