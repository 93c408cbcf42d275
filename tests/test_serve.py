"""`agentic-rag serve`: the exported pipeline behind the official MCP SDK, reached by the SDK's
own client over stdio (the real CLI in a subprocess) and streamable HTTP (uvicorn in a
thread), on a small τ²-banking index; every answer is compared with a direct `Pipeline`
call on the same config."""

from __future__ import annotations

import json
import logging
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import anyio
import httpx
import pytest
import yaml
from typer.testing import CliRunner

from agentic_rag.agent.loop import run_agent
from agentic_rag.agent.tool import QUERY_MAX_CHARS, TOOL_NAME, AgenticRAGTool
from agentic_rag.cli.main import app
from agentic_rag.config import RAGConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.documents import Document
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.serve.client import MCPSearchTool
from agentic_rag.serve.http import HttpServer
from agentic_rag.serve.mcp import INDEX_URI, SESSION_META_KEY, SearchError, ServedPipeline, parse_search
from agentic_rag.store.index import AgenticIndex

from .fakes import HashingEmbedder, fake_openai_client

QUERIES = ["How much does an outgoing wire transfer cost?", "How do I unlock my debit card?",
           "monthly maintenance fee of a checking account", "overdraft protection",
           "How do I open a bank account?", "replace a lost card",
           "minimum balance to avoid the fee", "international transfer limits"]
PROVENANCE = {"run": "test-run", "config_id": "c000", "chosen_by": "ndcg@10",
              "metrics": {"ndcg@10": {"mean": 0.5, "ci95": [0.4, 0.6]}}}
TOKEN = "test-token-123"


def _direct(pipe: Pipeline, queries, shared_session: bool = False):
    """What an in-process agent gets: a fresh session per query, or one for all."""
    tool = AgenticRAGTool(pipe)
    out = []
    for q in queries:
        if not shared_session:
            tool.reset()
        out.append(tool.search(q))
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory, banking, minilm):
    """A small τ²-banking index (real embedding model) and its exported config (with a
    provenance block, as `agentic-rag export` writes it), built once."""
    root = tmp_path_factory.mktemp("serve")
    wire = [d for d in banking if "wire transfer" in d.text.lower()][:6]
    docs = list({d.id: d for d in banking[:14] + wire}.values())
    cfg = RAGConfig(home=str(root / "home"))
    index = AgenticIndex(cfg, embedder=minilm)
    index.add_documents(docs)
    path = root / "best-config.yaml"
    path.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False)
                    + yaml.safe_dump({"provenance": PROVENANCE}, sort_keys=False))
    pipe = Pipeline.from_config(path, index=index)
    return {"path": path, "cfg": cfg, "docs": docs, "index": index, "pipe": pipe}


@pytest.fixture(scope="module")
def http_server(exported):
    served = ServedPipeline.open(exported["path"])
    with HttpServer(served, token=TOKEN) as srv:
        yield srv


def _post(srv, body, token=TOKEN, path="/search"):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(srv.url + path, json=body, headers=headers, timeout=60)


# ---- over stdio: the real CLI, the SDK's client -----------------------------------------
@pytest.mark.slow
def test_stdio_client_lists_the_tool_and_gets_the_direct_pipelines_answers(exported):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-c", "from agentic_rag.cli.main import main; main()", "serve",
                                      "--config", str(exported["path"])],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    queries = QUERIES[:3] + [QUERIES[0]]  # the repeat: one stdio connection is one session

    async def session():
        async with Client(params, read_timeout_seconds=120) as client:
            tools = (await client.list_tools()).tools
            calls = [await client.call_tool(TOOL_NAME, {"query": q}) for q in queries]
            bad = await client.call_tool(TOOL_NAME, {"query": "   "})
            after = await client.call_tool(TOOL_NAME, {"query": queries[0]},
                                           meta={SESSION_META_KEY: "fresh"})
            info = await client.read_resource(INDEX_URI)
            return tools, calls, bad, after, json.loads(info.contents[0].text)

    tools, calls, bad, after, info = anyio.run(session)
    assert [t.name for t in tools] == [TOOL_NAME]
    assert tools[0].input_schema == AgenticRAGTool.openai_schema()["function"]["parameters"]
    direct = _direct(exported["pipe"], queries, shared_session=True)
    for call, ref in zip(calls, direct, strict=True):
        assert not call.is_error
        assert call.content[0].text == ref.content  # the same formatted, cited context
        assert call.structured_content["chunk_ids"] == ref.chunk_ids
    assert calls[-1].structured_content["duplicate_of"] == direct[-1].duplicate_of is not None
    assert bad.is_error and "query: empty" in bad.content[0].text
    assert after.content[0].text == direct[0].content  # served on after the error
    assert info["documents"] == len(exported["docs"]) and info["chunks"] == exported["index"].count()
    assert info["config_hash"] == exported["cfg"].config_hash()
    assert info["provenance"] == PROVENANCE


