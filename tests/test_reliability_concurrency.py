"""Reliability: concurrency. Readers in threads while a writer adds documents; two processes
indexing into one home serialise on the index's write lock, and a writer that cannot get it
fails with a clear message."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agentic_rag.config import RAGConfig
from agentic_rag.documents import Hit
from agentic_rag.ingest.embeddings import CachedEmbedder
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.store.index import AgenticIndex, IndexLocked

from .fakes import HashingEmbedder
from .test_reliability_crash import ROOT, assert_in_step, corpus

pytestmark = pytest.mark.reliability


def _check(hits: list, k: int) -> None:
    assert isinstance(hits, list) and len(hits) <= k
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert len({h.chunk.id for h in hits}) == len(hits)
    for h in hits:
        assert isinstance(h, Hit) and 0.0 <= h.score <= 1.0
        assert h.chunk.id.startswith(h.chunk.doc_id + "#") and h.chunk.text


@pytest.mark.slow
def test_8_reader_threads_while_a_writer_adds(tmp_path, minilm, banking, record_property):
    cfg = RAGConfig(home=str(tmp_path / "home"))
    idx = AgenticIndex(cfg, embedder=CachedEmbedder(minilm, tmp_path / "emb.sqlite"))
    idx.add_documents(banking[:10])
    _ = idx.lexical
    pipe = Pipeline(cfg, index=idx)
    queries = ["monthly maintenance fee", "how do I dispute a charge", "wire transfer limit",
               "steps to unlock a card", "overdraft", ""]
    stop = threading.Event()
    errors: list[BaseException] = []
    counts = [0] * 8

    def reader(n: int) -> None:
        try:
            i = 0
            while i == 0 or not stop.is_set():  # at least one query each
                q = queries[(n + i) % len(queries)]
                kind = (n + i) % 3
                if kind == 0:
                    _check(idx.search(q, k=5), 5)
                elif kind == 1:
                    _check(idx.search_lexical(q, k=5), 5)
                else:
                    _check(pipe.retrieve(q)[1].hits, 1000)
                counts[n] += 1
                i += 1
                time.sleep(0.005)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def writer() -> None:
        try:
            for start in range(10, 20, 5):
                idx.add_documents(banking[start:start + 5])
            idx.add_documents(banking[:3])  # unchanged: a no-op amid the reads
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            stop.set()

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(8)]
    w = threading.Thread(target=writer)
    for t in threads:
        t.start()
    w.start()
    w.join(300)
    for t in threads:
        t.join(60)
    assert not errors, sorted({repr(e)[:300] for e in errors})
    assert all(c > 0 for c in counts), counts
    record_property("concurrent_queries", sum(counts))
    ids = sorted(c.id for c in idx.store.get())
    assert sorted(idx.lexical.chunk_ids) == ids and len(ids) == idx.count()
    assert {c.doc_id for c in idx.store.get()} == {d.id for d in banking[:20]}


WRITER = r"""
import sys, time
sys.path.insert(0, {root!r})
from agentic_rag.config import RAGConfig
from agentic_rag.store.index import AgenticIndex
from tests.fakes import HashingEmbedder
from tests.test_reliability_crash import corpus

home, part = sys.argv[1], int(sys.argv[2])
docs = [d.model_copy(update={{"id": f"p{{part}}-{{d.id}}"}}) for d in corpus(1, n=30)]
idx = AgenticIndex(RAGConfig(home=home), embedder=HashingEmbedder())
t0 = time.time()
for i in range(0, len(docs), 10):
    idx.add_documents(docs[i:i + 10], batch_size=16)
