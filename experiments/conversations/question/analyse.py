"""Apply RULE.md to a run of question.yaml (dev) or question-test.yaml (test): per arm of
`agent.session.answer_question` (with the search query it goes with), abstention on
ANSWERABLE and UNANSWERABLE turns, ROUGE-L on ANSWERABLE turns, each with its CI and the
paired difference vs the default (`message`; paired bootstrap over sessions), the rule's
verdict, and why each arm's ANSWERABLE turns were abstained on, split by whether the carry
rule took the turn for a follow-up. Writes `question.json` and `question.md` into the run
folder.

    python experiments/conversations/question/analyse.py experiments/runs/<run>
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.datasets.mtrag import load_mtrag
from agentic_rag.studies.session_arms import abstention_reasons, arm_figures, diff_text, load_arms

DEFAULT = "message"
TIE = "carry+rewrite"  # RULE.md: a tie keeps the search unchanged
DELTA = 0.02  # ROUGE-L non-inferiority margin (RULE.md, 3)
RECALL_FLOOR = 0.7  # abstention recall on UNANSWERABLE (RULE.md, 2)


def arm_of(config: str) -> str:
    settings = dict(p.split("=", 1) for p in config.split(","))
    asked = settings.get("agent.session.answer_question")
    if asked is None:
        raise ValueError(f"config {config!r} names no agent.session.answer_question")
    if asked == "message":
        return DEFAULT
    return f"{settings.get('agent.session.query_mode', 'carry')}+{asked}"


def load(run: Path) -> pd.DataFrame:
    return load_arms(run, arm_of)


def choose(rows: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """RULE.md: the arm with the lowest ANSWERABLE abstention among those passing 1-3."""
    reasons, passing = [], []
    for r in rows:
        if r["arm"] == DEFAULT:
            continue
        a, q = r["abstained_on_answerable_vs_default"], r["rouge_l_answerable_vs_default"]
        checks = {"1 abstains less on ANSWERABLE (CI < 0)": a["ci_high"] < 0,
                  f"2 recall on UNANSWERABLE >= {RECALL_FLOOR}": r["recall"] >= RECALL_FLOOR,
                  f"3 ROUGE-L lower bound > -{DELTA}": q["ci_low"] > -DELTA}
        failed = [k for k, ok in checks.items() if not ok]
        reasons.append(f"{r['arm']}: " + ("passes" if not failed else "fails " + "; ".join(failed)))
        if not failed:
            passing.append((r["abstained_on_answerable"], r["arm"] != TIE, r["arm"]))
    return (min(passing)[2] if passing else DEFAULT), reasons


def by_follow_up(df: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Abstained / ANSWERABLE turns per arm, split by the carry rule's follow-up call (the
    default arm's `session_follow_up`, the same turns in every arm)."""
    base = df[df["arm"] == DEFAULT].set_index("query_id")["session_follow_up"]
    out: dict[str, dict[str, str]] = {}
    for arm, g in df[df["answerability"] == "ANSWERABLE"].groupby("arm"):
        f = g["query_id"].map(base).fillna(False).astype(bool)
        out[str(arm)] = {name: f"{int(g[m]['agent_abstained'].sum())}/{int(m.sum())}"
                         for name, m in (("follow-up", f), ("other", ~f))}
    return out


def _three(r: dict[str, Any], name: str) -> tuple[float, float, float]:
    return r[name], r[f"{name}_ci_low"], r[f"{name}_ci_high"]


def _ci(v: float, lo: float, hi: float) -> str:
    return f"{v:.2f} [{lo:.2f}, {hi:.2f}]"


def markdown(rows: list[dict[str, Any]], split: dict[str, dict[str, str]], chosen: str,
             reasons: list[str]) -> str:
    lines = ["| arm | abstained on ANSWERABLE | Δ vs message | follow-up / other | recall on "
             "UNANSWERABLE | ROUGE-L (ANSWERABLE) | Δ vs message | prompt tokens (median) | "
             "agent s (median) |", "|" + "---|" * 9]
    for r in rows:
        base = r["arm"] == DEFAULT
        s = split.get(r["arm"], {})
        lines.append(
            f"| {r['arm']} | {_ci(*_three(r, 'abstained_on_answerable'))} "
            f"(n {r['n_answerable']}) | {'' if base else diff_text(r['abstained_on_answerable_vs_default'])} | "
            f"{s.get('follow-up', '')} / {s.get('other', '')} | "
            f"{_ci(r['recall'], r['recall_ci_low'], r['recall_ci_high'])} (n {r['n_unanswerable']}) | "
            f"{_ci(r['rouge_l_answerable'], *r['rouge_l_answerable_ci'])} | "
            f"{'' if base else diff_text(r['rouge_l_answerable_vs_default'])} | "
            f"{r['prompt_tokens_median']:.0f} | {r['latency_agent_s_median']:.1f} |")
    lines += ["", "Rule (RULE.md): " + "; ".join(reasons) + f". **Chosen: {chosen}**."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="the sweep's run folder")
    run = ap.parse_args().run
    df = load(run)
    rows = arm_figures(df, DEFAULT)
    chosen, reasons = choose(rows)
    split = by_follow_up(df)
    qrels = load_mtrag().qrels
    why = {arm: abstention_reasons(g, qrels) for arm, g in df.groupby("arm")}
    (run / "question.json").write_text(json.dumps(
        {"arms": rows, "chosen": chosen, "reasons": reasons, "follow_up_split": split,
         "on_answerable": why}, indent=1) + "\n")
    md = markdown(rows, split, chosen, reasons) + "".join(
        f"\n{arm}'s ANSWERABLE turns: " + "; ".join(f"{k} {v}" for k, v in w.items()) + "."
        for arm, w in why.items()) + "\n"
    (run / "question.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