# ---- over streamable HTTP ---------------------------------------------------------------
@pytest.mark.slow
def test_http_client_and_post_search_get_the_direct_pipelines_answers(exported, http_server):
    direct = _direct(exported["pipe"], QUERIES[:3])
    with MCPSearchTool(http_server.url + "/mcp", token=TOKEN) as tool:
        assert tool.openai_schema() == AgenticRAGTool.openai_schema()
        for q, ref in zip(QUERIES[:3], direct, strict=True):
            tool.reset()
            assert tool.search(q) == ref
        assert tool.describe()["provenance"] == PROVENANCE
    for q, ref in zip(QUERIES[:3], direct, strict=True):
        r = _post(http_server, {"query": q})
        assert r.status_code == 200 and r.json() == ref.model_dump(mode="json")


@pytest.mark.slow
def test_run_agent_against_the_mcp_tool_gets_the_same_passages(exported, http_server):
    def chat():
        args = json.dumps({"query": "wire transfer fee", "focus_area": "data"})
        client, completions = fake_openai_client(
            [("", [("search_documents", args)]), "It costs $25 [abcde]."])
        return OpenAIChatModel(LLMConfig(max_retries=0), client=client, sleep=lambda s: None), \
            completions

    question = "How much is a wire transfer?"
    model, local_calls = chat()
    local = run_agent(question, model, AgenticRAGTool(exported["pipe"]), policy="free")
    with MCPSearchTool(http_server.url + "/mcp", token=TOKEN) as tool:
        model, mcp_calls = chat()
        remote = run_agent(question, model, tool, policy="free")
    assert remote.stop_reason == local.stop_reason == "answer"
    assert remote.served == local.served and remote.served
    assert remote.steps[0].tool == local.steps[0].tool
    # the answer turn read the same passages
    assert mcp_calls.requests[-1]["messages"] == local_calls.requests[-1]["messages"]
    assert mcp_calls.requests[0]["tools"] == local_calls.requests[0]["tools"]


