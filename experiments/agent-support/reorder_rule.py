"""The ninth round's rule (CHOICE-RULE-REORDER.md) on the agent's rows: per set, the reorder
check (`reorder-all`, `reorder-any`) vs today's `amount+abstain` (`item_rule.compare`: the
answers it turns into "I don't know", lost / saved, paired Δ); pooled over distinct question
texts (the generated sets repeat some questions word for word). No LLM: it reads
`agent-*-answers.jsonl` and each set's questions.

    PYTHONPATH=. python experiments/agent-support/reorder_rule.py \
        generated-s3-customer-reorder=customer/generated-s3.jsonl \
        generated-s2-customer-reorder=customer/generated-s2.jsonl \
        dev-customer-reorder=customer/dev.jsonl dev-reorder=../../datasets/banking-products/dev.jsonl
        # the four dev sets → reorder-rule-dev.json ("test" first: the test sets, once)
"""

from __future__ import annotations

import json
import sys

from item_rule import HERE, OFF, compare

CANDIDATES = ("reorder-all+abstain", "reorder-any+abstain")


def rule(sets: dict[str, str]) -> dict:
    per = {t: compare(t, OFF, CANDIDATES) for t in sets}
    text = {t: {r["id"]: r["question"] for r in map(json.loads, (HERE / p).open())}
            for t, p in sets.items()}
    verdict = {}
    for name in CANDIDATES:
        turned: dict[str, str] = {}  # question text → "correct" | "wrong", each text once
        for t, p in per.items():
            for x in p[name]["turned"]:
                turned.setdefault(text[t][x["id"]], x["was"])
        lost = sum(v == "correct" for v in turned.values())
        saved = sum(v == "wrong" for v in turned.values())
        below = [t for t, p in per.items() if p[name]["correct diff"]["ci_high"] < 0]
        verdict[name] = {"lost": lost, "saved": saved, "net": saved - lost,
                         "lost (rows, not deduplicated)": sum(p[name]["lost"] for p in per.values()),
                         "saved (rows, not deduplicated)": sum(p[name]["saved"] for p in per.values()),
                         "correct CI below 0 on": below,
                         "admissible": saved - lost >= 1 and lost <= saved and not below}
    ok = {k: v for k, v in verdict.items() if v["admissible"]}
    # the largest saved − lost; a tie goes to `any` (it keeps more answers)
    choice = max(ok, key=lambda k: (ok[k]["net"], k.startswith("reorder-any"))) if ok else "off"
    return {"sets": per, "verdict": verdict, "choice": choice}


if __name__ == "__main__":
    args = sys.argv[1:]
    part = args.pop(0) if args[0] == "test" else "dev"
    res = rule(dict(a.split("=", 1) for a in args))
    (HERE / f"reorder-rule-{part}.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({"verdict": res["verdict"], "choice": res["choice"]}, indent=1))
