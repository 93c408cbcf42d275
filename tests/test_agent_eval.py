"""The agent eval's summary and before/after comparison on hand-made rows: each cell against
closed-book and against the default agent on the same questions, and two runs paired by
dataset × cell × question (experiments/agent_eval.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentic_rag.experiments.stats import paired_bootstrap

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "agent_eval.py"


@pytest.fixture(scope="module")
def agent_eval():
    spec = importlib.util.spec_from_file_location("agent_eval_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(cell: str, qid: str, f1: float, abstained: bool = False, searches: int = 1) -> dict:
    return {"dataset": "python-faq", "split": "dev", "cell": cell, "qid": qid, "i": int(qid[1:]),
            "token_f1": f1, "abstained": abstained, "searches": searches,
            "searched": searches > 0, "model_searches": 0, "retrieval_iterations": searches,
            "correct": None, "citation_valid": True, "cites_served": False, "failed": False,
            "latency_s": 1.0, "cached_calls": 0, "prompt_tokens": 10, "completion_tokens": 5,
            "served": [], "evidence": ""}


def _write(run_dir: Path, rows: list[dict]) -> Path:
    run_dir.mkdir(parents=True)
    (run_dir / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run_dir


def test_summary_pairs_each_cell_with_closed_book_and_with_the_default(agent_eval, tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr(agent_eval, "gold_served", lambda df: pd.Series(np.nan, index=df.index))
    assert agent_eval.DEFAULT_CELL == "retrieve_first:native"
    closed, default, free = [0.1, 0.2, 0.3, 0.0], [0.5, 0.6, 0.2, 0.4], [0.3, 0.1, 0.2, 0.9]
    rows = [_row("closed_book:native", f"q{i}", v, searches=0) for i, v in enumerate(closed)]
    rows += [_row("retrieve_first:native", f"q{i}", v) for i, v in enumerate(default)]
    rows += [_row("free:json", f"q{i}", v) for i, v in enumerate(free[:3])]  # one missing
    s = agent_eval.summarize(_write(tmp_path / "run", rows)).set_index("cell")
    want = paired_bootstrap(free[:3], default[:3])
    assert s.loc["free:json", "token_f1_vs_default"] == \
        f"{want['diff']:+.2f} [{want['ci_low']:+.2f}, {want['ci_high']:+.2f}] (n=3)"
    assert s.loc["free:json", "token_f1_vs_default"].startswith("-0.23")
    assert s.loc["retrieve_first:native", "token_f1_vs_closed"].startswith("+0.28")  # 1.1 / 4
    assert pd.isna(s.loc["retrieve_first:native"].get("token_f1_vs_default"))
    assert pd.isna(s.loc["closed_book:native"].get("token_f1_vs_default"))


def test_compare_pairs_two_runs_question_by_question(agent_eval, tmp_path):
    before = [_row("free:json", f"q{i}", v, abstained=v == 0) for i, v in enumerate([0, 0, .5, .2])]
    after = [_row("free:json", f"q{i}", v) for i, v in enumerate([.4, .6, .5])]  # q3 not rerun
    after.append(_row("tool_required:native", "q0", 0.9))  # only in one run: not compared
    cmp = agent_eval.compare(_write(tmp_path / "a", before), _write(tmp_path / "b", after))
    assert cmp["cell"].tolist() == ["free:json"] and cmp.loc[0, "n"] == 3
    assert cmp.loc[0, "token_f1_before"] == pytest.approx(0.5 / 3)
    assert cmp.loc[0, "token_f1_after"] == pytest.approx(0.5)
    assert cmp.loc[0, "token_f1_diff"].startswith("+0.33")
    assert cmp.loc[0, "abstained_before"] == pytest.approx(2 / 3)
    assert cmp.loc[0, "abstained_diff"].startswith("-0.67")
