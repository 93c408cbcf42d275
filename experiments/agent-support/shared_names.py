"""Questions that name the bare "Green Account" — a name two τ²-banking products share
(`green_account_(checking)`, `green_account_(savings)`) — and what today's default
(`amount+abstain`, the committed rows) answered, per set: C correct, W wrong, A abstained,
with the gold product (c checking, s savings). No LLM.

    python experiments/agent-support/shared_names.py
"""

import json
import re
from pathlib import Path

HERE = Path(__file__).parent
SETS = {  # set: (questions, committed answers with an amount+abstain setting)
    "banking-products dev": ("../../datasets/banking-products/dev.jsonl", "agent-dev-ordinal"),
    "banking-products test": ("../../datasets/banking-products/test.jsonl", "agent-test-amount"),
    "customer dev": ("customer/dev.jsonl", "agent-dev-customer-ordinal"),
    "customer test": ("customer/test.jsonl", "agent-test-customer-amount"),
    "customer generated-s2": ("customer/generated-s2.jsonl", "agent-generated-s2-customer-placeholder"),
    "customer generated-s3": ("customer/generated-s3.jsonl", "agent-generated-s3-customer"),
    "customer generated-s4": ("customer/generated-s4.jsonl", "agent-generated-s4-customer"),
    "generated-s2": ("generated-s2/figures-named.jsonl", "agent-figures-named-generated-s2-ordinal"),
    "generated-s3": ("generated-s3/figures-named.jsonl", "agent-figures-named-generated-s3"),
    "generated-s4": ("generated-s4/figures-named.jsonl", "agent-figures-named-generated-s4"),
}
# "Green Account", not "Lime/Light/Dark/Hunter Green Account" nor "Evergreen Account", and no
# qualifier ("(savings)", "checking", "savings", "save") anywhere in the question
BARE = re.compile(r"(?<!lime )(?<!light )(?<!dark )(?<!hunter )(?<!ever)\bgreen account\b", re.I)
QUALIFIED = re.compile(r"checking|savings|\bsave", re.I)



def names_bare(question: str) -> bool:
    """Does `question` name the Green Account without saying which one?"""
    return bool(BARE.search(question)) and not QUALIFIED.search(question)


if __name__ == "__main__":
    for name, (questions, answers) in SETS.items():
        qs = [json.loads(x) for x in (HERE / questions).open()]
        rows = {r["id"]: r for r in map(json.loads, (HERE / f"{answers}-answers.jsonl").open())
                if r["setting"] == "amount+abstain"}
        bare = [q for q in qs if names_bare(q["question"])]
        marks = [("C" if rows[q["id"]]["correct"] else "W" if rows[q["id"]]["wrong"] else "A")
                 + ("s" if "savings" in q["doc_ids"][0] else "c") for q in bare if q["id"] in rows]
        print(f"{name}: {len(qs)} questions, {len(bare)} name the bare Green Account: "
              f"{' '.join(marks)}")
