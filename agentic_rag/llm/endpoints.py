"""LLM calls across a pool of OpenAI-compatible endpoints (`llm.endpoints`), behind the one
`ChatModel` protocol; `make_chat_model` makes an `EndpointPool` when `llm.endpoints` is set.

- Spread: each call goes to the live endpoint with the fewest calls in flight (ties in
  turn), and waits for a free slot there: `llm.max_concurrency` applies per endpoint, so a
  sweep runs `llm.slots` = max_concurrency × endpoints calls at once.
- One attempt per endpoint per round: a transport failure (refused or reset connection,
  timeout, 429, 5xx) sends the call to the next endpoint at once; when every live endpoint
  failed it, the next round starts after a backoff (1 s, 2 s ... capped at 30 s), for
  `llm.max_retries` more rounds.
- A dead endpoint leaves the pool: one whose port refuses a connection (probed after a
  transport failure), or that failed `dead_after` calls in a row. It is tried again after
  `revive_after_s`. When every endpoint is dead, a call raises `LLMError` at once, naming each
  endpoint and its last error (the caller records it as a failure); it still reads the reply
  cache first (one member is asked, and looks there before any request).
- Connecting is bounded by `connect_timeout_s` (5 s), the reply by `llm.timeout_s`: an
  endpoint that drops connections fails over in seconds, not after the reply timeout.
- Malformed replies are retried as by one endpoint (up to `llm.max_retries`, on any endpoint);
  a request refused with another 4xx is raised at once: every endpoint would refuse it.
- Replies are cached under the model's identity (`remote:<llm.model>`), not the URL, so a
  cached reply is found whichever endpoint made it (llm_cache.model_identity).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from agentic_rag.config_llm import LLMConfig
from agentic_rag.llm.cache import ChatCache, model_identity
from agentic_rag.llm.types import ChatReply, LLMError


@dataclass
class Endpoint:
    """One member of the pool and its health, as the pool sees it."""

    url: str
    model: Any  # an OpenAIChatModel making one attempt per call
    slots: threading.BoundedSemaphore
    in_flight: int = 0
    failures: int = 0  # transport failures in a row
    dead_until: float = 0.0  # > now: out of the pool
    last_error: str = ""
    calls: int = 0  # calls that got a reply from it (cache hits included)


class _Member:
    """Makes the pool's member models: `OpenAIChatModel` whose client bounds the connect."""

    @staticmethod
    def make(config: LLMConfig, url: str, cache: ChatCache | None, connect_timeout_s: float
             ) -> Any:
        from agentic_rag.llm.client import OpenAIChatModel

        class Member(OpenAIChatModel):
            @property
            def client(self):  # noqa: ANN202 - openai.OpenAI
                if self._client is None:
                    import os

                    from openai import OpenAI, Timeout  # openai's own: httpx2 2.17 refuses httpx's

                    key = os.environ.get(self.config.api_key_env) or "not-needed-for-local"
                    timeout = Timeout(self.config.timeout_s,
                                      connect=min(connect_timeout_s, self.config.timeout_s))
                    self._client = OpenAI(base_url=self.base_url, api_key=key, timeout=timeout,
                                          max_retries=0)
                return self._client

        return Member(config, base_url=url, cache=cache)


def refuses_connections(url: str, timeout_s: float = 2.0) -> bool:
    """True when nothing accepts a TCP connection at `url`'s host and port (a stopped server),
    False when something does (it may still be failing, but it is there)."""
    u = urlparse(url)
    port = u.port or (443 if u.scheme == "https" else 80)
    try:
        with socket.create_connection((u.hostname or "127.0.0.1", port), timeout=timeout_s):
            return False
    except OSError:
        return True


