"""The claims ledger's verdict rule on synthetic effects, the tiers protocol's paired
summary, rows that were not run, rerunning selected claims, and the report built from runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from agentic_rag.config import RAGConfig
from agentic_rag.studies.claims import ledger, protocols, registry, report
from agentic_rag.studies.claims.protocols import llm_budget
from agentic_rag.studies.claims.registry import CLAIMS, DATASETS, NOT_RUN, VERDICTS, claim_spec, select, verdict
from agentic_rag.studies.coldstart import paired_summary

_FIG = registry.DesignFigure(0.18, 0.29, "18–29 % better")  # a range in the claimed direction
_POINT = registry.DesignFigure(0.42, 0.42, "42 % less")


@pytest.mark.parametrize("lo,hi,direction,figure,want", [
    (-0.05, 0.10, +1, None, "inconclusive"),        # CI spans 0
    (0.02, 0.10, +1, None, "confirmed"),
    (-0.30, -0.10, +1, None, "contradicted"),       # opposite side
    (-0.40, -0.20, -1, None, "confirmed"),          # a claimed reduction, measured
    (0.05, 0.20, -1, None, "contradicted"),
    (math.nan, math.nan, +1, None, "inconclusive"),
    # against a stated range [+18 %, +29 %]
    (0.02, 0.10, +1, _FIG, "smaller than claimed"),  # the whole CI short of the range
    (-0.065, 0.077, +1, _FIG, "smaller than claimed"),  # b-answers: spans 0, short of 18 %
    (0.10, 0.20, +1, _FIG, "confirmed"),             # overlaps the range from below
    (0.20, 0.25, +1, _FIG, "confirmed"),             # inside it
    (0.25, 0.40, +1, _FIG, "confirmed"),             # overlaps it from above
    (0.05, 0.50, +1, _FIG, "confirmed"),             # contains it
    (0.30, 0.40, +1, _FIG, "larger than claimed"),   # the whole CI beyond it
    (-0.10, 0.25, +1, _FIG, "inconclusive"),         # reaches the range but spans 0
    (-0.30, -0.10, +1, _FIG, "contradicted"),        # opposite side beats "smaller"
    # boundaries: touching the range is overlapping it
    (0.05, 0.18, +1, _FIG, "confirmed"),
    (0.05, 0.1799, +1, _FIG, "smaller than claimed"),
    (0.29, 0.35, +1, _FIG, "confirmed"),
    (0.2901, 0.35, +1, _FIG, "larger than claimed"),
    (0.0, 0.10, +1, _FIG, "smaller than claimed"),
    (0.0, 0.20, +1, _FIG, "inconclusive"),           # lower end at 0: 0 is in the CI
    # a claimed reduction, point figure -42 %
    (-0.292, 0.125, -1, _POINT, "smaller than claimed"),  # c-boundaries' row
    (-0.50, -0.42, -1, _POINT, "confirmed"),
    (-0.60, -0.43, -1, _POINT, "larger than claimed"),
    (-0.41, -0.05, -1, _POINT, "smaller than claimed"),
    (0.05, 0.20, -1, _POINT, "contradicted"),
])
def test_verdict_rule(lo, hi, direction, figure, want):
    assert verdict(lo, hi, direction, figure) == want


def test_every_verdict_is_reachable():
    """Each verdict of VERDICTS comes out of the rule for some CI (with and without a
    figure), and nothing else does."""
    grid = [x / 100 for x in range(-60, 61, 5)]
    seen = {verdict(lo, hi, d, f) for lo in grid for hi in grid if lo <= hi
            for d in (+1, -1) for f in (None, _FIG, _POINT)}
    assert seen == set(VERDICTS)


def test_design_figure_checks_its_range():
    with pytest.raises(ValueError, match="low <= high"):
        registry.DesignFigure(0.3, 0.2, "backwards")
    with pytest.raises(ValueError, match="low <= high"):
        registry.DesignFigure(-0.1, 0.2, "negative")
    assert _FIG.signed(+1) == (0.18, 0.29) and _FIG.signed(-1) == (-0.29, -0.18)


def test_the_four_stated_figures():
    """The design's four figures sit on the four headline claims, as ranges of relative
    change in the claimed direction, each saying where the design measured it."""
    by = {c.id: c for c in CLAIMS}
    want = {"a-iterations": (-0.37, -0.24), "b-answers": (0.18, 0.29),
            "c-boundaries": (-0.42, -0.42), "d-cold-start": (1 / 3.2 - 1, 1 / 3.2 - 1)}
    for cid, rng in want.items():
        f = by[cid].design_figure
        assert f is not None and f.signed(by[cid].direction) == pytest.approx(rng)
        assert "500+ agent sessions" in f.deployment and "support automation" in f.deployment
    assert {c.id for c in CLAIMS if c.design_figure is not None} == set(want)


def test_kept_rows_are_redecided_against_the_figure():
    """An old row (verdict from the figure-less rule) gets today's figure and verdict from its
    own CIs, nothing re-measured; a not-run row keeps its status."""
    claim = next(c for c in CLAIMS if c.id == "b-answers")
    old = {"claim": "b-answers", "verdict": "inconclusive", "design_figure": None,
           "ci_low": -0.065, "ci_high": 0.077, "abs_ci_low": -0.039, "abs_ci_high": 0.045}
    row = ledger.redecided(old, claim)
    assert row["verdict"] == "smaller than claimed" and row["design_low"] == 0.18
    assert old["verdict"] == "inconclusive"  # the input is not modified
    assert ledger.redecided({"verdict": "not run", "ci_low": None, "ci_high": None},
                            claim)["verdict"] == "not run"
    # undefined relative change (baseline 0): the absolute CI's sign decides, no figure
    zero = {"verdict": "confirmed", "ci_low": None, "ci_high": None, "abs_ci_low": 0.01,
            "abs_ci_high": 0.02}
    assert ledger.redecided(zero, claim)["verdict"] == "confirmed"


def test_a_session_hallucination_row_keeps_its_validation_against_people_when_redecided():
    """A c-boundaries row over MTRAG's sessions is validated against MTRAG's raters (the
    committed people table), not the HaluEval tables its detector also has rows in: a
    rebuild (`redecided`) once overwrote it with the HaluEval set (ii) AUROC 0.55."""
    claim = registry.for_deployment(next(c for c in CLAIMS if c.id == "c-boundaries"),
                                    "sessions-govt")
    old = {"claim": "c-boundaries", "deployment": "sessions-govt", "verdict": "not run",
           "judge_validation": "detector lexical: AUROC 0.55 [0.50, 0.60] on 150 answers",
           "judge_auroc": 0.55, "judge_tables": list(ledger.DETECTOR_SETS.values())}
    row = ledger.redecided(old, claim)
    people = pd.read_csv(ledger.PEOPLE_TABLE)
    lexical = people[(people.binarisation == "majority>=3") & (people.who == "lexical")].iloc[0]
    assert row["judge_tables"] == [ledger.PEOPLE_TABLE]
    assert row["judge_auroc"] == pytest.approx(lexical["auroc"])
    assert row["judge_validation"].startswith("detector lexical at 0.536 (no LLM): AUROC "
                                              f"{lexical['auroc']:.3f}")
    assert f"on {int(lexical['n'])} MTRAG responses" in row["judge_validation"]
    # a HaluEval deployment's row still reads the HaluEval tables
    halu = ledger.redecided({**old, "deployment": "document analysis"},
                            next(c for c in CLAIMS if c.id == "c-boundaries"))
    assert halu["judge_tables"] != [ledger.PEOPLE_TABLE]


def test_committed_verdicts_follow_the_rule():
    """Every measured row of the committed claims.json carries the verdict the rule gives its
    own CIs against today's stated figure (`agentic-rag claims --rebuild` re-applies it), and
    REPORT.md shows the figure beside the effect."""
    data = json.loads((REPO / "experiments/claims/claims.json").read_text())
    by = {c.id: c for c in CLAIMS}
    measured = [r for r in data["ledger"] if r["verdict"] in VERDICTS]
    assert measured
    for r in measured:
        claim = by[r["claim"]]
        nan = [math.nan if r.get(k) is None else r[k]
               for k in ("ci_low", "ci_high", "abs_ci_low", "abs_ci_high")]
        assert r["verdict"] == ledger.decide(claim, tuple(nan[:2]), tuple(nan[2:])), r["claim"]
        assert r["design_figure"] == (claim.design_figure.label(claim.direction)
                                      if claim.design_figure else None)
    report_md = (REPO / "experiments/claims/REPORT.md").read_text()
    assert "| stated figure |" in report_md and "| -37.0% to -24.0% |" in report_md


def _cold_results(flat: list[float], tiered: list[float], kind: str = "recent") -> pd.DataFrame:
    rows = []
    for r, (f, t) in enumerate(zip(flat, tiered)):
        for arm, v in (("flat", f), ("tiered", t)):
            rows.append({"arm": arm, "query_kind": kind, "repeat": r,
                         "process_start_to_first_answer_s": v, "imports_s": 1.0,
                         "model_load_s": 5.0, "first_query_ms": 100 * v, "process_wall_s": v + 1,
                         "cold_loaded": arm == "tiered" and kind == "archived"})
    return pd.DataFrame(rows)


def test_paired_summary_pairs_repetitions_in_the_runner_format():
    df = _cold_results([10.0, 12.0, 11.0], [9.0, 11.0, 9.5])
    s = paired_summary(df).set_index("config_id")
    assert list(s.index) == ["c00", "c01"] and s.loc["c00", "baseline"] and not s.loc["c01", "baseline"]
    assert s.loc["c00", "recent.process_start_to_first_answer_s"] == pytest.approx(11.0)
    assert s.loc["c01", "n_queries"] == 3
    m = "recent.process_start_to_first_answer_s"
    assert s.loc["c01", f"{m}_diff_vs_base"] == pytest.approx(-3.5 / 3)
    assert s.loc["c01", f"{m}_rel_vs_base"] == pytest.approx(-3.5 / 3 / 11.0)
    lo, hi = s.loc["c01", f"{m}_rel_vs_base_ci_low"], s.loc["c01", f"{m}_rel_vs_base_ci_high"]
    assert lo <= s.loc["c01", f"{m}_rel_vs_base"] <= hi < 0  # every pair is faster
    assert f"{m}_rel_vs_base" not in s.columns or math.isnan(s.loc["c00", f"{m}_rel_vs_base"])


def test_select_by_id_or_prefix():
    assert [c.id for c in select(["d"])] == ["d-cold-start", "d-first-query"]
    assert [c.id for c in select(["b-answers", "c"])] == ["b-answers", "c-boundaries"]
    assert len(select(None)) == len(CLAIMS) and select([]) == []
    with pytest.raises(ValueError, match="unknown claim"):
        select(["e"])


def test_a_claim_can_replace_its_deployments_sample():
    ds = DATASETS["document analysis"]
    claim = next(c for c in CLAIMS if c.id == "b-answer-in-context")
    spec = claim_spec(claim, ds, RAGConfig())
    assert (spec.dataset.split, spec.dataset.corpus_size) == ("test", None)  # no corpus cut
    assert spec.dataset.n == claim.dataset["n"] != ds.n
    assert spec.metrics == ["retrieval"] and not claim.needs_llm
    assert claim_spec(claim, ds, RAGConfig(), smoke=True).dataset.n == 5
    fusion = next(c for c in CLAIMS if c.id == "b-fusion")  # the others keep the sample
    assert claim_spec(fusion, ds, RAGConfig()).dataset == ds


def test_llm_budget_is_estimate_llm_cost_and_fits_three_hours():
    budget = llm_budget()
    llm = [c for c in CLAIMS if c.needs_llm]
    assert {c.id for c in llm} == {"b-answers", "c-boundaries", "a-agent-tool-calls"}
    row = budget.set_index("protocol").loc["b-answers"]
    # two arms × the sample × one answer each, at the context budget + 150 prompt tokens
    assert row["llm_calls"] == 2 * registry.LLM_SAMPLE
    assert row["prompt_tokens_est"] == row["llm_calls"] * (RAGConfig().context.max_tokens + 150)
    assert budget.set_index("protocol").loc["c-boundaries", "llm_calls"] == 4 * registry.LLM_SAMPLE
    # with the protocols that need no LLM, a full `make claims` fits in 3 h even at the ceiling
    assert budget["minutes_est"].sum() + registry.NON_LLM_MINUTES <= 180


def _fake_run(runs: Path, name: str, summary: pd.DataFrame, dataset: str) -> Path:
    d = runs / name
    (d / "configs").mkdir(parents=True)
    for cid in summary["config_id"]:
        RAGConfig().save(d / "configs" / f"{cid}.yaml")
    summary.to_csv(d / "summary.csv", index=False)
    (d / "meta.json").write_text(json.dumps({"dataset": dataset, "git_commit": "abc123",
                                             "embedding_model": "m", "llm": None}))
    return d


def test_zero_baseline_rate_uses_the_absolute_difference(tmp_path):
    claim = next(c for c in CLAIMS if c.id == "c-boundaries")
    summary = pd.DataFrame([
        {"config_id": "c00", "baseline": True, "n_queries": 18, "failures": 0, "hallucinated": 0.0},
        {"config_id": "c01", "baseline": False, "n_queries": 18, "failures": 1, "hallucinated": 0.0,
         "hallucinated_rel_vs_base": math.nan, "hallucinated_rel_vs_base_ci_low": math.nan,
         "hallucinated_rel_vs_base_ci_high": math.nan, "hallucinated_diff_vs_base": 0.0,
         "hallucinated_diff_vs_base_ci_low": 0.0, "hallucinated_diff_vs_base_ci_high": 0.0}])
    row = ledger.ledger_row(claim, "document analysis",
                                _fake_run(tmp_path, "r0", summary, "halueval-qa:test"))
    assert row["verdict"] == "inconclusive" and row["failures"] == 1
    summary.loc[1, ["hallucinated", "hallucinated_diff_vs_base",
                    "hallucinated_diff_vs_base_ci_low", "hallucinated_diff_vs_base_ci_high"]] = \
        [0.0, -0.2, -0.35, -0.05]
    summary.loc[0, "hallucinated"] = 0.2
    row = ledger.ledger_row(claim, "document analysis",
                                _fake_run(tmp_path, "r1", summary, "halueval-qa:test"))
    assert math.isnan(row["relative_effect"]) and row["verdict"] == "confirmed"


def test_an_arm_without_the_metric_is_reported_not_run(tmp_path):
    claim = next(c for c in CLAIMS if c.id == "b-answers")
    summary = pd.DataFrame([{"config_id": "c00", "baseline": True, "n_queries": 200, "failures": 18},
                            {"config_id": "c01", "baseline": False, "n_queries": 200, "failures": 18}])
    row = ledger.ledger_row(claim, "document analysis",
                                _fake_run(tmp_path, "r0", summary, "halueval-qa:test"))
    assert row["verdict"] == "not run" and "36 failures" in row["reason"] and row["run"] == "r0"


def test_rerun_selected_claims_keeps_the_others_and_says_what_was_not_run(tmp_path, monkeypatch):
    """`run_claims(only=["d"])` reruns the tiers protocol (faked here: no processes), keeps
    the measured rows of the previous claims.json, and gives every other claim × deployment
    a row that says why it has no number."""
    from agentic_rag.studies import coldstart

    out, runs = tmp_path / "claims", tmp_path / "runs"
    kept = {"claim": "b-fusion", "deployment": "document analysis", "dataset": "halueval-qa:test",
            "metric": "ndcg@10", "direction": 1, "n_queries": 200,
            "baseline": json.dumps(next(c for c in CLAIMS if c.id == "b-fusion").baseline),
            "treatment": json.dumps(next(c for c in CLAIMS if c.id == "b-fusion").treatment),
            "baseline_value": 0.846, "treatment_value": 0.886, "relative_effect": 0.047,
            "ci_low": 0.031, "ci_high": 0.064, "verdict": "confirmed", "run": "old-run",
            "git_commit": "old"}
    stale = {**kept, "claim": "a-iterations", "metric": "recall@10"}  # protocol changed since
    out.mkdir()
    (out / "claims.json").write_text(json.dumps({"smoke": False, "ledger": [kept, stale]}))

    def fake_run_cold_start(runs_dir, repeats, root, name, **kw):  # noqa: ANN001, ANN003
        df = pd.concat([_cold_results([10, 12, 11, 10, 12], [10.5, 11.8, 11.2, 10.1, 12.3]),
                        _cold_results([10, 12, 11, 10, 12], [14, 15, 13, 14, 16], "archived")])
        return _fake_run(Path(runs_dir), f"x-{name}", paired_summary(df), "banking+pydocs")

    monkeypatch.setattr(coldstart, "run_cold_start", fake_run_cold_start)
    ledger = protocols.run_claims(out, runs_dir=runs, cache_dir=tmp_path / "cache",
                                   log=lambda *a: None, only=["d"])
    assert len(ledger) == len(CLAIMS) * len(DATASETS)
    by = ledger.set_index(["claim", "deployment"])
    assert by.loc[("b-fusion", "document analysis"), "run"] == "old-run"  # kept as it was
    assert by.loc[("b-fusion", "document analysis"), "relative_effect"] == pytest.approx(0.047)
    assert by.loc[("a-iterations", "document analysis"), "verdict"] == "not run"
    assert "--only a-iterations" in by.loc[("a-iterations", "document analysis"), "reason"]
    assert by.loc[("b-answers", "support automation"), "verdict"] == "not applicable"
    assert by.loc[("c-boundaries", "code"), "verdict"] == "not run"
    assert by.loc[("d-cold-start", "document analysis"), "verdict"] == "not applicable"
    d = by.loc[("d-cold-start", "support automation")]
    # a CI around 0, short of the design's 3.2× (-68.75 %)
    assert d["run"] == "x-claim-d-tiers" and d["n_queries"] == 5 and d["verdict"] == "smaller than claimed"
    q = by.loc[("d-first-query", "support automation")]
    assert q["archived.first_query_ms_treatment"] > q["archived.first_query_ms_baseline"]
    assert set(ledger["verdict"]) <= set(VERDICTS) | set(NOT_RUN)
    report = (out / "REPORT.md").read_text()
    assert "`old-run`" in report and "`x-claim-d-tiers`" in report
    assert "*not applicable* — not applicable: HaluEval" in report
    assert "## LLM budget of a full run" in report
    measured = ledger[ledger["verdict"].isin(VERDICTS)]
    assert measured["run"].notna().all()
    assert ledger[ledger["verdict"].isin(NOT_RUN)]["relative_effect"].isna().all()
    data = json.loads((out / "claims.json").read_text(), parse_constant=pytest.fail)  # strict JSON
    assert all(r["run"] is None for r in data["ledger"] if r["verdict"] in NOT_RUN)
    # only=[]: nothing rerun, the report rebuilt from the kept rows and today's protocols
    again = protocols.run_claims(out, runs_dir=runs, log=lambda *a: None, only=[])
    cols = ["claim", "deployment", "run", "n_queries", "relative_effect", "ci_low", "ci_high",
            "verdict"]
    pd.testing.assert_frame_equal(again[again.verdict.isin(VERDICTS)][cols].reset_index(drop=True),
                                  measured[cols].reset_index(drop=True), check_dtype=False)


@pytest.mark.slow
def test_smoke_ledger_numbers_come_from_run_folders(tmp_path):
    from agentic_rag.studies.claims.protocols import run_claims

    ledger = run_claims(tmp_path / "claims", smoke=True, runs_dir=tmp_path / "runs",
                        cache_dir=tmp_path / "cache", log=lambda *a: None)
    assert len(ledger) == len(CLAIMS) * len(DATASETS)
    report = (tmp_path / "claims" / "REPORT.md").read_text()
    data = json.loads((tmp_path / "claims" / "claims.json").read_text())
    assert len(data["ledger"]) == len(ledger) and "Verdict rule" in report and data["smoke"]
    for claim in CLAIMS:  # the smoke run starts no LLM: LLM protocols say so
        for dep in DATASETS:
            row = next(r for r in data["ledger"] if r["claim"] == claim.id and r["deployment"] == dep)
            if not claim.applies_to(dep):
                assert row["verdict"] in {"not run", "not applicable"} and row["reason"]
            elif claim.needs_llm:
                assert row["verdict"] == "not run (smoke)"
    measured = [r for r in data["ledger"] if r["verdict"] in VERDICTS]
    assert {r["claim"] for r in measured} == {c.id for c in CLAIMS if not c.needs_llm}
    for row in measured:
        summary = pd.read_csv(tmp_path / "runs" / row["run"] / "summary.csv")
        treat = summary[~summary["baseline"]].iloc[0]
        base = summary[summary["baseline"]].iloc[0]
        m = row["metric"]
        col = m if m in summary.columns else f"{m}_mean"
        assert row["treatment_value"] == pytest.approx(treat[col])
        assert row["baseline_value"] == pytest.approx(base[col])
        want = treat[f"{m}_rel_vs_base_ci_low"]
        assert (row["ci_low"] is None and math.isnan(want)) or row["ci_low"] == pytest.approx(want)
        assert f"`{row['run']}`" in report
    tiers = next(r for r in measured if r["claim"] == "d-first-query")
    reps = pd.read_parquet(tmp_path / "runs" / tiers["run"] / "results.parquet")
    assert tiers["n_queries"] == 2 == reps["repeat"].nunique()
    assert set(reps["arm"]) == {"flat", "tiered"} and (reps["model_load_s"] > 0).all()
    assert (reps["process_start_to_first_answer_s"] > reps["model_load_s"]).all()
    assert reps.loc[reps.arm == "tiered", "tiers_read"].str.startswith("hot,warm").all()
    assert (reps.loc[reps.arm == "flat", "tiers_read"] == "flat").all()


def test_cli_only_names_unknown_claims(tmp_path):
    from typer.testing import CliRunner

    from agentic_rag.cli.main import app

    res = CliRunner().invoke(app, ["claims", "--only", "zz", "--out", str(tmp_path)])
    assert res.exit_code != 0 and "unknown claim" in res.output and "d-cold-start" in res.output
    assert not (tmp_path / "REPORT.md").exists()


def test_a_run_judged_by_the_retired_yes_no_judge_is_reported_as_such_without_an_llm(tmp_path):
    """What validates a c-boundaries row comes from its run folder: rows without
    `support_detector` (the yes/no JSON judge, which is gone) get RETIRED_JUDGE, nothing
    borrowed from another detector and no LLM call; rows of a graded detector get that
    detector's committed validation and the threshold."""
    old, new = tmp_path / "old", tmp_path / "new"
    for run, extra in ((old, {}), (new, {"support_detector": ["graded_judge_q"] * 2})):
        run.mkdir()
        pd.DataFrame({"hallucinated": [0.0, 1.0], "answer": ["a", "b"], **extra}).to_parquet(
            run / "results.parquet")
    got = protocols.judge_fields(old, 0.536, root=REPO)
    assert got == ledger.RETIRED_JUDGE and got is not ledger.RETIRED_JUDGE
    graded = protocols.judge_fields(new, 0.536, root=REPO)
    assert graded["judge_validation"].startswith("detector graded_judge_q:")
    assert graded["support_threshold"] == 0.536 and "retired" not in graded["judge_validation"]


