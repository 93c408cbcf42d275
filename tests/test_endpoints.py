"""LLM calls across a pool of endpoints (`llm.endpoints`, `llm.endpoints.EndpointPool`),
against local OpenAI-compatible stubs: spread with `max_concurrency` per endpoint, a dead
endpoint left out and its calls retried on the others, failures only when every endpoint
fails, the reply cache found whichever endpoint made a reply, and a real sweep that loses
an endpoint mid-run."""

from __future__ import annotations

import json
import threading

import pytest
from pydantic import ValidationError

from agentic_rag.config import RAGConfig
from agentic_rag.config_base import ConfigError
from agentic_rag.config_llm import LLMConfig
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.calls import map_calls
from agentic_rag.llm.chat import make_chat_model
from agentic_rag.llm.endpoints import EndpointPool
from agentic_rag.llm.types import LLMError

from .test_concurrency import EchoStub, corpus, make_spec, sweep  # noqa: F401 - fixture

MSG = [{"role": "user", "content": "hello"}]


class CountingStub(EchoStub):
    """EchoStub that records the most requests it served at once; `status` replaces every
    reply (e.g. 503); `stop_after`: after that many replies the server dies: later requests
    get their connection dropped, and it stops listening (`stopper`, a thread)."""

    def __init__(self, status: int | None = None, stop_after: int | None = None) -> None:
        super().__init__()
        self.status, self.stop_after = status, stop_after
        self.active = self.max_active = 0
        self.stopper: threading.Thread | None = None
        self._stopping = threading.Lock()

    def stop(self) -> None:  # from the test and from the stopper thread: once
        with self._stopping:
            super().stop()

    def reply(self, req: dict) -> tuple[int, dict]:
        with self.lock:
            if self.stop_after is not None and self.requests >= self.stop_after:
                if self.stopper is None:
                    self.stopper = threading.Thread(target=self.stop, daemon=True)
                    self.stopper.start()
                raise ConnectionResetError("stub died")  # the handler drops the connection
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.status is not None:
                with self.lock:
                    self.requests += 1
                return self.status, {"error": {"message": f"injected {self.status}"}}
            return super().reply(req)
        finally:
            with self.lock:
                self.active -= 1


@pytest.fixture
def stubs():
    started: list[CountingStub] = []

    def make(n: int = 1, **kw) -> list[CountingStub]:  # noqa: ANN003
        new = [CountingStub(**kw).start() for _ in range(n)]
        started.extend(new)
        return new

    yield make
    for s in started:
        s.stop()


def dead_url(stubs) -> str:  # noqa: ANN001
    """The URL of a server that was started and stopped: its port refuses connections."""
    s = stubs()[0]
    url = s.base_url
    s.stop()
    return url


def pool(urls: list[str], tmp_path=None, **kw) -> EndpointPool:  # noqa: ANN001, ANN003
    cfg = LLMConfig(endpoints=urls, model="echo-1", max_retries=kw.pop("max_retries", 1),
                    timeout_s=30, max_concurrency=kw.pop("max_concurrency", 1))
    cache = ChatCache(tmp_path / "llm.sqlite") if tmp_path is not None else None
    return EndpointPool(cfg, cache=cache, sleep=lambda s: None, **kw)


def ask(chat, n: int, conc: int) -> list:  # noqa: ANN001
    msgs = [[{"role": "user", "content": f"question {i}"}] for i in range(n)]
    return [r for _, r in map_calls(lambda m: chat.chat(m), msgs, conc)]


# ---- config ---------------------------------------------------------------------------
@pytest.mark.parametrize(("llm", "says"), [
    ({"endpoints": []}, "endpoints: empty list"),
    ({"endpoints": ["localhost:8000/v1"]}, r"endpoints\[0\]: 'localhost:8000/v1' is not"),
    ({"endpoints": ["http://a:1/v1", "ftp://b/v1"]}, r"endpoints\[1\]"),
    ({"endpoints": ["http://a:99999/v1"]}, r"endpoints\[0\]"),
    ({"endpoints": ["http://a:1/v1", "http://a:1/v1"]}, "lists an endpoint twice"),
    ({"endpoints": ["http://a:1/v1"], "base_url": "http://b:2/v1"}, "both set"),
])
def test_bad_endpoints_are_refused_naming_the_field(llm, says):
    with pytest.raises(ValidationError, match=says):
        LLMConfig(**llm)
    with pytest.raises(ConfigError, match=r"llm"):
        RAGConfig.from_dict({"llm": llm}, source="run.yaml")


