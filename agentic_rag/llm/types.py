"""The chat layer's types: `ChatModel` (the one protocol every backend implements), its
`ChatReply` and `ToolCall`, and `LLMError`, the only exception a `chat()` raises."""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class LLMError(RuntimeError):
    """An LLM call failed after its retries; `kind` is transport | malformed | refused."""

    def __init__(self, message: str, kind: str, attempts: int, retryable: bool = True) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts
        # False: the same request cannot succeed again (a reply cut at max_tokens at
        # temperature 0 is cut again), so no one should repeat it
        self.retryable = retryable


# Set by `calls.MeteredChatModel` once its meter is at its cap: a chat model that reads a reply
# cache may still answer from it, but sends nothing (`CacheOnly` for a reply it would have to
# ask the endpoint for). Models that honour it say so with `answers_cache_only = True`.
CACHE_ONLY: ContextVar[bool] = ContextVar("agentic_rag_llm_cache_only", default=False)


class CacheOnly(Exception):  # noqa: N818 - a stop, not an error of the call
    """A call that would have to reach the endpoint while only cached replies may be read."""


class ToolCall(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: str  # JSON text, as the API returns it


class ChatReply(BaseModel):
    model_config = ConfigDict(frozen=True)

    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False
    finish_reason: str | None = None
    # per generated token, its most likely alternatives {token: log-probability}; filled
    # only when the call asked for `top_logprobs`
    top_logprobs: list[dict[str, float]] = Field(default_factory=list)
    # of `prompt_tokens`, those the server evaluated and those it reused from its prompt cache,
    # when it says (llama-server's `timings`: `prompt_n`, `cache_n`); None when it does not, and
    # for a reply from the reply cache (nothing was evaluated). Not stored in the reply cache.
    prompt_evaluated: int | None = None
    prompt_reused: int | None = None

    def json(self) -> Any:  # type: ignore[override]
        return json.loads(self.content)


@runtime_checkable
class ChatModel(Protocol):
    model_id: str

    def chat(self, messages: list[dict[str, Any]], *, json_schema: dict | None = None,
             json_mode: bool = False, tools: list[dict] | None = None,
             max_tokens: int | None = None, tool_choice: str | dict | None = None,
             retry_malformed: bool = True, top_logprobs: int | None = None) -> ChatReply: ...
