"""Run a sweep: every config × query (× repeat) → one row of measured results.

Work is shared: the index is built once per distinct (corpus, chunking, embedding,
lexical, store) and reused by every config that shares it — and by later sweeps, since
index folders live in `cache_dir`; embeddings are cached per embedder. Cost grows with
the number of distinct chunkings, not with the number of configs.

Each run has a folder `runs_dir/<timestamp>-<name>/` with `spec.yaml`, `configs/`,
`rows.jsonl` (appended and fsync'd row by row), `results.parquet`, `summary.csv`,
`meta.json` and `status.json`. Resume: rerunning the same spec finds the unfinished run
of the same spec hash and skips the (config, query, repeat) keys already in rows.jsonl;
a torn last line (kill -9 mid-write) is dropped. Nothing is lost or duplicated.

Rows are shared across runs too: every finished row is stored in a row cache
(`row_cache.py`) under a digest of everything that can change it, so a rerun of a finished
sweep (or of one with a few configs changed) reads those rows instead of recomputing them,
without opening their indexes, and writes a complete run folder of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..config import ContextConfig, RAGConfig
from ..context import AgenticContextFormatter
from ..datasets import Dataset, load_dataset, load_local
from ..embeddings import make_embedder
from ..evaluation import doc_run, exact_match, ir_metrics, per_type_hits, span_metrics, token_f1
from ..evaluation.llm_judge import generate_answer, judge_support
from ..index import AgenticIndex
from ..llm import LLMError
from ..pipeline import Pipeline
from ..retrievers import CandidateMemo
from .row_cache import RowCache, RowKeys, code_version
from .runfolder import git_commit as _git_commit  # noqa: F401 - claims.py, agent_eval.py import it
from .runfolder import mark_complete, new_run_dir, versions, write_meta
from .runfolder import versions as _versions  # noqa: F401 - claims.py, agent_eval.py import it
from .spec import SweepSpec
from .stats import bootstrap_ci, paired_bootstrap, pareto_front

QUALITY = ["ndcg@10", "recall@10", "recall@5", "mrr@10", "precision@5"]


@dataclass
class SweepResult:
    run_dir: Path
    results: pd.DataFrame
    summary: pd.DataFrame
    spec: SweepSpec
    rows_from_cache: int = 0

    def plot_tradeoff(self, x: str = "latency_p50_ms", y: str = "ndcg@10", path=None):  # noqa: ANN001, ANN201
        from .plots import plot_tradeoff

        return plot_tradeoff(self.summary, x, y, path)

    def plot_metric(self, param: str, metric: str = "ndcg@10", path=None):  # noqa: ANN001, ANN201
        from .plots import plot_metric

        return plot_metric(self.summary, param, metric, path)


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = json.dumps(v) if isinstance(v, (list, tuple)) else v
    return out


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
    first = cfg.with_overrides({"home": str(cache_dir / f"index-{key}")})
    emb = make_embedder(first.embedding, cache_dir / "embeddings")
    index = AgenticIndex(first, embedder=emb)
    t0 = time.perf_counter()
    rep = index.add_documents(ds.corpus, progress=progress)
    _ = index.lexical
    log(f"index {key}: {index.count()} chunks ({rep.added_chunks} new) in "
        f"{time.perf_counter() - t0:.1f}s")
    return first, index


class _Rows:
    """Append-only JSONL of finished rows; tolerant of a torn last line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: set[tuple[str, str, int]] = set()
        self.rows: list[dict] = []
        self.lines: list[str] = []  # each kept row's JSON line, in the same order
        if path.exists():
            raw = path.read_bytes()
            good = 0
            for line in raw.splitlines(keepends=True):
                if not line.endswith(b"\n"):
                    break
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    break
                self._keep(row, line.decode("utf-8").rstrip("\n"))
                good += len(line)
            if good != len(raw):
                with path.open("r+b") as f:
                    f.truncate(good)
        self._f = path.open("a", encoding="utf-8")

    def _keep(self, row: dict, line: str) -> None:
        key = (row["config_id"], row["query_id"], row["repeat"])
        if key not in self.done:
            self.done.add(key)
            self.rows.append(row)
            self.lines.append(line)

    def add(self, row: dict) -> str:
        """Append one row (fsync'd); returns its JSON line. The row is kept as read back from
        that line, so a fresh run and a resumed or cached one give the same values and types."""
        line = json.dumps(row, default=float)
        self._f.write(line + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())
        self._keep(json.loads(line), line)
        return line

    def add_many(self, rows: list[dict]) -> None:
        """Append rows already in their JSON form (read from one), with one fsync."""
        lines = [json.dumps(row, default=float) for row in rows]
        self._f.write("".join(line + "\n" for line in lines))
        self._f.flush()
        os.fsync(self._f.fileno())
        for row, line in zip(rows, lines):
            self._keep(row, line)

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