def test_endpoints_round_trip_and_make_a_pool(tmp_path):
    cfg = RAGConfig.from_dict({"llm": {"endpoints": ["http://a:1/v1", "https://b/v1"],
                                       "max_concurrency": 3}})
    assert RAGConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert cfg.llm.slots == 6 and LLMConfig(max_concurrency=3).slots == 3
    chat = make_chat_model(cfg.llm, tmp_path)
    assert isinstance(chat, EndpointPool) and chat.model_id == "remote:local"
    assert [e.url for e in chat.endpoints] == ["http://a:1/v1", "https://b/v1"]


# ---- the pool -------------------------------------------------------------------------
def test_calls_spread_with_max_concurrency_per_endpoint(stubs):
    servers = stubs(3)
    chat = pool([s.base_url for s in servers], max_concurrency=2)
    replies = ask(chat, 30, conc=6)
    assert all(r.content.startswith("It is") for r in replies)
    assert sum(s.requests for s in servers) == 30
    assert all(s.requests > 0 for s in servers)
    assert max(s.max_active for s in servers) <= 2


def test_a_dead_endpoint_leaves_the_pool_and_its_calls_go_elsewhere(stubs):
    good = stubs()[0]
    gone = dead_url(stubs)
    chat = pool([gone, good.base_url])
    for _ in range(2):  # in turn: one of the two calls goes to `gone` first
        assert chat.chat(MSG).content
    assert chat.alive() == [good.base_url]  # refused once (not dead_after=3 times): out
    assert chat.endpoints[0].last_error.startswith("LLM call failed")
    replies = ask(chat, 8, conc=2)
    assert len(replies) == 8 and good.requests == 10


def test_connecting_is_bounded_by_connect_timeout_s_and_replies_by_timeout_s(stubs):
    s = stubs()[0]
    chat = pool([s.base_url], connect_timeout_s=0.5)
    timeout = chat.endpoints[0].model.client.timeout  # the client that sends the calls
    assert (timeout.connect, timeout.read) == (0.5, 30)
    assert chat.chat(MSG).content and s.requests == 1


def test_repeated_transport_errors_take_an_endpoint_out(stubs):
    bad, good = stubs(status=503)[0], stubs()[0]
    chat = pool([bad.base_url, good.base_url], dead_after=2)
    assert len(ask(chat, 10, conc=1)) == 10
    assert bad.requests == 2 and good.requests == 10
    assert chat.alive() == [good.base_url]


def test_a_dead_endpoint_is_tried_again_after_revive_after_s(stubs):
    now = [0.0]
    good = stubs()[0]
    gone = dead_url(stubs)
    chat = pool([gone, good.base_url], clock=lambda: now[0], revive_after_s=60)
    for _ in range(3):
        chat.chat(MSG)
    assert chat.alive() == [good.base_url]
    now[0] = 61.0
    assert chat.alive() == [gone, good.base_url]


def test_every_endpoint_dead_is_a_recorded_failure_naming_each(stubs, tmp_path):
    urls = [dead_url(stubs), dead_url(stubs)]
    chat = pool(urls, tmp_path)
    with pytest.raises(LLMError) as err:
        chat.chat(MSG)
    assert err.value.kind == "transport"
    assert "every endpoint of llm.endpoints failed (2)" in str(err.value)
    assert all(u in str(err.value) for u in urls)
    assert chat.alive() == []
    with pytest.raises(LLMError, match="every endpoint"):  # at once, no endpoint left
        chat.chat([{"role": "user", "content": "another"}])


