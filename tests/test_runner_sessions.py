"""Sessions in the sweep runner (experiments/sessions.py) and their metrics (evaluation/sessions.py,
answers.rouge_l), on real MTRAG tasks and the project's fakes (a scripted OpenAI client, the
hashing embedder). No server."""

from __future__ import annotations

import pandas as pd
import pytest

from agentic_rag.agent.result import strip_citations
from agentic_rag.agent.session import run_turn
from agentic_rag.config import AgentConfig, RAGConfig
from agentic_rag.config_agent import SessionConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.datasets.base import Query
from agentic_rag.datasets.mtrag import load_mtrag
from agentic_rag.datasets.qa import load_dataset
from agentic_rag.evaluation.answers import rouge_l
from agentic_rag.evaluation.sessions import abstention, clarifying_rate
from agentic_rag.experiments.sessions import (
    AS_WRITTEN,
    history,
    seed_session,
    session_agent_metrics,
    session_query,
)
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.retrieve.query import conversation_queries
from agentic_rag.store.index import AgenticIndex

from .fakes import HashingEmbedder, fake_openai_client


def _chat(script):  # noqa: ANN001, ANN202
    client, completions = fake_openai_client(script)
    return OpenAIChatModel(LLMConfig(max_retries=0), client=client, sleep=lambda s: None), \
        completions


def _no_chat():  # noqa: ANN202
    raise AssertionError("only llm_rewrite may ask for the model")


@pytest.fixture(scope="module")
def fiqa():  # noqa: ANN201
    return load_dataset("mtrag-fiqa")


# ---- ROUGE-L against Google's rouge_score ---------------------------------------------------
def test_rouge_l_matches_rouge_score_on_mtrag_answers(fiqa) -> None:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    refs = [q.answers[0] for q in fiqa.queries[:12]]
    preds = [*refs[1:], "I don't know.", "", "The fee is $5 (five dollars) a month, not 5%."]
    for ref in refs[:8]:
        for pred in preds:
            assert rouge_l(pred, [ref]) == pytest.approx(
                scorer.score(ref, pred)["rougeL"].fmeasure, abs=1e-12), (pred, ref)
    assert rouge_l(refs[0], [refs[0]]) == 1.0
    assert rouge_l("x", ["no overlap", "x y"]) == pytest.approx(2 / 3)  # the best reference


# ---- the dataset and the session's query ------------------------------------------------------
def test_mtrag_sessions_dataset_holds_every_task_with_its_history(fiqa) -> None:
    ds = load_dataset("mtrag")
    assert len(ds.queries) == 507 and len(ds.qrels) == 332
    assert [q.id for q in ds.queries] == sorted(q.id for q in ds.queries)
    assert len(fiqa.queries) == 77 and {d.metadata["collection"] for d in fiqa.corpus} == {"fiqa"}
    task = next(t for t in load_mtrag().tasks if t.turn >= 4)
    q = next(q for q in ds.queries if q.id == task.id)
    users, answers = history(q)
    assert q.text == task.question and users == [t.text for t in task.turns if
                                                 t.speaker == "user"][:-1]
    assert len(answers) == len(users) and all(answers)


def test_the_session_query_is_the_one_a_session_builds(fiqa) -> None:
    q = next(q for q in fiqa.queries if len(history(q)[0]) >= 3)
    users, answers = history(q)
    for mode in ("last_turn", "carry"):
        cfg = SessionConfig(query_mode=mode)
        built = session_query(q, cfg, _no_chat, 200)
        want = conversation_queries([*users, q.text], answers, cfg)[-1]
        assert (built.query, built.mode) == (want.query, mode)
    assert session_query(q, SessionConfig(query_mode="last_turn"), _no_chat, 200).query == \
        " ".join(q.text.split())
    s = seed_session(users, answers, SessionConfig())
    assert [t.answer for t in s.turns] == answers and {t.stop_reason for t in s.turns} == \
        {AS_WRITTEN}
    assert session_query(Query(id="x", text="a question"), SessionConfig(), _no_chat, 200) is None


def test_a_carried_follow_up_differs_from_the_last_turn_somewhere(fiqa) -> None:
    # the knob can fire: on real follow-ups carry searches another query than the turn alone
    differ = sum(session_query(q, SessionConfig(query_mode="carry"), _no_chat, 200).query
                 != " ".join(q.text.split()) for q in fiqa.queries)
    assert 10 < differ < len(fiqa.queries)


