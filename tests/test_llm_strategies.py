"""LLM retrieval strategies (issue 22): query expansion (multi-query, HyDE; expansion.py) and
LLM reranking (pointwise from log-probabilities, listwise; rerank.py), through the project's
one call path (`OpenAIChatModel`: reply cache, retries, `LLMError`) with a scripted client,
and once on the real llama.cpp server with SmolLM2."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace as NS

import httpx
import pytest

from agentic_rag.config import RAGConfig, RerankConfig
from agentic_rag.config_base import ConfigError
from agentic_rag.config_llm import LLMConfig
from agentic_rag.datasets.base import Dataset, Query
from agentic_rag.documents import Chunk, Document, Hit
from agentic_rag.experiments.measure import strategy_columns
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.retrieve.expansion import LLMCost
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.retrieve.rerank import LLMReranker, make_reranker, order_by_ranking
from agentic_rag.retrieve.retrievers import CandidateMemo
from agentic_rag.store.index import AgenticIndex

from .fakes import HashingEmbedder

DOCS = [Document(id="exit.md", title="Exiting", text="# Exit\n\nsys.exit terminates the process "
                 "with a status code.\n"),
        Document(id="files.md", title="Files", text="# Files\n\nopen() reads and writes files "
                 "on disk.\n"),
        Document(id="loops.md", title="Loops", text="# Loops\n\nA for loop iterates over a "
                 "sequence; break leaves the loop.\n")]
QUERY = "how do I stop my program"  # shares no word with exit.md


class FnClient:
    """Stands in for the `openai` client: `respond(request)` gives the reply content and,
    optionally, the first token's {token: logprob}; an exception is raised as is."""

    def __init__(self, respond) -> None:  # noqa: ANN001
        self.respond = respond
        self.requests: list[dict] = []
        self.chat = NS(completions=self)

    def create(self, **req):  # noqa: ANN201
        self.requests.append(req)
        out = self.respond(req)
        content, top = out if isinstance(out, tuple) else (out, None)
        lp = None if top is None else NS(content=[NS(
            token=max(top, key=top.get), logprob=max(top.values()),
            top_logprobs=[NS(token=t, logprob=v) for t, v in top.items()])])
        return NS(choices=[NS(message=NS(content=content, tool_calls=[]), finish_reason="stop",
                              logprobs=lp)],
                  usage=NS(prompt_tokens=100, completion_tokens=7))


def chat_model(respond, cache: ChatCache | None = None) -> tuple[OpenAIChatModel, FnClient]:
    client = FnClient(respond)
    return OpenAIChatModel(LLMConfig(max_retries=0, base_url="http://stub/v1"), client=client,
                           cache=cache, sleep=lambda s: None), client


def user_text(req: dict) -> str:
    return req["messages"][-1]["content"]


@pytest.fixture
def index(tmp_path):
    cfg = RAGConfig(home=str(tmp_path / "home"))
    idx = AgenticIndex(cfg, embedder=RecordingEmbedder())
    idx.add_documents(DOCS)
    return idx


class RecordingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):  # noqa: ANN001, ANN201
        self.texts += list(texts)
        return super().embed(texts)


def pipe(index, chat, **over) -> Pipeline:  # noqa: ANN001
    cfg = index.config.with_overrides({"gate.mode": "static", **over})
    p = Pipeline(cfg, index=index, chat_model=chat)
    p.candidates = CandidateMemo()
    return p


def docs(result) -> list[str]:  # noqa: ANN001
    return [h.chunk.doc_id for h in result.hits]


# ---- query expansion ---------------------------------------------------------------------
def test_multi_query_paraphrases_are_searched_and_fused(index):
    para = ["terminate the process", "exit with a status code", QUERY]  # the query: dropped
    chat, client = chat_model(lambda req: json.dumps({"queries": para}))
    plain = pipe(index, chat, **{"fusion.retrievers": ["bm25"]}).retrieve(QUERY, k=3)[1]
    assert "exit.md" not in docs(plain) and plain.strategy == {}
    p = pipe(index, chat, **{"fusion.retrievers": ["bm25"], "query.expansion": "multi_query",
                             "query.expansion_n": 3})
    _, res = p.retrieve(QUERY, k=3)
    assert docs(res)[0] == "exit.md"  # found only through the paraphrases
    s = res.strategy
    assert s["extra_queries"] == para[:2] and s["error"] is None
    assert (s["llm_calls"], s["llm_cached"], s["llm_prompt_tokens"],
            s["llm_completion_tokens"]) == (1, 0, 100, 7)
    searched = [json.loads(k)[1] for k in p.candidates.lists]
    assert searched == [QUERY, *para[:2]]
    req = client.requests[-1]
    assert user_text(req) == QUERY and "3 different search queries" in req["messages"][0]["content"]
    cols = strategy_columns(s)
    assert cols["strategy_llm_calls"] == 1 and cols["strategy_extra_queries"] == 2
    assert cols["strategy_error"] is None and strategy_columns({}) == {}