def test_cached_reply_is_found_whichever_endpoint_made_it(stubs, tmp_path):
    a, b, c = stubs(3)
    first = pool([a.base_url, b.base_url], tmp_path)
    made = ask(first, 6, conc=2)
    assert a.requests > 0 and b.requests > 0 and not any(r.cached for r in made)
    gone = [a.base_url, b.base_url]
    a.stop()
    b.stop()
    later = pool([c.base_url], tmp_path)  # another endpoint, the same model
    again = ask(later, 6, conc=2)
    assert [r.content for r in again] == [r.content for r in made]
    assert all(r.cached for r in again) and c.requests == 0
    dead = pool(gone, tmp_path)  # every endpoint down: the cache still answers
    for _ in range(2):  # before and after the pool has found them dead
        assert dead.chat([{"role": "user", "content": "question 0"}]).cached
        with pytest.raises(LLMError, match="every endpoint"):
            dead.chat([{"role": "user", "content": "not cached"}])
    other = EndpointPool(LLMConfig(endpoints=[c.base_url], model="echo-2"),
                         cache=ChatCache(tmp_path / "llm.sqlite"))
    assert not other.chat([{"role": "user", "content": "question 0"}]).cached  # another model
    assert c.requests == 1


# ---- a sweep --------------------------------------------------------------------------
def _rows(run_dir) -> dict:  # noqa: ANN001
    rows = [json.loads(x) for x in (run_dir / "rows.jsonl").read_text().splitlines()]
    keys = [(r["config"], r["query_id"], r.get("repeat", 0)) for r in rows]
    assert len(keys) == len(set(keys)), "duplicated rows"
    return {k: r for k, r in zip(keys, rows)}


def test_sweep_finishes_when_an_endpoint_dies_mid_run(corpus, stubs, tmp_path):  # noqa: F811
    ref = stubs()[0]
    base = sweep(make_spec(corpus, ref.base_url), tmp_path / "one", conc=1)
    want = _rows(base.run_dir)
    servers = stubs(2) + stubs(stop_after=3)
    spec = make_spec(corpus, None, endpoints=[s.base_url for s in servers])
    run = sweep(spec, tmp_path / "pool", conc=None)
    got = _rows(run.run_dir)
    assert servers[2].stopper is not None and servers[2].requests == 3  # it died mid-run
    servers[2].stopper.join(10)
    assert servers[2]._server is None
    assert set(got) == set(want) and len(got) == 8  # no lost, no duplicated row
    assert not any(r.get("error") for r in got.values())
    assert all(r["answer"].startswith("It is") for r in got.values())
    for k, row in want.items():  # every non-latency column as with one endpoint
        assert ({c: v for c, v in got[k].items() if not c.startswith("latency_")}
                == {c: v for c, v in row.items() if not c.startswith("latency_")}), k
    meta = json.loads((run.run_dir / "meta.json").read_text())
    assert meta["llm"]["identity"] == "remote:local" and meta["llm"]["max_concurrency"] == 3


def test_sweep_with_every_endpoint_dead_records_failures(corpus, stubs, tmp_path):  # noqa: F811
    spec = make_spec(corpus, None, endpoints=[dead_url(stubs), dead_url(stubs)], n=2,
                     grid={"fusion.retrievers": [["dense"]]})
    run = sweep(spec, tmp_path, conc=None)
    rows = list(_rows(run.run_dir).values())
    assert len(rows) == 2
    assert all("every endpoint of llm.endpoints failed" in (r.get("error") or "")
               for r in rows)
    assert all(r.get("ndcg@10") is not None for r in rows)  # retrieval is still scored


def test_pool_waits_for_a_free_slot_not_for_time(stubs):
    """max_concurrency=1 on one endpoint with 4 callers: calls queue, none fails."""
    s = stubs()[0]
    chat = pool([s.base_url], max_concurrency=1)
    assert len(ask(chat, 8, conc=4)) == 8
    assert s.max_active == 1 and s.requests == 8


def test_a_reply_that_cannot_change_is_not_sent_to_another_endpoint(stubs):
    """A JSON reply cut at max_tokens at temperature 0 (`retryable=False`) fails the call at
    once; a malformed but retryable one goes to the next endpoint."""
    servers = stubs(2)
    asked: list[str] = []

    class Member:
        def __init__(self, url: str, error: LLMError) -> None:
            self.url, self.error = url, error

        def chat(self, messages, **kw):  # noqa: ANN001, ANN003
            asked.append(self.url)
            raise self.error

    for retryable in (False, True):
        asked.clear()
        chat = pool([s.base_url for s in servers], max_retries=1)
        for ep in chat.endpoints:
            ep.model = Member(ep.url, LLMError("reply is not JSON", "malformed", 1,
                                               retryable=retryable))
        with pytest.raises(LLMError, match="reply is not JSON"):
            chat.chat(MSG, json_mode=True)
        assert len(asked) == (1 if not retryable else 2)
