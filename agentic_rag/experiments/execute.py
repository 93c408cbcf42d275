"""Units of work, and the executor that turns them into rows.

A sweep's work is split by index: the index is built once per distinct (corpus, chunking,
embedding, lexical, store) and shared by every config with those settings — and by later
sweeps, since index folders live in `cache_dir`; embeddings are cached per embedder. A
`Unit` is one such group: the configs that share an index and the (config, query, repeat)
rows still to do, with the ones the row cache already holds.

`LocalExecutor` runs units in this process and yields finished rows; it never writes
them: the driver (`runner.run_sweep`) alone appends them to `rows.jsonl` and the row cache.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import RAGConfig
from ..datasets import Dataset, Query, load_dataset, load_local
from ..embeddings import make_embedder
from ..index import AgenticIndex
from ..llm import CallMeter, MeteredChatModel, make_chat_model, map_calls
from ..pipeline import Pipeline
from ..retrievers import CandidateMemo
from .evaluate import PendingRow, start_row
from .row_cache import RowCache, RowKeys
from .spec import SweepSpec

LLM_GROUPS = {"answers", "hallucination", "ragas", "ragas_nonllm", "agent"}


def load_spec_dataset(spec: SweepSpec) -> Dataset:
    d = spec.dataset
    ds = load_local(d.docs, d.questions) if d.name == "local" else load_dataset(d.name)
    return ds.split(d.split).sample(d.n, d.seed, d.corpus_size)


def index_key(cfg: RAGConfig, corpus_fp: str) -> str:
    parts = [corpus_fp, cfg.chunking.model_dump_json(), cfg.embedding.model_dump_json(),
             cfg.lexical.model_dump_json(), cfg.store.kind]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]


def open_index(cfg: RAGConfig, ds: Dataset, cache_dir: str | Path, progress: bool = False,
               log=print) -> tuple[RAGConfig, AgenticIndex]:  # noqa: ANN001
    """The shared, cached index of `ds.corpus` under `cfg`'s chunking / embedder / BM25
    (built once per distinct key in `cache_dir`, reused by every later run)."""
    cache_dir = Path(cache_dir)
    key = index_key(cfg, ds.corpus_fingerprint())
    over: dict = {"home": str(cache_dir / f"index-{key}")}
    if cfg.store.url:  # one server holds every index of the sweep: one collection per key
        over["store.collection"] = f"{cfg.store.collection[:48]}-{key}"
    first = cfg.with_overrides(over)
    emb = make_embedder(first.embedding, cache_dir / "embeddings")
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
        groups.setdefault(index_key(cfg, corpus_fp), []).append(i)
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


class LocalExecutor:
    """Runs units in this process. Used as a context manager: on entry, when `compute` (some
    row is to be computed), it starts the local LLM server if the metrics need an LLM and no
    remote endpoint is configured, and builds the ragas scorer; on exit it stops the server.

    Concurrency: retrieval runs in this thread, row after row; the LLM part of a row (agent,
    answer, judge, ragas) runs in a worker, up to `max_concurrency` rows at once
    (`llm.map_calls`), and rows come out in run order, so `rows.jsonl` is the same at any
    concurrency. Every LLM call of the pipelines goes through `meter` (counted, capped)."""

    def __init__(self, spec: SweepSpec, ds: Dataset, configs: list, cache_dir: str | Path,
                 llm_ids: frozenset[str], *, compute: bool = True, progress: bool = False,
                 log=print, max_concurrency: int = 1,  # noqa: ANN001
                 meter: CallMeter | None = None) -> None:
        self.spec, self.ds, self.configs = spec, ds, configs
        self.cache_dir, self.llm_ids, self.compute = Path(cache_dir), llm_ids, compute
        self.progress, self.log = progress, log
        self.max_concurrency, self.meter = max_concurrency, meter or CallMeter()
        self.server = self.scorer = None
        self.docs_by_id = {d.id: d for d in ds.corpus}

    def __enter__(self) -> LocalExecutor:
        spec = self.spec
        llm_groups = LLM_GROUPS & set(spec.metrics)
        local = spec.base.llm.base_url is None and not spec.base.llm.endpoints
        if llm_groups - {"ragas_nonllm"} and local and self.compute:
            from ..server import LlamaServer

            self.server = LlamaServer(spec.base.llm.server, home=self.cache_dir)
            if not self.server.running():
                self.log(f"starting the local LLM server ({spec.base.llm.server.model}) ...")
                self.server.start()
        if "ragas" in spec.metrics and self.compute:
            from ..evaluation.ragas_metrics import RagasScorer

            self.scorer = RagasScorer(spec.base.llm, spec.ragas_metrics,
                                      cache_dir=str(self.cache_dir / "ragas-cache"))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.stop()

    def run(self, unit: Unit) -> Iterator[list[Finished]]:
        """The unit's rows, in `unit.todo` order: one batch of all of them when every row is
        stored (the index is not even opened), else one row per batch as each finishes."""
        if unit.to_compute == 0:
            yield [Finished(cached_row(unit.found[key], i, self.configs), key, False)
                   for i, _, _, key in unit.todo]
            return
        pipes = self._pipelines(unit.members)

        def started() -> Iterator[tuple[str, PendingRow, bool]]:  # retrieval: this thread
            for i, q, r, key in unit.todo:
                if key in unit.found:
                    yield key, PendingRow(cached_row(unit.found[key], i, self.configs)), False
                else:
                    yield key, start_row(self.spec, self.ds, i, self.configs[i], pipes[i], q, r,
                                         self.scorer, self.docs_by_id, self.llm_ids), True

        def finish(item: tuple[str, PendingRow, bool]) -> Finished:  # LLM calls: a worker
            key, pending, fresh = item
            return Finished(pending.finish(), key, fresh)

        for _, done in map_calls(finish, started(), self.max_concurrency):
            yield [done]

    def _pipelines(self, members: list[int]) -> dict[int, Pipeline]:
        """One pipeline per config on the unit's shared index, warmed up. Configs that differ
        only in fusion, gate or filters share one memo of candidate lists (`spec.replay`), so
        they replay the same searches instead of repeating them."""
        first, index = open_index(self.configs[members[0]][2], self.ds, self.cache_dir,
                                  self.progress, self.log)
        memo = CandidateMemo() if self.spec.replay else None
        pipes = {}
        for i in members:
            cfg = self.configs[i][2].with_overrides({"home": first.home,
                                                     "store.collection": first.store.collection})
            chat = MeteredChatModel(lambda c=cfg: make_chat_model(c.llm, c.home,
                                                                  pack=self.spec.reply_pack),
                                    self.meter)
            pipes[i] = Pipeline(cfg, index=index, chat_model=chat)
            pipes[i].candidates = memo
        for p in pipes.values():  # warm-up (model load, first-query costs), not recorded
            p.retrieve(self.ds.queries[0].text, k=self.spec.k)
        if memo is not None:  # the warm-up's lists must not be replayed as free
            memo.lists.clear()
            memo.seconds.clear()
            memo.take()
        return pipes
