"""LLM wiring without a server: retries, typed errors, cache, query layer on an LLM, agent loop.
(The same code runs against the real llama.cpp server in test_local_llm.py.)"""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from agentic_rag.agent.loop import run_agent
from agentic_rag.agent.tool import AgenticRAGTool
from agentic_rag.config import QueryConfig, RAGConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.documents import Document
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.llm.types import LLMError
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.retrieve.query import AgentQueryBuilder
from agentic_rag.store.index import AgenticIndex

from .fakes import Cut, HashingEmbedder, fake_openai_client

REQ = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")


def model(script, tmp_path=None, retries=2):
    client, completions = fake_openai_client(script)
    cache = ChatCache(tmp_path / "llm.sqlite") if tmp_path else None
    m = OpenAIChatModel(LLMConfig(max_retries=retries), client=client, cache=cache,
                        sleep=lambda s: None)
    return m, completions


def test_transport_errors_retried_then_succeed():
    m, calls = model([openai.APITimeoutError(request=REQ), openai.APIConnectionError(request=REQ),
                      "hello"])
    reply = m.chat([{"role": "user", "content": "hi"}])
    assert reply.content == "hello" and reply.attempts == 3 and len(calls.requests) == 3


def test_malformed_json_retried_then_typed_error():
    m, calls = model(["not json", "{broken", "still not"], retries=2)
    with pytest.raises(LLMError) as exc:
        m.chat([{"role": "user", "content": "x"}], json_mode=True)
    assert exc.value.kind == "malformed" and exc.value.attempts == 3
    assert calls.requests[0]["response_format"] == {"type": "json_object"}


def test_json_cut_at_max_tokens_is_not_repeated_at_temperature_0():
    """A JSON reply stopped by max_tokens at temperature 0 is cut again on a retry (the
    τ²-banking multi-query runs spent 4 identical calls on each): it fails at once, not
    retryable; a complete but malformed reply, or any reply at temperature > 0, is retried."""
    m, calls = model([Cut('{"queries": ["a long'), '{"queries": []}'], retries=3)
    with pytest.raises(LLMError) as exc:
        m.chat([{"role": "user", "content": "x"}], json_mode=True, max_tokens=7)
    assert exc.value.kind == "malformed" and not exc.value.retryable
    assert exc.value.attempts == 1 and len(calls.requests) == 1
    assert "max_tokens=7" in str(exc.value)
    warm, calls = fake_openai_client([Cut('{"queries": ["a long'), '{"queries": []}'])
    m = OpenAIChatModel(LLMConfig(max_retries=3, temperature=0.7), client=warm,
                        sleep=lambda s: None)
    assert m.chat([{"role": "user", "content": "x"}], json_mode=True).json() == {"queries": []}
    assert len(calls.requests) == 2


def test_schema_passed_as_llama_cpp_extension_and_cached(tmp_path):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    m, calls = model(['{"a": 1}'], tmp_path)
    r1 = m.chat([{"role": "user", "content": "x"}], json_schema=schema)
    assert calls.requests[0]["response_format"] == {"type": "json_object", "schema": schema}
    r2 = m.chat([{"role": "user", "content": "x"}], json_schema=schema)  # script is empty now
    assert r2.cached and not r1.cached and r2.json() == {"a": 1}


def test_llm_classifier_and_recorded_fallback():
    m, _ = model(['{"intent": "data"}'])
    b = AgentQueryBuilder(QueryConfig(classifier="llm"), chat_model=m)
    intent = b.build_query("tell me about the blue account")
    assert intent.intent == "data" and intent.classifier == "llm"
    bad, _ = model(['{"intent": "weather"}'], retries=0)
    b = AgentQueryBuilder(QueryConfig(classifier="llm"), chat_model=bad)
    intent = b.build_query("show me a code example")
    assert intent.intent == "code" and intent.classifier == "heuristic (llm failed: malformed)"


@pytest.fixture
def tool(tmp_path):
    idx = AgenticIndex(RAGConfig(home=str(tmp_path)), embedder=HashingEmbedder())
    idx.add_documents([
        Document(id="fees.md", text="# Fees\n\n| Item | Fee |\n|---|---|\n| Wire transfer | $25 |\n"),
        Document(id="reset.md", text="# Reset\n\n1. Open settings.\n2. Press reset.\n"),
    ])
    return AgenticRAGTool(Pipeline(idx.config, index=idx))