def test_hyde_embeds_the_passage_for_the_dense_retriever_only(index):
    passage = "Call sys.exit to terminate the process with a status code."
    chat, _ = chat_model(lambda req: passage)
    p = pipe(index, chat, **{"query.expansion": "hyde"})
    _, res = p.retrieve(QUERY, k=3)
    assert passage in index.embedder.texts  # the hypothetical passage was embedded
    runs = {(json.loads(k)[0], json.loads(k)[1]) for k in p.candidates.lists}
    assert ("dense", passage) in runs and ("bm25", passage) not in runs
    assert ("dense", QUERY) in runs and ("bm25", QUERY) in runs
    assert docs(res)[0] == "exit.md" and res.strategy["extra_queries"] == [passage]


def test_failed_expansion_serves_the_unexpanded_list_and_is_recorded(index):
    def down(req):  # noqa: ANN001, ANN202
        raise httpx.ConnectError("connection refused")

    chat, _ = chat_model(down)
    _, plain = pipe(index, chat).retrieve(QUERY, k=3)
    _, res = pipe(index, chat, **{"query.expansion": "multi_query"}).retrieve(QUERY, k=3)
    assert docs(res) == docs(plain) and len(res.hits) == 3
    assert res.strategy["llm_calls"] == 1 and res.strategy["extra_queries"] == []
    # the error names the setting whose call failed: with no server, the LLM it needs
    assert res.strategy["error"].startswith("query.expansion=multi_query: llm transport")
    assert strategy_columns(res.strategy)["strategy_error"] == res.strategy["error"]


def test_expansion_and_rerank_replies_are_cached_on_rerun(index, tmp_path):
    def respond(req):  # noqa: ANN001, ANN202
        if req.get("top_logprobs"):
            return "yes", {"yes": math.log(0.6), "no": math.log(0.4)}
        return json.dumps({"queries": ["terminate the process"]})

    chat, client = chat_model(respond, ChatCache(tmp_path / "llm.sqlite"))
    over = {"query.expansion": "multi_query", "rerank.kind": "llm", "rerank.depth": 2}
    _, first = pipe(index, chat, **over).retrieve(QUERY, k=3)
    sent = len(client.requests)
    assert sent == 3 and first.strategy["llm_cached"] == 0  # 1 expansion + 2 pointwise
    _, again = pipe(index, chat, **over).retrieve(QUERY, k=3)
    assert len(client.requests) == sent  # nothing sent again
    s = again.strategy
    assert s["llm_calls"] == s["llm_cached"] == 3 and docs(again) == docs(first)
    # a cached reply is charged what it cost when it was made
    assert s["llm_prompt_tokens"] == first.strategy["llm_prompt_tokens"] == 300


# ---- rerank --------------------------------------------------------------------------------
def hits(n: int) -> list[Hit]:
    return [Hit(chunk=Chunk(id=f"c{i}", doc_id=f"d{i}", text=f"passage {i}", chunk_type="prose",
                            heading_path=f"H{i}", start_char=0, end_char=9, token_count=3),
                score=1.0 - i / 10, rank=i, retriever="dense+bm25") for i in range(1, n + 1)]


def test_pointwise_orders_by_p_relevant_from_logprobs_and_respects_depth():
    p_yes = {"passage 1": 0.2, "passage 2": 0.9, "passage 3": 0.6, "passage 4": 0.99}

    def respond(req):  # noqa: ANN001, ANN202
        text = req["messages"][0]["content"]
        p = next(v for k, v in p_yes.items() if k in text)
        return "no", {"No": math.log((1 - p) * 0.9), " yes": math.log(p * 0.9), "the": -9.0}

    chat, client = chat_model(respond)
    cost = LLMCost()
    out = LLMReranker(RerankConfig(kind="llm", depth=3), chat).rerank("q?", hits(4), cost)
    assert [h.chunk.id for h in out] == ["c2", "c3", "c1", "c4"]  # c4: below depth, stays 4th
    assert [h.rank for h in out] == [1, 2, 3, 4]
    assert [round(h.score, 6) for h in out[:3]] == [0.9, 0.6, 0.2]  # P(yes)/(P(yes)+P(no))
    assert len(client.requests) == 3 == cost.calls and not cost.errors
    req = client.requests[0]
    assert req["max_tokens"] == 1 and req["top_logprobs"] == 20 and req["logprobs"] is True
    assert "H1\npassage 1" in req["messages"][0]["content"] and "Question: q?" in user_text(req)


