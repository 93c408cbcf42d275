"""The one way to get a chat model for a config: `make_chat_model` (a single endpoint, or an
`EndpointPool` over `llm.endpoints`), with the reply cache and the committed reply pack."""

from __future__ import annotations

from pathlib import Path

from agentic_rag.config_llm import LLMConfig
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.llm.endpoints import EndpointPool
from agentic_rag.llm.types import ChatModel


def make_chat_model(config: LLMConfig, home: str | Path, base_url: str | None = None,
                    pack: str | Path | None = None) -> ChatModel:
    """`pack`: the reply pack (`ChatCache`) a long run commits, read when the cache misses.
    With `llm.endpoints` (and no explicit `base_url`): an `EndpointPool` over them."""
    cache = ChatCache(Path(home) / "cache" / "llm.sqlite", pack=pack) if config.cache else None
    if config.endpoints and base_url is None:
        return EndpointPool(config, cache=cache)
    return OpenAIChatModel(config, base_url=base_url, cache=cache)
