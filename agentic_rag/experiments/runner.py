"""Run a sweep: every config × query (× repeat) → one row of measured results.

`run_sweep` is the driver. The work is planned by `plan.py` (one unit per distinct
index) and run by an executor (`executors.py`: this process; `ray_executor.py`: a Ray cluster with
`spec.executor: ray`), each row is measured by `measure.py`, and the rows become the
results and summary tables in `summary.py`. The driver alone writes
the run folder (through `runfolder.py`): `runs_dir/<timestamp>-<name>/` with
`spec.yaml`, `configs/`, `rows.jsonl` (appended and fsync'd row by row),
`results.parquet`, `summary.csv`, `meta.json` and `status.json` (and, for conversations'
turns answered by the agent, `session-figures.csv`).

Resume: rerunning the same spec finds the unfinished run of the same spec hash and skips
the (config, query, repeat) keys already in rows.jsonl; a torn last line (kill -9
mid-write) is dropped. Nothing is lost or duplicated.

Rows are shared across runs too: every finished row is stored in a row cache
(`row_cache.py`) under a digest of everything that can change it, so a rerun of a finished
sweep (or of one with a few configs changed) reads those rows instead of recomputing them,
without opening their indexes, and writes a complete run folder of its own.

LLM calls: the LLM part of up to `llm.max_concurrency` rows runs at once (retrieval stays
serial; rows are written in the same order at any concurrency), every call is counted by
one `llm.CallMeter`, whose cap (`--max-llm-calls`) stops the sweep cleanly and resumably;
the expected calls, tokens and wall time are logged first, progress with an ETA while it
runs (`llm_cost.py`).
"""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag import tracing
from agentic_rag.datasets.base import Dataset
from agentic_rag.evaluation.sessions import session_figures
from agentic_rag.experiments.executors import LocalExecutor
from agentic_rag.experiments.llm_cost import (
    Progress,
    estimate_line,
    local_server_meta,
    measured_rates,
    planned_model,
    serves_in_parallel,
)
from agentic_rag.experiments.measure import evaluation_settings, failed
from agentic_rag.experiments.plan import (
    LLM_GROUPS,
    Finished,
    estimate_llm_cost,
    load_spec_dataset,
    plan_units,
)
from agentic_rag.experiments.ray_executor import RayExecutor
from agentic_rag.experiments.row_cache import RowCache, RowKeys, code_version, llm_identity
from agentic_rag.experiments.runfolder import mark_complete, new_run_dir, versions, write_meta
from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.experiments.summary import (
    cached_summary,
    results_frame,
)
from agentic_rag.jsonl import read_lines
from agentic_rag.llm.calls import CallMeter, LLMCallCap


@dataclass
class SweepResult:
    run_dir: Path
    results: pd.DataFrame
    summary: pd.DataFrame
    spec: SweepSpec
    rows_from_cache: int = 0

    def plot_tradeoff(self, x: str = "latency_p50_ms", y: str = "ndcg@10", path=None):  # noqa: ANN001, ANN201
        from agentic_rag.experiments.plots import plot_tradeoff

        return plot_tradeoff(self.summary, x, y, path)

    def plot_metric(self, param: str, metric: str = "ndcg@10", path=None):  # noqa: ANN001, ANN201
        from agentic_rag.experiments.plots import plot_metric

        return plot_metric(self.summary, param, metric, path)


class RunFolderBusy(RuntimeError):
    """Another sweep is writing this run folder."""


