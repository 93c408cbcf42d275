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


def test_short_label_names_the_settings_from_overrides_or_label():
    from agentic_rag.experiments.summary import short_label

    spec = _spec()
    labels = [short_label(label) for label, _, _ in spec.configs()]
    assert labels == [short_label(o) for _, o, _ in spec.configs()]  # label string = overrides
    assert len(set(labels)) == 18
    assert "256 tok · gated · hybrid" in labels and "64 tok · always_expand · bm25" in labels
    assert short_label("fusion.rrf_k=10,gate.min_confidence=0.6") == "fusion.rrf_k=10 · conf≥0.6"
    assert short_label("fusion.retrievers=['dense', 'bm25', 'splade']") == "dense+bm25+splade"
    assert short_label("arm=flat") == "arm=flat" and short_label("base") == "base"
    assert short_label({}) == "base"


def test_print_summary_fits_120_columns_best_first():
    from agentic_rag.experiments.summary import print_summary, short_label

    spec = _spec()
    summary = summarize(_results(spec), spec, spec.configs())
    lines: list[str] = []
    print_summary(summary, lines.append)
    assert max(len(x) for x in lines) <= 120
    body = [x for x in lines if " tok · " in x]
    assert len(body) == 18 and not any("c0" in x or "c1" in x for x in lines)
    best = summary.sort_values("ndcg@10", ascending=False).iloc[0]
    assert body[0].startswith(short_label(best["config"]))
    assert f"{best['ndcg@10']:.3f} [{best['ndcg@10_ci_low']:.3f}, " in body[0]
    base = summary[summary["baseline"]].iloc[0]
    assert [x for x in body if x.startswith(short_label(base["config"]) + " ")][0].split()[6] \
        == "base"


def test_print_chosen_reads_the_exported_file(tmp_path):
    import yaml

    from agentic_rag.experiments.summary import print_chosen

    out = tmp_path / "best-config.yaml"
    out.write_text(yaml.safe_dump({"provenance": {
        "config_id": "c10", "config": "chunking.max_tokens=256,gate.mode=gated",
        "chosen_by": "ndcg@10", "constraints": [],
        "metrics": {"ndcg@10": {"mean": 0.7454, "ci95": [0.69, 0.8]}},
        "test": {"run": "x-quick-test", "metrics": {"ndcg@10": {"mean": 0.71, "ci95": [0.6, 0.8]}}}}}))
    lines: list[str] = []
    print_chosen(out, lines.append)
    assert lines[0] == "chosen by ndcg@10: 256 tok · gated (c10)"
    assert "0.745 [0.690, 0.800]" in lines[1] and "0.710 [0.600, 0.800]" in lines[2]
    assert str(out) in lines[3]


def test_plots_name_configs_by_their_settings():
    from agentic_rag.experiments.plots import plot_metric, plot_tradeoff
    from agentic_rag.experiments.summary import short_label

    spec = _spec()
    summary = summarize(_results(spec), spec, spec.configs())
    want = {short_label(c) for c in summary["config"]}
    fig = plot_tradeoff(summary)
    assert {t.get_text() for t in fig.axes[0].texts} == want
    fig = plot_metric(summary, "grid")
    assert {t.get_text() for t in fig.axes[0].get_yticklabels()} == want


def test_failed_rows_are_counted_not_scored():
    """A row whose strategy, answer or judge call failed is left out of its arm's mean and
    of the paired comparison, and counted in `failures` (the old summary averaged the
    fallback list's nDCG into the strategy's mean and counted no strategy failure)."""
    spec = _spec()
    configs = spec.configs()
    results = _results(spec, n_queries=20)
    results["strategy_error"] = None
    results["token_f1"] = 0.5
    base_id = "c" + f"{[c[1] for c in configs].index(spec.baseline):02d}"
    arm = next(c for c in sorted(results.config_id.unique()) if c != base_id)
    mine = results.config_id == arm
    # three failed strategy calls: their rows carry a fallback nDCG of 1.0
    failed_q = ["q0", "q1", "q2"]
    strat = mine & results.query_id.isin(failed_q)
    results.loc[strat, "strategy_error"] = "llm parse: cut at max_tokens"
    results.loc[strat, "ndcg@10"] = 1.0
    # one failed judge call after a good answer: its token F1 is not a score either
    judged = mine & (results.query_id == "q3")
    results.loc[judged, "error"] = "llm timeout: judge"
    results.loc[judged, "token_f1"] = 0.0
    s = summarize(results, spec, configs).set_index("config_id")
    ok = results[mine & ~results.query_id.isin(failed_q)]
    assert s.loc[arm, "ndcg@10"] == pytest.approx(ok["ndcg@10"].mean())
    assert s.loc[arm, "failures"] == 4 and s.loc[base_id, "failures"] == 0
    assert s.loc[arm, "token_f1"] == pytest.approx(0.5)  # the failed judge's 0.0 is out
    base = results[results.config_id == base_id].set_index("query_id")["ndcg@10"]
    d = ok.set_index("query_id")["ndcg@10"] - base.reindex(ok.query_id)
    assert s.loc[arm, "ndcg@10_diff_vs_base"] == pytest.approx(d.mean())
    # the input frame is not modified
    assert (results.loc[strat, "ndcg@10"] == 1.0).all()


def test_strategy_table_shows_failures_beside_the_arm():
    from agentic_rag.studies.strategies import strategy_table

    spec = _spec()
    configs = spec.configs()
    results = _results(spec, n_queries=10)
    results["strategy_error"] = None
    for c in ("strategy_llm_calls", "strategy_llm_prompt_tokens",
              "strategy_llm_completion_tokens", "strategy_llm_s"):
        results[c] = 1.0
    arm = results.config_id == "c01"
    results.loc[arm & (results.query_id == "q0"), "strategy_error"] = "llm parse: bad JSON"
    table = strategy_table(summarize(results, spec, configs), results).set_index("strategy")
    row = table.iloc[1]
    assert row["failures"] == 1 and row["llm_failures"] == 1
    assert table.iloc[0]["failures"] == 0


def test_a_hallucination_rate_says_its_ci_lacks_the_detectors_error():
    spec = _spec()
    results = _results(spec, n_queries=6)
    results["hallucinated"] = 0.0
    s = summarize(results, spec, spec.configs())
    assert (s["hallucinated_ci_note"].str.startswith("no labels for this model/dataset")).all()
    assert "hallucinated_ci_note" not in summarize(_results(spec, 6), spec, spec.configs())