print(len(idx.lexical), t0, time.time(), flush=True)
"""


def test_two_processes_indexing_one_home_serialise(tmp_path, record_property):
    home = tmp_path / "home"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER.format(root=str(ROOT)), str(home),
                               str(p)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in (1, 2)]
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    docs = [d.model_copy(update={"id": f"p{p}-{d.id}"}) for p in (1, 2) for d in corpus(1, n=30)]
    n = assert_in_step(home, docs)
    record_property("concurrent_writers_rows_checked", n)


def test_writer_blocked_by_another_process_fails_clearly(tmp_path):
    from filelock import FileLock

    home = tmp_path / "home"
    home.mkdir()
    held = FileLock(str(home / ".write.lock"))
    held.acquire()
    try:
        idx = AgenticIndex(RAGConfig(home=str(home)), embedder=HashingEmbedder(),
                           lock_timeout_s=0.3)
        t0 = time.perf_counter()
        with pytest.raises(IndexLocked, match="another process has been writing") as exc:
            idx.add_documents(corpus(1, n=2))
        assert str(home) in str(exc.value) and time.perf_counter() - t0 < 5
    finally:
        held.release()
    idx.add_documents(corpus(1, n=2))  # free again: works
    assert_in_step(home, corpus(1, n=2))


def test_reader_in_another_process_sees_a_consistent_index(tmp_path):
    """A long-lived reader (a notebook) sees another process's completed write in BM25 and in
    dense search alike, without being reopened."""
    home = tmp_path / "home"
    cfg = RAGConfig(home=str(home))
    a = AgenticIndex(cfg, embedder=HashingEmbedder())
    a.add_documents(corpus(1, n=6))
    assert len(a.lexical) == a.count() == len(a.search("guide", k=1000))
    code = WRITER.format(root=str(ROOT))
    res = subprocess.run([sys.executable, "-c", code, str(home), "3"], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert sorted(a.lexical.chunk_ids) == sorted(c.id for c in a.store.get())
    assert len(a.lexical) == int(res.stdout.split()[0])
    dense = {h.chunk.id for h in a.search("guide topic", k=1000)}
    assert dense == set(a.lexical.chunk_ids) and len(dense) == a.count()
    assert Path(home / "index-journal.json").exists() is False


def test_dense_search_during_a_write_does_not_keep_a_stale_matrix(tmp_path):
    """Deterministic form of the 8-thread race: a reader searches exactly while an upsert is
    in flight (from inside the collection's upsert); afterwards dense must see every chunk."""
    idx = AgenticIndex(RAGConfig(home=str(tmp_path / "home")), embedder=HashingEmbedder())
    idx.add_documents(corpus(1, n=2))
    store = idx.store
    col = store._col  # the chromadb collection (test-only reach into the store)
    real_upsert = col.upsert

    def upsert_with_a_reader_inside(*a, **k):  # noqa: ANN002, ANN003
        idx.search("guide", k=5)  # a concurrent reader, at the worst moment
        return real_upsert(*a, **k)

    col.upsert = upsert_with_a_reader_inside
    idx.add_documents([d.model_copy(update={"id": "new-" + d.id}) for d in corpus(1, n=2)])
    col.upsert = real_upsert
    dense = {h.chunk.id for h in idx.search("guide", k=1000)}
    assert dense == {c.id for c in idx.store.get()} == set(idx.lexical.chunk_ids)


def test_writer_killed_while_another_waits_for_the_lock(tmp_path, record_property):
    """A is killed -9 mid-write while B waits for the lock: the OS frees A's lock, B recovers
    A's half-written documents (removes them), writes its own; A's rerun then completes."""
    import os
    import signal

    from .test_reliability_crash import WORKER, run_worker

    home = tmp_path / "home"
    ready = tmp_path / "b-ready"
    b_script = WRITER.format(root=str(ROOT)).replace(
        "t0 = time.time()", f"t0 = time.time(); open({str(ready)!r}, 'w').close()")
    a = subprocess.Popen([sys.executable, "-c", WORKER.format(root=str(ROOT)), str(home), "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "WORKER_PAUSE_S": "2.0"})  # a slow writer
    assert a.stdout is not None
    b = None
    for line in a.stdout:
        if not line.startswith("upsert"):
            continue
        if b is None:  # A holds the lock and is writing: start B, which will have to wait
            b = subprocess.Popen([sys.executable, "-c", b_script, str(home), "7"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        elif ready.exists():  # B is at its first add_documents, i.e. waiting for the lock
            time.sleep(0.5)
            break
    killed_at = time.time()
    os.kill(a.pid, signal.SIGKILL)
    a.wait(60)
    assert a.returncode == -signal.SIGKILL, "A finished before B was ready: slow machine?"
    assert b is not None
    out, err = b.communicate(timeout=240)
    assert b.returncode == 0, err[-2000:]
    assert float(out.split()[1]) < killed_at  # B started its write while A held the lock
    b_docs = [d.model_copy(update={"id": f"p7-{d.id}"}) for d in corpus(1, n=30)]
    assert_in_step(home, b_docs)  # nothing of A's interrupted write is left
    run_worker(home, 1)  # A's rerun
    n = assert_in_step(home, b_docs + corpus(1))
    record_property("kill9_rows_checked", n)


class _SlowModels:
    """A loopback HTTP server standing in for a llama.cpp server that is busy with a long
    prompt: /v1/models answers after `delay` seconds (or never: `delay=None`)."""

    def __init__(self, delay: float | None, alias: str = "local") -> None:
        import http.server
        import json
        import socketserver

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                if delay is None:
                    time.sleep(30)
                    return
                time.sleep(delay)
                body = json.dumps({"data": [{"id": alias}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:  # noqa: ANN002
                pass

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _no_popen(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
    raise AssertionError("a second llama.cpp server was launched on a port already in use")


def test_a_busy_server_on_the_port_is_reused_not_relaunched(tmp_path, monkeypatch):
    """A second evaluation on the same port while the first one's server works through a long
    prompt: /v1/models answers after the 2 s health-check timeout. The second process must
    wait and reuse it, not launch a server that dies on `address already in use` (and, before
    it dies, truncates the running server's log)."""
    from agentic_rag.config_llm import ServerConfig
    from agentic_rag.llm.server import LlamaServer

    busy = _SlowModels(delay=3.0)
    try:
        monkeypatch.setattr("agentic_rag.llm.server.subprocess.Popen", _no_popen)
        log = tmp_path / "logs" / f"llama-server-{busy.port}.log"
        log.parent.mkdir(parents=True)
        log.write_text("the running server's log\n")
        # the stand-in answers as llama-cpp-python's server: a config that runs that one
        srv = LlamaServer(ServerConfig(port=busy.port, startup_timeout_s=20, binary=None),
                          home=tmp_path)
        assert srv.start(warm_up=False) is srv and srv.proc is None  # reused, not owned
        srv.stop()  # not ours: nothing to stop
        assert log.read_text() == "the running server's log\n"
    finally:
        busy.close()


def test_a_port_held_by_something_else_is_a_clear_error(tmp_path, monkeypatch):
    from agentic_rag.config_llm import ServerConfig
    from agentic_rag.llm.binary import ServerError
    from agentic_rag.llm.server import LlamaServer

    mute = _SlowModels(delay=None)
    try:
        monkeypatch.setattr("agentic_rag.llm.server.subprocess.Popen", _no_popen)
        srv = LlamaServer(ServerConfig(port=mute.port, startup_timeout_s=3), home=tmp_path)
        with pytest.raises(ServerError, match=f"127.0.0.1:{mute.port} is in use"):
            srv.start(warm_up=False)
        assert srv.proc is None
    finally:
        mute.close()
