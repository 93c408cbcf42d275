"""Artefacts found in our own measurements, each pinned by a test that fails on the old
behaviour (see ../shared/MEASURE.md): filters that empty a list, budgets that differ
between configs, replay that disagrees with a live search."""

from __future__ import annotations

import pytest

from agentic_rag.config import RAGConfig
from agentic_rag.documents import Document
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.retrieve.retrievers import CandidateMemo
from agentic_rag.store.index import AgenticIndex

from .fakes import HashingEmbedder

PROSE = [Document(id=f"p{i}.md", text=f"# Topic {i}\n\nParagraph {i} about rivers, towns and "
                  f"{['fees', 'accounts', 'bridges', 'history'][i % 4]} in the valley.\n")
         for i in range(12)]


@pytest.fixture()
def prose_pipe(tmp_path):
    def make(**overrides):
        cfg = RAGConfig(home=str(tmp_path)).with_overrides(overrides)
        idx = AgenticIndex(cfg, embedder=HashingEmbedder())
        idx.add_documents(PROSE)
        return Pipeline(cfg, index=idx)
    return make


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_filter_on_types_the_corpus_lacks_is_dropped_up_front(prose_pipe, mode):
    # quick sweep, HaluEval (100 % prose): "how many"/"$" questions were filtered to tables,
    # returned 0 hits when static, and the gate's "gain" was relax_filters undoing that
    pipe = prose_pipe(**{"query.filter_mode": mode, "gate.mode": "static"})
    intent, result = pipe.retrieve("How many fees are charged in the valley?", k=5)
    assert intent.intent == "data"
    assert intent.dropped_filters == ["table", "table_row"] and intent.filters == {}
    assert len(result.hits) == 5


def test_soft_filter_never_empties_and_boosts_the_matching_type(tmp_path):
    docs = PROSE + [Document(id="code.md", text="# Snippet\n\n```python\nvalley_fees = 3\n```\n")]
    cfg = RAGConfig(home=str(tmp_path)).with_overrides({"gate.mode": "static"})
    idx = AgenticIndex(cfg, embedder=HashingEmbedder())
    idx.add_documents(docs)
    q = "show me the code snippet for valley_fees"
    ranks = {}
    for mode in ("off", "soft", "hard"):
        pipe = Pipeline(cfg.with_overrides({"query.filter_mode": mode}), index=idx)
        intent, res = pipe.retrieve(q, k=5)
        assert intent.intent == "code"
        ids = [h.chunk.doc_id for h in res.hits]
        ranks[mode] = (ids.index("code.md") if "code.md" in ids else 99, len(ids))
    assert ranks["hard"] == (0, 1)  # hard: only code chunks, one exists
    assert ranks["soft"][1] == 5 and ranks["soft"][0] <= ranks["off"][0]


def test_every_mode_returns_the_same_budget(prose_pipe):
    # static returned initial_k = 5 and was scored "@10" against a gate returning 20
    for mode in ("static", "gated", "always_expand"):
        pipe = prose_pipe(**{"gate.mode": mode, "gate.min_confidence": 0.99})
        _, res = pipe.retrieve("rivers and towns", k=10)
        assert len(res.hits[:10]) == 10, mode


def test_replayed_candidate_lists_give_the_live_result(prose_pipe):
    # a sweep's replay (shared memo of candidate lists) must agree exactly with live search
    live = prose_pipe(**{"gate.mode": "always_expand"})
    replay = prose_pipe(**{"gate.mode": "always_expand"})
    replay.candidates = CandidateMemo()
    for q in ("How many bridges cross the valley?", "history of towns", "accounts"):
        first = replay.retrieve(q, k=5)[1]
        searches = replay.candidates.searches
        again = replay.retrieve(q, k=5)[1]
        assert replay.candidates.searches == searches  # nothing searched the second time
        want = live.retrieve(q, k=5)[1]
        for got in (first, again):
            assert [(h.chunk.id, h.score) for h in got.hits] == \
                [(h.chunk.id, h.score) for h in want.hits]
            assert [t.model_dump() for t in got.trace] == [t.model_dump() for t in want.trace]
