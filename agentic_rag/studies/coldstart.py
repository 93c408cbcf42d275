"""Cold start and first-query latency, flat vs tiered — the measurement behind claim (d).

Two layouts of the same documents are built once under `root` (not timed):

- **flat**: every document in one warm `AgenticIndex` (Chroma + BM25 on disk);
- **tiered**: a `TieredIndex` (`agentic_rag/retrieve/tiers.py`) whose warm tier holds the recent
  documents (the τ²-banking policies) and whose cold tier holds the archived ones (the
  Python 3.11 docs, stamped `last_updated` = 2022-10-24, the 3.11.0 release, so older
  than `tiers.cold_after_days` → routed to the cold tier): a gzip JSONL of chunks and
  vectors that is read only when a query's warm confidence is below
  `tiers.cold_below_confidence`. The hot tier (in-memory, TTL) is empty here.

Both arms search dense only (`AgenticIndex.search` and the tiered warm/cold reads use
the vector store / the archive's vectors; neither touches BM25), so the layout is the
only difference. Each measurement is a fresh `python -c` process that imports the library,
loads the embedding model (split out: `model_load_s`), opens the index and answers one
query (its top hit — retrieval only, no LLM). Repetitions alternate which arm runs first.

`measure_cold_start` returns the tidy repetitions; `paired_summary` turns them into one
row per arm in the runner's summary format (paired bootstrap over repetitions);
`run_cold_start` writes both into a run folder that the claims ledger reads.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.base import documents_fingerprint
from agentic_rag.experiments.runfolder import mark_complete, new_run_dir, write_meta
from agentic_rag.experiments.stats import bootstrap_ci, paired_effect

DEFAULT_ROOT = Path("experiments/cache/cold-start")
ARCHIVE_DATE = "2022-10-24"  # Python 3.11.0 release: older than cold_after_days → cold tier
QUERIES = {  # query kind → text
    "recent": "monthly maintenance fee of the Blue checking account",  # warm tier answers it
    "archived": "How do I create a virtual environment with venv?",  # only the archive has it
}
ARMS = ("flat", "tiered")
STORE_MODULES = {"chroma": "chromadb", "qdrant": "qdrant_client"}
METRICS = ("process_start_to_first_answer_s", "imports_s", "model_load_s", "first_query_ms",
           "process_wall_s", "cold_loaded")

_CHILD = """
import json, time
T0 = time.time()
from agentic_rag.config import RAGConfig
from agentic_rag.datasets.base import documents_fingerprint
from agentic_rag.store.index import AgenticIndex
from agentic_rag.retrieve.tiers import TieredIndex
import {store_module}  # the vector store's client library: imported up front, like the rest
T1 = time.time()
cfg = RAGConfig(home={home!r})
idx = AgenticIndex(cfg)
idx.embed_query("warm-up")  # loads the embedding model
T2 = time.time()
if {tiered!r}:
    r = TieredIndex(cfg.tiers, idx).search({query!r}, 3)
    hits, tiers, cold = r.hits, r.tiers, r.cold_loaded
else:
    hits, tiers, cold = idx.search({query!r}, 3), ["flat"], False
T3 = time.time()
print(json.dumps({{"t_imports": T1, "t_model": T2, "t_answer": T3, "top_doc": hits[0].chunk.doc_id,
                   "top_score": hits[0].score, "tiers_read": ",".join(tiers), "cold_loaded": cold}}))
