"""Fit and check the gate's calibrated confidence on real dev qrels.

For every dev query, every state the gate can reach is searched once (query as built /
keyword rewrite × intent filter hard / soft / none × dense / BM25 / hybrid), the
evidence's features are paired with "a relevant document is in the top 5", and a
logistic model is fitted with each dataset weighted equally. The test split gives the
held-out reliability table (the reliability diagram) and AUROC / Brier score.

    agentic-rag calibrate --dataset halueval-qa --dataset python-faq --dataset tau2-banking
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.base import Dataset
from agentic_rag.datasets.qa import load_dataset
from agentic_rag.evaluation.detection import auroc
from agentic_rag.experiments.plan import open_index
from agentic_rag.retrieve.calibration import Calibrator, evidence_features, evidence_label, fit_calibrator
from agentic_rag.retrieve.evidence import Evidence
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.retrieve.query import rewrite_keywords
from agentic_rag.retrieve.retrievers import CandidateMemo

RETRIEVER_SETS: tuple[tuple[str, ...], ...] = (("dense",), ("bm25",), ("dense", "bm25"))
CORPUS_SIZE = {"halueval-qa": 2000}  # the quick sweep's cut; the other corpora are used whole


def gate_states(pipe: Pipeline, ds: Dataset, k: int = 5) -> Iterator[tuple[Evidence, set[str],
                                                                             dict[str, Any]]]:
    """(evidence, relevant doc ids, labels) for every state the gate can reach, per query."""
    fr = pipe.fusion()
    for q in ds.queries:
        rel = {d for d, g in ds.qrels.get(q.id, {}).items() if g > 0}
        if not rel:
            continue
        intent = pipe.usable_filters(pipe.builder.build_query(q.text))
        variants = list(dict.fromkeys([intent.query, rewrite_keywords(intent.query)]))
        for vi, qv in enumerate(variants):
            for where, mode in ([(None, "off")] + ([(intent.filters, "hard"),
                                                    (intent.filters, "soft")]
                                                   if intent.filters else [])):
                for rs in RETRIEVER_SETS:
                    ev = fr.evidence(qv, k, where, rs, mode)
                    yield ev, rel, {"dataset": ds.name, "query_id": q.id, "variant": vi,
                                    "filter_mode": mode, "retrievers": "+".join(rs)}


def collect(datasets: Sequence[str], split: str, n: int, base: RAGConfig, cache_dir: str | Path,
            seed: int = 0, log=print) -> list[tuple[Evidence, set[str], dict]]:  # noqa: ANN001
    out = []
    for name in datasets:
        ds = load_dataset(name).split(split).sample(n, seed, CORPUS_SIZE.get(name))
        cfg, index = open_index(base, ds, cache_dir, log=log)
        pipe = Pipeline(cfg, index=index)
        pipe.candidates = CandidateMemo()
        rows = list(gate_states(pipe, ds))
        log(f"{name} {split}: {len(ds.queries)} queries, {len(rows)} gate states, "
            f"{pipe.candidates.searches} searches")
        out += rows
    return out


def table(examples: Sequence[tuple[Evidence, set[str], dict]], cal: Calibrator | None = None
          ) -> pd.DataFrame:
    rows = []
    for ev, rel, labels in examples:
        r = {**labels, **evidence_features(ev), "relevant_in_top5": evidence_label(ev, rel)}
        if cal is not None:
            r["p"] = cal.predict_evidence(ev)
        rows.append(r)
    return pd.DataFrame(rows)


def fit_on_datasets(datasets: Sequence[str], n: int = 100, base: RAGConfig | None = None,
                    cache_dir: str | Path = "experiments/cache", out: str | Path | None = None,
                    log=print) -> tuple[Calibrator, pd.DataFrame]:  # noqa: ANN001
    """Fit on the dev splits, check on the test splits; returns the calibrator and the
    test table (features, label, predicted p) for the reliability diagram."""
    base = base or RAGConfig()
    dev = collect(datasets, "dev", n, base, cache_dir, log=log)
    per_ds: dict[str, int] = {}
    for _, _, lab in dev:
        per_ds[lab["dataset"]] = per_ds.get(lab["dataset"], 0) + 1
    weights = [len(dev) / (len(per_ds) * per_ds[lab["dataset"]]) for _, _, lab in dev]
    cal = fit_calibrator([(ev, rel) for ev, rel, _ in dev], weights=weights, fitted_on={
        "datasets": list(datasets), "split": "dev", "n_queries_per_dataset": n,
        "chunking": base.chunking.model_dump(mode="json"),
        "embedding_model": base.embedding.model, "states": "query/keywords × filter "
        "hard/soft/none × dense/bm25/dense+bm25"})
    test = table(collect(datasets, "test", n, base, cache_dir, log=log), cal)
    for name, g in [("all", test), *test.groupby("dataset")]:
        y, p = g["relevant_in_top5"].to_numpy(), g["p"].to_numpy()
        cal.fitted_on[f"test_{name}"] = {"n": int(len(g)), "auroc": round(auroc(y, p), 4),
                                         "brier": round(float(((p - y) ** 2).mean()), 4),
                                         "positive_rate": round(float(y.mean()), 4)}
    if out:
        sha = cal.save(out)
        log(f"calibrator written to {out} (sha256 {sha[:12]}…): {cal.fitted_on}")
    return cal, test


def threshold_table(test: pd.DataFrame, thresholds: Sequence[float] = tuple(np.round(
        np.arange(0.1, 1.0, 0.1), 2))) -> pd.DataFrame:
    """Share of states the gate would expand at each threshold, per dataset and retriever mix:
    a threshold that never (or always) fires shows up here before anyone sweeps it."""
    rows = []
    for (ds, rs), g in test.groupby(["dataset", "retrievers"]):
        for t in thresholds:
            rows.append({"dataset": ds, "retrievers": rs, "threshold": t,
                         "expand_share": float((g["p"] < t).mean())})
    return pd.DataFrame(rows)
