"""Apply RULE.md to a run of history.yaml (dev) or history-test.yaml (test): per arm of
`agent.session.history_tokens`, abstention on ANSWERABLE and UNANSWERABLE turns, ROUGE-L on
ANSWERABLE turns, each with its CI and the paired difference vs the default (1024; paired
bootstrap over sessions), and the rule's verdict. Writes `history.json` and `history.md` into
the run folder.

    python experiments/conversations/history/analyse.py experiments/runs/<run>
    python experiments/conversations/history/analyse.py experiments/conversations/history/dev
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.datasets.mtrag import load_mtrag
from agentic_rag.studies.session_arms import abstention_reasons, arm_figures, diff_text, load_arms

DEFAULT = 1024
DELTA = 0.02  # ROUGE-L non-inferiority margin (RULE.md, 3)
RECALL_FLOOR = 0.7  # abstention recall on UNANSWERABLE (RULE.md, 2)


def arm_of(config: str) -> int:
    m = re.search(r"agent\.session\.history_tokens=(\d+)", config)
    if m is None:
        raise ValueError(f"config {config!r} names no agent.session.history_tokens")
    return int(m.group(1))


def load(run: Path) -> pd.DataFrame:
    return load_arms(run, arm_of)


def figures(df: pd.DataFrame) -> list[dict[str, Any]]:
    rows = [{"history_tokens": int(r.pop("arm")), **r} for r in arm_figures(df, DEFAULT)]
    return sorted(rows, key=lambda r: -r["history_tokens"])  # the larger history first


def choose(rows: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """RULE.md: the arm with the lowest ANSWERABLE abstention among those passing 1-3."""
    reasons, passing = [], []
    for r in rows:
        if r["history_tokens"] == DEFAULT:
            continue
        a, q = r["abstained_on_answerable_vs_default"], r["rouge_l_answerable_vs_default"]
        checks = {"1 abstains less on ANSWERABLE (CI < 0)": a["ci_high"] < 0,
                  f"2 recall on UNANSWERABLE >= {RECALL_FLOOR}": r["recall"] >= RECALL_FLOOR,
                  f"3 ROUGE-L lower bound > -{DELTA}": q["ci_low"] > -DELTA}
        failed = [k for k, ok in checks.items() if not ok]
        reasons.append(f"{r['history_tokens']}: " + ("passes" if not failed
                                                      else "fails " + "; ".join(failed)))
        if not failed:
            passing.append((r["abstained_on_answerable"], -r["history_tokens"]))
    chosen = -min(passing)[1] if passing else DEFAULT
    return chosen, reasons


def reasons_of(df: pd.DataFrame, arm: int = DEFAULT) -> dict[str, int]:
    """The arm's ANSWERABLE turns by gold rank and who abstained (`abstention_reasons`)."""
    return abstention_reasons(df[df["arm"] == arm], load_mtrag().qrels)


def _three(r: dict[str, Any], name: str) -> tuple[float, float, float]:
    return r[name], r[f"{name}_ci_low"], r[f"{name}_ci_high"]


def _ci(v: float, lo: float, hi: float) -> str:
    return f"{v:.2f} [{lo:.2f}, {hi:.2f}]"


def markdown(rows: list[dict[str, Any]], chosen: int, reasons: list[str]) -> str:
    lines = ["| history_tokens | abstained on ANSWERABLE | Δ vs 1024 | recall on UNANSWERABLE | "
             "ROUGE-L (ANSWERABLE) | Δ vs 1024 | clarifying on UNDERSPECIFIED | prompt "
             "tokens (median) | agent s (median) |", "|" + "---|" * 9]
    for r in rows:
        base = r["history_tokens"] == DEFAULT
        lines.append(
            f"| {r['history_tokens']} | {_ci(*_three(r, 'abstained_on_answerable'))} "
            f"(n {r['n_answerable']}) | "
            f"{'' if base else diff_text(r['abstained_on_answerable_vs_default'])} | "
            f"{_ci(r['recall'], r['recall_ci_low'], r['recall_ci_high'])} (n {r['n_unanswerable']}) | "
            f"{_ci(r['rouge_l_answerable'], *r['rouge_l_answerable_ci'])} | "
            f"{'' if base else diff_text(r['rouge_l_answerable_vs_default'])} | "
            f"{r['clarifying_on_underspecified']:.2f} (n {r['n_underspecified']}) | "
            f"{r['prompt_tokens_median']:.0f} | {r['latency_agent_s_median']:.1f} |")
    lines += ["", "Rule (RULE.md): " + "; ".join(reasons) + f". **Chosen: {chosen}**."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="the sweep's run folder")
    run = ap.parse_args().run
    df = load(run)
    rows = figures(df)
    chosen, reasons = choose(rows)
    why = reasons_of(df)
    (run / "history.json").write_text(json.dumps({"arms": rows, "chosen": chosen,
                                                  "reasons": reasons,
                                                  "default_on_answerable": why},
                                                 indent=1) + "\n")
    md = markdown(rows, chosen, reasons) + "\nThe default's turns on ANSWERABLE: " + \
        "; ".join(f"{k} {v}" for k, v in why.items()) + ".\n"
    (run / "history.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
