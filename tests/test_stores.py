"""One contract, run over every VectorStore backend."""

from __future__ import annotations

import pytest

from agentic_rag import AgenticChunker, Document
from agentic_rag.config import StoreConfig
from agentic_rag.store.backends import STORES, make_store

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


# ---- exact vs ANN search, deterministic ties (issue: rankings differed across processes) --
@pytest.mark.parametrize("kind", sorted(STORES))
def test_exact_search_equals_numpy_brute_force_with_id_tie_break(kind, tmp_path):
    import numpy as np

    from agentic_rag.documents import Chunk

    emb = HashingEmbedder(dim=16)
    texts = [f"word{i % 7} common" for i in range(60)]  # many exact duplicates → score ties
    chunks = [Chunk(id=f"d{i:03d}#prose@0-1", doc_id=f"d{i:03d}", text=t, chunk_type="prose",
                    start_char=0, end_char=1, token_count=2) for i, t in enumerate(texts)]
    vecs = emb.embed(texts)
    q = emb.embed(["word3 common"])[0]
    want = np.clip(vecs @ q, 0, 1)
    order = sorted(range(len(chunks)), key=lambda i: (-round(float(want[i]), 5), chunks[i].id))
    exact = make_store(StoreConfig(kind=kind, search="exact"), tmp_path / "e")
    exact.upsert(list(reversed(chunks)), vecs[::-1].copy())  # insertion order must not matter
    hits = exact.query(q, k=20)
    assert [h.chunk.id for h in hits] == [chunks[i].id for i in order[:20]]
    assert [h.score for h in hits] == pytest.approx([float(want[i]) for i in order[:20]], abs=1e-6)
    # where filters apply before the top-k cut, and a write invalidates the matrix
    only = exact.query(q, k=3, where={"doc_id": ["d001", "d050"]})
    assert {h.chunk.doc_id for h in only} == {"d001", "d050"}
    exact.delete({"doc_id": "d003"})
    assert "d003" not in {h.chunk.doc_id for h in exact.query(q, k=60)}
    # ANN with ties: the same set of scores, ties ordered by chunk id too
    ann = make_store(StoreConfig(kind=kind, search="ann"), tmp_path / "a")
    ann.upsert(chunks, vecs)
    got = ann.query(q, k=10)
    for a, b in zip(got, got[1:]):
        assert (-a.score, a.chunk.id) <= (-b.score, b.chunk.id)


def test_auto_mode_is_exact_below_the_size_limit(tmp_path):
    store = make_store(StoreConfig(search="auto", exact_max_chunks=5), tmp_path)
    emb = HashingEmbedder()
    chunks = AgenticChunker().chunk_many(DOCS)
    store.upsert(chunks, emb.embed([c.text for c in chunks]))
    assert store.count() == 6 and not store._use_exact()
    store2 = make_store(StoreConfig(search="auto", exact_max_chunks=6), tmp_path)
    assert store2._use_exact()


def test_top_k_stable_equals_a_full_stable_sort_with_ties():
    import numpy as np

    from agentic_rag.store.base import top_k_stable

    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 50, 333):
        for _ in range(20):
            scores = rng.integers(0, 4, n).astype(np.float32)  # many ties, also at the cut
            for k in (1, 3, 10, n, n + 5):
                want = np.argsort(-scores, kind="stable")[:k]
                assert top_k_stable(scores, k).tolist() == want.tolist()


def test_chroma_get_everything_past_sqlite_variable_limit(tmp_path):
    """An unpaged Chroma `get` of more than ~32k rows fails ("too many SQL variables"): BM25
    is rebuilt from `store.get()`, so a 100k-chunk index could not be searched lexically."""
    import numpy as np

    from agentic_rag.config import StoreConfig
    from agentic_rag.documents import Chunk
    from agentic_rag.store.chroma import ChromaStore

    store = ChromaStore(StoreConfig(), tmp_path / "chroma")
    n = 33_000
    chunks = [Chunk(id=f"d#{i:06d}", doc_id=f"d{i // 100}", text=f"t{i}", chunk_type="prose",
                    start_char=0, end_char=2, token_count=1) for i in range(n)]
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(n, 4)).astype(np.float32)
    store.upsert(chunks, vecs / np.linalg.norm(vecs, axis=1, keepdims=True))
    got = store.get()
    assert len(got) == n and len({c.id for c in got}) == n
    assert len(store.get(limit=7000)) == 7000
    assert {c.id for c in store.get({"doc_id": "d5"})} == {f"d#{i:06d}" for i in range(500, 600)}


_DOTS = """
import hashlib, sys
import numpy as np
from agentic_rag.store.base import row_dots
rng = np.random.default_rng(0)
m = rng.standard_normal((2579, 384)).astype(np.float32)
h = hashlib.sha256()
for q in rng.standard_normal((20, 384)).astype(np.float32):
    h.update(row_dots(m, q).tobytes() if sys.argv[1] == "row_dots" else (m @ q).tobytes())
print(h.hexdigest())
"""


def _dots(how: str, threads: int) -> str:
    import os
    import subprocess
    import sys

    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    return subprocess.run([sys.executable, "-c", _DOTS, how], env=env, check=True,
                          capture_output=True, text=True).stdout


def test_exact_search_scores_are_the_same_bits_at_any_blas_thread_count():
    """A Ray actor runs with 1 BLAS thread, a local run with all cores: exact search must
    score alike (numpy's `@` did not: OpenBLAS splits the sum by thread)."""
    assert _dots("row_dots", 1) == _dots("row_dots", 2)
    import numpy as np

    from agentic_rag.store.base import row_dots

    m = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert np.allclose(row_dots(m, np.array([1, 0, 2])), m @ np.array([1, 0, 2], np.float32))