class _Rows:
    """Append-only JSONL of finished rows; tolerant of a torn last line. Held under an
    exclusive lock (`flock` on rows.jsonl, released when closed or when the process dies):
    a second sweep that would write the same run folder is refused, whatever its executor."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: set[tuple[str, str, int]] = set()
        self.rows: list[dict] = []
        self.lines: list[str] = []  # each kept row's JSON line, in the same order
        self._f = path.open("a", encoding="utf-8")
        try:
            fcntl.flock(self._f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._f.close()
            raise RunFolderBusy(
                f"{path.parent}: another sweep of this spec is writing this run folder "
                f"({path.name} is locked); wait for it to finish or stop it, then rerun to "
                "resume") from None
        for row, line in read_lines(path):
            self._keep(row, line)

    def _keep(self, row: dict, line: str) -> None:
        key = (row["config_id"], row["query_id"], row["repeat"])
        if key not in self.done:
            self.done.add(key)
            self.rows.append(row)
            self.lines.append(line)

    def add(self, row: dict) -> str:
        """Append one row (fsync'd); returns its JSON line."""
        return self.add_many([row])[0]

    def add_many(self, rows: list[dict]) -> list[str]:
        """Append rows with one fsync; returns their JSON lines. Each row is kept as read back
        from its line, so a fresh run and a resumed or cached one give the same values and
        types."""
        lines = [json.dumps(row, default=float) for row in rows]
        self._f.write("".join(line + "\n" for line in lines))
        self._f.flush()
        os.fsync(self._f.fileno())
        for line in lines:
            self._keep(json.loads(line), line)
        return lines

    def close(self) -> None:
        self._f.close()


def _find_run(runs_dir: Path, spec: SweepSpec) -> Path | None:
    if not runs_dir.exists():
        return None
    for d in sorted(runs_dir.glob(f"*-{spec.name}"), reverse=True):
        status = d / "status.json"
        if status.exists():
            s = json.loads(status.read_text())
            if s.get("spec_hash") == spec.spec_hash() and not s.get("complete"):
                return d
    return None


def _open_run_dir(runs_dir: Path, spec: SweepSpec, configs: list) -> tuple[Path, bool]:
    """The unfinished run folder of this spec, or a new one with the spec and its configs."""
    run_dir = _find_run(runs_dir, spec)
    if run_dir is not None:
        return run_dir, True
    run_dir = new_run_dir(runs_dir, spec.name)
    (run_dir / "configs").mkdir()
    spec.save(run_dir / "spec.yaml")
    for i, (_, _, cfg) in enumerate(configs):
        cfg.save(run_dir / "configs" / f"c{i:02d}.yaml")
    (run_dir / "status.json").write_text(json.dumps(
        {"spec_hash": spec.spec_hash(), "complete": False}))
    return run_dir, False


def run_sweep(spec: SweepSpec | str | Path, runs_dir: str | Path = "experiments/runs",
              cache_dir: str | Path = "experiments/cache", progress: bool = True,
              log=print, *, use_cache: bool = True,  # noqa: ANN001
              row_cache: str | Path | None = None, max_concurrency: int | None = None,
              meter: CallMeter | None = None) -> SweepResult:
    """Run every config × query × repeat of `spec` into a run folder (resuming an unfinished
    run of the same spec).

    Row cache: every finished row without a failure is stored in `row_cache` (default
    `cache_dir/rows.sqlite`) under a digest of everything that can change it (see
    `row_cache.py`: config, dataset and query, repeat, evaluation settings, model
    identities, package and code versions). A row found there is read, not recomputed, and
    its latency columns are the ones recorded by the run that computed it; an index whose
    rows are all stored is never opened. `use_cache=False` recomputes every row (the fresh
    rows replace the stored ones). A new run folder is written either way; `meta.json`
    says how many rows came from the cache (`rows_from_cache`).

    LLM calls: up to `max_concurrency` rows' LLM parts at once (default
    `llm.max_concurrency`; rows are written in the same order at any concurrency), every call
    through `meter` (default: a fresh `llm.CallMeter`); a meter with a cap stops the sweep
    with `llm.LLMCallCap` once it is reached, leaving an unfinished run that a rerun resumes.
    Before an LLM-bound sweep the expected calls, tokens and wall time are logged, and while
    it runs, progress with an ETA."""
    from tqdm.auto import tqdm

    spec = spec if isinstance(spec, SweepSpec) else SweepSpec.load(spec)
    runs_dir, cache_dir = Path(runs_dir), Path(cache_dir)
    ds = load_spec_dataset(spec)
    configs = spec.configs()
    run_dir, resumed = _open_run_dir(runs_dir, spec, configs)
    rows = _Rows(run_dir / "rows.jsonl")
    try:  # the lock on rows.jsonl is released whatever fails before the loop
        llm_ids = frozenset(q.id for q in ds.queries[:spec.llm_sample])  # the sample is seeded
        packages = versions()
        cache = RowCache(row_cache if row_cache is not None else cache_dir / "rows.sqlite")
        keys = RowKeys([cfg for _, _, cfg in configs], ds, evaluation_settings(spec), llm_ids,
                       {"packages": packages}, cache)
        units = plan_units(spec, ds, configs, rows.done, keys, cache, use_cache)
        from_cache = sum(u.cached for u in units)
        to_compute = sum(u.to_compute for u in units)
        conc = max_concurrency or spec.base.llm.slots  # max_concurrency per endpoint
        meter = meter if meter is not None else CallMeter()
        llm_rows = _llm_rows_to_compute(spec, units, llm_ids)
        meta = _meta(spec, ds, configs, keys, packages, cache, from_cache)
        meta["llm"]["max_concurrency"] = conc
        if llm_rows and spec.base.llm.uses_local_server:
            # the embedded server: its build
            meta["llm"].update(local_server_meta(spec.base.llm.server))
        write_meta(run_dir, meta)  # + commit, Python, platform
        total = len(configs) * len(ds.queries) * spec.repeats
        _announce(spec, ds, configs, run_dir, len(rows.done) if resumed else None, total,
                  from_cache, to_compute, len(units), log)
        if llm_rows:
            _announce_llm(spec, ds, configs, cache_dir, llm_rows, conc, log)
        llm_progress = Progress(llm_rows, log, f"{spec.name} LLM rows", meter)
        bar = tqdm(total=total, initial=len(rows.done), desc=spec.name, disable=not progress)
    except BaseException:
        rows.close()
        raise
    try:
        make = RayExecutor if spec.executor == "ray" else LocalExecutor
        with _traces(spec, run_dir, llm_rows, log), \
                make(spec, ds, configs, cache_dir, llm_ids, compute=to_compute > 0,
                     progress=progress, log=log, max_concurrency=conc, meter=meter) as executor:
            for batch in executor.run_all(units):
                _record(batch, rows, cache)
                bar.update(len(batch))
                llm_progress.advance(sum(f.fresh and f.row["query_id"] in llm_ids
                                         for f in batch))
    except LLMCallCap:
        log(f"{len(rows.done)}/{total} rows in {run_dir} (unfinished: a rerun resumes it)")
        raise
    finally:
        bar.close()
        rows.close()
        cache.close()
    return _finish(spec, configs, run_dir, rows, cache, use_cache, from_cache)


def _traces(spec: SweepSpec, run_dir: Path, llm_rows: int, log):  # noqa: ANN001, ANN202
    """The spans of a sweep's agent rows (the agent loop, a session's turns: the `agent`
    metrics group) recorded as `spec.base.tracing` says (default: `run_dir/traces.jsonl`);
    rows read from the row cache make none. Not under Ray: its workers are other processes."""
    if llm_rows and "agent" in spec.metrics and spec.executor != "ray":
        return tracing.recording(spec.base.tracing, run_dir, say=log)
    return nullcontext()


def _finish(spec: SweepSpec, configs: list, run_dir: Path, rows: _Rows, cache: RowCache,
            use_cache: bool, from_cache: int) -> SweepResult:
    """A finished run's tables from its rows (`results.parquet`, `summary.csv`, the summary
    read from the row cache where it can be; for session turns answered by the agent,
    `session-figures.csv`: abstention and clarifying rates by answerability per config, with
    bootstrap CIs over sessions), then the folder marked complete."""
    results = results_frame(rows.rows, configs)
    summary = cached_summary(results, spec, configs, rows.lines, cache, use_cache)
    cache.close()
    results.to_parquet(run_dir / "results.parquet", index=False)
    summary.to_csv(run_dir / "summary.csv", index=False)
    if {"answerability", "agent_abstained"} <= set(results) and \
            results["agent_abstained"].notna().any():  # a conversation run's agent turns
        session_figures(results).to_csv(run_dir / "session-figures.csv", index=False)
    mark_complete(run_dir, spec_hash=spec.spec_hash())
    return SweepResult(run_dir=run_dir, results=results, summary=summary, spec=spec,
                       rows_from_cache=from_cache)


def _record(batch: list[Finished], rows: _Rows, cache: RowCache) -> None:
    """Append finished rows to rows.jsonl; store the fresh ones without a failure in the row
    cache (a failed row is retried by the next run)."""
    lines = rows.add_many([f.row for f in batch])
    for f, line in zip(batch, lines):
        if f.fresh and not failed(f.row):
            cache.put(f.key, line)


def _llm_rows_to_compute(spec: SweepSpec, units: list, llm_ids: frozenset[str]) -> int:
    """The rows still to compute that make LLM calls."""
    if not (LLM_GROUPS - {"ragas_nonllm"}) & set(spec.metrics):
        return 0
    return sum(q.id in llm_ids and key not in u.found for u in units for _, q, _, key in u.todo)


def _announce_llm(spec: SweepSpec, ds: Dataset, configs: list, cache_dir: Path, llm_rows: int,
                  concurrency: int, log=print) -> None:  # noqa: ANN001
    """The LLM calls, tokens and wall time of the rows still to compute, at the rates
    measured in this sweep's reply caches (else the rate constants)."""
    groups = sorted(LLM_GROUPS & set(spec.metrics))
    full = estimate_llm_cost(spec, len(configs), len(ds.queries))
    share = llm_rows / max(1, len(configs) * spec.repeats * min(spec.llm_sample, len(ds.queries)))
    fp = ds.corpus_fingerprint()
    homes = sorted({cfg.index_hash(fp) for _, _, cfg in configs})
    rates = measured_rates((cache_dir / f"index-{h}" / "cache" / "llm.sqlite" for h in homes),
                           model=planned_model(spec.base.llm))
    est = {k: round(v * share) for k, v in full.items()}
    log(f"LLM metrics {groups} on {min(spec.llm_sample, len(ds.queries))} queries per config, "
        f"{llm_rows} row(s) to compute. "
        + estimate_line(est, rates, concurrency, serves_in_parallel(spec.base.llm)))


def _meta(spec: SweepSpec, ds: Dataset, configs: list, keys: RowKeys,
          packages: dict[str, str], cache: RowCache, from_cache: int) -> dict[str, Any]:
    """The sweep's own `meta.json` fields (runfolder adds commit, Python and platform)."""
    return {"spec_hash": spec.spec_hash(), "packages": packages, "dataset": ds.name,
            "dataset_fingerprint": keys.dataset_fingerprint, "dataset_stats": ds.stats(),
            "seed": spec.dataset.seed, "embedding_model": spec.base.embedding.model,
            "llm": {"identity": llm_identity(spec.base.llm, cache),
                    "model": spec.base.llm.model, "base_url": spec.base.llm.base_url,
                    "endpoints": spec.base.llm.endpoints, "server_model": spec.base.llm.server.model},
            "configs": {f"c{i:02d}": label for i, (label, _, _) in enumerate(configs)},
            "row_cache": str(cache.path), "rows_from_cache": from_cache,
            "executor": spec.executor,
            "code_version": code_version(), **_session_meta(ds)}


def _session_meta(ds: Dataset) -> dict[str, Any]:
    """For a dataset of conversations' final turns (`experiments/sessions.py`): how its rows
    were made and the corpus caveat (the dataset's description), beside every figure."""
    from agentic_rag.experiments.sessions import SESSION_KEY

    if not any(SESSION_KEY in q.metadata for q in ds.queries):
        return {}
    return {"sessions": {"rows": "each query is a conversation's final user turn run as a "
                                 "session turn: its history as written seeds a Session; "
                                 "retrieval searches the query the session builds "
                                 "(agent.session.query_mode); the agent group runs run_turn",
                         "corpus": ds.description}}


def _announce(spec: SweepSpec, ds: Dataset, configs: list, run_dir: Path, resumed: int | None,
              total: int, from_cache: int, to_compute: int, n_indexes: int,
              log=print) -> None:  # noqa: ANN001
    """The sweep's opening lines: its size, where it writes, what is resumed or cached (the
    LLM calls to expect: `_announce_llm`)."""
    log(f"sweep {spec.name}: {len(configs)} configs × {len(ds.queries)} queries × {spec.repeats} "
        f"repeat(s) on {ds.name} ({ds.stats()['documents']} docs) → {run_dir}"
        + (f" [resuming: {resumed}/{total} done]" if resumed is not None else "")
        + (f" [{from_cache} row(s) from the row cache]" if from_cache else ""))
    log(f"{n_indexes} distinct index(es) for {len(configs)} configs")
