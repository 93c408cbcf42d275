"""Apply RULE.md to a run of clarify.yaml (dev) or clarify-test.yaml (test): per arm of
`agent.session.clarify`, the clarifying rate on UNDERSPECIFIED turns, "not answered"
(abstained or clarifying) on ANSWERABLE and UNANSWERABLE turns, each with its CI and the
paired difference vs the default (`rule`; paired bootstrap over sessions), clarifying on
every answerability, the check's verdicts, and the rule's verdict. Writes `clarify.json` and
`clarify.md` into the run folder. With `--scores FILE` (scores.py's output), also how
well the check's P(true) separates UNDERSPECIFIED from ANSWERABLE turns at any cut (AUROC,
bootstrap over sessions) and the rates at a few cuts.

    python experiments/conversations/clarify/analyse.py experiments/runs/<run> \
        [--scores experiments/conversations/clarify/dev/scores.jsonl.gz]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.datasets.mtrag import load_mtrag
from agentic_rag.experiments.stats import bootstrap_ci
from agentic_rag.jsonl import read_rows
from agentic_rag.studies.detectors.stats import auroc_ci
from agentic_rag.studies.session_arms import diff_text, load_arms, paired_vs

DEFAULT = "rule"
DELTA = 0.05  # RULE.md, 2: the most "not answered" may rise on ANSWERABLE turns
FLOOR = 0.7  # RULE.md, 3: "not answered" on UNANSWERABLE turns
KINDS = ("ANSWERABLE", "PARTIAL", "UNANSWERABLE", "UNDERSPECIFIED")


def arm_of(config: str) -> str:
    settings = dict(p.split("=", 1) for p in config.split(","))
    if "agent.session.clarify" not in settings:
        raise ValueError(f"config {config!r} names no agent.session.clarify")
    return settings["agent.session.clarify"]


def load(run: Path) -> pd.DataFrame:
    df = load_arms(run, arm_of)
    df["not_answered"] = ((df["agent_abstained"] > 0) | (df["agent_clarifying"] > 0)).astype(float)
    return df


def _rate(g: pd.DataFrame, metric: str, kind: str) -> dict[str, Any]:
    v = g.loc[g["answerability"] == kind, metric].astype(float).tolist()
    lo, hi = bootstrap_ci(v)
    return {"value": float(sum(v) / len(v)) if v else float("nan"), "ci_low": lo,
            "ci_high": hi, "n": len(v), "count": int(sum(v))}


def figures(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Per arm, the default first: the figures RULE.md names."""
    out = []
    for arm, g in sorted(df.groupby("arm"), key=lambda x: (x[0] != DEFAULT, str(x[0]))):
        checks = g["session_clarify_check"].value_counts().to_dict() \
            if "session_clarify_check" in g else {}
        row: dict[str, Any] = {
            "arm": arm, "sessions": len(g),
            "clarifying_on_underspecified": _rate(g, "agent_clarifying", "UNDERSPECIFIED"),
            "not_answered_on_answerable": _rate(g, "not_answered", "ANSWERABLE"),
            "not_answered_on_unanswerable": _rate(g, "not_answered", "UNANSWERABLE"),
            "abstained_on_answerable": _rate(g, "agent_abstained", "ANSWERABLE"),
            "clarifying_by_kind": {k: _rate(g, "agent_clarifying", k)["count"] for k in KINDS},
            "turns_by_kind": {k: int((g["answerability"] == k).sum()) for k in KINDS},
            "checks": {str(k): int(v) for k, v in checks.items()},
            # the turn's seconds where the check was asked: the check and the first search
            # (an answer after a clear check replays from the cache in this study)
            "check_turn_s_median": float(g.loc[g["session_clarify_check"].notna(),
                                               "latency_agent_ms"].median()) / 1000
            if "session_clarify_check" in g and g["session_clarify_check"].notna().any()
            else None}
        if arm != DEFAULT:
            row["clarifying_on_underspecified_vs_default"] = paired_vs(
                df, arm, DEFAULT, "agent_clarifying", "UNDERSPECIFIED")
            row["not_answered_on_answerable_vs_default"] = paired_vs(
                df, arm, DEFAULT, "not_answered", "ANSWERABLE")
            row["not_answered_on_unanswerable_vs_default"] = paired_vs(
                df, arm, DEFAULT, "not_answered", "UNANSWERABLE")
        out.append(row)
    return out


