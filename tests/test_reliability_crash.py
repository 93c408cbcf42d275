"""Reliability: kill -9 during indexing. After the rerun the vector store, BM25 (`lexical/`)
and the chunk list are in step: same ids, same counts, no orphan vector, no missing row."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from agentic_rag.config import RAGConfig
from agentic_rag.documents import Document
from agentic_rag.store.index import AgenticIndex

from .fakes import HashingEmbedder

pytestmark = pytest.mark.reliability

ROOT = Path(__file__).resolve().parents[1]


def corpus(version: int, n: int = 12) -> list[Document]:
    """`n` documents with prose, code, a table and a list. Version 2 changes every third
    document so that its chunk count stays the same but offsets (hence ids) move."""
    docs = []
    for i in range(n):
        word = "revised " * (version - 1) if i % 3 == 0 else ""
        text = (f"# Guide {i}\n\nThis {word}guide {i} explains topic{i} in some detail. "
                f"It mentions alpha{i} and beta{i}.\n\n"
                f"```python\ndef f{i}(x):\n    return x + {i}\n```\n\n"
                f"| key | value |\n|---|---|\n| k{i} | v{i} |\n| m{i} | n{i} |\n\n"
                f"1. first step {i}\n2. second step {i}\n")
        docs.append(Document(id=f"doc{i:02d}.md", text=text, title=f"Guide {i}"))
    return docs


WORKER = r"""
import os, sys, time
sys.path.insert(0, {root!r})
PAUSE = float(os.environ.get("WORKER_PAUSE_S", "0.05"))
from agentic_rag.config import RAGConfig
from agentic_rag.store.index import AgenticIndex
from agentic_rag.store.lexical import LexicalIndex
from tests.fakes import HashingEmbedder
from tests.test_reliability_crash import corpus

home, version = sys.argv[1], int(sys.argv[2])
idx = AgenticIndex(RAGConfig(home=home), embedder=HashingEmbedder())
store = idx.store
up, de = store.upsert, store.delete
def upsert(chunks, vecs):
    up(chunks, vecs); print("upsert", flush=True); time.sleep(PAUSE)
def delete(where):
    n = de(where); print("delete", flush=True); time.sleep(PAUSE); return n
store.upsert, store.delete = upsert, delete
save = LexicalIndex.save
def slow_save(self, folder):
    print("lexical", flush=True); time.sleep(0.2); save(self, folder)