def test_pointwise_without_logprobs_keeps_the_order_and_records_it():
    chat, _ = chat_model(lambda req: "yes")  # an endpoint that returns no log-probabilities
    cost = LLMCost()
    given = hits(3)
    out = LLMReranker(RerankConfig(kind="llm"), chat).rerank("q?", given, cost)
    assert out == given and cost.calls == 1
    assert cost.errors[0].startswith("rerank.kind=llm rerank.mode=pointwise: llm malformed") and \
        "log-probabilities" in cost.errors[0]


def test_listwise_parses_a_ranking_and_tolerates_a_malformed_one():
    reply = {"content": json.dumps({"ranking": [3, 3, 9, 1]})}
    chat, client = chat_model(lambda req: reply["content"])
    cost = LLMCost()
    rr = LLMReranker(RerankConfig(kind="llm", mode="listwise", depth=3), chat)
    out = rr.rerank("q?", hits(4), cost)
    # 3, then 1 (the repeat and the out-of-range 9 ignored), 2 left out: after, then c4
    assert [h.chunk.id for h in out] == ["c3", "c1", "c2", "c4"] and cost.calls == 1
    text = user_text(client.requests[0])
    assert "[1] H1\npassage 1" in text and "[3] H3" in text and "[4]" not in text
    for bad in (json.dumps({"ranking": ["first", 0]}), json.dumps({"order": [1]}), "2, 1, 3"):
        reply["content"] = bad
        cost = LLMCost()
        assert rr.rerank("q2?", hits(4), cost) == hits(4)  # falls back: the fused order
        assert cost.calls == 1 and cost.errors[0].startswith(
            "rerank.kind=llm rerank.mode=listwise: llm malformed")
    assert order_by_ranking(hits(2), [2]) == hits(2)[::-1]


def test_rerank_in_the_pipeline_serves_k_of_the_reranked_depth(index):
    def respond(req):  # noqa: ANN001, ANN202
        good = "sys.exit" in req["messages"][0]["content"]
        return "yes", {"yes": math.log(0.9 if good else 0.1), "no": math.log(0.1 if good else 0.9)}

    chat, client = chat_model(respond)
    _, plain = pipe(index, chat, **{"fusion.retrievers": ["dense"]}).retrieve("loop files", k=1)
    assert docs(plain) != ["exit.md"]
    _, res = pipe(index, chat, **{"fusion.retrievers": ["dense"], "rerank.kind": "llm",
                                  "rerank.depth": 3}).retrieve("loop files", k=1)
    assert docs(res) == ["exit.md"] and len(client.requests) == 3  # depth 3 asked for, k 1 served
    assert res.strategy["rerank"] == "llm pointwise 3" and res.strategy["llm_calls"] == 3


# ---- configuration --------------------------------------------------------------------------
@pytest.mark.parametrize("field,value", [
    ("query.expansion", "paraphrase"), ("query.expansion_n", 0), ("rerank.kind", "cross"),
    ("rerank.mode", "pairwise"), ("rerank.depth", 0)])
def test_bad_strategy_values_are_config_errors_naming_the_field(field, value):
    with pytest.raises(ConfigError, match=rf"{field}.*{value}"):
        RAGConfig().with_overrides({field: value})


def test_rerank_needs_a_chat_model_and_the_tuner_refuses_llm_strategies(tmp_path):
    assert make_reranker(RerankConfig(), None) is None
    with pytest.raises(ValueError, match="rerank.kind 'llm' needs a chat model"):
        make_reranker(RerankConfig(kind="llm"), None)
    from agentic_rag.experiments.replay import Tuner

    ds = Dataset(name="tiny", corpus=DOCS, queries=[Query(id=f"q{i}", text=QUERY)
                                                    for i in range(4)], qrels={})
    base = RAGConfig().with_overrides({"query.expansion": "hyde"})
    with pytest.raises(ValueError, match="query.expansion='hyde'.*sweep them instead"):
        Tuner(ds, n=2, split="dev", base=base, cache_dir=tmp_path, prefill=False, log=None)


def test_llm_strategies_sweep_spec_matches_the_committed_yaml():
    from pathlib import Path

    from agentic_rag.experiments.spec import SweepSpec
    from agentic_rag.studies.strategies import LLM_NAMES, REPLY_PACK, strategy_spec

    spec = strategy_spec("tau2-banking", "dev", LLM_NAMES)
    yaml_spec = SweepSpec.load(Path(__file__).parents[1] / "experiments"
                               / "strategies-llm-tau2-banking.yaml")
    assert spec.name == yaml_spec.name == "strategies-llm-tau2-banking-dev"
    assert spec.reply_pack == yaml_spec.reply_pack == REPLY_PACK  # a long run travels with git
    assert strategy_spec("tau2-banking", "dev").reply_pack is None  # no LLM, no pack
    assert [c[2] for c in spec.configs()] == [c[2] for c in yaml_spec.configs()]
    cfgs = [c[2] for c in spec.configs()]
    assert cfgs[0].rerank.kind == "none" and cfgs[0].llm.uses_local_server  # keyed by the model
    assert {(c.query.expansion, c.rerank.kind, c.rerank.mode) for c in cfgs[1:]} == {
        ("multi_query", "none", "pointwise"), ("hyde", "none", "pointwise"),
        ("none", "llm", "pointwise"), ("none", "llm", "listwise"),
        ("multi_query", "llm", "pointwise")}


