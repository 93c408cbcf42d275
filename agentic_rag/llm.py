"""Chat models behind one `ChatModel` protocol, with retries and an on-disk cache.

`OpenAIChatModel` talks to any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama,
llama.cpp's server) through the `openai` package. Transport failures (timeouts,
refused / reset connections, truncated bodies, 429, 5xx) are retried with exponential
backoff (1 s, 2 s, 4 s ... capped at 30 s); so are a 200 whose body is not a chat
completion and a reply that was asked to be JSON and does not parse or does not match
its schema (`schema_errors`). Other 4xx are not retried (kind "refused"). When retries
run out an `LLMError` is raised, carrying what went wrong: callers record it as a
failure, never as a default value. No other exception escapes `chat()`.

Every successful reply is cached in SQLite under sha256(model, messages, params),
so re-running an experiment costs no LLM time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from .config import LLMConfig
from .sqlite_kv import SQLiteFile


class LLMError(RuntimeError):
    """An LLM call failed after its retries; `kind` is transport | malformed | refused."""

    def __init__(self, message: str, kind: str, attempts: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts


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

    def json(self) -> Any:  # type: ignore[override]
        return json.loads(self.content)


@runtime_checkable
class ChatModel(Protocol):
    model_id: str

    def chat(self, messages: list[dict[str, Any]], *, json_schema: dict | None = None,
             json_mode: bool = False, tools: list[dict] | None = None,
             max_tokens: int | None = None, tool_choice: str | dict | None = None,
             retry_malformed: bool = True, top_logprobs: int | None = None) -> ChatReply: ...


def model_identity(config: LLMConfig, base_url: str | None = None,
                   digest: Callable[[Path], str] | None = None,
                   build: Callable[[], str] | None = None) -> str:
    """What the reply cache, the row cache and `meta.json` key LLM replies on: the model, not
    the URL.

    - the embedded local server (`llm.base_url` unset, called at its configured address):
      the GGUF weights' sha256 (a named model's is the one its server verifies at start; a
      .gguf path is hashed, by `digest` when given), the llama.cpp build and the CPU variant
      it runs (`llama_build`, or `build` when given: a variant's kernels round differently,
      so its greedy answers can differ) and the server settings that can change a reply
      (context size, chat format, threads);
    - a hosted endpoint (`llm.base_url` set, called there): `llm.model`, the model name the
      endpoint serves (put the version in it, e.g. `gpt-4o-2024-08-06`);
    - any other address (a server started elsewhere, on another port): the alias and URL,
      since what it serves cannot be known; its replies are never shared with another's.
    A cached reply is then found whichever process or port of the same model made it."""
    s = config.server
    embedded = f"http://{s.host}:{s.port}/v1"
    if config.base_url is None and base_url in (None, embedded):
        from .models import MODELS

        if s.model in MODELS:
            weights = f"{s.model}@{MODELS[s.model].sha256}"
        else:
            p = Path(s.model)
            weights = f"gguf:{(digest or _file_sha256)(p)}" if p.is_file() else f"missing:{p}"
        return (f"{weights}|build={(build or llama_build)()}|n_ctx={s.n_ctx}"
                f"|chat_format={s.chat_format}|n_threads={s.n_threads}")
    if config.base_url is not None and base_url in (None, config.base_url):
        return f"remote:{config.model}"
    return f"{config.model}@{base_url}"


@functools.lru_cache(maxsize=1)
def llama_build() -> str:
    """This interpreter's llama.cpp build as the reply cache keys it: llama-cpp-python's and
    ggml's versions and the CPU backend that runs (the runtime-chosen variant, e.g. `zen4`, or
    the features of a linked-in build). Asked once per process (`server.llama_build_info`);
    `unknown` when llama-cpp-python is not installed or cannot say."""
    from .server import ServerError, llama_build_info

    try:
        info = llama_build_info()
    except (ServerError, ValueError, KeyError, IndexError):
        return "unknown"
    cpu = info.get("cpu_variant") or "linked:" + ",".join(
        sorted(k for k, v in (info.get("cpu_features") or {}).items() if str(v) == "1"))
    return (f"llama-cpp-python {info.get('llama_cpp_python')}/ggml {info.get('ggml_version')} "
            f"{info.get('ggml_commit')}/{cpu}")


def _file_sha256(path: Path) -> str:
    st = path.stat()
    return _sha256_cached(str(path.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    """A file's sha256, remembered per (path, size, mtime) for this process."""
    from .packages import file_sha256

    return file_sha256(Path(path))