LLM_GROUPS = {"answers", "hallucination", "ragas", "ragas_nonllm", "agent"}


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


def run_sweep(spec: SweepSpec | str | Path, runs_dir: str | Path = "experiments/runs",
              cache_dir: str | Path = "experiments/cache", progress: bool = True,
              log=print, *, use_cache: bool = True,  # noqa: ANN001
              row_cache: str | Path | None = None) -> SweepResult:
    """Run every config × query × repeat of `spec` into a run folder (resuming an unfinished
    run of the same spec).

    Row cache: every finished row without a failure is stored in `row_cache` (default
    `cache_dir/rows.sqlite`) under a digest of everything that can change it (see
    `row_cache.py`: config, dataset and query, repeat, evaluation settings, model
    identities, package and code versions). A row found there is read, not recomputed, and
    its latency columns are the ones recorded by the run that computed it; an index whose
    rows are all stored is never opened. `use_cache=False` recomputes every row (the fresh
    rows replace the stored ones). A new run folder is written either way; `meta.json`
    says how many rows came from the cache (`rows_from_cache`)."""
    from tqdm.auto import tqdm

    spec = spec if isinstance(spec, SweepSpec) else SweepSpec.load(spec)
    runs_dir, cache_dir = Path(runs_dir), Path(cache_dir)
    ds = load_spec_dataset(spec)
    configs = spec.configs()
    run_dir, resumed = _open_run_dir(runs_dir, spec, configs)
    rows = _Rows(run_dir / "rows.jsonl")
    llm_ids = frozenset(q.id for q in ds.queries[:spec.llm_sample])  # the sample is seeded
    groups: dict[str, list[int]] = {}
    corpus_fp = ds.corpus_fingerprint()
    for i, (_, _, cfg) in enumerate(configs):
        groups.setdefault(index_key(cfg, corpus_fp), []).append(i)
    # plan: per index, the rows still to do and those of them the row cache holds
    packages = versions()
    cache = RowCache(row_cache if row_cache is not None else cache_dir / "rows.sqlite")
    keys = RowKeys([cfg for _, _, cfg in configs], ds, evaluation_settings(spec), llm_ids,
                   {"packages": packages}, cache)
    plan = []
    for members in groups.values():
        # configs interleaved per query, so drift (caches, background work) hits all alike
        todo = [(i, q, r, keys.key(i, q.id, r)) for r in range(spec.repeats) for q in ds.queries
                for i in members if (f"c{i:02d}", q.id, r) not in rows.done]
        found = cache.get_many([t[3] for t in todo]) if use_cache and todo else {}
        plan.append((members, todo, found, sum(t[3] in found for t in todo)))
    from_cache = sum(hits for *_, hits in plan)
    to_compute = sum(len(todo) for _, todo, _, _ in plan) - from_cache

    stats = ds.stats()
    meta = {"spec_hash": spec.spec_hash(), "packages": packages, "dataset": ds.name,
            "dataset_fingerprint": keys.dataset_fingerprint, "dataset_stats": stats,
            "seed": spec.dataset.seed, "embedding_model": spec.base.embedding.model,
            "llm": {"model": spec.base.llm.model, "base_url": spec.base.llm.base_url,
                    "server_model": spec.base.llm.server.model},
            "configs": {f"c{i:02d}": label for i, (label, _, _) in enumerate(configs)},
            "row_cache": str(cache.path), "rows_from_cache": from_cache,
            "code_version": code_version()}
    write_meta(run_dir, meta)  # + commit, Python, platform
    total = len(configs) * len(ds.queries) * spec.repeats
    log(f"sweep {spec.name}: {len(configs)} configs × {len(ds.queries)} queries × {spec.repeats} "
        f"repeat(s) on {ds.name} ({stats['documents']} docs) → {run_dir}"
        + (f" [resuming: {len(rows.done)}/{total} done]" if resumed else "")
        + (f" [{from_cache} row(s) from the row cache]" if from_cache else ""))
    llm_groups = LLM_GROUPS & set(spec.metrics)
    if llm_groups and to_compute:
        est = estimate_llm_cost(spec, len(configs), len(ds.queries))
        log(f"LLM metrics {sorted(llm_groups)} on {min(spec.llm_sample, len(ds.queries))} queries "
            f"per config: about {est['llm_calls']} LLM calls, ~{est['prompt_tokens_est']:,} prompt "
            f"+ ~{est['completion_tokens_est']:,} completion tokens (cached calls are free)")
    log(f"{len(groups)} distinct index(es) for {len(configs)} configs")

    bar = tqdm(total=total, initial=len(rows.done), desc=spec.name, disable=not progress)
    server = scorer = None
    if llm_groups - {"ragas_nonllm"} and spec.base.llm.base_url is None and to_compute:
        from ..server import LlamaServer

        server = LlamaServer(spec.base.llm.server, home=cache_dir)
        if not server.running():
            log(f"starting the local LLM server ({spec.base.llm.server.model}) ...")
            server.start()
    if "ragas" in spec.metrics and to_compute:
        from ..evaluation.ragas_metrics import RagasScorer

        scorer = RagasScorer(spec.base.llm, spec.ragas_metrics,
                             cache_dir=str(cache_dir / "ragas-cache"))
    docs_by_id = {d.id: d for d in ds.corpus}
    try:
        for members, todo, found, hits in plan:
            if hits == len(todo):  # every row stored: the index is not even opened
                rows.add_many([_cached_row(found[key], i, configs) for i, _, _, key in todo])
                bar.update(len(todo))
                continue
            first, index = open_index(configs[members[0]][2], ds, cache_dir, progress, log)
            # one memo of candidate lists per index: configs that differ only in fusion,
            # gate or filters replay the same searches instead of repeating them
            memo = CandidateMemo() if spec.replay else None
            pipes = {}
            for i in members:
                pipes[i] = Pipeline(configs[i][2].with_overrides({"home": first.home}), index=index)
                pipes[i].candidates = memo
            for p in pipes.values():  # warm-up (model load, first-query costs), not recorded
                p.retrieve(ds.queries[0].text, k=spec.k)
            if memo is not None:  # the warm-up's lists must not be replayed as free
                memo.lists.clear()
                memo.seconds.clear()
                memo.take()
            for i, q, r, key in todo:
                if key in found:
                    rows.add(_cached_row(found[key], i, configs))
                else:
                    row = _evaluate(spec, ds, i, configs[i], pipes[i], q, r, scorer, docs_by_id,
                                    llm_ids)
                    line = rows.add(row)
                    if not failed(row):  # a failed row is retried by the next run
                        cache.put(key, line)
                bar.update(1)
    finally:
        bar.close()
        rows.close()
        cache.close()
        if server is not None:
            server.stop()
    results = _results_frame(rows.rows, configs)
    summary = _summary(results, spec, configs, rows.lines, cache, use_cache)
    cache.close()
    results.to_parquet(run_dir / "results.parquet", index=False)
    summary.to_csv(run_dir / "summary.csv", index=False)
    mark_complete(run_dir, spec_hash=spec.spec_hash())
    return SweepResult(run_dir=run_dir, results=results, summary=summary, spec=spec,
                       rows_from_cache=from_cache)


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


