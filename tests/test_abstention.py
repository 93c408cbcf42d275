"""The agent's abstention on a generated set's unanswerable questions (issue 21): the share it
abstains on, the share of answerable ones it answers, failed runs apart, Wilson intervals
(checked against scipy's), and `agentic-rag abstention` end to end — on a real index with a
hashing embedder and a scripted chat model (no LLM)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentic_rag.agent.tool import AgenticRAGTool
from agentic_rag.cli.main import app
from agentic_rag.config import AgentConfig, RAGConfig, SupportConfig
from agentic_rag.datasets.qa import load_local
from agentic_rag.experiments.stats import wilson_interval
from agentic_rag.llm.types import ChatReply, LLMError
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.store.index import AgenticIndex
from agentic_rag.studies.abstention import abstention_report, ask_questions, report_lines, select_questions

from .fakes import HashingEmbedder

DOCS = {"fees.md": "# Fees\n\n| Item | Fee |\n|---|---|\n| Wire transfer | 25 dollars |\n",
        "reset.md": "# Reset\n\n1. Open the settings page.\n2. Press reset and confirm.\n"}
# (id, question, answerable, reference): what the scripted agent does is in ScriptedAgent
QUESTIONS = [("u1", "Is there an age limit for a Harbor account?", False, ""),
             ("u2", "What does a cashier's check cost?", False, ""),
             ("u3", "Does the explode feature work offline?", False, ""),
             ("a1", "How much is a wire transfer?", True, "25 dollars"),
             ("a2", "How do I reset the app?", True, "Press reset"),
             ("a3", "What is the wire transfer fee?", True, "25 dollars")]


class ScriptedAgent:
    """Abstains on the age limit and on reset, answers the cheque question anyway (wrongly),
    answers the wire questions from the passages (once with a wrong amount), fails on
    'explode'."""

    model_id = "scripted-agent"

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages, **kw) -> ChatReply:  # noqa: ANN001, ANN003
        self.calls += 1
        q = messages[-1]["content"].rsplit("Question: ", 1)[-1]
        if "explode" in q:
            raise LLMError("timed out after 3 attempts", "timeout", 3)
        if "age limit" in q or "reset" in q:
            return ChatReply(content="I don't know: the passages do not say.")
        if "cashier" in q:
            return ChatReply(content="A cashier's check costs 10 dollars.")
        if "fee" in q:
            return ChatReply(content="The fee is 30 dollars.")
        return ChatReply(content="A wire transfer costs 25 dollars.")


def _set(tmp_path):  # noqa: ANN202
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    qs = tmp_path / "qs.jsonl"
    qs.write_text("".join(json.dumps({"id": i, "question": q, "answer": a, "answerable": ok,
                                      "doc_ids": ["docs/fees.md"] if ok else []}) + "\n"
                          for i, q, ok, a in QUESTIONS))
    return folder, qs


def test_wilson_interval_matches_scipy_and_does_not_collapse_at_zero():
    from scipy.stats import binomtest

    for k, n in [(0, 10), (3, 10), (10, 10), (7, 30), (1, 2)]:
        ci = binomtest(k, n).proportion_ci(method="wilson")
        assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-9)
    lo, hi = wilson_interval(0, 10)
    assert lo == pytest.approx(0.0, abs=1e-12) and hi > 0.25  # 0 of 10 is not "never"
    assert wilson_interval(0, 0) != wilson_interval(0, 0)  # nan: no questions, no share


def test_selection_takes_every_unanswerable_question_and_a_seeded_answerable_sample(tmp_path):
    folder, qs = _set(tmp_path)
    queries = load_local(folder, qs).queries
    sel = select_questions(queries)
    assert [q.id for q in sel[:3]] == ["u1", "u2", "u3"] and len(sel) == 6
    one = select_questions(queries, answerable=1, seed=0)
    assert len(one) == 4 and one[3].metadata["answerable"] is True
    assert [q.id for q in select_questions(queries, 1, seed=0)] == [q.id for q in one]
    assert len(select_questions(queries, answerable=0)) == 3
    with pytest.raises(ValueError, match="no unanswerable questions"):
        select_questions([q for q in queries if q.metadata["answerable"]])


def test_the_report_counts_abstentions_answers_and_failures_apart(tmp_path):
    folder, qs = _set(tmp_path)
    idx = AgenticIndex(RAGConfig(home=str(tmp_path / "home")), embedder=HashingEmbedder())
    idx.add_documents(load_local(folder, qs).corpus)
    tool = AgenticRAGTool(Pipeline(idx.config, index=idx))
    # the model's own abstentions: the support gate only flags (its default, abstain, is below)
    flag = AgentConfig(support=SupportConfig(on_unsupported="flag"))
    queries = select_questions(load_local(folder, qs).queries)
    rows = ask_questions(queries, ScriptedAgent(), tool, flag)
    by = {r["id"]: r for r in rows}
    assert by["u1"]["abstained"] and not by["u2"]["abstained"]
    assert by["u3"]["failed"] and not by["u3"]["abstained"]
    assert by["a1"]["contains_reference"] is True and by["a3"]["contains_reference"] is False
    assert by["a2"]["abstained"] and by["a2"]["contains_reference"] is None
    assert by["a1"]["served"]  # retrieve_first searched before answering
    rep = abstention_report(rows)
    assert rep["unanswerable_abstained"] == {"k": 1, "n": 2, "share": 0.5,
                                             "ci95": [round(x, 3) for x in wilson_interval(1, 2)]}
    assert rep["answerable_answered"]["k"] == 2 and rep["answerable_answered"]["n"] == 3
    assert rep["answers_containing_reference"]["k"] == 1
    assert rep["answers_containing_reference"]["n"] == 2
    assert rep["failed"] == {"unanswerable": 1, "answerable": 0}
    lines = report_lines(rep)
    assert lines[0].startswith("unanswerable questions, the agent abstained on 1 of 2: 50% [")
    assert "too few for a claim" in lines[0]
    # the default gate: "10 dollars" and "30 dollars" are in no served passage -> I don't know
    gated = {r["id"]: r for r in ask_questions(queries, ScriptedAgent(), tool)}
    assert gated["u2"]["abstained"] and gated["a3"]["abstained"]
    assert not gated["a1"]["abstained"] and gated["a1"]["contains_reference"] is True


def test_the_abstention_command_end_to_end(tmp_path, monkeypatch):
    import agentic_rag.llm.chat
    import agentic_rag.store.index

    folder, qs = _set(tmp_path)
    chat = ScriptedAgent()
    monkeypatch.setattr(agentic_rag.store.index, "make_embedder", lambda *a, **k: HashingEmbedder())
    monkeypatch.setattr(agentic_rag.llm.chat, "make_chat_model", lambda *a, **k: chat)
    cfg = tmp_path / "config.yaml"
    RAGConfig().with_overrides({"home": str(tmp_path / "home"),
                                "llm.base_url": "http://127.0.0.1:9/v1"}).save(cfg)
    runner = CliRunner()
    empty = runner.invoke(app, ["abstention", str(folder), str(qs), "--config", str(cfg)])
    assert empty.exit_code == 2 and "is empty: run `agentic-rag index" in empty.output
    assert runner.invoke(app, ["index", str(folder), "--config", str(cfg)]).exit_code == 0
    res = runner.invoke(app, ["abstention", str(folder), str(qs), "--config", str(cfg),
                              "--answerable", "2"])
    assert res.exit_code == 0, res.output
    assert "3 unanswerable + 2 answerable questions" in res.output and "LLM estimate" in res.output
    # the support gate (default abstain) turns the cheque answer's "10 dollars", stated by no
    # passage, into "I don't know": 2 of the 2 unanswerable questions that did not fail
    assert "abstained on 2 of 2: 100%" in res.output and "1 unanswerable, 0 answerable" in res.output
    rows = [json.loads(x) for x in (tmp_path / "qs.abstention.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and chat.calls == 5  # one answer turn per question (retrieve_first)
    report = json.loads((tmp_path / "qs.abstention.json").read_text())
    assert report["unanswerable_abstained"]["n"] == 2 and report["policy"] == "retrieve_first"
    assert report["unanswerable_checked_against_corpus"] is None  # no summary beside the set
    assert "were not checked against the corpus" in res.output
    answerable_only = tmp_path / "answerable.jsonl"
    answerable_only.write_text("".join(x for x in qs.read_text().splitlines(keepends=True)
                                       if '"answerable": true' in x))
    res = runner.invoke(app, ["abstention", str(folder), str(answerable_only), "--config",
                              str(cfg)])
    assert res.exit_code == 2 and "no unanswerable questions" in res.output
