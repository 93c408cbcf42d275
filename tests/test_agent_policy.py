"""Agent retrieval policies, grounded citations and bounded JSON actions, on scripted fakes
(no server). The same loop runs against the real llama.cpp server in test_local_llm.py."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from agentic_rag.agent.loop import FIX_ACTION, NOTHING_FOUND, PROMPT_AFTER, SYSTEM_ANSWER, action_schema, run_agent
from agentic_rag.agent.result import parse_citations
from agentic_rag.agent.tool import QUERY_MAX_CHARS, AgenticRAGTool, ToolOutput
from agentic_rag.config import AgentConfig, RAGConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.documents import Document
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.retrieve.context import citation_id
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.store.index import AgenticIndex

from .fakes import HashingEmbedder, fake_openai_client

REQ = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")


def model(script, retries=2):
    client, completions = fake_openai_client(script)
    return OpenAIChatModel(LLMConfig(max_retries=retries), client=client,
                           sleep=lambda s: None), completions


@pytest.fixture
def tool(tmp_path):
    idx = AgenticIndex(RAGConfig(home=str(tmp_path)), embedder=HashingEmbedder())
    idx.add_documents([
        Document(id="fees.md", text="# Fees\n\n| Item | Fee |\n|---|---|\n| Wire transfer | $25 |\n"),
        Document(id="reset.md", text="# Reset\n\n1. Open settings.\n2. Press reset.\n"),
    ])
    return AgenticRAGTool(Pipeline(idx.config, index=idx))


class EmptyTool:
    """A search tool that never finds anything."""

    openai_schema = staticmethod(AgenticRAGTool.openai_schema)

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.sessions = 0

    def reset(self) -> None:
        self.sessions += 1

    def search(self, query, max_results=5, focus_area="any"):  # noqa: ANN001, ANN201
        self.queries.append(query)
        return ToolOutput(content="No relevant passages found.", chunk_ids=[], intent="fact",
                          query_used=query, iterations=1, stop_reason="confident",
                          confidence=0.0, context_tokens=0)


def test_parse_citations():
    assert parse_citations("Fee is $25 [3fa9c]. Also [3fa9c, 1b2c3] and [id: 0a1b2].") == \
        ["3fa9c", "1b2c3", "0a1b2"]
    assert parse_citations("See [Document 1] and [docs] or [3FA9C]") == ["3fa9c"]
    assert parse_citations("no citations here") == []


def test_retrieve_first_searches_before_the_model_and_checks_citations(tool):
    m, calls = model([])  # the script is filled below, once the served ids are known
    served = tool.search("How much is a wire transfer?").chunk_ids  # run_agent resets the session
    good = citation_id(served[0])
    calls.script = [f"The wire transfer fee is $25 [{good}]. Not [abcde]."]
    res = run_agent("How much is a wire transfer?", m, tool)  # default: retrieve_first
    assert res.policy == "retrieve_first" and res.stop_reason == "answer"
    assert res.tool_calls == 1 and res.model_tool_calls == 0 and res.steps[0].via == "policy"
    first = calls.requests[0]["messages"]  # the model's first turn already has the passages
    assert first[-1]["role"] == "user" and "| Wire transfer | $25 |" in first[-1]["content"]
    # passages first, then the question, then the instruction (chosen on dev: agent.py)
    body = first[-1]["content"]
    assert body.startswith("Passages from the documentation:")
    assert body.index("| Wire transfer | $25 |") < body.index(
        "Question: How much is a wire transfer?") < body.index("passage you used")
    assert f"[{good}]" in first[-1]["content"]  # the header shows the id to cite
    assert all(isinstance(msg["content"], str) for msg in first)  # llama.cpp rejects null
    assert res.cited_chunks == [served[0]] and res.cites_served
    assert res.invalid_citations == ["abcde"] and not res.citation_valid
    assert len(calls.requests) == 1


def test_retrieve_first_model_may_search_again(tool):
    args = json.dumps({"query": "reset steps"})
    m, calls = model([("", [("search_documents", args)]), "Open settings, press reset."])
    res = run_agent("How do I reset?", m, tool, max_steps=3)
    assert res.tool_calls == 2 and res.model_tool_calls == 1
    assert res.stop_reason == "answer" and len(calls.requests) == 2
    # the model's own search reaches it like the policy's: both searches' passages in the user
    # turn, then the question (from a `tool` message the 1.5B model abstained: agent-v5)
    second = calls.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user"]
    body = second[1]["content"]
    assert body.index("Press reset") < body.index("Question: How do I reset?")
    for chunk in res.served:
        assert f"[{citation_id(chunk)}]" in body


def test_closed_book_never_retrieves():
    m, calls = model(["I don't know."])
    res = run_agent("How much is a wire transfer?", m, None, AgentConfig(policy="closed_book"))
    assert res.tool_calls == 0 and res.served == [] and res.abstained
    req = calls.requests[0]
    assert "tools" not in req and req["max_tokens"] == AgentConfig().answer_max_tokens
    with pytest.raises(ValueError, match="needs a tool"):
        run_agent("?", m, None, AgentConfig(policy="free"))


def test_free_policy_may_answer_without_searching(tool):
    m, calls = model(["Probably $30."])
    res = run_agent("How much is a wire transfer?", m, tool, policy="free")
    assert res.tool_calls == 0 and res.answer == "Probably $30." and res.citations == []
    assert calls.requests[0]["tools"][0]["function"]["name"] == "search_documents"


def test_tool_required_forces_the_first_search_with_tool_choice(tool):
    args = json.dumps({"query": "wire transfer fee"})
    m, calls = model([("", [("search_documents", args)]), "It is $25."])
    cfg = AgentConfig(policy="tool_required", action_max_tokens=48)
    res = run_agent("How much is a wire transfer?", m, tool, cfg)
    first = calls.requests[0]
    assert first["tool_choice"] == {"type": "function", "function": {"name": "search_documents"}}
    assert first["max_tokens"] == 48
    assert res.steps[0].via == "tool_choice" and res.tool_calls == 1
    assert "tool_choice" not in calls.requests[1]  # later turns are the model's choice


def test_tool_required_falls_back_to_a_json_search_action(tool):
    refused = openai.BadRequestError("tool_choice unsupported",
                                     response=httpx.Response(400, request=REQ), body=None)
    m, calls = model([refused, '{"action": "search", "query": "wire fee"}', "It is $25."])
    res = run_agent("How much is a wire transfer?", m, tool, policy="tool_required")
    assert res.steps[0].via == "json_forced" and res.steps[0].arguments["query"] == "wire fee"
    schema = calls.requests[1]["response_format"]["schema"]
    assert schema["properties"]["action"]["enum"] == ["search"]
    follow = calls.requests[2]["messages"]  # the forced search's passages, then the question
    assert follow[-1]["role"] == "user" and "| Wire transfer | $25 |" in follow[-1]["content"]
    assert "tools" in calls.requests[2]  # and the model may search again


def test_json_actions_are_bounded(tool):
    m, calls = model(['{"action": "search", "query": "wire transfer fee"}', '{"action": "answer"}',
                      "The fee is $25."])
    cfg = AgentConfig(policy="free", mode="json", action_max_tokens=40, answer_max_tokens=99)
    res = run_agent("How much is a wire transfer?", m, tool, cfg)
    assert res.answer == "The fee is $25." and res.tool_calls == 1
    action = calls.requests[0]
    schema = action["response_format"]["schema"]
    assert action["max_tokens"] == 40 and schema["additionalProperties"] is False
    assert schema["properties"]["query"]["maxLength"] <= QUERY_MAX_CHARS
    assert all(p.get("maxLength") or p.get("enum") for p in schema["properties"].values())
    assert "response_format" not in calls.requests[2] and calls.requests[2]["max_tokens"] == 99
    # the decision after a search sees the passages and the query it made
    decide = calls.requests[1]["messages"][-1]["content"]
    assert "| Wire transfer | $25 |" in decide and '"wire transfer fee"' in decide
    # the answer turn asks for prose: no JSON-only system prompt, no tools
    answer = calls.requests[2]["messages"]
    assert answer[0]["content"] == SYSTEM_ANSWER and "JSON" not in answer[0]["content"]
    assert "tools" not in calls.requests[2]
    assert answer[-1]["content"].endswith(PROMPT_AFTER.format(question="How much is a wire "
                                                                       "transfer?"))


def test_malformed_action_fails_after_one_retry_and_is_not_requested_again(tool):
    m, calls = model(["{\"action\": \"search\", \"query\": ", "   \n\n   "], retries=3)
    res = run_agent("How much is a wire transfer?", m, tool,
                    AgentConfig(policy="free", mode="json", max_steps=5))
    assert res.stop_reason == "invalid_action" and res.action_failures == 1
    assert res.answer == "" and res.error
    assert len(calls.requests) == 2  # the request, one corrective retry, nothing more
    assert calls.requests[1]["messages"][-1]["content"] == FIX_ACTION


def test_malformed_action_then_valid_retry_goes_on(tool):
    m, calls = model(['{"action": "dance"}', '{"action": "answer"}', "I don't know."])
    res = run_agent("?", m, tool, policy="free", mode="json")
    assert res.stop_reason == "answer" and res.action_failures == 0 and len(calls.requests) == 3


def test_nothing_served_means_i_dont_know():
    """The model may search again in its own words; if nothing at all was served, the answer is
    "I don't know", whatever the model would have said from memory."""
    m, calls = model(["The sky on Mars is butterscotch."])
    empty = EmptyTool()
    res = run_agent("What is the colour of the sky on Mars?", m, empty)
    assert res.answer == NOTHING_FOUND and res.stop_reason == "nothing_found" and res.abstained
    assert empty.queries and len(calls.requests) == 1 and empty.sessions == 1
    m, calls = model([("", [("search_documents", '{"query": "mars sky"}')])])
    res = run_agent("What is the colour of the sky on Mars?", m, EmptyTool(), max_steps=2)
    assert res.answer == NOTHING_FOUND and res.tool_calls == 2 and len(calls.requests) == 1


def test_config_and_keyword_overrides(tool):
    m, calls = model(["fine"])
    res = run_agent("?", m, tool, AgentConfig(policy="retrieve_first", max_steps=1))
    assert res.tool_calls == 1 and "tools" not in calls.requests[0]  # 1 step: answer at once
    with pytest.raises(ValueError):
        run_agent("?", m, tool, max_steps=0)


def test_schemas_bound_every_string():
    params = AgenticRAGTool.openai_schema()["function"]["parameters"]
    assert params["properties"]["query"]["maxLength"] == QUERY_MAX_CHARS
    for search_only in (False, True):
        s = action_schema(search_only)
        strings = [p for p in s["properties"].values() if p["type"] == "string"]
        assert all("enum" in p or "maxLength" in p for p in strings)


def test_llama_cpp_grammar_of_every_action_schema_is_bounded():
    """What the llama.cpp server makes of our schemas: no unbounded repetition (a string without
    maxLength becomes `char*`, free JSON whitespace `[ \\t\\n]*`), so an action cannot run away."""
    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    tool_params = AgenticRAGTool.openai_schema()["function"]["parameters"]
    for schema in (action_schema(), action_schema(search_only=True), tool_params):
        gbnf = grammar.json_schema_to_gbnf(json.dumps(schema))
        assert "*" not in gbnf and "+" not in gbnf, gbnf
        assert 'space ::= " "?' in gbnf
    unbounded = grammar.json_schema_to_gbnf(json.dumps(
        {"type": "object", "properties": {"q": {"type": "string"}}}))
    assert "*" in unbounded  # the check above can fail


def test_a_search_call_with_bad_arguments_is_recorded_and_shown_to_the_model(tool):
    m, calls = model([("", [("search_documents", '{"query": ""}')]), "I don't know."])
    res = run_agent("How much is a wire transfer?", m, tool, policy="free")
    assert [s.kind for s in res.steps] == ["invalid_call", "answer"] and res.tool_calls == 0
    assert res.steps[0].error.startswith("invalid arguments")
    retry = calls.requests[1]["messages"][-1]["content"]
    assert retry.startswith("How much is a wire transfer?") and "call failed" in retry


def test_no_prompt_shows_an_example_passage_id():
    """agent-v6 copied the prompt's example id `[1a2b3]` into 2–5 of 30 FAQ answers per retrieval
    cell and into 11 of 19 committed banking answers, each counted as an invalid citation: no
    text the model reads (prompts, tool schema) may hold anything the scorer would count as a
    citation, yet the id's form must still be described."""
    from agentic_rag.agent import loop as agent

    texts = {name: getattr(agent, name) for name in dir(agent)
             if name.isupper() and isinstance(getattr(agent, name), str)}
    assert {"SYSTEM_NATIVE", "SYSTEM_JSON", "SYSTEM_ANSWER", "PROMPT_AFTER"} <= set(texts)
    texts["tool schema"] = json.dumps(AgenticRAGTool.openai_schema())
    shown = {name: parse_citations(text) for name, text in texts.items()}
    assert not {name: ids for name, ids in shown.items() if ids}
    assert parse_citations('like "--- Document 2 [1a2b3] ---"') == ["1a2b3"]  # the old wording's
    assert "square brackets" in texts["SYSTEM_ANSWER"] and "passage id" in texts["SYSTEM_ANSWER"]
