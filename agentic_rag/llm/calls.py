"""Many LLM calls from one run: `map_calls` (up to `max_concurrency` in flight, results in
input order), `CallMeter` / `MeteredChatModel` (every call counted in one place, refused past
a cap with `LLMCallCap`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from agentic_rag.llm.types import CACHE_ONLY, CacheOnly, ChatModel, ChatReply, LLMError


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

    def admit(self) -> bool:
        """True: the call may reach the endpoint (counted in flight until `settle`). False:
        the meter is at its cap, and only a cached reply may come back (`count_cached`)."""
        with self._lock:
            if self.cap is not None and self.calls + self._in_flight >= self.cap:
                return False
            self._in_flight += 1
            return True

    def count_cached(self) -> None:
        """A cached reply read at the cap (not admitted, so not in flight)."""
        with self._lock:
            self.cached += 1

    def at_cap(self) -> LLMCallCap:
        with self._lock:
            return LLMCallCap(f"stopped at the cap of {self.cap} new LLM calls "
                              f"({self.calls} made, {self.cached} read from the cache)")

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
        if not self.meter.admit():
            return self._cached_only(messages, kwargs)
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

    def _cached_only(self, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> ChatReply:
        """At the cap: the reply when the model has it cached (a replay with
        `--max-llm-calls 0` reads a whole reply pack), else `LLMCallCap`. A model that does
        not honour `types.CACHE_ONLY` is never called here."""
        if not getattr(self.model, "answers_cache_only", False):
            raise self.meter.at_cap()
        token = CACHE_ONLY.set(True)
        try:
            reply = self.model.chat(messages, **kwargs)
        except CacheOnly:
            raise self.meter.at_cap() from None
        finally:
            CACHE_ONLY.reset(token)
        if not reply.cached:  # cannot happen with a model that honours CACHE_ONLY
            raise self.meter.at_cap()
        self.meter.count_cached()
        return reply