def _summary(results: pd.DataFrame, spec: SweepSpec, configs: list, lines: list[str],
             cache: RowCache, use_cache: bool) -> pd.DataFrame:
    """`summarize(results)`, read from the row cache when the same rows (the same JSON lines,
    in the same order) were summarized against the same baseline by the same code."""
    h = hashlib.sha256(f"{code_version()}|{_baseline_id(spec, configs)}|".encode())
    h.update("\n".join(lines).encode())
    key = h.hexdigest()
    summary = cache.get_summary(key) if use_cache else None
    if summary is None:
        summary = summarize(results, spec, configs)
        cache.put_summary(key, summary)
    return summary


def evaluation_settings(spec: SweepSpec) -> dict[str, Any]:
    """The spec's settings a row's values depend on (the row cache keys on them)."""
    return {"k": spec.k, "metrics": sorted(spec.metrics), "ragas_metrics": spec.ragas_metrics,
            "replay": spec.replay, "judge_view": JUDGE_VIEW.model_dump(mode="json")}


def failed(row: dict[str, Any]) -> bool:
    """A row with a failure (`error`, `agent_error`, a ragas metric's `_error`)."""
    return any(v is not None for k, v in row.items() if k == "error" or k.endswith("_error"))


def _cached_row(row: dict[str, Any], i: int, configs: list) -> dict[str, Any]:
    """A stored row under this sweep's config id and label (bookkeeping, not a measurement)."""
    return {**row, "config_id": f"c{i:02d}", "config": configs[i][0]}


