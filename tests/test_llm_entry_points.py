"""Every command that calls the LLM honours `llm.endpoints` (and `llm.base_url`) as the sweep
runner does: no local llama server is started, the calls go through `make_chat_model` (the
`EndpointPool`), `llm.max_concurrency` per endpoint, and a dead endpoint's calls go to the
other. Each command runs on tiny inputs against two OpenAI-compatible stubs
(`test_endpoints.CountingStub`); starting or probing the embedded server fails the test.

The sweep itself (`agentic-rag sweep`, and so the claims' sweep protocols) is covered in
test_endpoints.py. `ask` makes one call per question, so it shows the failover, not the
spread."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from agentic_rag.cli.main import app
from agentic_rag.config import RAGConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.llm.server import LlamaServer

from .test_endpoints import CountingStub, dead_url, stubs  # noqa: F401 - fixture


@pytest.fixture(autouse=True)
def no_llama(monkeypatch):
    """Starting, or even probing, the embedded llama.cpp server fails the test."""
    def refuse(self, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        pytest.fail(f"a local llama server was started or probed (port {self.config.port})")

    monkeypatch.setattr(LlamaServer, "start", refuse)
    monkeypatch.setattr(LlamaServer, "running", refuse)


@pytest.fixture(params=["two live", "one dead"])
def endpoints(request, stubs):  # noqa: F811
    """(the endpoints' URLs, the live stubs). 'one dead': the dead endpoint listed second, so
    a command's first call goes to it (the pool's first pick) and must fail over."""
    if request.param == "two live":
        live = stubs(2)
        return [s.base_url for s in live], live
    live = stubs(1)
    return [live[0].base_url, dead_url(stubs)], live


def llm_settings(urls: list[str]) -> dict:
    return {"endpoints": urls, "model": "echo-1", "max_retries": 1, "timeout_s": 30.0,
            "max_tokens": 24}


def config_file(tmp_path: Path, urls: list[str]) -> Path:
    path = tmp_path / "llm.yaml"
    path.write_text(yaml.safe_dump({"llm": llm_settings(urls)}))
    return path


def check_spread(urls: list[str], live: list[CountingStub], at_least: int) -> None:
    """Every live endpoint served calls (two live) or the live one served them all (one dead)."""
    assert sum(s.requests for s in live) >= at_least
    assert all(s.requests > 0 for s in live), [s.requests for s in live]


def invoke(*args: str) -> str:
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output + repr(res.exception)
    return res.output


def test_the_one_rule_for_a_local_server():
    assert LLMConfig().uses_local_server
    assert not LLMConfig(base_url="http://a:1/v1").uses_local_server
    assert not LLMConfig(endpoints=["http://a:1/v1", "http://b:2/v1"]).uses_local_server


def test_validate_judge(endpoints, tmp_path):
    urls, live = endpoints
    out = tmp_path / "judge.json"
    invoke("validate-judge", "--n", 2, "--out", out, "--config", config_file(tmp_path, urls),
           "--home", tmp_path / "home")
    res = json.loads(out.read_text())["judge"]
    assert res["n"] == 4 and res["failures"] == 0 and res["model"] == "echo-1"
    check_spread(urls, live, 4)


def test_validate_detectors(endpoints, tmp_path, monkeypatch):
    from agentic_rag.studies.detectors import stats as detectors_stats

    urls, live = endpoints
    cheap = detectors_stats.auroc_ci  # the table's CI: 20 draws, not 2,000 (its cost, not the LLM's)
    monkeypatch.setattr(detectors_stats, "auroc_ci",
                        lambda *a, **k: cheap(*a, **{**k, "n_boot": 20}))
    res = CliRunner().invoke(app, ["validate-detectors", "--n", "2", "--out", str(tmp_path / "out"),
                                   "--home", str(tmp_path), "--config",
                                   str(config_file(tmp_path, urls))])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and not any(r.get("error") for r in rows)
    check_spread(urls, live, 4)


def test_agent_eval(endpoints, tmp_path, monkeypatch):
    from agentic_rag.studies.agent_eval import run as agent_eval
    from agentic_rag.studies.agent_eval import summary as agent_eval_summary

    urls, live = endpoints
    monkeypatch.setattr(agent_eval_summary, "gold_served",
                        lambda df: pd.Series(np.nan, index=df.index))
    monkeypatch.setattr(agent_eval, "build_pipeline", lambda *a, **k: None)  # closed_book only
    res = CliRunner().invoke(app, [
        "agent-eval", "--run", "r", "--runs-dir", str(tmp_path), "--home", str(tmp_path / "home"),
        "--datasets", "python-faq", "--split", "dev", "--n", "2", "--cells", "closed_book:native",
        "--corpus-size", "python-faq=3", "--config", str(config_file(tmp_path, urls))])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (tmp_path / "r" / "rows.jsonl").read_text().splitlines()]
    judged = [json.loads(x) for x in (tmp_path / "r" / "judgements.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and not any(r["failed"] for r in rows)
    assert all(r["answer"].startswith("It is") for r in rows)
    assert len(judged) == 2 and not any(j["judge_failures"] for j in judged)
    check_spread(urls, live, 4)  # 2 agent turns + 2 correctness judgements
    meta = json.loads((tmp_path / "r" / "meta-dev.json").read_text())
    assert meta["server"] == ", ".join(urls) and meta["model"] == "echo-1"
    assert meta["llm"]["identity"] == "remote:echo-1" and meta["llm"]["max_concurrency"] == 2


def test_claims_agent_protocol_gets_the_claims_llm(endpoints, tmp_path, monkeypatch):
    from agentic_rag.studies.agent_eval import run as agent_eval
    from agentic_rag.studies.claims import protocols, registry

    urls, live = endpoints
    base = RAGConfig.from_dict({"llm": llm_settings(urls)})
    # the agent protocol hands the claims' LLM settings to the agent evaluation
    seen = []
    monkeypatch.setattr(agent_eval, "evaluate",
                        lambda opts, meter, llm=None, out=print: seen.append(llm))
    claim = next(c for c in registry.CLAIMS if c.kind == "agent")
    with pytest.raises(FileNotFoundError):  # the fake main wrote no rows
        protocols.run_agent_claim(claim, tmp_path / "runs", tmp_path / "agent-runs",
                                   log=lambda *a: None, llm=base.llm)
    assert seen == [base.llm]


def test_ask(endpoints, tmp_path):
    urls, live = endpoints
    out = invoke("ask", "What is the monthly fee?", "--config", config_file(tmp_path, urls),
                 "--home", tmp_path / "home", "--policy", "closed_book", "--no-support")
    assert "It is" in out
    assert sum(s.requests for s in live) == 1  # one call, served by a live endpoint


def test_testset(endpoints, tmp_path):
    urls, live = endpoints
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in {"fees.md": "# Fees\n\nThe Blue account's monthly fee is $20. ",
                       "cards.md": "# Cards\n\nA locked card is unlocked in the app. "}.items():
        (docs / name).write_text(text * 8 + "\n")  # past the generator's 25-token minimum
    # free mode: the repeated text holds each span 8 times, which span mode leaves out
    invoke("testset", docs, "--n", 2, "--out", tmp_path / "q.jsonl", "--no-knowable",
           "--mode", "free", "--config", config_file(tmp_path, urls), "--home", tmp_path / "home")
    check_spread(urls, live, 2)


class RagasStub(CountingStub):
    """Answers ragas' Faithfulness prompts (instructor's JSON mode): the statements of the
    answer, then each one's verdict (supported)."""

    def reply(self, req: dict) -> tuple[int, dict]:
        status, body = super().reply(req)
        if status == 200:
            text = json.dumps(req.get("messages"))
            value = ({"statements": [{"statement": "The fee is $20.", "reason": "stated",
                                      "verdict": 1}]} if "verdict" in text
                     else {"statements": ["The fee is $20."]})
            body["choices"][0]["message"]["content"] = json.dumps(value)
        return status, body


def test_ragas_scorer(tmp_path, stubs):  # noqa: F811
    from agentic_rag.evaluation.ragas_metrics import RagasScorer

    pytest.importorskip("ragas")
    live = [RagasStub().start() for _ in range(2)]
    try:
        for urls, serving in (([s.base_url for s in live], live),
                              ([live[0].base_url, dead_url(stubs)], live[:1])):
            before = [s.requests for s in serving]
            scorer = RagasScorer(LLMConfig(**llm_settings(urls)), ("faithfulness",),
                                 cache_dir=str(tmp_path / f"ragas-{len(serving)}"))
            for q in ("What is the fee?", "How much is the fee?"):
                res = scorer.score(q, "The fee is $20.", ["The Blue account's fee is $20."])
                assert res.get("ragas_faithfulness") == 1.0, res
            assert all(s.requests > b for s, b in zip(serving, before))
    finally:
        for s in live:
            s.stop()
