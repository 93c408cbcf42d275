"""The ninth round's rule (CHOICE-RULE-REORDER.md) on the agent's rows: per set, the reorder
check (`reorder-all`, `reorder-any`) vs today's `amount+abstain`
(`studies.question_file.compare_rows`: the answers it turns into "I don't know", lost / saved,
paired Δ); pooled over distinct question texts (the generated sets repeat some questions word
for word). No LLM: it reads `agent-*-answers.jsonl` and each set's questions.

    PYTHONPATH=. python experiments/agent-support/reorder_rule.py \
        generated-s3-customer-reorder=customer/generated-s3.jsonl \
        generated-s2-customer-reorder=customer/generated-s2.jsonl \
        dev-customer-reorder=customer/dev.jsonl dev-reorder=../../datasets/banking-products/dev.jsonl
        # the four dev sets → reorder-rule-dev.json ("test" first: the test sets, once)
"""

from __future__ import annotations

from pathlib import Path

import typer

from agentic_rag.jsonl import read_records
from agentic_rag.studies.question_file import compare_rows, rule_round, turn_verdict

HERE = Path(__file__).parent
OFF = "amount+abstain"
CANDIDATES = ("reorder-all+abstain", "reorder-any+abstain")


def main(sets: list[str]) -> None:
    part = sets.pop(0) if sets[0] == "test" else "dev"
    questions = dict(a.split("=", 1) for a in sets)
    per = {t: compare_rows(HERE / f"agent-{t}-answers.jsonl", OFF, CANDIDATES) for t in questions}
    text = {t: {r["id"]: r["question"] for r in read_records(HERE / p)}
            for t, p in questions.items()}
    verdict = {}
    for name in CANDIDATES:
        turned: dict[str, str] = {}  # question text → "correct" | "wrong", each text once
        for t, p in per.items():
            for x in p[name]["turned"]:
                turned.setdefault(text[t][x["id"]], x["was"])
        lost = sum(v == "correct" for v in turned.values())
        saved = sum(v == "wrong" for v in turned.values())
        verdict[name] = turn_verdict(
            per, name, lost, saved, min_net=1, **{
                "lost (rows, not deduplicated)": sum(p[name]["lost"] for p in per.values()),
                "saved (rows, not deduplicated)": sum(p[name]["saved"] for p in per.values())})
    # the largest saved − lost; a tie goes to `any` (it keeps more answers)
    rule_round(HERE / f"reorder-rule-{part}.json", per, verdict,
               lambda k, v: (v["net"], k.startswith("reorder-any")), "off")


if __name__ == "__main__":
    typer.run(main)
