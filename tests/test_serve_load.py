"""`serve` under load, bounded for CI (52 s for the file on 2 shared cores, 28 s of it loading
the model and indexing): 16 `POST /search` clients and 2 MCP (streamable HTTP) clients call
one served τ²-banking index (real embedding model) for 15 s, and every reply must equal the
same call made alone; then the memory guard: with the server's resident memory over its cap
every search is refused (HTTP 503 + Retry-After, an MCP error result), the server lives, and
it serves the same replies again once memory drops. The full-size run with figures (32 + 4
clients for 2 minutes, a 1 GiB cap): `benchmarks/serve_load.py` → benchmarks/RELIABILITY.md.
Nothing here asserts a time."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml

from agentic_rag.config import RAGConfig
from agentic_rag.documents import Document
from agentic_rag.jsonl import read_records
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.serve.client import MCPSearchTool
from agentic_rag.serve.guard import MemoryGuard, Overloaded, is_out_of_memory, resident_bytes
from agentic_rag.serve.http import HttpServer
from agentic_rag.serve.mcp import SearchError, ServedPipeline
from agentic_rag.store.index import AgenticIndex

from .fakes import HashingEmbedder

pytestmark = pytest.mark.reliability

QUESTIONS = Path(__file__).resolve().parents[1] / "datasets" / "banking-products" / "dev.jsonl"
SECONDS = 15.0
HTTP_CLIENTS = 16
MCP_CLIENTS = 2


def _calls() -> list[tuple[str, int]]:
    """Real questions (banking-products), each with max_results 3, 5 or 10."""
    qs = list(dict.fromkeys(r["question"] for r in read_records(QUESTIONS)))[:30]
    return [(q, (3, 5, 10)[i % 3]) for i, q in enumerate(qs)]


@pytest.fixture(scope="module")
def config(tmp_path_factory, banking, minilm) -> Path:
    """A small τ²-banking index (the products the questions ask about, real embedding model)
    and its config file, built once."""
    root = tmp_path_factory.mktemp("serve-load")
    wanted = {d for r in read_records(QUESTIONS)[:30] for d in r["doc_ids"]}
    docs = [d for d in banking if d.id in wanted][:16] + banking[:4]
    cfg = RAGConfig(home=str(root / "home"))
    AgenticIndex(cfg, embedder=minilm).add_documents(list({d.id: d for d in docs}.values()))
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    return path


def _solo(url: str, calls) -> dict:
    with httpx.Client(timeout=120) as c:
        return {call: c.post(url + "/search", json={"query": call[0], "max_results": call[1]}
                             ).json() for call in calls}


@pytest.mark.slow
def test_many_clients_for_seconds_get_what_each_call_gets_alone(config, record_property):
    calls = _calls()
    with HttpServer(ServedPipeline.open(config)) as srv:
        refs = _solo(srv.url, calls)
        outcomes: Counter[str] = Counter()
        problems: list[str] = []
        lock = threading.Lock()
        stop = time.monotonic() + SECONDS

        def note(outcome: str, detail: str = "") -> None:
            with lock:
                outcomes[outcome] += 1
                if outcome != "ok" and len(problems) < 5:
                    problems.append(f"{outcome}: {detail}")

        def http_client(seed: int) -> None:
            rng = random.Random(seed)
            with httpx.Client(timeout=120) as c:
                while time.monotonic() < stop:
                    call = rng.choice(calls)
                    try:
                        r = c.post(srv.url + "/search", json={"query": call[0], "max_results": call[1]})
                    except httpx.HTTPError as exc:
                        note("exception", repr(exc))
                        continue
                    if r.status_code != 200:
                        note(f"http {r.status_code}", r.text[:200])
                    else:
                        note("ok" if r.json() == refs[call] else "mismatch", call[0])

        def mcp_client(seed: int) -> None:
            rng = random.Random(seed)
            with MCPSearchTool(srv.url + "/mcp") as tool:
                while time.monotonic() < stop:
                    call = rng.choice(calls)
                    tool.reset()  # a fresh session per call: the reply depends on the call only
                    try:
                        out = tool.search(*call).model_dump(mode="json")
                    except Exception as exc:  # noqa: BLE001 - counted
                        note("mcp error", repr(exc)[:200])
                        continue
                    note("ok" if out == refs[call] else "mismatch", call[0])

        threads = [threading.Thread(target=http_client, args=(i,)) for i in range(HTTP_CLIENTS)]
        threads += [threading.Thread(target=mcp_client, args=(100 + i,)) for i in range(MCP_CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    total = sum(outcomes.values())
    record_property("serve_load_calls", total)
    record_property("serve_load_errors", total - outcomes["ok"] - outcomes["mismatch"])
    record_property("serve_load_mismatches", outcomes["mismatch"])
    assert outcomes["ok"] == total, (dict(outcomes), problems)
    assert total >= HTTP_CLIENTS + MCP_CLIENTS  # every client got answers
    assert len({json_ids(v) for v in refs.values()}) > 1  # different calls, different replies


def json_ids(reply: dict) -> str:
    return ",".join(reply["chunk_ids"])


@pytest.mark.slow
def test_over_the_memory_cap_searches_are_refused_and_served_again_after(config, record_property):
    calls = _calls()[:8]
    served = ServedPipeline.open(config, memory_limit_mb=1e6)
    # the cap: this process's resident size with the server open, plus room for the calls
    # before the pressure
    cap_mb = served.guard.limit_mb = resident_bytes() / 2**20 + 256
    with HttpServer(served) as srv, MCPSearchTool(srv.url + "/mcp") as tool:
        refs = _solo(srv.url, calls)
        assert all("chunk_ids" in v for v in refs.values())
        ballast = np.ones(int(cap_mb - resident_bytes() / 2**20 + 128) * 2**20 // 8)
        assert resident_bytes() / 2**20 > cap_mb
        statuses: list[tuple[int, str | None, str]] = []

        def hammer() -> None:
            with httpx.Client(timeout=60) as c:
                for q, k in calls:
                    r = c.post(srv.url + "/search", json={"query": q, "max_results": k})
                    statuses.append((r.status_code, r.headers.get("retry-after"), r.text))

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert {s for s, _, _ in statuses} == {503}
        assert all(ra == "1" and "overloaded" in text and "MiB" in text for _, ra, text in statuses)
        tool.reset()
        with pytest.raises(SearchError, match="server overloaded: resident memory"):
            tool.search(*calls[0])
        assert httpx.get(srv.url + "/index", timeout=60).status_code == 200  # still up
        refused = served.guard.refused
        del ballast  # pressure drops: served again, the same replies
        for call in calls:
            r = httpx.post(srv.url + "/search", json={"query": call[0], "max_results": call[1]},
                           timeout=60)
            assert r.status_code == 200 and r.json() == refs[call]
            tool.reset()
            assert tool.search(*call).model_dump(mode="json") == refs[call]
    record_property("serve_503_refusals", refused)
    assert refused == len(statuses) + 1


class _OutOfMemoryEmbedder(HashingEmbedder):
    """Raises MemoryError on its `fail_on_call`-th call (an allocation failing mid-search)."""

    def __init__(self, fail_on_call: int) -> None:
        super().__init__()
        self.fail_on_call = fail_on_call

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.calls + 1 == self.fail_on_call:
            self.calls += 1
            raise MemoryError()
        return super().embed(texts)


def test_a_search_that_runs_out_of_memory_is_refused_not_fatal(tmp_path):
    embedder = _OutOfMemoryEmbedder(fail_on_call=2)  # call 1 indexes; the first search fails
    idx = AgenticIndex(RAGConfig(home=str(tmp_path)), embedder=embedder)
    idx.add_documents([Document(id="fees.md", text="# Fees\n\nA wire transfer costs $25.\n")])
    served = ServedPipeline(Pipeline(idx.config, index=idx))
    with HttpServer(served) as srv:
        r = httpx.post(srv.url + "/search", json={"query": "wire transfer"}, timeout=30)
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert "out of memory during the search (MemoryError)" in r.json()["error"]
        r = httpx.post(srv.url + "/search", json={"query": "wire transfer"}, timeout=30)
        assert r.status_code == 200 and r.json()["chunk_ids"]
        embedder.fail_on_call = embedder.calls + 1
        with MCPSearchTool(srv.url + "/mcp") as tool, pytest.raises(SearchError, match="out of memory"):
            tool.search("wire transfer")
    assert served.guard.refused == 2


def test_memory_guard_checks_the_resident_size_per_call():
    MemoryGuard(None).check()  # off: never refuses
    MemoryGuard(1e9).check()
    guard = MemoryGuard(1)  # 1 MiB: any Python process is over it
    for _ in range(2):
        with pytest.raises(Overloaded, match=r"resident memory \d+ MiB is over its limit of 1 MiB"):
            guard.check()
    assert guard.refused == 2
    guard.limit_mb = resident_bytes() / 2**20 + 1024  # memory back under the limit: served
    guard.check()
    with pytest.raises(ValueError, match="positive"):
        MemoryGuard(0)
    assert is_out_of_memory(MemoryError())
    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried "
                                         "to allocate 4096 bytes"))
    assert not is_out_of_memory(RuntimeError("embedding service went away"))