def _evaluate(spec: SweepSpec, ds: Dataset, i: int, config: tuple, pipe: Pipeline, q, r: int,  # noqa: ANN001
              scorer=None, docs_by_id=None, llm_ids: frozenset[str] = frozenset()) -> dict:  # noqa: ANN001
    label, _, cfg = config
    row: dict[str, Any] = {"config_id": f"c{i:02d}", "config": label, "query_id": q.id,
                           "repeat": r, "error": None}
    memo = pipe.candidates
    if memo is not None:
        memo.take()
    t0 = time.perf_counter()
    # equal budget: every config is asked for, and scored on, the same number of hits
    intent, result = pipe.retrieve(q.text, k=spec.k)
    t2 = time.perf_counter()
    hits = result.hits[:spec.k]
    ctx = pipe.format(hits, intent)
    t3 = time.perf_counter()
    retrieval_s = t2 - t0
    if memo is not None:  # replayed lists are charged what their first search cost
        cost, fresh = memo.take()
        retrieval_s += cost - fresh
    row.update({"intent": intent.intent, "iterations": result.iterations,
                "stop_reason": result.stop_reason, "confidence": result.confidence,
                "expansions": json.dumps(result.expansions),
                "skipped_expansions": len(result.skipped),
                "filter_applied": bool(intent.filters) and pipe.config.query.filter_mode != "off",
                "dropped_filters": len(intent.dropped_filters),
                "widened_to": result.widened_to,
                "n_hits": len(hits), "context_tokens": ctx.tokens,
                "latency_retrieval_ms": 1000 * retrieval_s,
                "latency_context_ms": 1000 * (t3 - t2),
                "latency_ms": 1000 * (retrieval_s + (t3 - t2))})
    qrels = ds.qrels.get(q.id, {})
    run = doc_run(hits)
    row["retrieved_docs"] = json.dumps(list(run))  # rank order, for re-scoring and analysis
    if "retrieval" in spec.metrics and qrels:
        row.update(ir_metrics({q.id: qrels}, {q.id: run})[q.id])
        for k in sorted({5, spec.k}):
            if ds.spans.get(q.id):
                row.update(span_metrics(hits, ds.spans[q.id], k))
        row.update(per_type_hits(hits, set(qrels), spec.k))
    sampled = q.id in (llm_ids or ())
    groups = set(spec.metrics)
    if sampled and "ragas_nonllm" in groups:
        from ..evaluation.ragas_metrics import non_llm_scores

        gold_texts = [docs_by_id[d].text for d in qrels if d in docs_by_id]
        row.update(non_llm_scores("", "", [h.chunk.text for h in hits], gold_texts))
    if sampled and "agent" in groups:
        row.update(_agent_metrics(pipe, q))
    if sampled and groups & {"answers", "hallucination", "ragas"}:
        try:
            reply = generate_answer(pipe.chat_model, q.text, ctx.text)
            answer = reply.content.strip()
            row.update({"answer": answer, "llm_prompt_tokens": reply.prompt_tokens,
                        "llm_completion_tokens": reply.completion_tokens,
                        "latency_answer_ms": 1000 * reply.latency_s})
            if q.answers:
                row["exact_match"] = exact_match(answer, q.answers)
                row["token_f1"] = token_f1(answer, q.answers)
            if "hallucination" in groups:
                # the instrument does not change with the treatment: the judge reads one
                # canonical rendering of the hits the answer was given, whatever the format
                supported, jr = judge_support(pipe.chat_model, judge_view(hits, ctx.included),
                                              answer)
                row["hallucinated"] = 0.0 if supported else 1.0
                row["judge_prompt_tokens"] = jr.prompt_tokens
                row["judge_completion_tokens"] = jr.completion_tokens
        except LLMError as exc:
            row["error"] = f"llm {exc.kind}: {str(exc)[:200]}"
        else:
            if scorer is not None:
                row.update(scorer.score(q.text, answer, [h.chunk.text for h in hits],
                                        q.answers[0] if q.answers else ""))
    return row


