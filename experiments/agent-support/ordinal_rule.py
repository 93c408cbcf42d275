"""The eighth round's rule (CHOICE-RULE-ORDINAL.md) on the agent's rows: per set, `pointer` and
`citation` vs today's `amount+abstain` (`studies.question_file.compare_rows`: totals, paired
Δ, every answer whose score changes). No LLM: it reads `agent-*-answers.jsonl`.

    PYTHONPATH=. python experiments/agent-support/ordinal_rule.py dev-ordinal dev-customer-ordinal \
        figures-named-generated-s2-ordinal            # the three dev sets → ordinal-rule-dev.json
    PYTHONPATH=. python experiments/agent-support/ordinal_rule.py test test-ordinal ...  # once
"""

from __future__ import annotations

from pathlib import Path

import typer

from agentic_rag.studies.question_file import compare_rows, rule_round

HERE = Path(__file__).parent
OFF = "amount+abstain"
CANDIDATES = ("pointer+abstain", "citation+abstain")


def main(tags: list[str]) -> None:
    part = tags.pop(0) if tags[0] == "test" else "dev"
    per = {t: compare_rows(HERE / f"agent-{t}-answers.jsonl", OFF, CANDIDATES) for t in tags}
    verdict = {}
    for name in CANDIDATES:
        n = {t: p["n"] for t, p in per.items()}
        more_wrong = [t for t, p in per.items()
                      if round(p[name]["wrong"] * n[t]) > round(p[OFF]["wrong"] * n[t])]
        gain = sum(round((p[name]["correct"] - p[OFF]["correct"]) * n[t]) for t, p in per.items())
        verdict[name] = {"correct gained (pooled)": gain, "wrong rises on": more_wrong,
                         "admissible": not more_wrong and gain > 0}
    # the most correct answers pooled; a tie goes to `pointer` (listed first)
    rule_round(HERE / f"ordinal-rule-{part}.json", per, verdict,
               lambda k, v: (v["correct gained (pooled)"], k == CANDIDATES[0]), "figure")


if __name__ == "__main__":
    typer.run(main)
