"""The agent eval's summary and before/after comparison on hand-made rows: each cell against
closed-book and against the default agent on the same questions, and two runs paired by
dataset × cell × question; `gold_served` on hand-made spans; the CLI command (typer, its
list options argparse-style so the committed commands still run) builds the typed options
that `run.evaluate` takes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentic_rag.documents import GoldSpan
from agentic_rag.experiments.stats import paired_bootstrap
from agentic_rag.studies.agent_eval import summary as agent_eval


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


def test_summary_pairs_each_cell_with_closed_book_and_with_the_default(tmp_path, monkeypatch):
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


def test_compare_pairs_two_runs_question_by_question(tmp_path):
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


class _Spans:
    """A dataset's gold: FAQ question q1 has answer spans [100, 200) and [300, 400) of doc
    faq/a; banking task b1 has no spans, only a required document (qrels)."""

    spans = {"q1": [GoldSpan(doc_id="faq/a", start=100, end=200),
                    GoldSpan(doc_id="faq/a", start=300, end=400)]}
    qrels = {"q1": {"faq/a": 1}, "b1": {"policy/x": 1}}


@pytest.mark.parametrize("qid, served, want", [
    ("q1", ["faq/a#prose@150-160"], 1.0),   # inside a gold span
    ("q1", ["faq/a#prose@50-450"], 1.0),    # covers both
    ("q1", ["faq/a#prose@199-250"], 1.0),   # one character in common
    ("q1", ["faq/a#prose@0-100"], 0.0),     # ends where the gold starts: [start, end) spans
    ("q1", ["faq/a#prose@200-300"], 0.0),   # exactly the gap between the two gold spans
    ("q1", ["faq/b#prose@100-200"], 0.0),   # the gold offsets, another document
    ("q1", ["faq/a#code@0-50", "faq/a#prose@390-500"], 1.0),  # any served chunk counts
    ("q1", [], np.nan),                     # nothing served: not a retrieval miss
    ("b1", ["policy/x#prose@0-10"], 1.0),   # no spans: a required document served
    ("b1", ["policy/y#prose@0-10"], 0.0),
])
def test_gold_served_overlaps_gold_spans_or_finds_required_documents(qid, served, want):
    df = pd.DataFrame([{"dataset": "d", "qid": qid, "served": served}])
    got = agent_eval.gold_served(df, load=lambda name: _Spans)
    assert (np.isnan(want) and np.isnan(got[0])) or got[0] == want


def test_cli_command_runs_the_package_evaluation(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from agentic_rag.cli.main import app

    monkeypatch.setattr(agent_eval, "gold_served", lambda df: pd.Series(np.nan, index=df.index))
    rows = [_row("closed_book:native", "q0", 0.1, searches=0), _row("free:json", "q0", 0.5)]
    _write(tmp_path / "r", rows)
    res = CliRunner().invoke(app, ["agent-eval", "--run", "r", "--runs-dir", str(tmp_path),
                                   "--summarize-only"])
    assert res.exit_code == 0, res.output
    assert set(pd.read_csv(tmp_path / "r" / "summary.csv")["cell"]) == {"closed_book:native",
                                                                         "free:json"}
    assert (f"Reproduce: `AGENTIC_RAG_DATA=datasets/cache .venv/bin/agentic-rag agent-eval "
            f"--run r --runs-dir {tmp_path} --summarize-only`") in (tmp_path / "r" / "summary.md").read_text()
    # a bad cell is refused before any LLM server starts
    res = CliRunner().invoke(app, ["agent-eval", "--run", "x", "--runs-dir", str(tmp_path),
                                   "--cells", "retrieve_first:telepathy"])
    assert res.exit_code == 2 and "not policy:mode[:gate]" in res.output
    assert not (tmp_path / "x").exists()
    res = CliRunner().invoke(app, ["agent-eval", "--help"])
    assert res.exit_code == 0
    assert "--runs-dir" in res.output and "--banking-question" in res.output


def test_committed_commands_parse_into_the_same_options(monkeypatch):
    """A command recorded by the former argparse script (list options as `--cells a b c`)
    runs under `agentic-rag agent-eval` with the same options, and `command_line` prints
    options that parse back to themselves; the bare `--corpus-size` means whole corpora."""
    from typer.testing import CliRunner

    from agentic_rag.cli.main import app
    from agentic_rag.studies.agent_eval import run
    from agentic_rag.studies.agent_eval.options import AgentEvalOptions, command_line

    seen = []
    monkeypatch.setattr(run, "evaluate", lambda opts, **k: seen.append(opts))
    recorded = ("experiments/agent_eval.py --run agent-v6 --split test --n 30 --threads 2 "
                "--port 8777 --datasets tau2-banking --cells closed_book:native "
                "retrieve_first:native free:native tool_required:native tool_required:json "
                "--budget-min 15")
    res = CliRunner().invoke(app, ["agent-eval", *recorded.split()[1:]])
    assert res.exit_code == 0, res.output
    want = AgentEvalOptions(run="agent-v6", n=30, threads=2, port=8777,
                            datasets=("tau2-banking",), budget_min=15.0,
                            cells=("closed_book:native", "retrieve_first:native", "free:native",
                                   "tool_required:native", "tool_required:json"))
    assert seen == [want]
    assert run.reproduce(recorded).endswith("bin/agentic-rag agent-eval" + recorded[len(
        "experiments/agent_eval.py"):])
    odd = AgentEvalOptions(run="r", corpus_size={}, cells=("free:json",), no_judge=True,
                           datasets=["python-faq", "tau2-banking"], threads=1)
    line = command_line(odd)
    assert line == ("agentic-rag agent-eval --run r --cells free:json --threads 1 "
                    "--corpus-size --no-judge")
    res = CliRunner().invoke(app, line.split()[1:])
    assert res.exit_code == 0, res.output
    assert seen[-1] == odd
    for bad, msg in ((["--corpus-size", "python-faq"], "use DATASET=N"),
                     (["--split", "train"], "use one of dev, test, all")):
        res = CliRunner().invoke(app, ["agent-eval", "--run", "x", *bad])
        assert res.exit_code == 2 and msg in res.output, res.output