JUDGE_VIEW = ContextConfig(max_tokens=200_000)


def judge_view(hits: list, included: list[str]) -> str:
    """The evidence as the hallucination judge sees it: the chunks placed in the answer's
    context, always rendered with the default boundaries, attribution and order."""
    keep = set(included)
    return AgenticContextFormatter(JUDGE_VIEW).format_for_agent(
        [h for h in hits if h.chunk.id in keep]).text


def _agent_metrics(pipe: Pipeline, q) -> dict[str, Any]:  # noqa: ANN001
    """The full agent loop on the query under the config's `agent` section (policy, mode,
    max_steps): searches, retrieval iterations, citations, answer quality."""
    from ..agent import run_agent
    from ..tool import AgenticRAGTool

    closed = pipe.config.agent.policy == "closed_book"
    res = run_agent(q.text, pipe.chat_model, None if closed else AgenticRAGTool(pipe),
                    pipe.config.agent)
    out: dict[str, Any] = {"agent_tool_calls": res.tool_calls,
                           "agent_model_tool_calls": res.model_tool_calls,
                           "agent_retrieval_iterations": res.retrieval_iterations,
                           "agent_stop_reason": res.stop_reason,
                           "agent_citations": len(res.citations),
                           "agent_invalid_citations": len(res.invalid_citations),
                           "agent_citation_valid": float(res.citation_valid),
                           "agent_cites_served": float(res.cites_served),
                           "agent_abstained": float(res.abstained),
                           "agent_prompt_tokens": res.prompt_tokens,
                           "agent_completion_tokens": res.completion_tokens,
                           "agent_context_tokens": res.context_tokens,
                           "latency_agent_ms": 1000 * res.latency_s, "agent_answer": res.answer}
    if res.stop_reason in ("llm_error", "invalid_action"):
        out["agent_error"] = res.error
    elif q.answers:
        out["agent_token_f1"] = token_f1(res.answer, q.answers)
        out["agent_exact_match"] = exact_match(res.answer, q.answers)
    return out


