"""Hybrid retrieval over an `AgenticIndex`: dense and BM25 candidate lists, fused with
RRF or score fusion (`fusion.py`), with intent filters applied hard, soft or not at all.

`FusionRetriever.evidence(query, k, where, retrievers, filter_mode)` returns the fused
list *and* every retriever's own candidate list (the confidence gate reads both);
`search(query, k, where)` is the plain `SearchFn` (hard filters, configured retrievers).

Retrievers (`RETRIEVERS`, name → a `Retriever`): `dense` (the vector store), `bm25` (BM25
over the chunk text, heading path prefixed) and `title` (field matching: BM25 over each
chunk's title field only — document title, heading path, API names; `lexical.field_text`),
each with its fusion weight. The title retriever scores by BM25 (`fusion.title_score =
"bm25"`) or by how much of each name field the query covers (`"coverage"`,
`store/coverage.py`: "Blue checking account" covers the Blue Account's name whole, World
Blue's by half). A retriever of your own: a class with `search` and `variant` (the
`Retriever` protocol) in its own module and one line, `register_retriever(name, it,
description)`, which also lets the config name it (`config.RETRIEVER_NAMES`); a retriever
of the package is one more entry in both dicts (a test keeps them in step).

Entity scope (`fusion.named_scope`, issue 40): when the query names documents' subject
(`AgenticIndex.named_documents`), `boost` fuses in a dense list restricted to them (weight
`named`; with `fusion.named_retrievers` also or instead a BM25 one, `named_bm25`), `within`
searches only them; `auto` (default) is boost with at most 2 hits per
document where documents share names (a product's pages), else off. `fusion.max_per_doc`
serves at most that many hits per document before the next document's (`per_doc_cap`).
The lists beyond the dense one are built for questions only (`fusion.named_question_words`):
a longer message that names a product in passing keeps the dense named list alone.

Small-to-big (`fusion.small_to_big = "section"`): the fused list is served as parents, each
hit grown with its section's neighbouring chunks up to `fusion.parent_tokens`
(`store/sections.py`'s `expand_hits`); the retrievers' own lists (`Evidence.runs`) stay the
matched chunks.

Filters (`filter_mode`):
- `hard`: every retriever searches only chunks matching `where`;
- `soft`: retrievers search everything, and a dense list restricted by `where`
  (`filtered`) is fused in as one more ranking: matching chunk types are boosted, the
  list is never emptied;
- `off`: `where` is ignored.

Candidate lists are memoised per (retriever, query, where, depth) in a `CandidateMemo`
when one is passed: replaying fusion and gate settings over the same queries then
costs no new search (`experiments/replay.py`).

Scores of fused hits: `raw_score` is the fused value; `score` divides it by the value
an item ranked first by every ranking would get (RRF: Σw / (k + 1)), so it lies in
[0, 1] and 1.0 means "first everywhere". For score fusion it already lies in [0, 1].
A single ranking is returned as is (cosines for dense, BM25 / best BM25 for bm25).
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

from agentic_rag.config import RETRIEVER_NAMES, FusionConfig, named_run
from agentic_rag.documents import Hit
from agentic_rag.retrieve.evidence import Evidence
from agentic_rag.retrieve.fusion import rrf, score_fusion
from agentic_rag.store.base import Where
from agentic_rag.store.index import AgenticIndex
from agentic_rag.store.sections import expand_hits

AUTO_PER_DOC = 2  # named_scope auto's cap on hits per document (issue 40's chosen setting)


class Retriever(Protocol):
    """One ranked candidate list for a query. `search` reads the index (and the fusion's
    config, its cached query embedding) through `on`, a `FusionRetriever`; `variant` names the
    settings of `config` the list depends on beyond query, filter and depth ("" for none):
    candidate lists are memoised per (name:variant, query, where, depth)."""

    def search(self, on: FusionRetriever, query: str, depth: int,
               where: Where | None) -> list[Hit]: ...

    def variant(self, config: FusionConfig) -> str: ...


class Dense:
    """The vector store, cosine similarity; one embedding per query text however often it is
    searched (`FusionRetriever.query_vector`)."""

    def search(self, on: FusionRetriever, query: str, depth: int,
               where: Where | None) -> list[Hit]:
        return on.index.search(query, depth, where, vector=on.query_vector(query))

    def variant(self, config: FusionConfig) -> str:
        return ""


class BM25:
    """BM25 over the chunk text, heading path prefixed (`AgenticIndex.lexical`)."""

    def search(self, on: FusionRetriever, query: str, depth: int,
               where: Where | None) -> list[Hit]:
        return on.index.search_lexical(query, depth, where)

    def variant(self, config: FusionConfig) -> str:
        return ""


class Title:
    """Field matching over each chunk's title field, scored as `fusion.title_score` says
    (`AgenticIndex.search_fields`)."""

    def search(self, on: FusionRetriever, query: str, depth: int,
               where: Where | None) -> list[Hit]:
        return on.index.search_fields(query, depth, where, on.config.title_score)

    def variant(self, config: FusionConfig) -> str:
        return config.title_score


# name → retriever; the names a config may use are `config.RETRIEVER_NAMES` (the same keys)
RETRIEVERS: dict[str, Retriever] = {"dense": Dense(), "bm25": BM25(), "title": Title()}


def register_retriever(name: str, retriever: Retriever, description: str) -> None:
    """Add `retriever` under `name`: the config may then name it wherever it names a retriever
    (`fusion.retrievers`, `fusion.named_retrievers`, `gate.add_retrievers`, `fusion.weights`)
    and sweeps may sweep it. A name already taken is an error."""
    if name in RETRIEVERS or name in RETRIEVER_NAMES:
        raise ValueError(f"retriever {name!r} is already registered")
    if not name.isidentifier():
        raise ValueError(f"retriever name {name!r}: letters, digits and _ only")
    RETRIEVERS[name] = retriever
    RETRIEVER_NAMES[name] = description


def unregister_retriever(name: str) -> None:
    """Remove a retriever `register_retriever` added (a test's toy, when it is done)."""
    RETRIEVERS.pop(name, None)
    RETRIEVER_NAMES.pop(name, None)


class CandidateMemo:
    """Candidate lists per (retriever, query, filter, depth) and the seconds each first search
    took. `cost` adds up search seconds charged since `take()`: the real time of fresh
    searches and the recorded time of replayed ones, so a replayed retrieval reports the
    latency it would have had; `fresh` is the part actually spent searching."""

    def __init__(self) -> None:
        self.lists: dict[str, list[Hit]] = {}
        self.seconds: dict[str, float] = {}
        self.cost = self.fresh = 0.0
        self.searches = 0

    def take(self) -> tuple[float, float]:
        out = (self.cost, self.fresh)
        self.cost = self.fresh = 0.0
        return out

    def __len__(self) -> int:
        return len(self.lists)


class FusionRetriever:
    def __init__(self, config: FusionConfig, index: AgenticIndex,
                 memo: CandidateMemo | None = None) -> None:
        self.config = config
        self.index = index
        self.memo = memo
        self._vectors: dict[str, object] = {}  # query → embedding, for this retriever's life
        self._auto: tuple[str, int] | None = None  # named_scope auto, resolved on first use

    def query_vector(self, query: str) -> object:
        """`query`'s embedding, computed once for this retriever's life (at most 256 kept)."""
        vec = self._vectors.get(query)
        if vec is None:
            if len(self._vectors) >= 256:  # a long-lived retriever: keep it small
                self._vectors.clear()
            vec = self._vectors[query] = self.index.embed_query(query)
        return vec

    def run(self, name: str, query: str, where: dict[str, Any] | None) -> list[Hit]:
        """One retriever's candidate list at depth `fusion.candidates`."""
        retriever = RETRIEVERS.get(name)
        if retriever is None:
            raise ValueError(f"fusion.retrievers: unknown retriever {name!r} (one of "
                             f"{', '.join(RETRIEVERS)})")
        depth = self.config.candidates
        memo = self.memo
        variant = retriever.variant(self.config)
        tag = f"{name}:{variant}" if variant else name
        key = json.dumps([tag, query, where, depth], sort_keys=True)
        if memo is not None and key in memo.lists:
            memo.cost += memo.seconds[key]
            return memo.lists[key]
        t0 = time.perf_counter()
        hits = retriever.search(self, query, depth, where)
        if memo is not None:
            dt = time.perf_counter() - t0
            memo.lists[key], memo.seconds[key] = hits, dt
            memo.cost += dt
            memo.fresh += dt
            memo.searches += 1
        return hits

    def evidence(self, query: str, k: int, where: dict[str, Any] | None = None,
                 retrievers: tuple[str, ...] | None = None,
                 filter_mode: str = "hard") -> Evidence:
        names = tuple(retrievers or self.config.retrievers)
        hard = where if (where and filter_mode == "hard") else None
        mode, cap = self.scope_mode()
        find = getattr(self.index, "named_documents", None) if mode != "off" else None
        # an index without names: no scope
        scope = find(query, match=self.config.named_match) if find is not None else []
        if scope and mode == "within" and "doc_id" not in (hard or {}):
            hard = {**(hard or {}), "doc_id": scope}
        runs = {name: self.run(name, query, hard) for name in names}
        if self.config.title_score == "coverage" and len(runs) > 1 and not runs.get("title", 1):
            del runs["title"]  # names nothing here: no part in fusion (store/coverage.py)
        if where and filter_mode == "soft":
            runs["filtered"] = self.run("dense", query, where)
        if scope and mode == "boost":  # one list per named retriever, restricted to them
            named = {**(hard or {}), "doc_id": scope}
            for name in self.named_retrievers(query):
                runs[named_run(name)] = self.run(name, query, named)
        weights = [self.config.weight(name) for name in runs]
        hits = per_doc_cap(self.fuse(runs, weights), cap)
        if self.config.small_to_big == "section":
            hits = expand_hits(hits, self.index.sections(), self.config.parent_tokens)
        return Evidence(hits=hits, runs=runs, filtered=bool(where) and filter_mode != "off", k=k)

    def named_retrievers(self, query: str) -> tuple[str, ...]:
        """The lists restricted to the named documents for `query`: `named_retrievers`, or
        for a query longer than `named_question_words` words (a message that may name a
        product in passing) the dense one alone."""
        names, limit = self.config.named_retrievers, self.config.named_question_words
        if limit and len(query.split()) > limit:
            return ("dense",)
        return names

    def scope_mode(self) -> tuple[str, int]:
        """(entity scope, hits per document cap) in effect: `auto` is boost with at most 2
        hits per document when at least a quarter of the index's documents share their name
        with another (`coverage.SHARED_NAMES`: a product's pages), else off and no cap."""
        cfg = self.config
        if cfg.named_scope != "auto":
            return cfg.named_scope, cfg.max_per_doc
        if self._auto is None:
            from agentic_rag.store.coverage import SHARED_NAMES

            share = getattr(self.index, "shared_name_share", None)
            on = share is not None and share() >= SHARED_NAMES
            self._auto = ("boost", cfg.max_per_doc or AUTO_PER_DOC) if on \
                else ("off", cfg.max_per_doc)
        return self._auto

    def fuse(self, runs: dict[str, list[Hit]], weights: list[float]) -> list[Hit]:
        cfg = self.config
        if len(runs) == 1:
            return list(next(iter(runs.values())))
        by_id = {}
        for hits in runs.values():
            for h in hits:
                by_id.setdefault(h.chunk.id, h.chunk)
        if cfg.method == "rrf":
            fused = rrf([[h.chunk.id for h in hits] for hits in runs.values()], cfg.rrf_k, weights)
            best = sum(weights) / (cfg.rrf_k + 1)
        else:
            total = sum(weights)
            fused = score_fusion(
                [{h.chunk.id: (h.raw_score if h.raw_score is not None else h.score) for h in hits}
                 for hits in runs.values()], [w / total for w in weights], cfg.normalise)
            best = 1.0
        name = "+".join(runs)
        return [Hit(chunk=by_id[cid], score=min(1.0, s / best), raw_score=s, rank=r,
                    retriever=name) for r, (cid, s) in enumerate(fused, 1)]

    def search(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[Hit]:
        return self.evidence(query, k, where, None, "hard").hits[:k]


def per_doc_cap(hits: list[Hit], cap: int) -> list[Hit]:
    """`hits` with at most `cap` per document ahead of the rest (0 = unchanged): the hits
    past a document's cap keep their order after every capped-in hit, so nothing is lost."""
    if cap <= 0:
        return hits
    seen: dict[str, int] = {}
    first, rest = [], []
    for h in hits:
        n = seen[h.chunk.doc_id] = seen.get(h.chunk.doc_id, 0) + 1
        (first if n <= cap else rest).append(h)
    if not rest:
        return hits
    return [h.model_copy(update={"rank": r}) for r, h in enumerate(first + rest, 1)]
