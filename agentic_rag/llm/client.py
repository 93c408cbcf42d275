"""Chat models behind one `ChatModel` protocol, with retries and an on-disk cache.

`OpenAIChatModel` talks to any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama,
llama.cpp's server) through the `openai` package. Transport failures (timeouts,
refused / reset connections, truncated bodies, 429, 5xx) are retried with exponential
backoff (1 s, 2 s, 4 s ... capped at 30 s); so are a 200 whose body is not a chat
completion and a reply that was asked to be JSON and does not parse or does not match
its schema (`schema_errors`). Other 4xx are not retried (kind "refused"). When retries
run out an `LLMError` is raised, carrying what went wrong: callers record it as a
failure, never as a default value. No other exception escapes `chat()`.

Every successful reply is cached in SQLite under sha256(model identity, messages, params)
(`llm.cache`), so re-running an experiment costs no LLM time. The types live in
`llm.types`, concurrent calls and their meter in `llm.calls`, `make_chat_model` in `llm.chat`.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any
from urllib.parse import urlsplit

from agentic_rag import tracing
from agentic_rag.config_llm import LLMConfig
from agentic_rag.llm.cache import ChatCache, _cache_key, model_identity
from agentic_rag.llm.types import CACHE_ONLY, CacheOnly, ChatModel, ChatReply, LLMError, ToolCall


class OpenAIChatModel:
    answers_cache_only = True  # honours `types.CACHE_ONLY` (a metered run at its cap)

    def __init__(self, config: LLMConfig, base_url: str | None = None, client: Any = None,
                 cache: ChatCache | None = None, sleep=time.sleep) -> None:  # noqa: ANN001
        self.config = config
        self.base_url = base_url or config.base_url
        if self.base_url is None:
            s = config.server
            self.base_url = f"http://{s.host}:{s.port}/v1"
        self.model_id = model_identity(config, self.base_url)
        self._client = client
        self.cache = cache
        self._sleep = sleep

    @property
    def client(self):  # noqa: ANN201
        if self._client is None:
            from openai import OpenAI

            key = os.environ.get(self.config.api_key_env) or "not-needed-for-local"
            self._client = OpenAI(base_url=self.base_url, api_key=key,
                                  timeout=self.config.timeout_s, max_retries=0)
        return self._client

    def chat(self, messages: list[dict[str, Any]], *, json_schema: dict | None = None,
             json_mode: bool = False, tools: list[dict] | None = None,
             max_tokens: int | None = None, tool_choice: str | dict | None = None,
             retry_malformed: bool = True, top_logprobs: int | None = None) -> ChatReply:
        """`top_logprobs=n` asks for the n most likely tokens at each generated position
        (`ChatReply.top_logprobs`); a server that returns none leaves the list empty and the
        caller decides (the graded judge raises, naming the endpoint).
        `tool_choice` forces a tool (llama.cpp's server: a dict naming the function makes
        the reply a grammar-constrained call to it). `retry_malformed=False`: a reply asked to
        be JSON that does not parse raises `LLMError("malformed")` at once, so the caller
        decides (the agent retries once with a corrective message, not the same request)."""
        params: dict[str, Any] = {"temperature": self.config.temperature,
                                  "max_tokens": max_tokens or self.config.max_tokens}
        if self.config.seed is not None:  # in the cache key: a seed's replies are its own
            params["seed"] = self.config.seed
        want_json = json_mode or json_schema is not None
        if want_json:
            # llama.cpp's extension constrains output to the schema; OpenAI ignores "schema"
            params["response_format"] = {"type": "json_object",
                                         **({"schema": json_schema} if json_schema else {})}
        if top_logprobs:
            params["logprobs"], params["top_logprobs"] = True, top_logprobs
        if tools:
            params["tools"] = tools
            if tool_choice is not None:
                params["tool_choice"] = tool_choice
        key = _cache_key(self.model_id, messages, params)
        url = urlsplit(self.base_url or "")
        local = self.config.uses_local_server  # its model: the weights' name, not the alias
        with tracing.chat_span(self.config.server.model if local else self.config.model,
                               "llama.cpp" if local else "openai", url.hostname, url.port,
                               params) as span:
            try:
                reply = self._reply(messages, params, key, want_json, json_schema,
                                    retry_malformed)
            except LLMError as exc:
                tracing.chat_done(span, error=exc)
                raise
            tracing.chat_done(span, reply)
        return reply

    def _reply(self, messages: list[dict[str, Any]], params: dict[str, Any], key: str,
               want_json: bool, json_schema: dict | None, retry_malformed: bool) -> ChatReply:
        """The cached reply, else the endpoint's, with the retries of the module doc."""
        import openai

        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit
        if CACHE_ONLY.get():
            raise CacheOnly(f"{self.model_id}: not in the reply cache")
        delay, last_error, kind = 1.0, "", "transport"
        for attempt in range(1, self.config.max_retries + 2):
            t0 = time.perf_counter()
            try:
                resp = self.client.chat.completions.create(model=self.config.model,
                                                           messages=messages, **params)
                reply = _to_reply(resp, time.perf_counter() - t0, attempt)
            except openai.APIStatusError as exc:
                if exc.status_code not in RETRY_STATUS:  # 400/401/403/404/422: retrying won't help
                    raise LLMError(f"request refused (HTTP {exc.status_code}): {exc}", "refused",
                                   attempt) from exc
                last_error, kind = f"HTTP {exc.status_code}: {type(exc).__name__}: {exc}", "transport"
            except (openai.APIConnectionError, openai.APIResponseValidationError,
                    *_http_errors()) as exc:
                # timeouts, refused / reset connections, truncated bodies
                last_error, kind = f"{type(exc).__name__}: {exc}", "transport"
            except (ValueError, TypeError, AttributeError, IndexError) as exc:
                # a 200 whose body is not a chat completion (bad JSON, no choices ...)
                last_error, kind = f"malformed response: {type(exc).__name__}: {exc}", "malformed"
            else:
                problem = _json_problem(reply.content, json_schema) if want_json else None
                if problem is None:
                    if self.cache is not None:
                        self.cache.put(key, reply, self.model_id)
                    return reply
                last_error, kind = f"{problem}: {reply.content[:200]!r}", "malformed"
                if reply.finish_reason == "length" and not self.config.temperature:
                    # greedy decoding of the same prompt is cut at the same place again
                    raise LLMError(f"{last_error} (cut at max_tokens={params['max_tokens']}, "
                                   "temperature 0: a retry would return the same reply)",
                                   kind, attempt, retryable=False)
                if not retry_malformed:
                    raise LLMError(last_error, kind, attempt)
            if attempt <= self.config.max_retries:
                self._sleep(delay)
                delay = min(delay * 2, 30.0)
        raise LLMError(f"LLM call failed after {self.config.max_retries + 1} attempts: "
                       f"{last_error}", kind, self.config.max_retries + 1)


RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504}) | frozenset(range(500, 600))


def _http_errors() -> tuple[type[Exception], ...]:
    """The HTTP library's own errors (a body cut mid-read escapes openai's wrapping): httpx's
    for older openai releases, httpx2's for those that moved to it; both when both are here."""
    errors: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        try:
            errors.append(__import__(name).HTTPError)
        except ImportError:
            pass
    return tuple(errors)


def _json_problem(content: str, schema: dict | None) -> str | None:
    """Why `content` is not the JSON asked for (None when it is)."""
    try:
        value = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return "reply is not JSON"
    if schema:
        errors = schema_errors(value, schema)
        if errors:
            return f"reply does not match the schema ({errors[0]})"
    return None


_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool,
               "null": type(None), "integer": int, "number": (int, float)}


def schema_errors(value: Any, schema: dict, path: str = "$") -> list[str]:
    """The subset of JSON Schema our prompts use: type, enum, const, required, properties,
    additionalProperties=false, items, anyOf. Empty list = valid."""
    errors: list[str] = []
    if "anyOf" in schema:
        if all(schema_errors(value, s, path) for s in schema["anyOf"]):
            errors.append(f"{path}: matches none of anyOf")
        return errors
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        ok = any(isinstance(value, _JSON_TYPES.get(t, object))
                 and not (t in ("integer", "number") and isinstance(value, bool))
                 for t in allowed)
        if not ok:
            return [f"{path}: expected {types}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {value!r} is not {schema['const']!r}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [f"{path}: missing {k!r}" for k in schema.get("required", []) if k not in value]
        for k, v in value.items():
            if k in props:
                errors += schema_errors(v, props[k], f"{path}.{k}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected key {k!r}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            errors += schema_errors(v, schema["items"], f"{path}[{i}]")
    return errors


def ask_json_field(chat: ChatModel, system: str, user: str, field: str, schema: dict,
                   valid, max_tokens: int) -> tuple[Any, ChatReply]:  # noqa: ANN001 - valid: predicate
    """One schema-constrained call that must return `{field: value}` with `valid(value)`;
    anything else raises `LLMError("malformed")` (after the transport/JSON retries)."""
    reply = chat.chat([{"role": "system", "content": system}, {"role": "user", "content": user}],
                      json_schema=schema, max_tokens=max_tokens)
    data = reply.json()
    value = data.get(field) if isinstance(data, dict) else None
    if not valid(value):
        raise LLMError(f"expected {{{field!r}: ...}}, got {reply.content[:200]!r}", "malformed",
                       reply.attempts)
    return value, reply


def _to_reply(resp: Any, latency: float, attempts: int) -> ChatReply:
    """Raises ValueError when `resp` is not a chat completion (e.g. a proxy's error page)."""
    if isinstance(resp, (str, bytes)) or not getattr(resp, "choices", None):
        raise ValueError(f"not a chat completion: {str(resp)[:200]!r}")
    choice = resp.choices[0]
    msg = choice.message
    calls = [ToolCall(id=c.id or f"call_{i}", name=c.function.name,
                      arguments=c.function.arguments or "{}")
             for i, c in enumerate(getattr(msg, "tool_calls", None) or [])]
    usage = getattr(resp, "usage", None)
    evaluated, reused = _prompt_timings(resp)
    lp = getattr(getattr(choice, "logprobs", None), "content", None) or []
    top = [{t.token: float(t.logprob) for t in (getattr(pos, "top_logprobs", None) or [])}
           or {pos.token: float(pos.logprob)} for pos in lp]
    return ChatReply(content=msg.content or "", tool_calls=calls, top_logprobs=top,
                     prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                     completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                     latency_s=latency, attempts=attempts, finish_reason=choice.finish_reason,
                     prompt_evaluated=evaluated, prompt_reused=reused)


def _prompt_timings(resp: Any) -> tuple[int | None, int | None]:
    """(evaluated, reused) prompt tokens from llama-server's `timings` (`prompt_n`, `cache_n`),
    an extra field of its OpenAI-compatible reply; (None, None) when the server sends none."""
    timings = getattr(resp, "timings", None)
    if timings is None:
        timings = (getattr(resp, "model_extra", None) or {}).get("timings")
    if not isinstance(timings, dict):
        return None, None
    n, cached = timings.get("prompt_n"), timings.get("cache_n")
    return (int(n) if isinstance(n, (int, float)) else None,
            int(cached) if isinstance(cached, (int, float)) else None)