def _results_frame(rows: list[dict], configs: list) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    flat = {f"c{i:02d}": flatten(cfg.to_dict()) for i, (_, _, cfg) in enumerate(configs)}
    cfg_df = pd.DataFrame.from_dict(flat, orient="index")
    cfg_df.index.name = "config_id"
    df = df.merge(cfg_df.reset_index(), on="config_id", how="left")
    return df.sort_values(["config_id", "query_id", "repeat"]).reset_index(drop=True)


PAIRED = ["span_recall@5", "span_recall@10", "span_iou@10", "exact_match", "token_f1",
          "hallucinated", "iterations", "context_tokens", "agent_tool_calls",
          "agent_token_f1", "agent_exact_match", "agent_retrieval_iterations"]


def summarize(results: pd.DataFrame, spec: SweepSpec, configs: list) -> pd.DataFrame:
    """One row per config: means with 95 % CIs, and for every metric the paired difference
    vs the baseline over the same queries (repeats averaged first) with its CI and the
    relative change. Decision distributions (iterations, stop reasons, expansions, filters)
    are part of the row, so a knob that never fires is visible."""
    if results.empty:
        return pd.DataFrame()
    extra = ["span_recall@10", "span_iou@10", "exact_match", "token_f1", "hallucinated",
             "agent_token_f1", "agent_exact_match", "agent_tool_calls",
             "agent_retrieval_iterations"]
    extra += sorted(c for c in results.columns if c.startswith("ragas_")
                    and not c.endswith(("_error", "_seconds")))
    metric_cols = [c for c in QUALITY + extra if c in results.columns]
    paired_cols = [c for c in dict.fromkeys(QUALITY + PAIRED + extra) if c in results.columns]
    tokens = [c for c in ("llm_prompt_tokens", "llm_completion_tokens", "judge_prompt_tokens",
                          "judge_completion_tokens", "agent_prompt_tokens",
                          "agent_completion_tokens") if c in results.columns]
    base_id = _baseline_id(spec, configs)
    base = per_query_means(results[results.config_id == base_id], paired_cols)
    out = []
    for cid, g in results.groupby("config_id", sort=True):
        s: dict[str, Any] = {"config_id": cid, "config": g["config"].iloc[0], "n": len(g),
                             "n_queries": int(g["query_id"].nunique()),
                             "failures": int(g["error"].notna().sum()
                                             + (g["agent_error"].notna().sum()
                                                if "agent_error" in g else 0)),
                             "latency_p50_ms": float(g["latency_ms"].median()),
                             "latency_p95_ms": float(g["latency_ms"].quantile(0.95)),
                             "iterations_mean": float(g["iterations"].mean()),
                             "context_tokens_mean": float(g["context_tokens"].mean())}
        s.update(decision_distribution(g))
        for c in sorted(c for c in g.columns if c.startswith(("hits_", "relevant_hits_"))):
            s[f"{c}_mean"] = float(g[c].fillna(0).mean())  # per chunk type, among the top k
        for c in tokens:  # LLM token usage per metric group, summed
            s[f"{c}_total"] = int(g[c].fillna(0).sum())
        for c in [c for c in g.columns if c.startswith("ragas_") and c.endswith("_error")]:
            s[c.replace("_error", "_failures")] = int(g[c].notna().sum())
        means = per_query_means(g, list(dict.fromkeys(metric_cols + paired_cols)))
        for m in metric_cols:
            vals = means[m]
            s[m] = float(vals.mean())
            s[f"{m}_ci_low"], s[f"{m}_ci_high"] = bootstrap_ci(vals.to_list())
        if cid != base_id:
            for m in paired_cols:
                mine = means[m]
                theirs = base[m].reindex(mine.index)
                pb = paired_bootstrap(mine.to_list(), theirs.to_list())
                ref = float(theirs.mean())
                s[f"{m}_diff_vs_base"] = pb["diff"]
                s[f"{m}_diff_vs_base_ci_low"] = pb["ci_low"]
                s[f"{m}_diff_vs_base_ci_high"] = pb["ci_high"]
                rel = (pb["diff"] / ref) if ref else float("nan")
                s[f"{m}_rel_vs_base"] = rel
                s[f"{m}_rel_vs_base_ci_low"] = pb["ci_low"] / ref if ref else float("nan")
                s[f"{m}_rel_vs_base_ci_high"] = pb["ci_high"] / ref if ref else float("nan")
        out.append(s)
    summary = pd.DataFrame(out)
    summary["baseline"] = summary["config_id"] == base_id
    quality = next((m for m in QUALITY if m in summary.columns), None)
    if quality:
        summary["pareto"] = pareto_front(summary, quality, ["latency_p50_ms", "context_tokens_mean"])
    return summary