def _cache_key(model_id: str, messages: list, params: dict) -> str:
    blob = json.dumps({"model": model_id, "messages": messages, "params": params},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class ChatCache:
    """Replies by `_cache_key`, in one SQLite file (`sqlite_kv.SQLiteFile`).

    `pack`: a JSON-lines file of replies that travels with the repository (one
    `{"key", "reply"}` object per line). A reply missing from SQLite is looked up there, and
    every new reply is appended to it, so a long LLM run (the answer-level claims) resumes
    on a fresh machine from the committed pack instead of asking the model again. The key
    carries the model's identity, so a pack made by another model is never read as ours."""

    def __init__(self, path: str | Path, pack: str | Path | None = None) -> None:
        self.path = Path(path)
        self._file = SQLiteFile(self.path, ["chat (key TEXT PRIMARY KEY, reply TEXT)"])
        self.pack = Path(pack) if pack is not None else None
        self._packed: dict[str, str] | None = None
        self._pack_lock = threading.Lock()

    def _pack(self) -> dict[str, str]:
        """The pack's replies by key, read once (under the lock: threads share the cache)."""
        with self._pack_lock:
            if self._packed is None:
                packed = {}
                if self.pack is not None and self.pack.exists():
                    text = self.pack.read_text(encoding="utf-8")
                    for n, line in enumerate(text.splitlines(), 1):
                        if not line.strip():
                            continue
                        try:
                            entry = json.loads(line)
                            packed[entry["key"]] = json.dumps(entry["reply"])
                        except (json.JSONDecodeError, KeyError, TypeError) as exc:
                            raise ValueError(f"{self.pack}: line {n} is not a reply-pack entry "
                                             f"({{\"key\", \"reply\"}}): {exc}") from exc
                self._packed = packed
            return self._packed

    def get(self, key: str) -> ChatReply | None:
        with self._file.connect() as db:
            row = db.execute("SELECT reply FROM chat WHERE key=?", (key,)).fetchone()
        text = row[0] if row else (self._pack().get(key) if self.pack is not None else None)
        return ChatReply.model_validate_json(text).model_copy(update={"cached": True}) \
            if text else None

    def put(self, key: str, reply: ChatReply) -> None:
        with self._file.connect() as db, db:
            db.execute("INSERT OR REPLACE INTO chat VALUES (?, ?)", (key, reply.model_dump_json()))
        if self.pack is not None:
            packed = self._pack()
            with self._pack_lock:
                if key not in packed:
                    self.pack.parent.mkdir(parents=True, exist_ok=True)
                    with self.pack.open("a", encoding="utf-8") as f:
                        f.write(json.dumps({"key": key, "reply": reply.model_dump(
                            mode="json", exclude={"cached"})}, ensure_ascii=False) + "\n")
                    packed[key] = reply.model_dump_json()

    def recent(self, n: int) -> list[ChatReply]:
        """The `n` replies stored last (newest first), as the model returned them: their
        tokens and latency measure the endpoint's throughput (`llm_cost.measured_rates`)."""
        if not self.path.exists():
            return []
        with self._file.connect() as db:
            rows = db.execute("SELECT reply FROM chat ORDER BY rowid DESC LIMIT ?",
                              (n,)).fetchall()
        return [ChatReply.model_validate_json(r[0]) for r in rows]


class OpenAIChatModel:
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
        import httpx
        import openai

        params: dict[str, Any] = {"temperature": self.config.temperature,
                                  "max_tokens": max_tokens or self.config.max_tokens}
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
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit
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
                    httpx.HTTPError) as exc:
                # timeouts, refused / reset connections, truncated bodies
                last_error, kind = f"{type(exc).__name__}: {exc}", "transport"
            except (ValueError, TypeError, AttributeError, IndexError) as exc:
                # a 200 whose body is not a chat completion (bad JSON, no choices ...)
                last_error, kind = f"malformed response: {type(exc).__name__}: {exc}", "malformed"
            else:
                problem = _json_problem(reply.content, json_schema) if want_json else None
                if problem is None:
                    if self.cache is not None:
                        self.cache.put(key, reply)
                    return reply
                last_error, kind = f"{problem}: {reply.content[:200]!r}", "malformed"
                if not retry_malformed:
                    raise LLMError(last_error, kind, attempt)
            if attempt <= self.config.max_retries:
                self._sleep(delay)
                delay = min(delay * 2, 30.0)
        raise LLMError(f"LLM call failed after {self.config.max_retries + 1} attempts: "
                       f"{last_error}", kind, self.config.max_retries + 1)


RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504}) | frozenset(range(500, 600))


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
    lp = getattr(getattr(choice, "logprobs", None), "content", None) or []
    top = [{t.token: float(t.logprob) for t in (getattr(pos, "top_logprobs", None) or [])}
           or {pos.token: float(pos.logprob)} for pos in lp]
    return ChatReply(content=msg.content or "", tool_calls=calls, top_logprobs=top,
                     prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                     completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                     latency_s=latency, attempts=attempts, finish_reason=choice.finish_reason)


