"""Units of work, and the executor that turns them into rows.

A sweep's work is split by index: the index is built once per distinct (corpus, chunking,
embedding, lexical, store) and shared by every config with those settings — and by later
sweeps, since index folders live in `cache_dir`; embeddings are cached per embedder. A
`Unit` is one such group: the configs that share an index and the (config, query, repeat)
rows still to do, with the ones the row cache already holds.

The executors that turn units into rows are in `executors.py`; they never write rows: the
driver (`runner.run_sweep`) alone appends them to `rows.jsonl` and the row cache.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.base import Dataset, Query
from agentic_rag.datasets.qa import load_dataset, load_local, with_questions
from agentic_rag.experiments.row_cache import RowCache, RowKeys
from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.ingest.embeddings import make_embedder
from agentic_rag.retrieve.pipeline import Pipeline  # noqa: F401 (the executors build pipelines through this module)
from agentic_rag.store.index import AgenticIndex

LLM_GROUPS = {"answers", "hallucination", "ragas", "ragas_nonllm", "agent"}


def load_spec_dataset(spec: SweepSpec) -> Dataset:
    d = spec.dataset
    if d.name == "local":
        ds = load_local(d.docs, d.questions, knowable=d.knowable, unanswerable=d.unanswerable)
        return ds.without_documents(d.exclude).split(d.split).sample(d.n, d.seed, d.corpus_size)
    ds = load_dataset(d.name).without_documents(d.exclude).split(d.split).sample(
        d.n, d.seed, d.corpus_size)
    if d.questions:  # the same corpus, other questions (a generated set over it)
        ds = with_questions(ds, d.questions, knowable=d.knowable, unanswerable=d.unanswerable)
    return ds


def open_index(cfg: RAGConfig, ds: Dataset, cache_dir: str | Path, progress: bool = False,
               log=print, embedders: dict | None = None,  # noqa: ANN001
               ) -> tuple[RAGConfig, AgenticIndex]:
    """The shared, cached index of `ds.corpus` under `cfg`'s chunking / embedder / BM25
    (built once per distinct key in `cache_dir`, reused by every later run). `embedders`:
    embedders by their config, reused across calls (a Ray worker loads its model once)."""
    cache_dir = Path(cache_dir)
    key = cfg.index_hash(ds.corpus_fingerprint())
    over: dict = {"home": str(cache_dir / f"index-{key}")}
    if cfg.store.url:  # one server holds every index of the sweep: one collection per key
        over["store.collection"] = f"{cfg.store.collection[:48]}-{key}"
    first = cfg.with_overrides(over)
    if embedders is None:
        emb = make_embedder(first.embedding, cache_dir / "embeddings")
    else:
        emb = embedders.get(first.embedding.model_dump_json())
        if emb is None:
            emb = embedders[first.embedding.model_dump_json()] = make_embedder(
                first.embedding, cache_dir / "embeddings")
    index = AgenticIndex(first, embedder=emb)
    t0 = time.perf_counter()
    rep = index.add_documents(ds.corpus, progress=progress)
    _ = index.lexical
    log(f"index {key}: {index.count()} chunks ({rep.added_chunks} new) in "
        f"{time.perf_counter() - t0:.1f}s")
    return first, index


def estimate_llm_cost(spec: SweepSpec, n_configs: int, n_queries: int) -> dict[str, int]:
    """Rough count of LLM calls: 1 answer + 1 judge; ragas' LLM metrics make several calls
    each (statement extraction + verification: ~2-3 per metric)."""
    per_query = bool({"answers", "hallucination", "ragas"} & set(spec.metrics)) \
        + ("hallucination" in spec.metrics) \
        + (3 * len(spec.ragas_metrics) if "ragas" in spec.metrics else 0) \
        + (3 if "agent" in spec.metrics else 0)
    sampled = min(spec.llm_sample, n_queries)
    calls = n_configs * spec.repeats * sampled * per_query
    budget = spec.base.context.max_tokens + 150
    return {"llm_calls": calls, "prompt_tokens_est": calls * budget,
            "completion_tokens_est": calls * 40}


@dataclass
class Unit:
    """The configs sharing one index (`members`, indexes into the sweep's configs) and their
    rows still to do, `todo` = (config index, query, repeat, row-cache key) in run order;
    `found`: the stored rows among them, by key."""

    members: list[int]
    todo: list[tuple[int, Query, int, str]]
    found: dict[str, dict[str, Any]]

    @property
    def cached(self) -> int:
        return sum(t[3] in self.found for t in self.todo)

    @property
    def to_compute(self) -> int:
        return len(self.todo) - self.cached


@dataclass(frozen=True)
class Finished:
    """A row ready to write; `fresh`: computed now (the row cache should store it), not read."""

    row: dict[str, Any]
    key: str
    fresh: bool


def plan_units(spec: SweepSpec, ds: Dataset, configs: list, done: set[tuple[str, str, int]],
               keys: RowKeys, cache: RowCache, use_cache: bool = True) -> list[Unit]:
    """One unit per distinct index: the rows not in `done` (config id, query id, repeat),
    and, when `use_cache`, those of them the row cache holds."""
    groups: dict[str, list[int]] = {}
    corpus_fp = ds.corpus_fingerprint()
    for i, (_, _, cfg) in enumerate(configs):
        groups.setdefault(cfg.index_hash(corpus_fp), []).append(i)
    units = []
    for members in groups.values():
        # configs interleaved per query, so drift (caches, background work) hits all alike
        todo = [(i, q, r, keys.key(i, q.id, r)) for r in range(spec.repeats) for q in ds.queries
                for i in members if (f"c{i:02d}", q.id, r) not in done]
        found = cache.get_many([t[3] for t in todo]) if use_cache and todo else {}
        units.append(Unit(members, todo, found))
    return units


def cached_row(row: dict[str, Any], i: int, configs: list) -> dict[str, Any]:
    """A stored row under this sweep's config id and label (bookkeeping, not a measurement)."""
    return {**row, "config_id": f"c{i:02d}", "config": configs[i][0]}
