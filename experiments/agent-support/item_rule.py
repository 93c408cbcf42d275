"""The seventh round's rule (CHOICE-RULE-ITEM.md) on the agent's rows (made at 973fb8e, which
has the item check; removed since): per set and candidate vs `amount+abstain` (the check off),
`studies.question_file.compare_rows`: the answers turned into "I don't know" (`lost`: scored
correct with the check off, `saved`: wrong) and paired Δ correct / Δ wrong. No LLM.

    PYTHONPATH=. python experiments/agent-support/item_rule.py dev-item dev-customer-item \
        figures-named-generated-s2-item        # the three dev sets → item-rule-dev.json
"""

from __future__ import annotations

from pathlib import Path

import typer

from agentic_rag.studies.question_file import compare_rows, rule_round, turn_verdict

HERE = Path(__file__).parent
OFF = "amount+abstain"
CANDIDATES = ("item-lexical+abstain", "item-embedding+abstain")


def main(tags: list[str]) -> None:
    per = {t: compare_rows(HERE / f"agent-{t}-answers.jsonl", OFF, CANDIDATES) for t in tags}
    verdict = {}
    for name in CANDIDATES:
        sets = [p[name] for p in per.values() if name in p]
        verdict[name] = turn_verdict(per, name, sum(s["lost"] for s in sets),
                                     sum(s["saved"] for s in sets))
    # the largest saved − lost; a tie goes to lexical (listed first)
    rule_round(HERE / ("item-rule-" + ("dev" if "dev-item" in tags else "test") + ".json"), per,
               verdict, lambda k, v: (v["net"], k == CANDIDATES[0]), "off")


if __name__ == "__main__":
    typer.run(main)