def map_calls(fn: Callable[[Any], Any], items: Iterable[Any], max_concurrency: int = 1
              ) -> Iterator[tuple[int, Any]]:
    """`fn(item)` for every item with up to `max_concurrency` in flight (threads: the calls
    wait on the network); yields `(index, result)` in input order, so a caller that writes
    each result as it comes writes the same file at any concurrency. `items` may be a
    generator: it is drawn in the caller's thread as slots free up, so the work it does
    (a sweep's retrieval) stays serial. `fn` must not raise for an LLM failure (`chat()`
    raises only `LLMError`: catch it in `fn` and return it as a recorded failure). Results
    already yielded survive an interruption of the rest: on an exception (from `fn`, the
    items or the caller, e.g. `LLMCallCap` or Ctrl-C) the calls not started are cancelled
    and those in flight finish (their replies reach the cache) before it propagates."""
    if max_concurrency <= 1:
        for i, item in enumerate(items):
            yield i, fn(item)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max_concurrency) as pool:
        window = max_concurrency * 2  # bounded read-ahead: a kill loses at most this many
        futures = {}
        try:
            for i, item in enumerate(items):
                futures[i] = pool.submit(fn, item)
                if i >= window - 1:
                    j = i - window + 1
                    yield j, futures.pop(j).result()
            for j in sorted(futures):
                yield j, futures.pop(j).result()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


class LLMCallCap(Exception):  # noqa: N818 - a stop, not an error of the call
    """A run reached its cap of new (not cached) LLM calls (`CallMeter.cap`). Not an
    `LLMError`: nothing is recorded for the call that was refused; the run stops cleanly and
    a rerun continues, reading every call already made from the reply cache."""


class CallMeter:
    """The LLM calls of one run, counted in one place across threads (`MeteredChatModel`):
    `calls` sent to the endpoint (cache misses, failed ones included), `cached` hits, the
    new calls' tokens and seconds. With `cap`, a call that could be the cap+1-th new one
    is refused with `LLMCallCap` (a call in flight counts until it settles, so the cap holds
    at any concurrency; a cache hit is charged nothing once it returns)."""

    def __init__(self, cap: int | None = None) -> None:
        if cap is not None and cap < 0:
            raise ValueError(f"max LLM calls: {cap} is not >= 0")
        self.cap = cap
        self.calls = self.cached = self.prompt_tokens = self.completion_tokens = 0
        self.seconds = 0.0
        self._in_flight = 0
        self._lock = threading.Lock()

    def admit(self) -> None:
        with self._lock:
            if self.cap is not None and self.calls + self._in_flight >= self.cap:
                raise LLMCallCap(f"stopped at the cap of {self.cap} new LLM calls "
                                 f"({self.calls} made, {self.cached} read from the cache)")
            self._in_flight += 1

    def settle(self, reply: ChatReply | None, sent: bool = True) -> None:
        """A call admitted by `admit` ended: with `reply`, or failed (`sent`: it reached the
        endpoint, e.g. an `LLMError`, so it counts as a call)."""
        with self._lock:
            self._in_flight -= 1
            if reply is not None and reply.cached:
                self.cached += 1
            elif reply is not None or sent:
                self.calls += 1
                if reply is not None:
                    self.prompt_tokens += reply.prompt_tokens
                    self.completion_tokens += reply.completion_tokens
                    self.seconds += reply.latency_s


class MeteredChatModel:
    """A chat model whose every call goes through `meter` (counted, and refused past its
    cap). `model` is the chat model, or a function making it on first use (a sweep's
    pipelines make theirs only when a call needs one). Other attributes (`base_url`,
    `cache`, `config`) are the model's."""

    def __init__(self, model: ChatModel | Callable[[], ChatModel], meter: CallMeter) -> None:
        self._model = model if isinstance(model, ChatModel) else None
        self._make = None if self._model is not None else model
        self.meter = meter
        self._lock = threading.Lock()

    @property
    def model(self) -> ChatModel:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._make()  # type: ignore[misc]
        return self._model

    @property
    def model_id(self) -> str:  # type: ignore[override]
        return self.model.model_id

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.model, name)

    def chat(self, messages: list[dict[str, Any]], **kwargs: Any) -> ChatReply:
        self.meter.admit()
        try:
            reply = self.model.chat(messages, **kwargs)
        except LLMError:
            self.meter.settle(None)
            raise
        except BaseException:
            self.meter.settle(None, sent=False)
            raise
        self.meter.settle(reply)
        return reply


def make_chat_model(config: LLMConfig, home: str | Path, base_url: str | None = None,
                    pack: str | Path | None = None) -> ChatModel:
    """`pack`: the reply pack (`ChatCache`) a long run commits, read when the cache misses."""
    cache = ChatCache(Path(home) / "cache" / "llm.sqlite", pack=pack) if config.cache else None
    return OpenAIChatModel(config, base_url=base_url, cache=cache)