def test_agent_native_tool_call_loop(tool):
    args = json.dumps({"query": "wire transfer fee", "focus_area": "data"})
    m, calls = model([("", [("search_documents", args)]), "The wire transfer fee is $25 [fees.md]."])
    res = run_agent("How much is a wire transfer?", m, tool, policy="free")
    assert res.stop_reason == "answer" and "$25" in res.answer
    assert res.tool_calls == 1 and res.steps[0].via == "native"
    assert res.steps[0].tool.intent == "data" and res.retrieval_iterations >= 1
    second = calls.requests[1]["messages"]
    assert second[-1]["role"] == "user" and "| Wire transfer | $25 |" in second[-1]["content"]
    assert calls.requests[0]["tools"][0]["function"]["name"] == "search_documents"


def test_agent_tool_call_as_text_and_json_mode(tool):
    text_call = '<tool_call>{"name": "search_documents", "arguments": {"query": "reset"}}</tool_call>'
    m, _ = model([text_call, "Open settings, then press reset."])
    res = run_agent("How do I reset?", m, tool, policy="free")
    assert res.steps[0].via == "tool_call_text" and res.stop_reason == "answer"

    m, calls = model(['{"action": "search", "query": "reset steps"}', '{"action": "answer"}',
                      "Open settings, press reset."])
    res = run_agent("How do I reset?", m, tool, policy="free", mode="json")
    assert res.answer == "Open settings, press reset." and res.steps[0].via == "json"
    decide = calls.requests[1]["messages"][-1]["content"]
    assert decide.startswith("Passages from the documentation:") and '"reset steps"' in decide


def test_agent_max_steps_and_llm_error_recorded(tool):
    loop = ('{"action": "search", "query": "fees"}',)
    m, _ = model(list(loop) * 2 + ["I don't know."])
    res = run_agent("?", m, tool, max_steps=3, mode="json", policy="free")
    assert res.tool_calls == 2 and res.stop_reason == "max_steps" and len(res.steps) == 3
    dead, _ = model([openai.APIConnectionError(request=REQ)] * 3, retries=2)
    res = run_agent("?", dead, tool)
    assert res.stop_reason == "llm_error" and res.answer == "" and "transport" in res.error


def test_malformed_json_not_retried_when_the_caller_retries_itself():
    m, calls = model(["not json", '{"a": 1}'], retries=3)
    with pytest.raises(LLMError) as exc:
        m.chat([{"role": "user", "content": "x"}], json_mode=True, retry_malformed=False)
    assert exc.value.kind == "malformed" and exc.value.attempts == 1 and len(calls.requests) == 1


def test_openai_embedder_batches_and_retries():
    from types import SimpleNamespace as NS

    from agentic_rag.config import EmbeddingConfig
    from agentic_rag.ingest.embeddings import OpenAIEmbedder

    calls = []
    script = [openai.RateLimitError("slow down", response=httpx.Response(429, request=REQ), body=None)]

    def create(model, input):  # noqa: A002 - the API's name
        calls.append(list(input))
        if script:
            raise script.pop(0)
        return NS(data=[NS(index=i, embedding=[float(len(t)), 1.0]) for i, t in enumerate(input)])

    client = NS(embeddings=NS(create=create))
    emb = OpenAIEmbedder(EmbeddingConfig(kind="openai", model="m", batch_size=2), client=client)
    emb_sleep = []
    import agentic_rag.ingest.embeddings as E

    orig, E.time.sleep = E.time.sleep, emb_sleep.append
    try:
        vecs = emb.embed(["a", "bbb", "cc"])
    finally:
        E.time.sleep = orig
    assert calls == [["a", "bbb"], ["a", "bbb"], ["cc"]] and emb_sleep == [1.0]
    assert vecs.shape == (3, 2)
    assert abs(float((vecs**2).sum(axis=1)[0]) - 1.0) < 1e-6  # normalised


def test_agent_marks_turns_read_from_the_cache(tool, tmp_path):
    """A rerun answered from the LLM cache says so (`cached_calls`), so its ~0 s latency is
    not reported as the model's. The same tool serves both runs: each question is a new
    search session (no "already searched" note, no history penalty from the first run), so
    the second prompt is the first one and hits the cache."""
    m, calls = model(["The wire transfer fee is $25 [x]."], tmp_path)
    first = run_agent("What is the wire transfer fee?", m, tool, policy="retrieve_first")
    again = run_agent("What is the wire transfer fee?", m, tool, policy="retrieve_first")
    assert len(calls.requests) == 1 and first.cached_calls == 0
    assert again.cached_calls == 1 == sum(1 for s in again.steps if s.kind == "answer")
    assert again.answer == first.answer