def choose(rows: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """RULE.md: llm replaces the default only if it passes 1-3."""
    reasons, passing = [], []
    for r in rows:
        if r["arm"] == DEFAULT:
            continue
        checks = {
            "1 clarifies more on UNDERSPECIFIED (CI > 0)":
                r["clarifying_on_underspecified_vs_default"]["ci_low"] > 0,
            f"2 not answered on ANSWERABLE: upper bound < +{DELTA}":
                r["not_answered_on_answerable_vs_default"]["ci_high"] < DELTA,
            f"3 not answered on UNANSWERABLE >= {FLOOR}":
                r["not_answered_on_unanswerable"]["value"] >= FLOOR}
        failed = [k for k, ok in checks.items() if not ok]
        reasons.append(f"{r['arm']}: " + ("passes" if not failed else "fails " + "; ".join(failed)))
        if not failed:
            passing.append(r["arm"])
    return (passing[0] if passing else DEFAULT), reasons


def _ci(x: dict[str, Any]) -> str:
    return f"{x['value']:.2f} [{x['ci_low']:.2f}, {x['ci_high']:.2f}] ({x['count']}/{x['n']})"


def _s(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds:.1f}"


def markdown(rows: list[dict[str, Any]], chosen: str, reasons: list[str]) -> str:
    lines = ["| arm | clarifying on UNDERSPECIFIED | Δ vs rule | not answered on ANSWERABLE | "
             "Δ vs rule | not answered on UNANSWERABLE | Δ vs rule | clarifying (A / P / U / "
             "UNDER) | check | turn s where checked (median) |", "|" + "---|" * 10]
    for r in rows:
        base = r["arm"] == DEFAULT
        by = r["clarifying_by_kind"]
        lines.append(
            f"| {r['arm']} | {_ci(r['clarifying_on_underspecified'])} | "
            f"{'' if base else diff_text(r['clarifying_on_underspecified_vs_default'])} | "
            f"{_ci(r['not_answered_on_answerable'])} | "
            f"{'' if base else diff_text(r['not_answered_on_answerable_vs_default'])} | "
            f"{_ci(r['not_answered_on_unanswerable'])} | "
            f"{'' if base else diff_text(r['not_answered_on_unanswerable_vs_default'])} | "
            f"{' / '.join(str(by[k]) for k in KINDS)} | "
            f"{', '.join(f'{k} {v}' for k, v in r['checks'].items()) or '–'} | "
            f"{_s(r['check_turn_s_median'])} |")
    lines += ["", "Rule (RULE.md): " + "; ".join(reasons) + f". **Chosen: {chosen}**."]
    return "\n".join(lines) + "\n"


def separation(scores: Path) -> dict[str, Any]:
    """AUROC of the check's P(true), UNDERSPECIFIED (positive) vs ANSWERABLE dev turns, and
    the share of each kind called ambiguous at cuts 0.5 / 0.6 / 0.7 / 0.8."""
    import numpy as np

    kind = {" ".join(t.question.split()): t.answerability
            for t in load_mtrag().split("dev").tasks}
    got = read_rows(scores)
    got = [g | {"kind": kind.get(" ".join(str(g["message"]).split()))} for g in got
           if g["p_true"] is not None]
    pairs = [(float(g["kind"] == "UNDERSPECIFIED"), g["p_true"]) for g in got
             if g["kind"] in ("UNDERSPECIFIED", "ANSWERABLE")]
    y, p = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
    point, lo, hi = auroc_ci(y, p, np.arange(len(y)))
    cuts = {str(c): {"UNDERSPECIFIED": f"{int((p[y == 1] >= c).sum())}/{int((y == 1).sum())}",
                     "ANSWERABLE": f"{int((p[y == 0] >= c).sum())}/{int((y == 0).sum())}"}
            for c in (0.5, 0.6, 0.7, 0.8)}
    return {"turns_scored": len(got), "auroc": point, "auroc_ci": [lo, hi], "at_cut": cuts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="the sweep's run folder")
    ap.add_argument("--scores", type=Path, help="scores.py's output (scores.jsonl[.gz])")
    args = ap.parse_args()
    run = args.run
    rows = figures(load(run))
    chosen, reasons = choose(rows)
    sep = separation(args.scores) if args.scores else None
    (run / "clarify.json").write_text(json.dumps(
        {"arms": rows, "chosen": chosen, "reasons": reasons, "separation": sep}, indent=1)
        + "\n")
    md = markdown(rows, chosen, reasons)
    if sep:
        md += (f"\nThe check's P(true), UNDERSPECIFIED vs ANSWERABLE ({sep['turns_scored']} "
               f"turns scored): AUROC {sep['auroc']:.2f} [{sep['auroc_ci'][0]:.2f}, "
               f"{sep['auroc_ci'][1]:.2f}]; called ambiguous at P >= cut: " + "; ".join(
                   f"{c}: UNDERSPECIFIED {v['UNDERSPECIFIED']}, ANSWERABLE {v['ANSWERABLE']}"
                   for c, v in sep["at_cut"].items()) + ".\n")
    (run / "clarify.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
