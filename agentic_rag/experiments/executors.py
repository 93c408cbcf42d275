"""Executors: they turn units of work (`plan.Unit`) into finished rows.

An executor is a context manager with `run_all(units)`, yielding batches of `Finished` rows
in unit order (within a unit, in `unit.todo` order), so `rows.jsonl` is the same whatever
runs them. It never writes a row: the driver (`runner.run_sweep`) alone appends them to
`rows.jsonl` and the row cache, so resume, the row cache, `meta.json` and the summary are
the same for every executor.

- `LocalExecutor`: this process, unit after unit.
- `RayExecutor` (`ray_executor.py`): a Ray cluster; units cut into query shards, run by actors that keep their
  embedding model and indexes loaded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from agentic_rag.datasets.base import Dataset
from agentic_rag.experiments import plan as execute
from agentic_rag.experiments.measure import PendingRow, start_row
from agentic_rag.experiments.plan import LLM_GROUPS, Finished, Unit, cached_row
from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.llm.calls import CallMeter, MeteredChatModel, map_calls
from agentic_rag.llm.chat import make_chat_model
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.retrieve.retrievers import CandidateMemo


class Executor(Protocol):
    """Runs units; entered once per sweep (`with executor:`), then `run_all(units)`."""

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...

    def run_all(self, units: list[Unit]) -> Iterator[list[Finished]]: ...


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
        self.scorer = None
        self._llm_server = contextlib.ExitStack()  # the local LLM server, when started here
        self.docs_by_id = {d.id: d for d in ds.corpus}
        self.embedders: dict | None = None  # None: each index opens its own embedder

    def __enter__(self) -> LocalExecutor:
        if self.compute:
            self.start_llm_server()
            self.make_scorer()
        return self

    def start_llm_server(self) -> None:
        """The local LLM server, if the metrics or the retrieval of some config (LLM
        strategies: `RAGConfig.retrieval_calls_llm`) need an LLM and no remote endpoint is
        set."""
        spec = self.spec
        llm_groups = LLM_GROUPS & set(spec.metrics)
        retrieval = any(c[2].retrieval_calls_llm for c in self.configs)
        if llm_groups - {"ragas_nonllm"} or retrieval:
            from agentic_rag.llm.server import serve_local

            self._llm_server.enter_context(serve_local(spec.base.llm, self.cache_dir, log=self.log))

    def make_scorer(self) -> None:
        """The ragas scorer, if the metrics include ragas."""
        spec = self.spec
        if "ragas" in spec.metrics:
            from agentic_rag.evaluation.ragas_metrics import RagasScorer

            self.scorer = RagasScorer(spec.base.llm, spec.ragas_metrics,
                                      cache_dir=str(self.cache_dir / "ragas-cache"))

    def __exit__(self, *exc: object) -> None:
        self._llm_server.close()

    def run_all(self, units: list[Unit]) -> Iterator[list[Finished]]:
        """Every unit's rows, unit after unit."""
        for unit in units:
            yield from self.run(unit)

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
        first, index = execute.open_index(self.configs[members[0]][2], self.ds, self.cache_dir,
                                          self.progress, self.log, self.embedders)
        memo = CandidateMemo() if self.spec.replay else None
        pipes = {}
        for i in members:
            cfg = self.configs[i][2].with_overrides({"home": first.home,
                                                     "store.collection": first.store.collection})
            chat = MeteredChatModel(lambda c=cfg: make_chat_model(c.llm, c.home,
                                                                  pack=self.spec.reply_pack),
                                    self.meter)
            pipes[i] = execute.Pipeline(cfg, index=index, chat_model=chat)
            pipes[i].candidates = memo
        for p in pipes.values():  # warm-up (model load, first-query costs), not recorded
            p.retrieve(self.ds.queries[0].text, k=self.spec.k)
        if memo is not None:  # the warm-up's lists must not be replayed as free
            memo.lists.clear()
            memo.seconds.clear()
            memo.take()
        return pipes