def test_a_bad_session_record_is_an_error_naming_the_query() -> None:
    q = Query(id="t1", text="And the fees?", metadata={"session": {"users": ["a", "b"],
                                                                  "answers": ["x"]}})
    with pytest.raises(ValueError, match="t1"):
        history(q)


# ---- the agent's turn on a seeded session ----------------------------------------------------
@pytest.fixture
def pipe(tmp_path, fiqa):  # noqa: ANN001, ANN201
    idx = AgenticIndex(RAGConfig(home=str(tmp_path / "home")), embedder=HashingEmbedder())
    idx.add_documents(fiqa.corpus[:40])
    return Pipeline(idx.config, index=idx)


def test_the_agent_row_is_run_turn_on_the_seeded_session(pipe, fiqa) -> None:
    q = next(q for q in fiqa.queries if len(history(q)[0]) >= 2)
    ref = q.answers[0].strip()
    pipe._chat, calls = _chat([ref])  # the model answers with the reference itself
    gold = fiqa.qrels.get(q.id, {})
    row = session_agent_metrics(pipe, q, judge=True, gold=gold)
    assert row["agent_answer"] == ref and row["agent_rouge_l"] == 1.0
    # its trajectory (evaluation/trajectory.py): the turn's one search, one LLM call
    assert row["repeated_queries"] == 0.0 and row["llm_turns"] == 1.0 and gold
    assert row["agent_token_f1"] == 1.0 and row["agent_abstained"] == 0.0
    assert row["agent_history_turns"] == len(history(q)[0])
    assert row["session_searches"] == 1 and row["session_served_again"] == 0
    # the configured judge's call finds no scripted reply: a failure, never a score
    assert "agent_support_error" in row and "agent_hallucinated" not in row
    # the prompt holds the history as written, then the turn: as `chat` sends it
    sent = calls.requests[0]["messages"]
    users, answers = history(q)
    assert [m["content"] for m in sent if m["role"] == "assistant"][:len(answers)] == \
        [strip_citations(a) for a in answers]
    # the same turn run by hand on the same session gives the same answer and query
    pipe2_chat, _ = _chat([ref])
    from agentic_rag.agent.tool import AgenticRAGTool

    turn = run_turn(seed_session(users, answers, SessionConfig()), q.text, pipe2_chat,
                    AgenticRAGTool(pipe), AgentConfig())
    assert turn.answer == row["agent_answer"] and turn.query == \
        session_query(q, SessionConfig(), _no_chat, 200).query
    # the served documents against the task's gold ones, as the trajectory functions give them
    from agentic_rag.evaluation.trajectory import served_doc_scores

    want = served_doc_scores([p.doc_id for p in turn.passages], gold)
    assert row["served_doc_recall"] == want["served_doc_recall"] is not None
    assert row["served_doc_precision"] == want["served_doc_precision"]
    assert row["first_search_gold"] == float(want["served_doc_recall"] > 0)  # one search


def test_the_lexical_detector_decides_without_a_call(pipe, fiqa) -> None:
    q = next(q for q in fiqa.queries if len(history(q)[0]) >= 1)
    pipe.config = pipe.config.with_overrides({"agent.support.detector": "lexical"})
    pipe._chat, calls = _chat(["Zebras quantum marmalade oscillate."])
    row = session_agent_metrics(pipe, q, judge=True)
    assert len(calls.requests) == 1  # the answer only
    assert row["agent_support_detector"] == "lexical" and row["agent_hallucinated"] == 1.0


# ---- the sweep-level figures ------------------------------------------------------------------
def test_abstention_precision_recall_and_clarifying_rate() -> None:
    rows = pd.DataFrame({
        "answerability": ["UNANSWERABLE"] * 4 + ["ANSWERABLE"] * 6 + ["UNDERSPECIFIED"] * 2
        + ["PARTIAL"],
        "agent_abstained": [1, 1, 1, 0] + [1, 0, 0, 0, 0, 0] + [1, 0] + [1],
        "agent_clarifying": [0] * 10 + [1, 0] + [0]})
    a = abstention(rows, n_boot=200)
    assert (a["n_unanswerable"], a["n_answerable"]) == (4, 6)
    assert a["recall"] == 0.75 and a["precision"] == 0.75
    assert a["abstained_on_answerable"] == pytest.approx(1 / 6)
    assert 0 <= a["recall_ci_low"] <= 0.75 <= a["recall_ci_high"] <= 1
    c = clarifying_rate(rows, n_boot=200)
    assert (c["n_underspecified"], c["clarifying_on_underspecified"]) == (2, 0.5)
    assert c["clarifying_on_other"] == 0.0