"""


def _documents(n_banking: int | None, n_python: int | None) -> tuple[list, list]:
    from agentic_rag.datasets.corpora import banking_documents, python_docs

    bank = banking_documents()[:n_banking]
    old = [d.model_copy(update={"metadata": {**d.metadata, "last_updated": ARCHIVE_DATE}})
           for d in python_docs()[:n_python]]
    return bank, old


def prepare_homes(root: str | Path = DEFAULT_ROOT, n_banking: int | None = None,
                  n_python: int | None = None, log: Callable[..., Any] = print) -> dict[str, Any]:
    """Build the flat and tiered homes once (keyed by corpus and index settings); return
    their paths and sizes. Rebuilt from scratch when a previous build did not finish."""
    from agentic_rag.ingest.embeddings import make_embedder
    from agentic_rag.retrieve.tiers import TieredIndex
    from agentic_rag.store.index import AgenticIndex

    bank, old = _documents(n_banking, n_python)
    cfg = RAGConfig()
    # the flat home is an index of these documents under cfg (`index_hash`); the tiered one
    # adds the tier settings and the archive date
    blob = json.dumps([cfg.index_hash(documents_fingerprint(bank + old)),
                       cfg.tiers.model_dump(mode="json"), ARCHIVE_DATE])
    folder = Path(root) / f"{len(bank)}b-{len(old)}p-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"
    marker = folder / "setup.json"
    if marker.exists():
        return json.loads(marker.read_text())
    shutil.rmtree(folder, ignore_errors=True)  # a build that did not finish
    t0 = time.perf_counter()
    emb = make_embedder(cfg.embedding, Path(root) / "embeddings")  # shared by both layouts
    flat = AgenticIndex(cfg.with_overrides({"home": str(folder / "flat")}), embedder=emb)
    flat.add_documents(bank + old)
    _ = flat.lexical  # a complete flat index, as a deployment would keep it
    tier_cfg = cfg.with_overrides({"home": str(folder / "tiered")})
    tiered = TieredIndex(tier_cfg.tiers, AgenticIndex(tier_cfg, embedder=emb))
    routed = tiered.add(bank + old)
    _ = tiered.warm.lexical
    info = {"flat": str(folder / "flat"), "tiered": str(folder / "tiered"),
            "banking_docs": len(bank), "python_docs": len(old), "flat_chunks": flat.count(),
            "warm_chunks": tiered.warm.count(), "cold_chunks": routed["cold"],
            "cold_archive_bytes": tiered.cold_path.stat().st_size if tiered.cold_path.exists()
            else 0, "archive_date": ARCHIVE_DATE}
    marker.write_text(json.dumps(info, indent=1))
    log(f"cold start: built flat ({info['flat_chunks']} chunks) and tiered (warm "
        f"{info['warm_chunks']}, cold {info['cold_chunks']} chunks) in "
        f"{time.perf_counter() - t0:.0f}s under {folder}")
    return info


def _one_process(home: str, tiered: bool, query: str) -> dict[str, Any]:
    code = _CHILD.format(home=home, tiered=tiered, query=query,
                         store_module=STORE_MODULES[RAGConfig().store.kind])
    t_spawn = time.time()
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    t_exit = time.time()
    if res.returncode != 0:
        raise RuntimeError(f"cold-start process failed ({res.returncode}): {res.stderr[-800:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    return {"process_start_to_first_answer_s": out["t_answer"] - t_spawn,
            "imports_s": out["t_imports"] - t_spawn,
            "model_load_s": out["t_model"] - out["t_imports"],
            "first_query_ms": 1000 * (out["t_answer"] - out["t_model"]),
            "process_wall_s": t_exit - t_spawn, "top_doc": out["top_doc"],
            "top_score": out["top_score"], "tiers_read": out["tiers_read"],
            "cold_loaded": bool(out["cold_loaded"])}


def measure_cold_start(repeats: int = 3, root: str | Path = DEFAULT_ROOT, *,
                       n_banking: int | None = None, n_python: int | None = None,
                       queries: Mapping[str, str] | None = None, warmup: bool = True,
                       log: Callable[..., Any] = print) -> pd.DataFrame:
    """Fresh-process cold starts, flat vs tiered, `repeats` paired repetitions per query.

    Sets up the two homes once under `root` (`prepare_homes`; `n_banking` / `n_python`
    cut the corpus, None = all), runs one untimed process per arm first when `warmup`
    (so the first repetition does not pay for a cold OS file cache), then per repetition
    and query kind one process per arm, alternating which arm goes first.

    One row per process. Columns:
    - `arm`: "flat" | "tiered"; `query_kind` / `query`: from `queries` (default `QUERIES`:
      "recent" is answered by the warm tier, "archived" only by the cold archive);
      `repeat` (pairing key), `order` (0 = ran first in its pair);
    - `process_start_to_first_answer_s`: spawn of `python -c` → the top hit printed
      (interpreter start, imports, model load, index open, one query);
    - `imports_s`: spawn → library imported; `model_load_s`: loading the embedding model
      (one warm-up embedding included); `first_query_ms`: the first query with the model
      already loaded (opening the store, embedding the query, searching; for tiered also
      reading the cold archive when the warm confidence is low);
    - `process_wall_s`: spawn → exit (teardown included);
    - what was read: `tiers_read` ("flat", or the tiers in order, e.g. "hot,warm,cold"),
      `cold_loaded` (the archive was read), `top_doc`, `top_score`;
    - the layout's size: `banking_docs`, `python_docs`, `chunks_searched` (flat: all;
      tiered: warm, plus the archive when it was read), `cold_chunks`.
    """
    info = prepare_homes(root, n_banking, n_python, log)
    queries = dict(queries or QUERIES)
    if warmup:
        first_query = next(iter(queries.values()))
        for arm in ARMS:
            _one_process(info[arm], arm == "tiered", first_query)
    rows = []
    for r in range(repeats):
        order = ARMS if r % 2 == 0 else ARMS[::-1]
        for kind, text in queries.items():
            for pos, arm in enumerate(order):
                row = _one_process(info[arm], arm == "tiered", text)
                searched = info["flat_chunks"] if arm == "flat" else \
                    info["warm_chunks"] + (info["cold_chunks"] if row["cold_loaded"] else 0)
                rows.append({"arm": arm, "query_kind": kind, "query": text, "repeat": r,
                             "order": pos, **row, "banking_docs": info["banking_docs"],
                             "python_docs": info["python_docs"], "chunks_searched": searched,
                             "cold_chunks": info["cold_chunks"]})
        log(f"cold start: repetition {r + 1}/{repeats} done")
    return pd.DataFrame(rows)


def paired_summary(results: pd.DataFrame, metrics: Sequence[str] = METRICS,
                   baseline: str = "flat") -> pd.DataFrame:
    """One row per arm in the runner's summary format: for every query kind `k` and metric
    `m` a column `k.m` (mean over repetitions) with its 95 % bootstrap CI, and for the
    other arm the paired difference vs the baseline arm over the same repetitions, its CI
    and the relative change (`k.m_rel_vs_base`, `_ci_low`, `_ci_high`)."""
    out = []
    for arm, g in results.groupby("arm", sort=False):
        s: dict[str, Any] = {"config_id": f"c{ARMS.index(arm):02d}", "config": f"arm={arm}",
                             "baseline": arm == baseline, "n": len(g),
                             "n_queries": int(g["repeat"].nunique())}
        for kind, gk in g.groupby("query_kind", sort=False):
            base = results[(results.arm == baseline) & (results.query_kind == kind)]
            for m in metrics:
                col = f"{kind}.{m}"
                vals = gk.set_index("repeat")[m].astype(float)
                s[col] = float(vals.mean())
                s[f"{col}_ci_low"], s[f"{col}_ci_high"] = bootstrap_ci(vals.to_list())
                if arm == baseline:
                    continue
                theirs = base.set_index("repeat")[m].astype(float).reindex(vals.index)
                s.update(paired_effect(vals.to_list(), theirs.to_list(), col))
        out.append(s)
    return pd.DataFrame(out).sort_values("config_id").reset_index(drop=True)


def effect_table(summary: pd.DataFrame, metrics: Sequence[str] = (
        "process_start_to_first_answer_s", "model_load_s", "first_query_ms", "cold_loaded"),
        ) -> pd.DataFrame:
    """`paired_summary` in long form: one row per query kind × metric with the flat and
    tiered means and the relative change tiered vs flat with its 95 % CI."""
    base, treat = summary[summary["baseline"]].iloc[0], summary[~summary["baseline"]].iloc[0]
    rows = []
    for col in summary.columns:
        kind, _, m = col.partition(".")
        if m not in metrics:
            continue
        rows.append({"query_kind": kind, "metric": m, "flat": base[col], "tiered": treat[col],
                     "rel_change": treat[f"{col}_rel_vs_base"],
                     "ci_low": treat[f"{col}_rel_vs_base_ci_low"],
                     "ci_high": treat[f"{col}_rel_vs_base_ci_high"],
                     "n_pairs": int(treat["n_queries"])})
    return pd.DataFrame(rows)


def run_cold_start(runs_dir: str | Path = "experiments/runs", repeats: int = 10,
                   root: str | Path = DEFAULT_ROOT, name: str = "cold-start", *,
                   n_banking: int | None = None, n_python: int | None = None,
                   queries: Mapping[str, str] | None = None, warmup: bool = True,
                   log: Callable[..., Any] = print) -> Path:
    """`measure_cold_start` + `paired_summary` into a run folder: `results.parquet` (the
    repetitions), `summary.csv` (one row per arm), `configs/c00.yaml` (flat) and
    `c01.yaml` (tiered), `meta.json` (commit, machine, packages, corpus, settings)."""
    results = measure_cold_start(repeats, root, n_banking=n_banking, n_python=n_python,
                                 queries=queries, warmup=warmup, log=log)
    info = prepare_homes(root, n_banking, n_python, log)
    run_dir = new_run_dir(runs_dir, name)
    (run_dir / "configs").mkdir()
    for i, arm in enumerate(ARMS):
        RAGConfig(home=info[arm]).save(run_dir / "configs" / f"c{i:02d}.yaml")
    results.to_parquet(run_dir / "results.parquet", index=False)
    paired_summary(results).to_csv(run_dir / "summary.csv", index=False)
    cfg = RAGConfig()
    meta = {"dataset": f"tau2-banking docs[{info['banking_docs']}] warm + python-3.11 docs"
                       f"[{info['python_docs']}] archived",
            "layout": info, "repeats": repeats, "warmup": warmup,
            "queries": dict(queries or QUERIES), "embedding_model": cfg.embedding.model,
            "llm": None, "tiers": cfg.tiers.model_dump(mode="json"),
            "configs": {"c00": "arm=flat", "c01": "arm=tiered"}}
    write_meta(run_dir, meta)  # + commit, Python, platform, packages
    mark_complete(run_dir)
    log(f"cold start: {len(results)} processes → {run_dir}")
    return run_dir
