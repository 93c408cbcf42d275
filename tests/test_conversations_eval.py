"""studies/conversations.py on a hand-built two-conversation MTRAG slice (hashing embedder, no
LLM): the query each mode builds, exact nDCG@10 where carry finds the gold and last_turn does
not, the run folder's summary and gating table, and bad input."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from agentic_rag.config import RAGConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.datasets.mtrag import Mtrag, MtragTask, Turn
from agentic_rag.documents import Document
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.store.index import AgenticIndex
from agentic_rag.studies.conversations import (
    ConversationEvalError,
    final_query,
    run_conversation_eval,
    transcript,
)

from .fakes import HashingEmbedder, fake_openai_client

PASSAGES = {
    "roth": "Roth IRA: a Roth IRA has contribution rules; Roth IRA money is after-tax.",
    "k401": "401k contribution limits: the contribution limits of a 401k plan for the year.",
    "mortgage": "Mortgage closing costs are paid by the buyer at closing of the mortgage.",
}


def _task(cid: str, turns: list[tuple[str, str]], gold: str, split: str,
          multi: str = "Follow-up") -> MtragTask:
    return MtragTask(id=f"{cid}<::>{len(turns)}", conversation_id=cid, turn=len(turns),
                     collection="fiqa", turns=[Turn(speaker=s, text=t) for s, t in turns],
                     reference_answer="", passage_ids=[gold], answerability="ANSWERABLE",
                     multi_turn=multi, question_types=[], split=split)


@pytest.fixture
def slice_():  # noqa: ANN201
    a = _task("c1", [("user", "What is a Roth IRA?"),
                     ("agent", "A Roth IRA is a retirement account."),
                     ("user", "What are its contribution limits?")], "roth", "dev")
    b = _task("c2", [("user", "How are mortgage closing costs paid?")], "mortgage", "dev",
              multi="N/A")
    docs = [Document(id=k, text=v, title=k) for k, v in PASSAGES.items()]
    return Mtrag(tasks=[a, b], corpus={"fiqa": docs},
                 qrels={a.id: {"roth": 1}, b.id: {"mortgage": 1}})


@pytest.fixture
def pipes(tmp_path):  # noqa: ANN001, ANN201
    idx = AgenticIndex(RAGConfig(home=str(tmp_path / "home")), embedder=HashingEmbedder())
    idx.add_documents([Document(id=k, text=v, title=k) for k, v in PASSAGES.items()])
    return {"fiqa": Pipeline(idx.config, index=idx)}


def test_each_mode_builds_its_query_from_the_real_history(slice_):  # noqa: ANN001
    t = slice_.tasks[0]
    assert transcript(t) == (["What is a Roth IRA?", "What are its contribution limits?"],
                             ["A Roth IRA is a retirement account."])
    assert final_query(t, "last_turn") == "What are its contribution limits?"
    assert final_query(t, "carry").endswith(": What are its contribution limits?")
    assert "Roth" in final_query(t, "carry")
    assert final_query(t, "conversation") == ("What is a Roth IRA?\n"
                                              "What are its contribution limits?")
    assert final_query(t, "rewrite") is None
    with pytest.raises(ConversationEvalError, match="query mode 'nope'"):
        final_query(t, "nope")


def test_llm_rewrite_asks_the_model_for_a_later_turn_only(slice_):  # noqa: ANN001
    client, calls = fake_openai_client([json.dumps(
        {"question": "What are the contribution limits of a Roth IRA?"})])
    chat = OpenAIChatModel(LLMConfig(max_retries=0), client=client, sleep=lambda s: None)
    later, first = slice_.tasks
    assert final_query(later, "llm_rewrite", chat) == \
        "What are the contribution limits of a Roth IRA?"
    user = calls.requests[0]["messages"][-1]["content"]
    assert "User: What is a Roth IRA?" in user
    assert user.endswith("Last user message: What are its contribution limits?")
    assert final_query(first, "llm_rewrite", chat) == "How are mortgage closing costs paid?"
    assert len(calls.requests) == 1  # a first turn is its own standalone question


def test_carry_finds_the_gold_that_last_turn_misses(slice_, pipes, tmp_path):  # noqa: ANN001
    out = run_conversation_eval(("last_turn", "carry"), gates=("static", "gated"),
                                mtrag=slice_, pipes=pipes, run_dir=tmp_path / "run", log=str)
    rows = pd.read_json(out / "rows.jsonl", lines=True)
    q = rows[rows["gate"] == ""].set_index(["task", "mode"])["ndcg@10"]
    assert q[("c1<::>3", "carry")] == 1.0
    assert q[("c1<::>3", "last_turn")] == pytest.approx(1 / math.log2(3))  # the gold at rank 2
    assert q[("c2<::>1", "carry")] == q[("c2<::>1", "last_turn")] == 1.0
    s = pd.read_csv(out / "summary.csv").set_index(["group", "mode"])
    assert s.loc[("all", "carry"), "ndcg@10"] == 1.0
    assert s.loc[("all", "carry"), "ndcg@10_diff_vs_base"] == pytest.approx((1 - 1 / math.log2(3)) / 2, abs=1e-4)
    assert s.loc[("Follow-up", "carry"), "n"] == 1
    assert json.loads((out / "chosen.json").read_text())["mode"] == "carry"
    g = pd.read_csv(out / "gating.csv").set_index(["group", "arm"])
    assert g.loc[("all", "static"), "iterations"] == 1.0
    assert g.loc[("all", "static"), "sessions"] == 2
    # a rerun continues: no row twice
    run_conversation_eval(("last_turn", "carry"), gates=("static", "gated"), mtrag=slice_,
                          pipes=pipes, run_dir=out, log=str)
    assert len(pd.read_json(out / "rows.jsonl", lines=True)) == len(rows)


@pytest.mark.parametrize("kw,match", [
    ({"modes": ("last_turn", "bogus")}, "query mode 'bogus'"),
    ({"split": "train"}, "split 'train'"),
    ({"collections": ["banking"]}, "collection 'banking'"),
    ({"modes": ("llm_rewrite",)}, "needs a chat model"),
])
def test_bad_input_is_an_error(slice_, pipes, tmp_path, kw, match):  # noqa: ANN001
    with pytest.raises(ConversationEvalError, match=match):
        run_conversation_eval(mtrag=slice_, pipes=pipes, run_dir=tmp_path / "r", log=str, **kw)


def test_a_failed_row_is_retried_on_rerun_and_replaced(slice_, pipes, tmp_path):  # noqa: ANN001
    from agentic_rag.jsonl import append_rows, read_rows

    rows_path = tmp_path / "run" / "rows.jsonl"
    rows_path.parent.mkdir()
    append_rows(rows_path, [{"task": "c1<::>3", "mode": "carry", "gate": "", "failed": True,
                             "error": "LLMError: connection", "query": None}])
    out = run_conversation_eval(("last_turn", "carry"), mtrag=slice_, pipes=pipes,
                                run_dir=tmp_path / "run", log=str)
    assert len(read_rows(rows_path)) == 5  # the failure kept in the file, then 4 scored rows
    s = pd.read_csv(out / "summary.csv").set_index(["group", "mode"])
    assert s.loc[("all", "carry"), "failures"] == 0
    assert s.loc[("all", "carry"), "ndcg@10"] == 1.0
