"""The ledger anyone can recompute: every committed per-question rows file gives back its
ledger row's effect, CIs and verdict; the agent protocol's rows are rebuilt from the
committed agent evaluation; the export is byte-stable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_rag.studies.claims import protocols, rows
from agentic_rag.studies.claims.registry import CLAIMS, VERDICTS, for_deployment

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "experiments/claims"
FIGURES = ["n_queries", "baseline_value", "treatment_value", "relative_effect", "ci_low",
           "ci_high", "absolute_effect", "abs_ci_low", "abs_ci_high"]


def _ledger() -> list[dict]:
    return json.loads((OUT / "claims.json").read_text())["ledger"]


def test_every_committed_rows_file_recomputes_its_ledger_row():
    by = {c.id: c for c in CLAIMS}
    with_rows = [r for r in _ledger() if r.get("rows_file")]
    assert with_rows  # at least the agent protocol's
    for r in with_rows:
        path = OUT / "rows" / r["rows_file"]
        assert path == rows.rows_path(r["claim"], r["deployment"], OUT) and path.exists()
        got = rows.recompute(for_deployment(by[r["claim"]], r["deployment"]), path)  # sessions: their metric
        assert got["verdict"] == r["verdict"]
        assert [got[k] for k in FIGURES] == pytest.approx([r[k] for k in FIGURES], nan_ok=True)


def test_the_ledger_says_which_rows_are_committed():
    """Measured rows without a rows file say so in REPORT.md; every rows file on disk is
    named by a ledger row."""
    measured = [r for r in _ledger() if r["verdict"] in VERDICTS]
    named = {r["rows_file"] for r in measured if r.get("rows_file")}
    assert named == {p.name for p in (OUT / "rows").glob("*.jsonl.gz")}
    report = (OUT / "REPORT.md").read_text()
    for r in measured:
        if not r.get("rows_file"):
            assert f"{r['claim']} / {r['deployment']}" in report


def test_agent_rows_rebuilt_from_the_committed_agent_evaluation(tmp_path):
    claim = next(c for c in CLAIMS if c.id == "a-agent-tool-calls")
    run = protocols.agent_run_folder(REPO / "experiments/agent-runs/claim-a-agent", tmp_path,
                                     claim, name="rebuilt")
    path = rows.export_rows(claim, "support automation", run, tmp_path / "claims")
    committed = rows.rows_path(claim.id, "support automation", OUT)
    assert path.read_bytes() == committed.read_bytes()  # the same rows, the same bytes


def test_tiers_rows_are_the_committed_benchmark_repetitions(tmp_path):
    """The d-claims' rows come from the committed tiers run folder, paired by repetition as
    `coldstart.paired_summary` pairs them: the same bytes as the committed rows files."""
    run = REPO / "experiments/runs/20261203-223709-claim-d-tiers"
    for claim in (c for c in CLAIMS if c.kind == "cold_start"):
        path = rows.export_rows(claim, "support automation", run, tmp_path)
        assert path is not None
        assert path.read_bytes() == rows.rows_path(claim.id, "support automation",
                                                   OUT).read_bytes()
        assert sorted(rows.read_rows(path)["query_id"].unique()) == list(range(10))


def test_every_measured_ledger_row_has_its_rows_committed():
    measured = [r for r in _ledger() if r["verdict"] in VERDICTS]
    assert measured and all(r.get("rows_file") for r in measured), \
        [f"{r['claim']} / {r['deployment']}" for r in measured if not r.get("rows_file")]
