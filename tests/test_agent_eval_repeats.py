"""`agent-eval --repeats K`: the seed reaches the reply cache key (a sampled repeat never reads
a greedy run's reply, nor another seed's); the summary of hand-made repeated rows (repeats
averaged first, pass^k per question and per cell, the spread across repeats, the flips, the
greedy run beside them); the trajectory metrics in the summary, from recorded and from older
rows; banking-products loads with its gold; the options refuse bad values. The seed honoured
by the real llama-server (same seed → same reply) is the `llm` test at the end."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pandas as pd
import pytest

from agentic_rag.config_llm import LLMConfig
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.studies.agent_eval import repeats
from agentic_rag.studies.agent_eval import summary as agent_eval
from agentic_rag.studies.agent_eval.options import REPEAT_SEED, AgentEvalOptions
from agentic_rag.studies.agent_eval.run import _key, sampled, sampling


def _client(calls: list):
    def create(**kw):
        calls.append(kw)
        return NS(choices=[NS(message=NS(content=f"reply {len(calls)}", tool_calls=None),
                              finish_reason="stop", logprobs=None)],
                  usage=NS(prompt_tokens=3, completion_tokens=2))
    return NS(chat=NS(completions=NS(create=create)))


def test_the_seed_is_sent_and_keys_the_reply_cache(tmp_path):
    calls: list[dict] = []
    cache = ChatCache(tmp_path / "llm.sqlite")
    greedy_cfg = LLMConfig(base_url="http://x/v1", model="m")
    client = _client(calls)

    def model(cfg: LLMConfig) -> OpenAIChatModel:
        return OpenAIChatModel(cfg, client=client, cache=cache)

    msgs = [{"role": "user", "content": "hi"}]
    greedy = model(greedy_cfg).chat(msgs)
    assert "seed" not in calls[-1] and calls[-1]["temperature"] == 0.0  # greedy: as before
    r1 = model(sampled(greedy_cfg, 0.7, 1)).chat(msgs)
    assert calls[-1]["seed"] == 1 and calls[-1]["temperature"] == 0.7 and len(calls) == 2
    assert r1.content != greedy.content  # not the greedy run's cached reply
    again = model(sampled(greedy_cfg, 0.7, 1)).chat(msgs)
    assert len(calls) == 2 and again.cached and again.content == r1.content  # its own, cached
    r2 = model(sampled(greedy_cfg, 0.7, 2)).chat(msgs)
    assert len(calls) == 3 and calls[-1]["seed"] == 2 and r2.content != r1.content
    assert model(greedy_cfg).chat(msgs).content == greedy.content and len(calls) == 3


def test_repeats_sample_with_a_seed_each_and_a_single_run_is_greedy():
    llm = LLMConfig()
    assert sampling(AgentEvalOptions(run="r"), llm) is None
    t, seeds = sampling(AgentEvalOptions(run="r", repeats=4), llm)
    assert t == 0.7 and seeds == [REPEAT_SEED + r for r in range(4)]
    assert sampling(AgentEvalOptions(run="r", repeats=2, temperature=1.0), llm)[0] == 1.0
    assert sampling(AgentEvalOptions(run="r", repeats=2), LLMConfig(temperature=0.3))[0] == 0.3
    # a repeat's row and the greedy row of one question are different rows
    row = {"dataset": "d", "split": "test", "cell": "c", "qid": "q"}
    assert _key(row) != _key({**row, "repeat": 0}) != _key({**row, "repeat": 1})


@pytest.mark.parametrize(("kw", "match"), [
    ({"repeats": 0}, "--repeats 0"),
    ({"repeats": 2, "temperature": 0.0}, "--temperature 0.0"),
    ({"temperature": 0.7}, "--temperature is for --repeats"),
    ({"datasets": ["banking"]}, "--datasets banking: use one or more of"),
])
def test_bad_options_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        AgentEvalOptions(run="r", **kw)


def _row(qid: str, repeat: int | None, correct: float, searches: int = 1, **kw) -> dict:
    row = {"dataset": "banking-products", "split": "test", "cell": "retrieve_first:native",
           "qid": qid, "i": int(qid[1:]), "searches": searches, "searched": 1.0,
           "model_searches": searches - 1, "retrieval_iterations": searches, "token_f1": None,
           "abstained": 0.0, "citation_valid": 1.0, "cites_served": 0.0, "failed": 0.0,
           "latency_s": 1.0, "cached_calls": 0, "prompt_tokens": 10, "completion_tokens": 5,
           "action_failures": 0, "evidence": "", "figure_correct": correct,
           "queries": [f"question {qid}"] * searches, **kw}
    if repeat is not None:
        row.update({"repeat": repeat, "llm_seed": REPEAT_SEED + repeat, "temperature": 0.7})
    return row


def _judgement(row: dict) -> dict:
    return {k: row[k] for k in ("dataset", "split", "cell", "qid", "repeat") if k in row} | {
        "correct": row["figure_correct"], "hallucinated": np.nan, "judge_failures": 0}


def _run(tmp_path: Path, rows: list[dict]) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run_dir / "judgements.jsonl").write_text(
        "".join(json.dumps(_judgement(r)) + "\n" for r in rows))
    return run_dir


GOLD = {"q0": "d0", "q1": "d1", "q2": "d2", "q3": "d3"}


def _load(name: str):  # noqa: ANN202 - the datasets' gold, by hand
    return NS(qrels={q: {d: 1} for q, d in GOLD.items()}, spans={})


def test_repeats_summary_pass_k_spread_flips_and_the_greedy_run(tmp_path):
    # q0 passes 4/4, q1 2/4 (flips), q2 0/4; the greedy run passes q0 and q1
    verdicts = {"q0": [1, 1, 1, 1], "q1": [1, 0, 1, 0], "q2": [0, 0, 0, 0]}
    served = {"q0": ["d0#p@0-5"], "q1": ["d9#p@0-5"], "q2": ["d2#p@0-5", "d7#p@0-5"]}
    rows = [_row(q, r, v[r], served=served[q], served_by_search=[served[q]], llm_turns=1)
            for q, v in verdicts.items() for r in range(4)]
    rows += [_row(q, None, float(q != "q2"), served=served[q]) for q in verdicts]  # older rows
    # q3: the run was cut after its second repeat: left out of the means, pass^k and spread
    rows += [_row("q3", r, 1.0, served=["d3#p@0-1"]) for r in range(2)]
    run_dir = _run(tmp_path, rows)
    s = agent_eval.summarize(run_dir, load=_load).set_index("runs")
    assert s.loc["sampled×4", "n"] == 3  # questions, each one's repeats averaged first
    assert s.loc["sampled×4", "correct"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert s.loc["greedy", "correct"] == pytest.approx(2 / 3)
    # the trajectory metrics, from recorded rows and from older ones (one search: known)
    for runs in ("sampled×4", "greedy"):
        assert s.loc[runs, "first_search_gold"] == pytest.approx(2 / 3)
        assert s.loc[runs, "served_doc_precision"] == pytest.approx((1 + 0 + 0.5) / 3)
        assert s.loc[runs, "served_doc_recall"] == pytest.approx(2 / 3)
        assert s.loc[runs, "llm_turns"] == 1.0 and s.loc[runs, "repeated_queries"] == 0.0
    per_q = pd.read_csv(run_dir / "passk.csv")
    q = per_q[per_q.success == "correct"].set_index("qid")
    assert q["c"].tolist() == [4, 2, 0, 2] and q["n"].tolist() == [4, 4, 4, 2]  # q3: 2 so far
    assert q.loc["q1", "pass^2"] == pytest.approx(1 / 6) and q.loc["q1", "pass@2"] == pytest.approx(5 / 6)
    assert q["flips"].tolist() == [False, True, False, False]
    table = pd.read_csv(run_dir / "passk-summary.csv").set_index("success")
    assert table.loc["correct", "pass^1"] == pytest.approx(0.5)
    assert table.loc["correct", "pass^4"] == pytest.approx(1 / 3)  # only q0 always passes
    assert table.loc["correct", "pass@4"] == pytest.approx(2 / 3)
    assert table.loc["correct", "incomplete"] == 1 and table.loc["correct", "questions"] == 3
    assert table.loc["correct", "flips"] == 1 and table.loc["correct", "greedy"] == pytest.approx(2 / 3)
    spread = pd.read_csv(run_dir / "repeats.csv").set_index("metric")
    assert spread.loc["correct", "repeat_means"] == "0.67 0.33 0.67 0.33"
    assert spread.loc["correct", "questions"] == 3
    assert spread.loc["correct", "min"] == pytest.approx(1 / 3)
    assert spread.loc["correct", "sd"] == pytest.approx(np.std([2 / 3, 1 / 3] * 2, ddof=1))
    assert spread.loc["correct", "greedy_minus_repeated"].startswith("+0.17")  # 2/3 − 1/2
    md = repeats.markdown(repeats.passk_table(per_q), spread.reset_index(), repeats.flips(per_q))
    assert "banking-products/q1 (correct 2/4)" in md and "| 0.33 [" in md


def test_older_rows_with_several_searches_leave_first_search_gold_undefined(tmp_path):
    rows = [_row("q0", None, 1.0, searches=2, served=["d5#p@0-1", "d0#p@0-1"]),
            _row("q1", None, 1.0, searches=1, served=["d1#p@0-1"])]
    s = agent_eval.summarize(_run(tmp_path, rows), load=_load)
    assert s.loc[0, "first_search_gold"] == 1.0  # q1 only: q0's first search is unknown
    assert s.loc[0, "repeated_queries"] == 0.5  # q0 searched its one query twice
    assert s.loc[0, "llm_turns"] == 1.5  # model searches + failed actions + the answer
    assert s.loc[0, "served_doc_recall"] == 1.0  # all it served counts: q0's d0 was served
    assert s.loc[0, "served_doc_precision"] == pytest.approx((0.5 + 1) / 2)


def test_banking_products_load_with_their_gold_documents_and_figures():
    from agentic_rag.studies.agent_eval.tasks import banking_products, load

    items, ds = load("banking-products", "test", 3, 0, None)
    rows = [json.loads(line) for line in Path("datasets/banking-products/test.jsonl").open()]
    by_id = {r["id"]: r for r in rows}
    assert len(items) == 3 and all(it["qid"] in by_id for it in items)
    for it in items:
        assert it["reference"] == by_id[it["qid"]]["answer"]
        assert set(ds.qrels[it["qid"]]) == set(by_id[it["qid"]]["doc_ids"])
        assert it["gold_numbers"]  # the figures its gold documents state
    assert len(banking_products("all").queries) == len(rows) + sum(
        1 for _ in Path("datasets/banking-products/dev.jsonl").open())


@pytest.mark.llm
@pytest.mark.skipif(not os.access(LLMConfig().server.binary or "", os.X_OK),
                    reason="no llama-server build")
def test_llama_server_honours_the_seed(tmp_path):
    """The real llama-server with SmolLM2 sampling at temperature 1: the same seed gives the
    same reply, and over four seeds the replies are not all one. Measured: the very first
    request (its prompt evaluated cold) can differ from the later ones with the same seed,
    which reuse the prompt from the server's cache (slightly different logits): one
    warm-up call first. A repeat's replies are exact on a rerun through the reply cache."""
    from agentic_rag.config_llm import ServerConfig
    from agentic_rag.llm.server import LlamaServer

    from .fakes import free_port

    cfg = ServerConfig(model="smollm2-135m", binary=LLMConfig().server.binary, port=free_port(),
                       cpu_variant="haswell", n_ctx=1024)
    msgs = [{"role": "user", "content": "Name a colour and an animal."}]
    with LlamaServer(cfg, home=tmp_path) as srv:
        def reply(seed: int) -> str:
            chat = OpenAIChatModel(LLMConfig(cache=False, server=cfg, temperature=1.0,
                                             seed=seed), base_url=srv.base_url)
            return chat.chat(msgs, max_tokens=24).content
        reply(0)  # warm-up: the prompt into the server's prompt cache
        first = [reply(s) for s in range(4)]
        assert [reply(s) for s in range(4)] == first
        assert len(set(first)) > 1
