"""One contract, run over every VectorStore backend."""

from __future__ import annotations

import pytest

from agentic_rag import AgenticChunker, Document
from agentic_rag.config import StoreConfig
from agentic_rag.stores import STORES, make_store

from .fakes import HashingEmbedder

DOCS = [
    Document(id="install.md", text="# Install\n\nRun the installer.\n\n```bash\npip install agentic-rag\n```\n"),
    Document(id="fees.md", text="# Fees\n\n| Item | Fee |\n|---|---|\n| Wire transfer | $25 |\n| ATM | $2 |\n"),
    Document(id="steps.md", text="# Reset\n\n1. Open settings.\n2. Press reset.\n3. Confirm the reset.\n"),
]


@pytest.fixture(params=sorted(STORES))
def loaded(request, tmp_path):
    store = make_store(StoreConfig(kind=request.param), tmp_path)
    emb = HashingEmbedder()
    chunks = AgenticChunker().chunk_many(DOCS)
    store.upsert(chunks, emb.embed([c.text for c in chunks]))
    return store, emb, chunks


def test_count_and_get_round_trip(loaded):
    store, _, chunks = loaded
    assert store.count() == len(chunks) == 6
    got = {c.id: c for c in store.get()}
    assert got == {c.id: c for c in chunks}


def test_query_orders_by_similarity_in_unit_range(loaded):
    store, emb, chunks = loaded
    target = next(c for c in chunks if c.chunk_type == "code")
    hits = store.query(emb.embed([target.text])[0], k=4)
    assert hits[0].chunk.id == target.id
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert [h.rank for h in hits] == [1, 2, 3, 4]


def test_where_filters_single_and_list(loaded):
    store, emb, _ = loaded
    q = emb.embed(["wire transfer fee"])[0]
    rows = store.query(q, k=10, where={"chunk_type": "table_row"})
    assert {h.chunk.chunk_type for h in rows} == {"table_row"} and len(rows) == 2
    assert rows[0].chunk.text.endswith("| Wire transfer | $25 |")
    both = store.query(q, k=10, where={"chunk_type": ["table", "table_row"], "doc_id": "fees.md"})
    assert len(both) == 3
    assert store.query(q, k=10, where={"doc_id": "nope.md"}) == []


def test_upsert_same_ids_does_not_duplicate(loaded):
    store, emb, chunks = loaded
    store.upsert(chunks, emb.embed([c.text for c in chunks]))
    assert store.count() == len(chunks)


def test_delete_by_doc(loaded):
    store, _, _ = loaded
    assert store.delete({"doc_id": "fees.md"}) == 3
    assert store.count() == 3
    assert store.get({"doc_id": "fees.md"}) == []
    assert store.delete({"doc_id": "fees.md"}) == 0


def test_metadata_survives(loaded):
    store, _, _ = loaded
    steps = store.get({"chunk_type": "list"})
    assert len(steps) == 1
    c = steps[0]
    assert c.metadata["step"] == 1 and c.metadata["step_end"] == 3 and c.metadata["ordered"] is True
    assert c.heading_path == "Reset" and c.doc_id == "steps.md"
