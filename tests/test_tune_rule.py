"""`tune`'s choice rule (issue 63): non-inferiority plus superiority on constructed dev tables
with exact verdicts, the order among eligible candidates, the `sign` rule kept by name, and
`--explain` on a committed run (experiments/tune/RULE-NONINFERIORITY.md is the rule)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from agentic_rag.studies.tune_report import explain_run, from_report, report_markdown
from agentic_rag.studies.tune_space import (
    NONINFERIORITY_MARGINS,
    RULE,
    RULE_TEXT,
    TuneError,
    apply_rule,
    choose_by_rule,
    explain,
    rule_table,
    table_from_records,
)

ROOT = Path(__file__).resolve().parents[1]


def _table(rows: list[tuple]) -> pd.DataFrame:
    """A dev summary as a sweep writes it: (name, nDCG Δ, its CI, answer@5 Δ, its CI, context
    tokens); the default first, its own row without CIs."""
    out = []
    for _name, nd, nd_ci, a5, a5_ci, ctx in rows:
        r = {"n_queries": 27, "ndcg@10": 0.8 + nd, "answer@5": 0.5 + a5,
             "context_tokens_mean": ctx, "latency_p50_ms": 1.0,
             "ndcg@10_diff_vs_base": nd, "answer@5_diff_vs_base": a5}
        if nd_ci is not None:
            r["ndcg@10_diff_vs_base_ci_low"], r["ndcg@10_diff_vs_base_ci_high"] = nd_ci
        if a5_ci is not None:
            r["answer@5_diff_vs_base_ci_low"], r["answer@5_diff_vs_base_ci_high"] = a5_ci
        out.append(r)
    return rule_table(pd.DataFrame(out), [r[0] for r in rows])


# the issue's example table (a new user's folder, 27 dev questions), and the constructed cases
ISSUE = [("default", 0.0, None, 0.0, None, 700),
         ("small-to-big 128→256", -0.006, (-0.019, 0.000), 0.148, (0.037, 0.296), 740),
         ("small-to-big + title 0.5", -0.032, (-0.108, 0.042), 0.148, (0.037, 0.296), 745)]


def test_the_margins_are_the_written_ones():
    assert NONINFERIORITY_MARGINS == {"ndcg@10": 0.02, "answer@5": 0.02}
    assert RULE == RULE_TEXT["noninferiority"] and "0.02" in RULE
    written = (ROOT / "experiments/tune/RULE-NONINFERIORITY.md").read_text()
    assert "answer@5: δ = 0.02" in written and "nDCG@10: δ = 0.02" in written


def test_the_issues_example_is_eligible_and_chosen():
    t = _table(ISSUE)
    assert list(t["eligible"]) == [False, True, False]
    assert t["why"][1] == ("non-inferior on every metric; answer@5 CI above 0 (lower +0.037)")
    assert t["why"][2] == "ndcg@10 lower bound -0.108 <= -δ -0.020"
    assert choose_by_rule(t) == "small-to-big 128→256"
    # the old rule refused it on a mean of -0.006 inside its own CI
    assert choose_by_rule(t, "sign") == "default"


def test_a_loss_beyond_the_margin_or_no_shown_gain_is_not_eligible():
    t = _table([("default", 0.0, None, 0.0, None, 700),
                ("loss beyond -δ", 0.01, (-0.021, 0.04), 0.2, (0.1, 0.3), 700),
                ("answer loss beyond", 0.05, (0.01, 0.09), -0.01, (-0.0201, 0.0), 700),
                ("no CI above 0", 0.03, (0.0, 0.06), 0.1, (0.0, 0.2), 700),
                ("no CI at all", 0.05, None, 0.1, (0.05, 0.2), 700),
                ("at the margin", 0.0, (-0.02, 0.02), 0.1, (0.05, 0.2), 700),
                ("identical", 0.0, (0.0, 0.0), 0.0, (0.0, 0.0), 700)])
    assert list(t["eligible"]) == [False] * 7
    why = dict(zip(t["config"], t["why"]))
    assert why["loss beyond -δ"] == "ndcg@10 lower bound -0.021 <= -δ -0.020"
    assert why["answer loss beyond"] == "answer@5 lower bound -0.020 <= -δ -0.020"
    assert why["no CI above 0"] == "non-inferior, but no CI lies above 0"
    assert why["no CI at all"] == "ndcg@10: no CI"
    assert why["at the margin"].startswith("ndcg@10 lower bound")  # strictly above −δ
    assert why["identical"] == "non-inferior, but no CI lies above 0"
    assert choose_by_rule(t) == "default"


def test_the_order_among_eligible_answer_lower_bound_then_ndcg_then_tokens_then_place():
    t = _table([("default", 0.0, None, 0.0, None, 700),
                ("ndcg gain", 0.05, (0.02, 0.08), 0.0, (0.0, 0.0), 600),
                ("answer gain, bigger mean", 0.0, (-0.01, 0.01), 0.2, (0.01, 0.4), 700),
                ("answer gain, surer", 0.0, (-0.01, 0.01), 0.1, (0.05, 0.15), 700)])
    assert list(t["eligible"]) == [False, True, True, True]
    assert choose_by_rule(t) == "answer gain, surer"  # the lower bound, not the mean
    t = _table([("default", 0.0, None, 0.0, None, 700),
                ("a", 0.0, (-0.01, 0.01), 0.1, (0.05, 0.15), 800),
                ("b", 0.0, (0.001, 0.01), 0.1, (0.05, 0.15), 800),
                ("c", 0.0, (0.001, 0.01), 0.1, (0.05, 0.15), 700),
                ("d", 0.0, (0.001, 0.01), 0.1, (0.05, 0.15), 700)])
    assert choose_by_rule(t) == "c"  # nDCG@10's bound, then fewer tokens, then the earlier


def test_the_sign_rule_is_kept_by_name_and_a_bad_name_is_refused():
    t = _table(ISSUE)
    s = apply_rule(t, "sign")
    assert list(s["eligible"]) == [False, False, False]
    assert s["why"][1] == "ndcg@10 mean Δ -0.006 < 0"
    with pytest.raises(TuneError, match="use one of noninferiority, sign"):
        apply_rule(t, "majority")


def test_explain_gives_delta_bounds_and_each_verdict():
    text = explain(_table(ISSUE))
    assert "δ: ndcg@10 0.02, answer@5 0.02" in text and "27 dev questions" in text
    assert "-0.006 [-0.019, +0.000]" in text and "+0.148 [+0.037, +0.296]" in text
    lines = text.splitlines()
    s2b = next(x for x in lines if x.startswith("small-to-big 128→256"))
    assert "CHOSEN eligible: non-inferior on every metric" in s2b
    title = next(x for x in lines if x.startswith("small-to-big + title"))
    assert "not eligible: ndcg@10 lower bound -0.108 <= -δ -0.020" in title
    assert lines[-1] == "chosen: small-to-big 128→256"


def test_explain_reads_a_committed_run_without_rerunning_it():
    # python-library-qa over the whole reference at --n 80 (32 dev questions): small-to-big
    # gains answer@5 but its nDCG@10 bound, -0.065, is beyond -δ
    run = ROOT / "experiments/tune/python-full/span-80"
    text = explain_run(run)
    assert "acceptance 69/218 (0.32)" in text and "it chose 'default' under its rule (sign)" in text
    s2b = next(x for x in text.splitlines() if x.startswith("small-to-big 128→256"))
    assert "+0.125 [+0.031, +0.250]" in s2b
    assert "not eligible: ndcg@10 lower bound -0.065 <= -δ -0.020" in s2b
    assert text.splitlines()[-1].startswith("chosen: default")
    # the stored table re-read under the old rule gives the committed choice
    tj = json.loads((run / "tune.json").read_text())
    assert choose_by_rule(table_from_records(tj["dev_table"]), "sign") == tj["chosen"]


def test_explain_reads_a_sweep_run_folder(tmp_path):
    cols = {"config": ["base", "x", "y"], "n_queries": [27] * 3, "ndcg@10": [0.8, 0.79, 0.9],
            "answer@5": [0.5, 0.65, 0.5], "context_tokens_mean": [700] * 3,
            "ndcg@10_diff_vs_base": [None, -0.006, 0.1],
            "ndcg@10_diff_vs_base_ci_low": [None, -0.019, -0.05],
            "ndcg@10_diff_vs_base_ci_high": [None, 0.0, 0.2],
            "answer@5_diff_vs_base": [None, 0.148, 0.0],
            "answer@5_diff_vs_base_ci_low": [None, 0.037, -0.1],
            "answer@5_diff_vs_base_ci_high": [None, 0.296, 0.1]}
    pd.DataFrame(cols).to_csv(tmp_path / "summary.csv", index=False)
    text = explain_run(tmp_path)
    assert text.splitlines()[-1] == "chosen: x"
    with pytest.raises(TuneError, match="neither tune.json"):
        explain_run(tmp_path / "nothing")


def test_the_report_prints_delta_each_verdict_and_the_acceptance_rate(tmp_path):
    dev = _table(ISSUE)
    test = _table(ISSUE[:2])
    md = report_markdown("docs", {"documents": 3, "chunks": 30},
                         {"accepted": 60, "drawn": 199, "by_split": {"dev": 27, "test": 33}},
                         dev, test, choose_by_rule(dev), tmp_path / "best-config.yaml",
                         tmp_path / "tune.png")
    assert "acceptance 60/199 (0.30)" in md and "δ (the margin" in md
    assert "| small-to-big 128→256 | 0.794 (-0.006 [-0.019, +0.000])" in md
    assert "eligible: non-inferior on every metric; answer@5 CI above 0 (lower +0.037) |" in md
    assert "not eligible: ndcg@10 lower bound -0.108 <= -δ -0.020 |" in md
    assert "the rule chose **small-to-big 128→256**" in md


def test_explain_names_a_committed_dev_sweep_by_its_tune_run():
    # banking-40-llm's dev sweep (12 questions): its configs named from the run's search space;
    # every gain's CI touches 0 there, so the new rule keeps the default (the old chose
    # small-to-big + pointwise 10)
    run = ROOT / "experiments/tune/banking-40-llm/runs/20261204-112533-tune-banking-40-s0-dev"
    lines = explain_run(run).splitlines()
    row = next(x for x in lines if x.startswith("small-to-big + pointwise 10"))
    assert "+0.062 [+0.000, +0.154]" in row and "non-inferior, but no CI lies above 0" in row
    assert lines[-1].startswith("chosen: default")
    assert explain_run(run, "sign").splitlines()[-1] == "chosen: small-to-big + pointwise 10"


def test_a_report_reads_back_into_the_tables_it_was_written_from(tmp_path):
    # `from_report` is `report_markdown`'s inverse (to the report's 3 decimals): the tables
    # read back write the same report again, and give the same choice
    dev, test = _table(ISSUE), _table(ISSUE[:2])
    gen = {"accepted": 60, "drawn": 199, "by_split": {"dev": 27, "test": 33}}
    args = ("docs", {"documents": 3, "chunks": 30}, gen)
    paths = (tmp_path / "best-config.yaml", tmp_path / "tune.png")
    md = report_markdown(*args, dev, test, choose_by_rule(dev), *paths)
    (tmp_path / "report.md").write_text(md)
    back = from_report(tmp_path / "report.md")
    assert back["generated"] == {"accepted": 60, "drawn": 199}
    assert back["chosen"] == "small-to-big 128→256" and back["from"] == "report.md (3 decimals)"
    assert back["dev_table"][1] == {
        "config": "small-to-big 128→256", "context_tokens": 740.0, "n_queries": 27,
        "ndcg@10": 0.794, "ndcg@10 Δ": -0.006, "ndcg@10 Δ CI": [-0.019, 0.0],
        "answer@5": 0.648, "answer@5 Δ": 0.148, "answer@5 Δ CI": [0.037, 0.296]}
    assert back["dev_table"][0]["ndcg@10 Δ CI"] is None and back["dev_table"][0]["ndcg@10 Δ"] == 0
    assert [r["config"] for r in back["test_table"]] == ["default", "small-to-big 128→256"]
    assert {r["n_queries"] for r in back["test_table"]} == {27}
    dev2, test2 = apply_rule(table_from_records(back["dev_table"])), table_from_records(
        back["test_table"])
    assert report_markdown(*args, dev2, test2, choose_by_rule(dev2), *paths) == md
    # and `--explain` reads a folder that holds the report alone
    text = explain_run(tmp_path)
    assert text.splitlines()[0] == (f"{tmp_path}: report.md only (figures to 3 decimals); "
                                    "questions' acceptance 60/199 (0.30); it chose "
                                    "'small-to-big 128→256'")
    assert text.splitlines()[-1] == "chosen: small-to-big 128→256"


def test_explain_reads_a_committed_study_that_has_only_its_report():
    # Node.js (34 of 210 draws, 14 dev questions): the old rule chose bm25 0.6, whose answer@5
    # CI touches 0; under today's rule the default is kept
    text = explain_run(ROOT / "experiments/tune/nodejs")
    assert "acceptance 34/210 (0.16); it chose 'bm25 0.6'" in text.splitlines()[0]
    assert "14 dev questions" in text
    assert text.splitlines()[-1].startswith("chosen: default")
    assert explain_run(ROOT / "experiments/tune/nodejs", "sign").splitlines()[-1] == "chosen: bm25 0.6"
