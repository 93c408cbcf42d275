"""Prompt tokens evaluated vs reused from llama-server's prompt cache (its `timings`), per call
(`ChatReply`), per agent step and run, per conversation turn; None, not 0, where the server
says nothing or the reply came from the reply cache, which neither stores nor replays them."""

from __future__ import annotations

from types import SimpleNamespace as NS

from agentic_rag.agent.loop import run_agent
from agentic_rag.config_llm import LLMConfig
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.client import OpenAIChatModel


class TimedCompletions:
    """llama-server's reply: the OpenAI fields and its `timings` as an extra field."""

    def __init__(self, timings: list[dict | None]) -> None:
        self.timings, self.requests = list(timings), []

    def create(self, **kwargs):  # noqa: ANN003, ANN201
        self.requests.append(kwargs)
        t = self.timings.pop(0)
        resp = NS(choices=[NS(message=NS(content="From the passages.", tool_calls=[]),
                              finish_reason="stop")],
                  usage=NS(prompt_tokens=(t or {}).get("prompt_n", 7) + (t or {}).get("cache_n", 0),
                           completion_tokens=4))
        if t is not None:
            resp.timings = {**t, "prompt_ms": 10.0, "predicted_n": 4}
        return resp


def chat_model(timings, cache=None):  # noqa: ANN001, ANN201
    completions = TimedCompletions(timings)
    return OpenAIChatModel(LLMConfig(max_retries=0), client=NS(chat=NS(completions=completions)),
                           cache=cache, sleep=lambda s: None), completions


def test_timings_are_read_and_a_cached_reply_has_none(tmp_path):
    cache = ChatCache(tmp_path / "llm.sqlite", pack=tmp_path / "pack.jsonl")
    chat, _ = chat_model([{"prompt_n": 30, "cache_n": 1200}, None], cache)
    msgs = [{"role": "user", "content": "hi"}]
    first = chat.chat(msgs)
    assert (first.prompt_tokens, first.prompt_evaluated, first.prompt_reused) == (1230, 30, 1200)
    again = chat.chat(msgs)  # from the reply cache: nothing evaluated, nothing to say
    assert again.cached and again.prompt_evaluated is None and again.prompt_reused is None
    assert again.prompt_tokens == 1230
    # the stored row and the pack are what they were before these fields
    assert "prompt_evaluated" not in (tmp_path / "pack.jsonl").read_text()
    other = chat.chat([{"role": "user", "content": "another"}])  # a server without timings
    assert other.prompt_evaluated is None and other.prompt_reused is None


def test_an_agent_run_sums_its_calls(tmp_path):
    chat, _ = chat_model([{"prompt_n": 50, "cache_n": 900}])
    res = run_agent("What is it?", chat, None, policy="closed_book")
    assert (res.prompt_evaluated, res.prompt_reused) == (50, 900)
    assert (res.steps[0].prompt_evaluated, res.steps[0].prompt_reused) == (50, 900)
    chat, _ = chat_model([None])
    res = run_agent("What is it?", chat, None, policy="closed_book")
    assert res.prompt_evaluated is None and res.prompt_reused is None