@pytest.mark.slow
def test_bad_input_is_a_clear_error_and_the_server_keeps_serving(exported, http_server):
    from mcp import MCPError

    bad = [({"query": ""}, "query"), ({"query": " \n "}, "query: empty"),
           ({"query": "x" * (QUERY_MAX_CHARS + 1)}, f"the limit is {QUERY_MAX_CHARS}"),
           ({"query": "fees", "max_results": 0}, "max_results"),
           ({"query": "fees", "max_results": 21}, "max_results"),
           ({"query": "fees", "focus_area": "weather"}, "focus_area"),
           ({"query": "fees", "k": 3}, "unknown argument 'k'"), ({}, "query: required")]
    ref = _direct(exported["pipe"], QUERIES[:1])[0]
    with MCPSearchTool(http_server.url + "/mcp", token=TOKEN) as tool:
        for args, says in bad:
            with pytest.raises(SearchError, match="invalid arguments") as exc:
                tool(args)
            assert says in str(exc.value)
        tool.reset()
        assert tool.search(QUERIES[0]) == ref
    for args, says in bad:
        r = _post(http_server, args)
        assert r.status_code == 400 and says in r.json()["error"]
    for body in ("not json", "[1, 2]"):
        r = httpx.post(http_server.url + "/search", content=body, timeout=30,
                       headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 400 and "body" in r.json()["error"]
    assert _post(http_server, {"query": "fees", "session_id": ""}).status_code == 400

    with MCPSearchTool(http_server.url + "/mcp", token=TOKEN) as tool:
        with pytest.raises(MCPError, match="unknown tool 'search'"):
            tool._portal.call(tool._client.call_tool, "search", {"query": "fees"})
    assert _post(http_server, {"query": QUERIES[0]}).json() == ref.model_dump(mode="json")


@pytest.mark.slow
def test_search_sessions_never_leak_across_clients(exported, http_server):
    q = QUERIES[0]
    first, again = _direct(exported["pipe"], [q, q], shared_session=True)
    assert again.duplicate_of is not None and again != first
    with MCPSearchTool(http_server.url + "/mcp", token=TOKEN) as a, \
            MCPSearchTool(http_server.url + "/mcp", token=TOKEN) as b:
        assert a.search(q) == first
        assert b.search(q) == first  # b's session has not seen a's query
        assert a.search(q) == again  # a's has: the history penalty and the note
        a.reset()
        assert a.search(q) == first  # a new question: a new session
    # plain HTTP: stateless unless a session id is passed
    assert _post(http_server, {"query": q}).json() == _post(http_server, {"query": q}).json() \
        == first.model_dump(mode="json")
    assert _post(http_server, {"query": q, "session_id": "s1"}).json()["duplicate_of"] is None
    assert _post(http_server, {"query": q, "session_id": "s2"}).json()["duplicate_of"] is None
    assert _post(http_server, {"query": q, "session_id": "s1"}).json() == \
        again.model_dump(mode="json")

    # a handshake-era (2025) client without a handle: its Mcp-Session-Id is its session
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def legacy_twice():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        async with Client(streamable_http_client(http_server.url + "/mcp", http_client=http),
                          mode="legacy") as client:
            return [(await client.call_tool(TOOL_NAME, {"query": q})).structured_content
                    for _ in range(2)]

    one, two = anyio.run(legacy_twice), anyio.run(legacy_twice)
    assert one == two == [first.model_dump(mode="json"), again.model_dump(mode="json")]


@pytest.mark.slow
def test_eight_concurrent_sessions_return_what_serial_calls_return(exported, http_server):
    serial = [_post(http_server, {"query": q, "session_id": f"serial-{i}"}).json()
              for i, q in enumerate(QUERIES)]

    def one(i_q):
        i, q = i_q
        with MCPSearchTool(http_server.url + "/mcp", token=TOKEN) as tool:
            return tool.search(q).model_dump(mode="json")

    with ThreadPoolExecutor(8) as pool:
        mcp = list(pool.map(one, enumerate(QUERIES)))
        plain = list(pool.map(lambda i_q: _post(http_server, {"query": i_q[1],
                                                              "session_id": f"c-{i_q[0]}"}).json(),
                              enumerate(QUERIES)))
    assert mcp == serial and plain == serial
    assert len({json.dumps(s["chunk_ids"]) for s in serial}) > 1  # different answers, not one


@pytest.mark.slow
def test_token_is_checked_on_every_request_and_queries_are_not_logged(http_server, caplog):
    for token in (None, "wrong"):
        assert _post(http_server, {"query": "fees"}, token=token).status_code == 401
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        assert httpx.get(http_server.url + "/index", headers=headers).status_code == 401
        r = httpx.post(http_server.url + "/mcp", headers=headers, timeout=30,
                       json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401
    with pytest.raises(Exception):  # noqa: B017 - the SDK's client fails to connect at all
        MCPSearchTool(http_server.url + "/mcp").open()
    r = httpx.get(http_server.url + "/index", headers={"Authorization": f"Bearer {TOKEN}",
                                                       "Host": "evil.example:80"})
    assert r.status_code == 403  # loopback server: DNS rebinding refused
    with caplog.at_level(logging.INFO):  # every logger: ours, the SDK's, uvicorn's
        assert _post(http_server, {"query": "secret plan zebra"}).status_code == 200
        with MCPSearchTool(http_server.url + "/mcp", token=TOKEN) as tool:
            tool.search("secret plan zebra")
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert logged.count("query_chars=17") == 2 and "zebra" not in logged


# ---- fast: no embedding model -----------------------------------------------------------
def test_parse_search_names_field_and_value():
    assert parse_search('{"query": "fees", "max_results": 3}').max_results == 3
    with pytest.raises(SearchError, match=r"max_results: .* \(got 99\)"):
        parse_search({"query": "fees", "max_results": 99})
    with pytest.raises(SearchError, match="arguments must be an object"):
        parse_search([1])


def test_log_queries_switch(tmp_path, caplog):
    idx = AgenticIndex(RAGConfig(home=str(tmp_path)), embedder=HashingEmbedder())
    idx.add_documents([Document(id="fees.md", text="# Fees\n\nA wire transfer costs $25.\n")])
    for flag in (False, True):
        served = ServedPipeline(Pipeline(idx.config, index=idx), log_queries=flag)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="agentic_rag.serve.mcp"):
            assert served.search({"query": "wire transfer zebra"}).chunk_ids
        assert ("zebra" in caplog.text) is flag


def _config(tmp_path, extra: dict | None = None):
    path = tmp_path / "best.yaml"
    path.write_text(yaml.safe_dump({"home": str(tmp_path / "nohome"), **(extra or {})}))
    return path


def test_missing_index_names_the_command_and_creates_nothing(tmp_path):
    path = _config(tmp_path)
    res = CliRunner().invoke(app, ["serve", "--config", str(path)])
    assert res.exit_code == 2
    assert "agentic-rag index" in res.output and f"--config {path}" in res.output
    assert not (tmp_path / "nohome").exists()
    other = tmp_path / "other-home"
    res = CliRunner().invoke(app, ["serve", "--config", str(path), "--home", str(other)])
    assert res.exit_code == 2 and f"--home {other}" in res.output and not other.exists()


def test_unknown_config_key_and_open_bind_without_token_are_refused(tmp_path):
    path = _config(tmp_path, {"gate": {"treshold": 0.5}})
    res = CliRunner().invoke(app, ["serve", "--config", str(path)])
    assert res.exit_code == 2 and "gate.treshold: unknown field" in res.output
    res = CliRunner().invoke(app, ["serve", "--config", str(_config(tmp_path)), "--http",
                                   "--host", "0.0.0.0", "--token-env", "AGENTIC_RAG_TEST_NO_TOKEN"])
    assert res.exit_code == 2 and "not loopback" in res.output and "token" in res.output


def test_a_failing_search_is_reported_and_the_server_keeps_serving(tmp_path):
    from .fakes import FailingEmbedder

    embedder = FailingEmbedder(fail_on_call=2)  # call 1 indexes; the first search's encode fails
    idx = AgenticIndex(RAGConfig(home=str(tmp_path)), embedder=embedder)
    idx.add_documents([Document(id="fees.md", text="# Fees\n\nA wire transfer costs $25.\n")])
    with HttpServer(ServedPipeline(Pipeline(idx.config, index=idx))) as srv, \
            MCPSearchTool(srv.url + "/mcp") as tool:
        with pytest.raises(SearchError, match="search failed: RuntimeError: embedding service"):
            tool.search("wire transfer")
        served = tool.search("wire transfer").chunk_ids
        assert served
        embedder.fail_on_call = embedder.calls + 1  # the next encode fails again
        r = httpx.post(srv.url + "/search", json={"query": "wire transfer"}, timeout=30)
        assert r.status_code == 500 and "embedding service went away" in r.json()["error"]
        r = httpx.post(srv.url + "/search", json={"query": "wire transfer"}, timeout=30)
        assert r.status_code == 200 and r.json()["chunk_ids"] == served