def test_a_c_boundaries_row_without_a_validation_says_not_validated(tmp_path):
    claim = next(c for c in CLAIMS if c.id == "c-boundaries")
    row = {**ledger.not_run_row(claim, "document analysis", "inconclusive", ""),
           "n_queries": 14, "baseline_value": 0.2, "treatment_value": 0.1,
           "relative_effect": -0.5, "ci_low": -1.0, "ci_high": 0.1, "run": "r"}
    report.write_report(pd.DataFrame([row]), tmp_path / "out")
    assert "judge: not validated" in (tmp_path / "out" / "REPORT.md").read_text()
    report.write_report(pd.DataFrame([{**row, **ledger.RETIRED_JUDGE}]), tmp_path / "out")
    assert "judge: judged by the retired yes/no JSON judge" in (
        tmp_path / "out" / "REPORT.md").read_text()


def _agent_rows(agent_dir: Path, gated: list[int], static: list[int], correct: list[float]) -> None:
    agent_dir.mkdir(parents=True)
    rows, judged = [], []
    for i, (g, s) in enumerate(zip(gated, static)):
        for cell, calls in ((registry.AGENT_CELLS["treatment"], g),
                            (registry.AGENT_CELLS["baseline"], s)):
            key = {"dataset": "tau2-banking", "split": "test", "cell": cell, "qid": f"t{i}"}
            rows.append({**key, "searches": calls, "model_searches": calls - 1,
                         "retrieval_iterations": 2 * calls if "static" not in cell else calls,
                         "abstained": 0.0, "latency_s": 10.0})
            judged.append({**key, "correct": correct[i], "hallucinated": 0.0})
    rows.append({"dataset": "python-faq", "split": "test", "cell": registry.AGENT_CELLS["treatment"],
                 "qid": "faq0", "searches": 9})  # another dataset: not in the protocol
    (agent_dir / "rows.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (agent_dir / "judgements.jsonl").write_text("\n".join(json.dumps(r) for r in judged) + "\n")
    (agent_dir / "meta-test.json").write_text(json.dumps({
        "git_commit": "abc123", "model": "qwen", "command": "agent_eval.py ...",
        "corpora": {"tau2-banking": {"name": "tau2-banking:test[corpus=250]"}}}))


def test_agent_protocol_pairs_tasks_and_reads_like_a_sweep(tmp_path):
    """The agent evaluation's rows (static vs gated tool, same tasks) become a run folder in
    the runner's format; the ledger row reads its numbers from it: fewer tool calls with the
    gated tool on every task → confirmed; equal calls → inconclusive (CI [0, 0])."""
    claim = next(c for c in CLAIMS if c.id == "a-agent-tool-calls")
    assert claim.kind == "agent" and claim.applies_to("support automation")
    assert not claim.applies_to("code") and claim.direction == -1
    _agent_rows(tmp_path / "a1", gated=[1, 1, 2, 1], static=[2, 3, 3, 2], correct=[1, 0, 0, 1])
    run = protocols.agent_run_folder(tmp_path / "a1", tmp_path / "runs", claim, name="t1")
    res = pd.read_parquet(run / "results.parquet")
    assert len(res) == 8 and set(res["config_id"]) == {"c00", "c01"}
    s = pd.read_csv(run / "summary.csv").set_index("config_id")
    assert s.loc["c00", "searches"] == pytest.approx(2.5) and s.loc["c01", "searches"] == pytest.approx(1.25)
    assert s.loc["c01", "searches_rel_vs_base"] == pytest.approx(-0.5)
    row = ledger.ledger_row(claim, "support automation", run)
    assert row["verdict"] == "confirmed" and row["n_queries"] == 4
    assert row["dataset"] == "tau2-banking:test[corpus=250]" and row["git_commit"] == "abc123"
    assert row["correct_baseline"] == pytest.approx(0.5) == row["correct_treatment"]
    assert row["retrieval_iterations_treatment"] == pytest.approx(2.5)
    _agent_rows(tmp_path / "a2", gated=[1] * 5, static=[1] * 5, correct=[0.0] * 5)
    run = protocols.agent_run_folder(tmp_path / "a2", tmp_path / "runs", claim, name="t2")
    row = ledger.ledger_row(claim, "support automation", run)
    assert row["verdict"] == "inconclusive" and row["ci_low"] == 0 == row["ci_high"]


def test_agent_protocol_reads_past_a_torn_last_line(tmp_path):
    """`agent-eval` killed with kill -9 mid-append leaves a torn last line in `rows.jsonl` and
    `judgements.jsonl`: the ledger's run folder reads the complete rows (the same results as
    without it) and leaves the evaluation's files as they are (its rerun cuts the line)."""
    claim = next(c for c in CLAIMS if c.id == "a-agent-tool-calls")
    _agent_rows(tmp_path / "a1", gated=[1, 1, 2, 1], static=[2, 3, 3, 2], correct=[1, 0, 0, 1])
    whole = protocols.agent_run_folder(tmp_path / "a1", tmp_path / "runs", claim, name="t1")
    files = {f: tmp_path / "a1" / f for f in ("rows.jsonl", "judgements.jsonl")}
    for p in files.values():
        p.write_text(p.read_text() + '{"dataset": "tau2-banking", "split": "te')
    torn = {f: p.read_bytes() for f, p in files.items()}
    run = protocols.agent_run_folder(tmp_path / "a1", tmp_path / "runs", claim, name="t2")
    pd.testing.assert_frame_equal(pd.read_parquet(run / "results.parquet"),
                                  pd.read_parquet(whole / "results.parquet"))
    assert {f: p.read_bytes() for f, p in files.items()} == torn


def test_agent_protocol_runs_the_agent_evaluation_in_process(tmp_path, monkeypatch):
    """No script of the checkout, no subprocess: `run_agent_claim` calls `agent_eval.run.evaluate`
    (what `agentic-rag agent-eval` runs) with the protocol's options, then reads its rows."""
    from agentic_rag.studies.agent_eval import run as agent_eval
    from agentic_rag.studies.agent_eval.options import AgentEvalOptions, command_line

    claim = next(c for c in CLAIMS if c.id == "a-agent-tool-calls")
    calls, logged = [], []

    def fake_evaluate(opts, meter, llm=None, out=print):  # noqa: ANN001
        assert isinstance(opts, AgentEvalOptions)
        assert llm is None  # none given: the agent evaluation uses its own local server
        calls.append(opts)
        assert meter.calls == 0  # the claims' meter: every LLM call counted (and capped) there
        _agent_rows(Path(opts.runs_dir) / opts.run, gated=[1, 1], static=[2, 2], correct=[1, 0])

    monkeypatch.setattr(agent_eval, "evaluate", fake_evaluate)
    run = protocols.run_agent_claim(claim, tmp_path / "runs", agent_runs=tmp_path / "agent-runs",
                                     log=logged.append, max_concurrency=3)
    [opts] = calls
    assert opts.run == "claim-a-agent" and opts.datasets == ("tau2-banking",)
    assert opts.split == "test" and opts.n == claim.llm_sample and opts.max_concurrency == 3
    assert opts.cells == (registry.AGENT_CELLS["treatment"], registry.AGENT_CELLS["baseline"])
    assert opts.runs_dir == str(tmp_path / "agent-runs")
    # the logged command reruns the protocol's evaluation from a shell
    assert any(line.endswith(command_line(opts)) and "agentic-rag agent-eval --run claim-a-agent"
               in line for line in logged)
    meta = json.loads((run / "meta.json").read_text())
    assert meta["agent_run"] == str(tmp_path / "agent-runs" / "claim-a-agent")
    assert ledger.ledger_row(claim, "support automation", run)["n_queries"] == 2
    with pytest.raises(FileNotFoundError, match="no agent rows"):
        protocols.agent_run_folder(tmp_path / "none", tmp_path / "runs", claim, name="x")


REPO = Path(__file__).resolve().parents[1]


def _figures(row: dict, keys: list[str]) -> dict:
    """The row's figures, null (claims.json's NaN) as NaN."""
    return {k: math.nan if row.get(k) is None else row[k] for k in keys}
LEDGER = REPO / "experiments" / "claims" / "claims.json"


def test_committed_ledger_matches_the_committed_files_it_cites(tmp_path):
    """`experiments/claims/claims.json` against the repository: a row whose run folder is
    committed has its figures in that folder's summary.csv; a row whose run folder is not
    committed (experiments/runs/ is not) says so, in the ledger and in REPORT.md; the agent
    row's run folder is rebuilt from the committed agent-evaluation rows it names, and every
    figure of the row is what that rebuild gives."""
    data = json.loads(LEDGER.read_text())
    report = (LEDGER.parent / "REPORT.md").read_text()
    measured = [r for r in data["ledger"] if r["verdict"] in VERDICTS]
    assert measured
    figures = ["n_queries", "baseline_value", "treatment_value", "relative_effect", "ci_low",
               "ci_high", "absolute_effect", "abs_ci_low", "abs_ci_high", "verdict"]
    for row in measured:
        run_dir = REPO / "experiments" / "runs" / row["run"]
        assert row["run_committed"] is ledger.committed(run_dir), row["run"]
        claim = next(c for c in CLAIMS if c.id == row["claim"])
        if row["run_committed"]:
            got = ledger.ledger_row(claim, row["deployment"], run_dir)
            assert _figures(got, figures) == pytest.approx(_figures(row, figures), nan_ok=True)
        else:
            line = next(x for x in report.splitlines() if x.startswith(f"- `{row['run']}` ("))
            assert row["claim"] in line and "run folder not committed" in line
        if claim.kind == "agent":
            source = REPO / row["agent_run"]
            assert row["agent_run_committed"] and ledger.committed(source / "rows.jsonl")
            rebuilt = protocols.agent_run_folder(source, tmp_path, claim, name="rebuilt")
            got = ledger.ledger_row(claim, row["deployment"], rebuilt)
            beside = [k for k in row if k.endswith(("_baseline", "_treatment"))
                      and row[k] is not None]
            assert beside
            assert _figures(got, figures + beside) == pytest.approx(_figures(row, figures + beside),
                                                                    nan_ok=True)
            assert got["dataset"] == row["dataset"] and got["git_commit"] == row["git_commit"]
    for row in data["ledger"]:
        if isinstance(row.get("judge_run"), str):
            assert row["judge_run_committed"] is ledger.committed(
                REPO / "experiments" / "runs" / row["judge_run"])
    # the table of REPORT.md is the ledger's rendering
    from agentic_rag.studies.claims.report import table

    assert "\n".join(table(data["ledger"])) in report


def test_a_verdict_without_a_ci_is_rendered_not_crashed_on():
    """One paired question (a first step of the sessions' LLM run) has no bootstrap CI: the
    row reads `–` where a number is missing (NaN in the run, null in claims.json)."""
    from agentic_rag.studies.claims.report import table

    row = {"claim": "b-answers", "deployment": "sessions: fiqa", "dataset": "mtrag-fiqa:all",
           "n_queries": 1, "metric": "agent_rouge_l", "baseline_value": 0.2,
           "treatment_value": None, "relative_effect": None, "ci_low": float("nan"),
           "ci_high": None, "verdict": "inconclusive", "run": "r1", "design_figure": None}
    line = table([row])[-1]
    assert "| 1 | agent_rouge_l | 0.200 → – | – [–, –] |" in line and "**inconclusive**" in line


def test_c_boundaries_validation_fields_follow_the_runs_detector(tmp_path):
    """A run whose hallucinated came from a graded detector gets that detector's committed
    validation (set (ii)'s AUROC decides); a run of the binary judge is recognised as such."""
    from agentic_rag.studies.claims.ledger import DETECTOR_SETS, detector_fields
    from agentic_rag.studies.claims.protocols import run_detector

    for i, rel in enumerate(DETECTOR_SETS.values()):
        path = tmp_path / rel
        path.parent.mkdir(parents=True)
        pd.DataFrame([{"detector": "mean", "n": 400 - 250 * i, "failures": 0, "auroc": 0.9 - i / 5,
                       "auroc_ci_low": 0.8 - i / 5, "auroc_ci_high": 0.95 - i / 5,
                       "accuracy": 0.7, "threshold": 0.5}]).to_csv(path, index=False)
    f = detector_fields("mean", root=tmp_path)
    assert f["judge_auroc"] == pytest.approx(0.7)  # set (ii), the own answers
    assert "AUROC 0.90 [0.80, 0.95] on 400" in f["judge_validation"]
    assert "AUROC 0.70 [0.60, 0.75] on 150" in f["judge_validation"]
    assert "not validated" in detector_fields("lexical", root=tmp_path)["judge_validation"]
    run = tmp_path / "run"
    run.mkdir()
    pd.DataFrame({"hallucinated": [1.0, 0.0]}).to_parquet(run / "results.parquet")
    assert run_detector(run) is None  # the binary judge's run
    pd.DataFrame({"hallucinated": [1.0, 0.0, None],
                  "support_detector": ["mean", "mean", None]}).to_parquet(run / "results.parquet")
    assert run_detector(run) == "mean"


def test_llm_sample_sets_the_answer_level_claims_only():
    from agentic_rag.studies.claims.protocols import _run_first, sampled

    claims = {c.id: c for c in sampled(200)}
    assert claims["b-answers"].llm_sample == claims["c-boundaries"].llm_sample == 200
    assert claims["a-agent-tool-calls"].llm_sample == registry.AGENT_SAMPLE  # tasks, not questions
    budget = llm_budget(llm_sample=200).set_index("protocol")
    assert budget.loc["b-answers", "llm_calls"] == 2 * 200
    assert budget.loc["c-boundaries", "llm_calls"] == 4 * 200
    assert sampled(None) == registry.CLAIMS
    with pytest.raises(ValueError, match="llm_sample: 0"):
        sampled(0)
    # the judged protocol runs before the one that only answers (its answers precede their
    # judge calls and are then read from the cache)
    order = [c.id for c in sorted(claims.values(), key=_run_first)]
    assert order.index("c-boundaries") < order.index("b-answers")


def test_default_run_keeps_an_answer_claim_decided_on_more_questions(tmp_path, monkeypatch):
    """A plain `agentic-rag claims` samples LLM_SAMPLE questions per arm: it must not replace
    the ledger's b-answers verdict at n = 200 by one at n = 14. It keeps the row, says so, and
    the report's LLM budget is that of the kept n; an explicit `llm_sample` re-measures."""
    from agentic_rag.studies.claims import protocols

    claim = next(c for c in CLAIMS if c.id == "b-answers")
    row = {"claim": claim.id, "deployment": "document analysis", "dataset": "halueval-qa:test",
           "metric": claim.metric, "direction": 1, "n_queries": 200,
           "baseline": json.dumps(claim.baseline), "treatment": json.dumps(claim.treatment),
           "baseline_value": 0.599, "treatment_value": 0.602, "relative_effect": 0.005,
           "ci_low": -0.065, "ci_high": 0.077, "verdict": "inconclusive", "run": "big-run"}
    out = tmp_path / "claims"
    out.mkdir()
    (out / "claims.json").write_text(json.dumps({"smoke": False, "ledger": [row]}))
    measured = []

    def fake_measure(self, c, deployment, ds):  # noqa: ANN001
        measured.append((c.id, c.llm_sample))
        return {**row, "n_queries": c.llm_sample, "run": "small-run"}

    monkeypatch.setattr(protocols._Session, "measure", fake_measure)
    logs = []
    ledger = protocols.run_claims(out, runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
                                   log=logs.append, only=["b-answers"])
    got = ledger.set_index(["claim", "deployment"]).loc[("b-answers", "document analysis")]
    assert measured == [] and got["run"] == "big-run" and got["n_queries"] == 200
    assert any("kept the ledger's row at n = 200" in m and "--llm-sample 200" in m for m in logs)
    report = (out / "REPORT.md").read_text()
    assert "| b-answers | document analysis | 400 |" in report  # 2 arms × 200, not 2 × 14
    ledger = protocols.run_claims(out, runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
                                   log=logs.append, only=["b-answers"], llm_sample=14)
    assert measured == [("b-answers", 14)]
    got = ledger.set_index(["claim", "deployment"]).loc[("b-answers", "document analysis")]
    assert got["run"] == "small-run"


def _labelled_arm(folder: Path, answers: dict[str, str], labels: dict[str, str]) -> None:
    from agentic_rag.studies.detectors.labelling import add_label

    folder.mkdir(parents=True)
    (folder / "answers.jsonl").write_text("".join(
        json.dumps({"qid": q, "answer": a}) + "\n" for q, a in answers.items()))
    for q, said in labels.items():
        add_label(folder / "labels-pass1.jsonl", q, said, "llm:test")


def test_ppi_uses_only_labels_of_the_arms_own_answers(tmp_path, monkeypatch):
    """A label counts for a row only when it is about that row's answer (question id and
    answer text): a label of another answer to the same question is no label. The rates and
    the paired difference are `ppi_mean` / `ppi_paired_difference` of the matched rows."""
    from agentic_rag.experiments.stats import ppi_mean, ppi_paired_difference
    from agentic_rag.studies.claims import ppi
    from agentic_rag.studies.claims.rows import rows_path, write_rows

    claim = next(c for c in CLAIMS if c.id == "c-boundaries")
    qids = [f"q{i:02d}" for i in range(30)]
    flag_b = [float(i % 3 == 0) for i in range(30)]
    flag_t = [float(i % 4 == 0) for i in range(30)]
    rows = pd.DataFrame(
        [{"arm": "baseline", "query_id": q, "hallucinated": f, "answer": f"b{q}"}
         for q, f in zip(qids, flag_b)]
        + [{"arm": "treatment", "query_id": q, "hallucinated": f, "answer": f"t{q}"}
           for q, f in zip(qids, flag_t)])
    out = tmp_path / "claims"
    write_rows(rows, rows_path(claim.id, "document analysis", out))
    # labels for the first 20 questions; q00's treatment label is about another answer
    lab_b = {q: ("unsupported" if i % 2 == 0 else "supported") for i, q in enumerate(qids[:20])}
    lab_t = {q: ("unsupported" if i % 5 == 0 else "supported") for i, q in enumerate(qids[:20])}
    _labelled_arm(tmp_path / "off", {q: f"b{q}" for q in qids[:20]}, lab_b)
    _labelled_arm(tmp_path / "on", {q: ("other" if q == "q00" else f"t{q}") for q in qids[:20]},
                  lab_t)
    monkeypatch.setattr(ppi, "LABELLED_ARMS", {(claim.id, "baseline"): "off",
                                               (claim.id, "treatment"): "on"})
    row = {"verdict": "inconclusive", "deployment": "document analysis",
           "support_detector": "graded_judge_q", "support_threshold": 0.536}
    got = ppi.ppi_fields(row, claim, root=tmp_path, out_dir=out)
    y_b = [1.0 if lab_b[q] == "unsupported" else 0.0 for q in qids[:20]]
    want_b = ppi_mean(flag_b, flag_b[:20], y_b)
    assert got["baseline_ppi_estimate"] == pytest.approx(want_b["estimate"])
    assert got["baseline_labelled"] == 20 and got["treatment_labelled"] == 19
    y_t = [1.0 if lab_t[q] == "unsupported" else 0.0 for q in qids[1:20]]
    want_t = ppi_mean(flag_t, flag_t[1:20], y_t)
    assert got["treatment_ppi_estimate"] == pytest.approx(want_t["estimate"])
    assert got["treatment_ppi_ci_high"] == pytest.approx(want_t["ci_high"])
    assert "LLM-labelled (`llm:test`)" in got["treatment_ppi"]
    diff = ppi_paired_difference(flag_t, flag_b, flag_t[1:20], flag_b[1:20], y_t, y_b[1:])
    assert got["ppi_difference_estimate"] == pytest.approx(diff["estimate"])
    assert got["ppi_difference_labelled"] == 19
    assert "the stated '42 %" in got["ppi_difference"]
    # one arm without labels: no PPI of the difference, said so
    monkeypatch.setattr(ppi, "LABELLED_ARMS", {(claim.id, "treatment"): "on"})
    got = ppi.ppi_fields(row, claim, root=tmp_path, out_dir=out)
    assert got["baseline_ppi"].startswith(ppi.NO_LABELS)
    assert "no PPI of the difference" in got["ppi_difference"]
    # rows without answers cannot be matched: said, not guessed
    write_rows(rows.drop(columns="answer"), rows_path(claim.id, "document analysis", out))
    got = ppi.ppi_fields(row, claim, root=tmp_path, out_dir=out)
    assert "no answers to match labels" in got["treatment_ppi"]


def test_the_committed_c_boundaries_row_carries_its_ppi_from_the_committed_files():
    """The ledger's c-boundaries row: its PPI fields are what `ppi_fields` recomputes from the
    committed rows and label folders, and every labelled answer is one of the arm's answers
    (the label folders hold the arms' own answers, not set (ii)'s instructions-first own
    answers, 31 of whose 150 differ from the claim's boundaries-on arm)."""
    from agentic_rag.studies.claims import ppi
    from agentic_rag.studies.claims.rows import read_rows, rows_path

    data = json.loads((REPO / "experiments/claims/claims.json").read_text())
    row = next(r for r in data["ledger"] if r["claim"] == "c-boundaries"
               and r["deployment"] == "document analysis")
    claim = next(c for c in CLAIMS if c.id == "c-boundaries")
    got = ppi.ppi_fields(row, claim, REPO)
    for k in ("baseline_ppi", "treatment_ppi", "ppi_difference"):
        assert row[k] == got[k]
    rows = read_rows(REPO / rows_path(claim.id, "document analysis"))
    for arm, folder in (("baseline", "c-boundaries-off"), ("treatment", "c-boundaries-on")):
        answers = {r["qid"]: r["answer"] for r in map(json.loads, (
            REPO / "experiments/detectors" / folder / "answers.jsonl").open())}
        mine = rows[rows["arm"] == arm].set_index("query_id")["answer"].str.strip()
        assert all(mine[q] == a for q, a in answers.items())
        assert got[f"{arm}_labelled"] == len(answers) == 200
    b = next(r for r in data["ledger"] if r["claim"] == "b-answers"
             and r["deployment"] == "document analysis")
    assert ppi.ppi_fields(b, next(c for c in CLAIMS if c.id == "b-answers"), REPO) == {}
