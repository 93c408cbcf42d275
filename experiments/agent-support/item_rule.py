"""The seventh round's rule (CHOICE-RULE-ITEM.md) on the agent's rows (made at 973fb8e, which
has the item check; removed since): per set and candidate vs `amount+abstain` (the check off),
`studies.question_file.compare_rows`: the answers turned into "I don't know" (`lost`: scored
correct with the check off, `saved`: wrong) and paired Δ correct / Δ wrong. No LLM.

    PYTHONPATH=. python experiments/agent-support/item_rule.py dev-item dev-customer-item \
        figures-named-generated-s2-item        # the three dev sets → item-rule-dev.json
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from agentic_rag.studies.question_file import compare_rows

HERE = Path(__file__).parent
OFF = "amount+abstain"
CANDIDATES = ("item-lexical+abstain", "item-embedding+abstain")


def main(tags: list[str]) -> None:
    per = {t: compare_rows(HERE / f"agent-{t}-answers.jsonl", OFF, CANDIDATES) for t in tags}
    verdict = {}
    for name in CANDIDATES:
        sets = [p[name] for p in per.values() if name in p]
        lost, saved = sum(s["lost"] for s in sets), sum(s["saved"] for s in sets)
        below = [t for t, p in per.items() if name in p and p[name]["correct diff"]["ci_high"] < 0]
        verdict[name] = {"lost": lost, "saved": saved, "net": saved - lost,
                         "correct CI below 0 on": below,
                         "admissible": lost <= saved and not below}
    ok = {k: v for k, v in verdict.items() if v["admissible"]}
    # the largest saved − lost; a tie goes to lexical (listed first)
    choice = max(ok, key=lambda k: (ok[k]["net"], k == CANDIDATES[0])) if ok else "off"
    res = {"sets": per, "verdict": verdict, "choice": choice}
    out = HERE / ("item-rule-" + ("dev" if "dev-item" in tags else "test") + ".json")
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({"verdict": res["verdict"], "choice": res["choice"]}, indent=1))


if __name__ == "__main__":
    typer.run(main)
