"""The reply pack: LLM replies that travel with the repository, so a long LLM run resumes on a
fresh machine (an empty SQLite cache) without asking the model again."""

from __future__ import annotations

import json

import pytest

from agentic_rag.config_llm import LLMConfig
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.client import OpenAIChatModel

from .fakes import fake_openai_client


def _model(script, cache):
    client, calls = fake_openai_client(script)
    return OpenAIChatModel(LLMConfig(max_retries=0), client=client, cache=cache,
                           sleep=lambda s: None), calls


def test_new_replies_are_appended_and_a_fresh_cache_reads_them(tmp_path):
    pack = tmp_path / "repo" / "replies.jsonl"
    m, calls = _model(["first", "second"], ChatCache(tmp_path / "a" / "llm.sqlite", pack=pack))
    r1 = m.chat([{"role": "user", "content": "q1"}])
    r2 = m.chat([{"role": "user", "content": "q2"}])
    assert len(calls.requests) == 2 and not r1.cached
    lines = [json.loads(x) for x in pack.read_text().splitlines()]
    assert [e["reply"]["content"] for e in lines] == ["first", "second"]
    # another machine: its own empty SQLite cache, the same pack, a server that must not be asked
    fresh, calls2 = _model([], ChatCache(tmp_path / "b" / "llm.sqlite", pack=pack))
    again = fresh.chat([{"role": "user", "content": "q2"}])
    assert again.cached and again.content == r2.content and calls2.requests == []
    # a reply served from the pack is not appended a second time
    assert len(pack.read_text().splitlines()) == 2


def test_other_model_identity_does_not_read_the_pack(tmp_path):
    pack = tmp_path / "replies.jsonl"
    m, _ = _model(["from model A"], ChatCache(tmp_path / "a.sqlite", pack=pack))
    m.chat([{"role": "user", "content": "q"}])
    client, calls = fake_openai_client(["from model B"])
    other = OpenAIChatModel(LLMConfig(max_retries=0, base_url="http://x/v1", model="b"),
                            client=client, cache=ChatCache(tmp_path / "b.sqlite", pack=pack))
    assert other.chat([{"role": "user", "content": "q"}]).content == "from model B"
    assert len(calls.requests) == 1


def test_corrupt_pack_line_names_file_and_line(tmp_path):
    pack = tmp_path / "replies.jsonl"
    pack.write_text('{"key": "k", "reply": {"content": "x"}}\nnot json\n')
    cache = ChatCache(tmp_path / "c.sqlite", pack=pack)
    with pytest.raises(ValueError, match=r"replies.jsonl: line 2"):
        cache.get("missing")