# ---- the real local model ---------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.llm
def test_multi_query_and_pointwise_rerank_on_the_real_server(index, smol_server, tmp_path):
    """SmolLM2-135M: the prompts reach a real llama.cpp server and its replies are used or
    their failure recorded, the cost is counted, and a rerun is read from the cache."""
    cfg = LLMConfig(base_url=smol_server.base_url, max_retries=1, max_tokens=64)
    chat = OpenAIChatModel(cfg, cache=ChatCache(tmp_path / "llm.sqlite"))
    over = {"query.expansion": "multi_query", "query.expansion_n": 1, "rerank.kind": "llm",
            "rerank.depth": 2}
    expanded = 0
    for q in ("how do I stop my program", "how can I read a file"):
        p = pipe(index, chat, **over)
        _, res = p.retrieve(q, k=3)
        s = res.strategy
        assert len(res.hits) == 3 and s["llm_calls"] >= 2 and s["llm_prompt_tokens"] > 0
        if s["extra_queries"]:
            expanded += 1
            searched = {json.loads(k)[1] for k in p.candidates.lists}
            assert set(s["extra_queries"]) <= searched
        if s["error"] is None:
            assert s["llm_calls"] == 1 + 2  # one expansion, depth pointwise calls
            assert all(0.0 <= h.score <= 1.0 for h in res.hits)
        _, again = pipe(index, chat, **over).retrieve(q, k=3)
        if s["error"] is None:  # every reply was stored: the rerun sends nothing
            assert again.strategy["llm_cached"] == again.strategy["llm_calls"] == 3
            assert docs(again) == docs(res)
    assert expanded >= 1, "SmolLM2 wrote no usable paraphrase for either query"


@pytest.mark.parametrize(("names", "base_url", "starts"), [
    (("default", "hyde"), None, True),             # an LLM strategy: the embedded server
    (("default", "rerank pointwise 10"), None, True),
    (("default", "title 0.5"), None, False),       # no LLM in retrieval: none
    (("default", "hyde"), "http://remote/v1", False),  # an endpoint is called, none started
])
def test_a_sweep_starts_the_embedded_server_when_retrieval_calls_the_llm(
        monkeypatch, tmp_path, names, base_url, starts):
    from agentic_rag.datasets.base import Dataset
    from agentic_rag.experiments.executors import LocalExecutor
    from agentic_rag.studies.strategies import strategy_spec

    started = []

    class Server:  # records what LocalExecutor would start
        def __init__(self, config, home):
            self.config = config

        def running(self):
            return False

        def start(self):
            started.append(self.config)
            return self

        def __enter__(self):
            return self.start()

        def __exit__(self, *exc):
            pass

    monkeypatch.setattr("agentic_rag.llm.server.LlamaServer", Server)
    base = RAGConfig().with_overrides({"llm.base_url": base_url}) if base_url else None
    spec = strategy_spec("tau2-banking", "dev", names, base=base)
    ds = Dataset(name="tiny", corpus=DOCS, queries=[], qrels={})
    LocalExecutor(spec, ds, spec.configs(), tmp_path, frozenset(),
                  log=lambda m: None).start_llm_server()
    assert started == ([spec.base.llm.server] if starts else [])


def test_pointwise_on_small_to_big_is_an_llm_sweep_of_its_own():
    """The stacked arm is swept beside each strategy alone; the per-dataset LLM sweeps
    (`LLM_NAMES`, the committed YAMLs) do not grow it."""
    from agentic_rag.studies.strategies import LLM_NAMES, REPLY_PACK, S2B_LLM_NAMES, strategy_spec

    spec = strategy_spec("python-library-qa", "dev", S2B_LLM_NAMES)
    assert spec.reply_pack == REPLY_PACK
    stacked = spec.configs()[-1][2]
    assert (stacked.chunking.max_tokens, stacked.fusion.small_to_big, stacked.fusion.parent_tokens,
            stacked.rerank.kind, stacked.rerank.mode, stacked.rerank.depth) == (
        128, "section", 256, "llm", "pointwise", 10)
    assert "small-to-big + pointwise 10" not in LLM_NAMES