LexicalIndex.save = slow_save
report = idx.add_documents(corpus(version), batch_size=8)
print("added", report.added_chunks, getattr(report, "recovered_documents", "-"), flush=True)
len(idx.lexical)
print("done", flush=True)
"""


def run_worker(home: Path, version: int, kill_at: tuple[str, int] | None = None) -> list[str]:
    """Index `corpus(version)` in a child process; with `kill_at=(event, n)` kill -9 it right
    after the n-th `event` line (upsert / delete / lexical / added). Returns its lines."""
    proc = subprocess.Popen([sys.executable, "-c", WORKER.format(root=str(ROOT)), str(home),
                             str(version)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines, seen = [], 0
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.strip())
        if kill_at and line.split()[0] == kill_at[0]:
            seen += 1
            if seen == kill_at[1]:
                os.kill(proc.pid, signal.SIGKILL)
                break
    proc.wait(60)
    if kill_at:
        assert proc.returncode == -signal.SIGKILL, (lines, proc.stderr.read())
    else:
        assert proc.returncode == 0 and lines[-1] == "done", (lines, proc.stderr.read())
    return lines


def check_in_step(home: Path, docs: list[Document], dim: int = 64) -> dict:
    """Count, without asserting, how far the store and BM25 are from the chunker's chunk list
    of `docs`. `lost` = expected chunks missing from the store, stored with another text,
    unreachable by a vector query, or missing from BM25 (each chunk counted once)."""
    idx = AgenticIndex(RAGConfig(home=str(home)), embedder=HashingEmbedder())
    expected = {c.id: c.text for d in docs for c in idx.chunker.chunk(d)}
    stored = idx.store.get()
    ids = [c.id for c in stored]
    missing, orphans = set(expected) - set(ids), set(ids) - set(expected)
    wrong_text = {c.id for c in stored if c.id in expected and c.text != expected[c.id]}
    not_in_bm25 = set(expected) - set(idx.lexical.chunk_ids)
    # every vector is reachable by a query (no chunk row without its vector or vice versa)
    q = np.ones(dim, dtype=np.float32) / np.sqrt(dim)
    reached = {h.chunk.id for h in idx.store.query(q, len(expected))} if ids else set()
    unreachable = set(expected) - missing - reached
    # BM25 finds the current text, not an earlier version's
    stale_bm25 = [d.id for d in docs if "revised" in d.text and not any(
        h.chunk.doc_id == d.id for h in idx.search_lexical("revised", 50))]
    return {"expected": len(expected), "stored": len(ids), "count": idx.count(),
            "duplicates": len(ids) - len(set(ids)), "missing": sorted(missing),
            "orphans": sorted(orphans), "wrong_text": sorted(wrong_text),
            "not_in_bm25": sorted(not_in_bm25), "unreachable": sorted(unreachable),
            "bm25_extra": sorted(set(idx.lexical.chunk_ids) - set(expected)),
            "stale_bm25_docs": stale_bm25,
            "pending_journal": getattr(idx, "pending_journal", lambda: None)(),
            "lost": len(missing | wrong_text | not_in_bm25 | unreachable)}


def assert_in_step(home: Path, docs: list[Document], dim: int = 64) -> int:
    """Store, BM25 on disk and in memory, and the chunker's chunk list: same ids and texts.
    Returns the number of chunks checked."""
    c = check_in_step(home, docs, dim)
    assert c["stored"] == c["count"] == c["expected"] and not c["duplicates"], f"count mismatch {c}"
    assert not c["missing"] and not c["orphans"], \
        f"missing rows {c['missing'][:5]}, orphans {c['orphans'][:5]}"
    assert not c["wrong_text"], f"stored text differs for {c['wrong_text'][:5]}"
    assert c["pending_journal"] is None
    assert not c["not_in_bm25"] and not c["bm25_extra"], "BM25 out of step with the store"
    assert not c["unreachable"], f"no vector reaches {c['unreachable'][:5]}"
    assert not c["stale_bm25_docs"], f"BM25 serves an earlier version of {c['stale_bm25_docs']}"
    assert c["lost"] == 0
    return c["expected"]


def record_kill9_counts(record_property, c: dict) -> None:
    """The run's own counts, recorded before any assertion so that a failing run reports them
    too (benchmarks/reliability_report.py sums them into RELIABILITY.md)."""
    record_property("kill9_rows_checked", c["expected"])
    record_property("kill9_lost_rows", c["lost"])


def test_lost_rows_are_counted(tmp_path):
    """The lost-row count is measured: rows deleted behind the index's back are counted, once
    each, and a text changed in the store counts too."""
    home = tmp_path / "home"
    docs = corpus(1, n=4)
    AgenticIndex(RAGConfig(home=str(home)), embedder=HashingEmbedder()).add_documents(docs)
    assert check_in_step(home, docs)["lost"] == 0
    store = AgenticIndex(RAGConfig(home=str(home)), embedder=HashingEmbedder()).store.open()
    ids = sorted(c.id for c in store.get())
    store._col.delete(ids=ids[:2])  # two rows vanish from the vector store only
    vec = store._col.get(ids=[ids[2]], include=["embeddings"])["embeddings"]
    store._col.update(ids=[ids[2]], documents=["an earlier version's text"], embeddings=vec)
    c = check_in_step(home, docs)
    assert c["missing"] == ids[:2] and c["wrong_text"] == [ids[2]] and c["lost"] == 3, c
    with pytest.raises(AssertionError):
        assert_in_step(home, docs)


KILLS = {"first-build, mid-upsert": (None, ("upsert", 2)),  # doc02 half written
         "replace, after delete": (1, ("delete", 2)),
         "replace, mid-upsert": (1, ("upsert", 2)),
         "replace, before BM25 saved": (1, ("lexical", 1))}


@pytest.mark.parametrize("case", list(KILLS))
def test_kill9_during_index_then_rerun_is_in_step(tmp_path, case, record_property):
    before, kill_at = KILLS[case]
    home = tmp_path / "home"
    if before is not None:
        run_worker(home, before)  # a complete earlier version
    run_worker(home, 2, kill_at=kill_at)
    lines = run_worker(home, 2)  # the rerun of the same command
    record_kill9_counts(record_property, check_in_step(home, corpus(2)))
    assert_in_step(home, corpus(2))
    assert lines[-1] == "done"


@pytest.mark.slow
def test_kill9_of_agentic_rag_index_cli(tmp_path, minilm, record_property):
    """The real command with the real model, killed once the store is being written."""
    docs_dir = tmp_path / "docs"
    docs_dir.mkdir()
    for d in corpus(1, n=24):
        (docs_dir / d.id).write_text(d.text * 2)
    home = tmp_path / "home"
    cli = str(Path(sys.executable).parent / "agentic-rag")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([cli, "index", str(docs_dir), "--home", str(home)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if (home / "index-journal.json").exists():  # the write has begun
            break
        time.sleep(0.05)
    time.sleep(0.5)  # into the embedding / upserts
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    res = subprocess.run([cli, "index", str(docs_dir), "--home", str(home)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    from agentic_rag.ingest.readers import iter_document_paths, read_document

    docs = [read_document(f, i) for f, i in iter_document_paths([docs_dir])]
    record_kill9_counts(record_property, check_in_step(home, docs, dim=minilm.dim))
    assert_in_step(home, docs, dim=minilm.dim)
    assert killed, "the command finished before it could be killed: give it more to index"
    assert " 0 chunks added" not in res.stdout  # the rerun re-added what the crash cut off