class EndpointPool:
    """A `ChatModel` over `config.endpoints` (see the module docstring)."""

    answers_cache_only = True  # its members honour `types.CACHE_ONLY` (they raise CacheOnly)

    def __init__(self, config: LLMConfig, cache: ChatCache | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, dead_after: int = 3,
                 revive_after_s: float = 60.0, connect_timeout_s: float = 5.0) -> None:
        if not config.endpoints:
            raise ValueError("llm.endpoints is not set: an EndpointPool needs at least one URL")
        self.config, self.cache = config, cache
        self.model_id = model_identity(config)
        self.base_url = config.endpoints[0]  # for readers of `.base_url`; calls use them all
        self._sleep, self._clock = sleep, clock
        self.dead_after, self.revive_after_s = dead_after, revive_after_s
        self.connect_timeout_s = connect_timeout_s
        once = config.model_copy(update={"max_retries": 0})  # the pool does the retrying
        self.endpoints = [Endpoint(url, _Member.make(once, url, cache, connect_timeout_s),
                                   threading.BoundedSemaphore(config.max_concurrency))
                          for url in config.endpoints]
        for ep in self.endpoints:
            ep.model.model_id = self.model_id
        self._lock = threading.Lock()
        self._turn = 0

    # -- health --------------------------------------------------------------------------
    def alive(self) -> list[str]:
        now = self._clock()
        return [ep.url for ep in self.endpoints if ep.dead_until <= now]

    def _pick(self, tried: set[str]) -> Endpoint | None:
        """The live, untried endpoint with the fewest calls in flight (ties in turn)."""
        with self._lock:
            now = self._clock()
            live = [ep for ep in self.endpoints if ep.dead_until <= now and ep.url not in tried]
            if not live:
                return None
            self._turn += 1
            n = len(self.endpoints)
            ep = min(live, key=lambda e: (e.in_flight,
                                          (self.endpoints.index(e) - self._turn) % n))
            ep.in_flight += 1
            return ep

    def _release(self, ep: Endpoint, error: LLMError | None) -> None:
        # a call that could not connect: is anything listening there at all?
        probe = (error is not None and "APIConnectionError" in str(error)
                 and refuses_connections(ep.url, min(2.0, self.connect_timeout_s)))
        with self._lock:
            ep.in_flight -= 1
            if error is None:
                ep.failures, ep.calls = 0, ep.calls + 1
                return
            if error.kind != "transport":
                return
            ep.failures += 1
            ep.last_error = str(error)
            if probe or ep.failures >= self.dead_after:
                ep.dead_until = self._clock() + self.revive_after_s
                ep.failures = 0

    def _all_failed(self, attempts: int) -> LLMError:
        said = "; ".join(f"{ep.url}: {ep.last_error or 'not tried'}" for ep in self.endpoints)
        return LLMError(f"every endpoint of llm.endpoints failed ({len(self.endpoints)}): {said}",
                        "transport", max(attempts, 1))

    # -- the call ------------------------------------------------------------------------
    def chat(self, messages: list[dict[str, Any]], **kwargs: Any) -> ChatReply:
        retry_malformed = kwargs.get("retry_malformed", True)
        malformed_left = self.config.max_retries
        rounds, delay, attempts = 0, 1.0, 0
        tried: set[str] = set()
        while True:
            ep = self._pick(tried)
            if ep is None:
                if not self.alive():
                    if attempts == 0:  # every endpoint dead: one member still reads the cache
                        ep = min(self.endpoints, key=lambda e: e.dead_until)
                        with self._lock:
                            ep.in_flight += 1
                    else:
                        raise self._all_failed(attempts)
                else:
                    rounds += 1
                    if rounds > self.config.max_retries:
                        raise self._all_failed(attempts)
                    self._sleep(delay)
                    delay = min(delay * 2, 30.0)
                    tried.clear()
                    continue
            tried.add(ep.url)
            error = None
            try:
                with ep.slots:
                    reply = ep.model.chat(messages, **kwargs)
            except LLMError as exc:
                error = exc
                attempts += exc.attempts
            finally:
                self._release(ep, error)
            if error is None:
                return (reply if attempts == 0 or reply.cached
                        else reply.model_copy(update={"attempts": attempts + reply.attempts}))
            if error.kind == "transport":
                if not self.alive() and all(e.url in tried for e in self.endpoints):
                    raise self._all_failed(attempts)
                continue
            if (error.kind == "malformed" and error.retryable and retry_malformed
                    and malformed_left > 0):
                malformed_left -= 1
                continue
            raise LLMError(f"{ep.url}: {error}", error.kind, attempts)
