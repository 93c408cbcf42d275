"""The Chroma store on a real Chroma server (`chroma run`, from the chromadb package) started
on 127.0.0.1 by these tests: same hits as the embedded store, a clear error naming the URL
when the server stops, and the same store working again once it is back."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from agentic_rag import Document
from agentic_rag.config import RAGConfig, StoreConfig
from agentic_rag.store.backends import make_store
from agentic_rag.store.base import StoreUnavailable
from agentic_rag.store.chroma import chroma_address
from agentic_rag.store.index import AgenticIndex

from .fakes import HashingEmbedder

CHROMA = Path(sys.executable).with_name("chroma")
pytestmark = pytest.mark.skipif(not CHROMA.exists() and shutil.which("chroma") is None,
                                reason="the chromadb package's `chroma` command is not installed")

DOCS = [
    Document(id="install.md", text="# Install\n\nRun the installer.\n\n```bash\npip install "
             "agentic-rag\n```\n\nThe installer asks for a folder."),
    Document(id="fees.md", text="# Fees\n\n| Item | Fee |\n|---|---|\n| Wire transfer | $25 |\n"
             "| ATM | $2 |\n\nFees are charged monthly."),
    Document(id="steps.md", text="# Reset\n\n1. Open settings.\n2. Press reset.\n3. Confirm the "
             "reset.\n\nA reset keeps your files."),
    Document(id="cards.md", text="# Cards\n\nA lost card is blocked at once. A new card arrives "
             "in five days. Call the bank to report a stolen card."),
]
QUERIES = ["how do I install it", "wire transfer fee", "reset steps", "lost card", "monthly fees"]


def _free_port() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not 8765 <= port <= 8770:  # the lead's LLM servers
            return port


class ChromaServer:
    """`chroma run` on 127.0.0.1:`port` over `path`; started and stopped by the test."""

    def __init__(self, path: Path, port: int) -> None:
        self.path, self.port, self.proc = path, port, None
        self.url = f"http://127.0.0.1:{port}"

    def start(self) -> ChromaServer:
        exe = str(CHROMA) if CHROMA.exists() else "chroma"
        self.proc = subprocess.Popen(
            [exe, "run", "--path", str(self.path), "--host", "127.0.0.1", "--port",
             str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"chroma run exited with {self.proc.returncode}"
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"chroma run on {self.url} did not answer within 90 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = ChromaServer(tmp_path_factory.mktemp("chroma-server") / "db", _free_port()).start()
    yield srv
    srv.stop()


def _index(home: Path, url: str | None, collection: str) -> AgenticIndex:
    cfg = RAGConfig().with_overrides({"home": str(home), "store.url": url,
                                      "store.collection": collection})
    return AgenticIndex(cfg, embedder=HashingEmbedder())


def test_server_index_gives_the_embedded_hits(server, tmp_path):
    """Indexed through the server, searched (dense, BM25, hybrid) and compared with the
    embedded store: identical ids, order and scores."""
    remote = _index(tmp_path / "remote", server.url, "same_hits")
    local = _index(tmp_path / "local", None, "same_hits")
    rep_r, rep_l = remote.add_documents(DOCS), local.add_documents(DOCS)
    assert rep_r.added_chunks == rep_l.added_chunks > len(DOCS)
    assert not (tmp_path / "remote" / "store-chroma").exists()  # the vectors are on the server
    assert remote.count() == local.count()
    for q in QUERIES:
        for search in ("search", "search_lexical"):
            got = [(h.chunk.id, round(h.score, 6)) for h in getattr(remote, search)(q, k=5)]
            want = [(h.chunk.id, round(h.score, 6)) for h in getattr(local, search)(q, k=5)]
            assert got == want and got, (q, search)
    # the server's own HNSW search (search="ann") with a filter: every matching chunk, only
    # those (its order is approximate, as embedded)
    ann = make_store(StoreConfig(url=server.url, collection="same_hits", search="ann"),
                     tmp_path / "x")
    where = {"doc_id": ["fees.md", "cards.md"]}
    qv = remote.embed_query("wire transfer fee")
    assert ({h.chunk.id for h in ann.query(qv, 50, where)}
            == {h.chunk.id for h in local.store.query(qv, 50, where)}
            == {c.id for c in local.store.get(where)})
    # a second client (another worker) reads the same collection; re-adding is a no-op
    again = _index(tmp_path / "remote2", server.url, "same_hits")
    assert again.count() == local.count()
    assert again.add_documents(DOCS).added_chunks == 0


def test_stopped_server_names_its_url_and_a_restart_resumes(server, tmp_path):
    store = make_store(StoreConfig(url=server.url, collection="resume_me", search="ann"),
                       tmp_path)
    idx = _index(tmp_path / "home", server.url, "resume_me")
    idx.add_documents(DOCS[:2])
    n = store.count()
    assert n > 0
    qv = idx.embed_query("wire transfer fee")
    before = [h.chunk.id for h in store.query(qv, 3)]
    server.stop()
    try:
        for call in (store.count, lambda: store.query(qv, 3), lambda: store.get(limit=1),
                     lambda: idx.add_documents(DOCS[2:])):
            with pytest.raises(StoreUnavailable) as err:
                call()
            msg = str(err.value)
            assert server.url in msg and "store.url" in msg and "chroma run" in msg
            assert "Traceback" not in msg and len(msg) < 400
        fresh = make_store(StoreConfig(url=server.url, collection="other"), tmp_path / "y")
        with pytest.raises(StoreUnavailable, match=server.url):
            fresh.count()
    finally:
        server.start()
    # the same objects work again: the collection and its vectors survived on disk
    assert store.count() == n
    assert [h.chunk.id for h in store.query(qv, 3)] == before
    rep = idx.add_documents(DOCS)  # the interrupted write, resumed: only the missing docs
    assert rep.unchanged_documents == 2 and rep.added_chunks > 0
    assert store.count() == idx.count() > n


def test_unreachable_url_is_a_clear_error(tmp_path):
    port = _free_port()  # nothing listens there
    store = make_store(StoreConfig(url=f"http://127.0.0.1:{port}", connect_timeout_s=1),
                       tmp_path)
    with pytest.raises(StoreUnavailable, match=rf"http://127\.0\.0\.1:{port}.*unreachable"):
        store.count()


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "ftp://host:1", "http://:8000",
                                 "http://h:99999"])
def test_bad_server_url_names_the_field(url):
    with pytest.raises(ValueError, match="store.url"):
        chroma_address(url)


# ---- a sweep on the server ------------------------------------------------------------------
SWEEP_DOCS = {d.id: d.text for d in DOCS}
SWEEP_QS = [("q1", "How do I install it?", "install.md", "pip install"),
            ("q2", "What does a wire transfer cost?", "fees.md", "$25"),
            ("q3", "How do I reset?", "steps.md", "Press reset"),
            ("q4", "What happens to a lost card?", "cards.md", "blocked")]


def _spec(docs, qs, url: str | None, sizes: list[int]):  # noqa: ANN001, ANN202
    from agentic_rag.experiments.spec import SweepSpec

    return SweepSpec.model_validate({
        "name": "chroma-server", "k": 5, "metrics": ["retrieval"],
        "grid": {"chunking.max_tokens": sizes, "fusion.retrievers": [["dense"], ["dense", "bm25"]]},
        "dataset": {"name": "local", "docs": str(docs), "questions": str(qs), "split": "all"},
        "base": {"store": {"url": url, "connect_timeout_s": 2}}})


def _rows(run_dir: Path) -> list[dict]:
    import json

    return [{k: v for k, v in json.loads(x).items() if not k.startswith("latency_")}
            for x in (run_dir / "rows.jsonl").read_text().splitlines()]


def test_sweep_on_the_server_equals_embedded_and_resumes_after_a_stop(server, tmp_path,
                                                                     monkeypatch):
    from agentic_rag.experiments import plan as execute
    from agentic_rag.experiments.runner import run_sweep

    from .fakes import local_corpus

    docs, qs = local_corpus(tmp_path, SWEEP_DOCS, SWEEP_QS)
    monkeypatch.setattr(execute, "make_embedder", lambda config, cache_dir=None: HashingEmbedder())

    def run(url: str | None, sizes: list[int], where: str):  # noqa: ANN202
        return run_sweep(_spec(docs, qs, url, sizes), tmp_path / where / "runs",
                         tmp_path / where / "cache", progress=False, log=lambda *_: None)

    local = run(None, [64, 128], "local")
    remote = run(server.url, [64, 128], "remote")
    assert _rows(remote.run_dir) == _rows(local.run_dir) and len(_rows(local.run_dir)) == 16
    assert not list((tmp_path / "remote" / "cache").glob("index-*/store-chroma"))
    # the server stops: a sweep needing a new index fails naming it; back up, it resumes
    server.stop()
    try:
        with pytest.raises(StoreUnavailable, match=server.url):
            run(server.url, [48], "remote")
    finally:
        server.start()
    runs = {d.name for d in (tmp_path / "remote" / "runs").iterdir()}
    again = run(server.url, [48], "remote")
    assert again.run_dir.name in runs  # the interrupted run, resumed (no new folder)
    local2 = run(None, [48], "local")
    assert _rows(again.run_dir) == _rows(local2.run_dir) and len(_rows(again.run_dir)) == 8