def per_query_means(g: pd.DataFrame, cols: list[str]) -> dict[str, pd.Series]:
    """Each column's mean per query (repeats averaged first), as floats: one groupby for all
    numeric columns (the same per-column sums as one groupby each), the others one by one."""
    by = g.groupby("query_id")
    numeric = [c for c in cols if pd.api.types.is_numeric_dtype(g[c])]
    out: dict[str, pd.Series] = {}
    if numeric:
        means = by[numeric].mean()
        out.update({c: means[c].astype(float) for c in numeric})
    for c in cols:
        if c not in out:
            out[c] = by[c].mean().astype(float)
    return out


def decision_distribution(g: pd.DataFrame) -> dict[str, Any]:
    """How often each gate / filter decision fired, as JSON-able columns."""
    out: dict[str, Any] = {
        "iterations_dist": json.dumps({int(k): int(v) for k, v in
                                       g["iterations"].value_counts().sort_index().items()}),
        "stop_reasons": json.dumps({str(k): int(v) for k, v in
                                    g["stop_reason"].value_counts().sort_index().items()})}
    if "expansions" in g:
        counts: dict[str, int] = {}
        for e in g["expansions"].dropna():
            for step in json.loads(e):
                counts[step] = counts.get(step, 0) + 1
        out["expansions_fired"] = json.dumps(dict(sorted(counts.items())))
    for c, name in (("filter_applied", "filter_applied_share"),
                    ("dropped_filters", "dropped_filters_share"),
                    ("skipped_expansions", "skipped_expansions_mean")):
        if c in g:
            v = g[c].fillna(0).astype(float)
            out[name] = float((v > 0).mean()) if name.endswith("share") else float(v.mean())
    if "widened_to" in g:
        out["widened_share"] = float(g["widened_to"].notna().mean())
    return out


def _baseline_id(spec: SweepSpec, configs: list) -> str:
    if spec.baseline:
        want = spec.base.with_overrides(spec.baseline)
        for i, (_, _, cfg) in enumerate(configs):
            if cfg == want:
                return f"c{i:02d}"
        raise ValueError(f"baseline {spec.baseline} matches none of the {len(configs)} configs")
    return "c00"


def print_summary(summary: pd.DataFrame, log=print) -> None:  # noqa: ANN001
    cols = [c for c in ["config_id", "config", "ndcg@10", "ndcg@10_ci_low", "ndcg@10_ci_high",
                        "recall@10", "mrr@10", "span_recall@10", "token_f1", "hallucinated",
                        "iterations_mean", "iterations_dist", "stop_reasons", "expansions_fired",
                        "context_tokens_mean", "latency_p50_ms", "latency_p95_ms", "failures",
                        "pareto"] if c in summary.columns]
    with pd.option_context("display.max_columns", None, "display.width", 200,
                           "display.max_colwidth", 60, "display.float_format", "{:.3f}".format):
        log(summary[cols].to_string(index=False))

