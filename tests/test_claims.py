"""The claims ledger's verdict rule on synthetic effects, and the report built from a run."""

from __future__ import annotations

import math

import pytest

from agentic_rag.experiments.claims import verdict


@pytest.mark.parametrize("lo,hi,direction,figure,want", [
    (-0.05, 0.10, +1, None, "inconclusive"),        # CI spans 0
    (0.02, 0.10, +1, None, "confirmed"),
    (-0.30, -0.10, +1, None, "contradicted"),       # opposite side
    (-0.40, -0.20, -1, None, "confirmed"),          # a claimed reduction, measured
    (0.05, 0.20, -1, None, "contradicted"),
    (0.02, 0.10, +1, 0.25, "smaller than claimed"),  # the whole CI short of the figure
    (0.02, 0.30, +1, 0.25, "confirmed"),            # the figure inside the CI
    (-0.15, -0.05, -1, 0.40, "smaller than claimed"),
    (math.nan, math.nan, +1, None, "inconclusive"),
])
def test_verdict_rule(lo, hi, direction, figure, want):
    assert verdict(lo, hi, direction, figure) == want


@pytest.mark.slow
def test_smoke_ledger_numbers_come_from_run_folders(tmp_path):
    import json

    import pandas as pd

    from agentic_rag.experiments.claims import CLAIMS, DATASETS, run_claims

    ledger = run_claims(tmp_path / "claims", smoke=True, runs_dir=tmp_path / "runs",
                        cache_dir=tmp_path / "cache", log=lambda *a: None)
    assert len(ledger) == len(CLAIMS) * len(DATASETS)
    report = (tmp_path / "claims" / "REPORT.md").read_text()
    data = json.loads((tmp_path / "claims" / "claims.json").read_text())
    assert len(data["ledger"]) == len(ledger) and "Verdict rule" in report
    for row in data["ledger"]:
        summary = pd.read_csv(tmp_path / "runs" / row["run"] / "summary.csv")
        treat = summary[~summary["baseline"]].iloc[0]
        base = summary[summary["baseline"]].iloc[0]
        m = row["metric"]
        col = m if m in summary.columns else f"{m}_mean"
        assert row["treatment_value"] == pytest.approx(treat[col])
        assert row["baseline_value"] == pytest.approx(base[col])
        assert row["ci_low"] == pytest.approx(treat[f"{m}_rel_vs_base_ci_low"], nan_ok=True)
        assert row["verdict"] in {"confirmed", "smaller than claimed", "contradicted",
                                  "inconclusive"}
        assert f"`{row['run']}`" in report
