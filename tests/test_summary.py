"""The sweep summary: paired effects through stats.paired_effect, short labels, the printout."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.experiments.stats import paired_bootstrap, paired_effect
from agentic_rag.experiments.summary import summarize

GRID = {"chunking.max_tokens": [64, 256], "gate.mode": ["static", "gated", "always_expand"],
        "fusion.retrievers": [["dense"], ["bm25"], ["dense", "bm25"]]}


def _spec() -> SweepSpec:
    return SweepSpec.model_validate({"name": "t", "grid": GRID, "baseline": {
        "chunking.max_tokens": 256, "gate.mode": "static", "fusion.retrievers": ["dense"]}})


def _results(spec: SweepSpec, n_queries: int = 12, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i, (label, _, _) in enumerate(spec.configs()):
        for q in range(n_queries):
            rows.append({"config_id": f"c{i:02d}", "config": label, "query_id": f"q{q}",
                         "repeat": 0, "error": None, "latency_ms": float(rng.random() * 10),
                         "iterations": int(rng.integers(1, 3)), "stop_reason": "confident",
                         "context_tokens": int(rng.integers(100, 900)),
                         "ndcg@10": float(rng.random()), "recall@10": float(rng.random()),
                         "exact_match": 0.0})  # a metric whose baseline mean is 0
    return pd.DataFrame(rows)


def test_paired_effect_columns_and_values():
    a, b = [0.9, 0.8, 0.7, 0.9, float("nan")], [0.5, 0.5, 0.6, 0.4, 0.5]
    eff = paired_effect(a, b, "m")
    pb = paired_bootstrap(a, b)
    ref = float(np.mean(b))  # NaN pairs drop out of the difference, not out of the reference
    assert list(eff) == ["m_diff_vs_base", "m_diff_vs_base_ci_low", "m_diff_vs_base_ci_high",
                         "m_rel_vs_base", "m_rel_vs_base_ci_low", "m_rel_vs_base_ci_high"]
    assert eff["m_diff_vs_base"] == pb["diff"] == pytest.approx(0.825 - 0.5)
    assert (eff["m_diff_vs_base_ci_low"], eff["m_diff_vs_base_ci_high"]) == \
        (pb["ci_low"], pb["ci_high"])
    assert eff["m_rel_vs_base"] == pb["diff"] / ref
    assert eff["m_rel_vs_base_ci_high"] == pb["ci_high"] / ref
    assert math.isnan(paired_effect([1.0, 2.0], [0.0, 0.0], "z")["z_rel_vs_base"])


def test_summarize_pairs_every_config_with_the_baseline_per_query():
    spec = _spec()
    configs = spec.configs()
    results = _results(spec)
    summary = summarize(results, spec, configs).set_index("config_id")
    base_id = summary.index[summary["baseline"]][0]
    assert configs[int(base_id[1:])][1] == spec.baseline
    assert "ndcg@10_diff_vs_base" not in summary.columns or \
        math.isnan(summary.loc[base_id, "ndcg@10_diff_vs_base"])
    def per_query(cid: str) -> pd.Series:  # in query-id order, as the bootstrap draws them
        return results[results.config_id == cid].groupby("query_id")["ndcg@10"].mean()

    base = per_query(base_id)
    for cid in ("c00", "c07", "c17"):
        mine = per_query(cid)
        want = paired_effect(mine.to_list(), base.reindex(mine.index).to_list(), "ndcg@10")
        for col, v in want.items():
            assert summary.loc[cid, col] == v, (cid, col)
        assert math.isnan(summary.loc[cid, "exact_match_rel_vs_base"])  # baseline mean 0
    cols = list(summary.columns)
    i = cols.index("ndcg@10_diff_vs_base")
    assert cols[i:i + 6] == list(want)  # summary.csv keeps the diff, CI, rel, CI order
