"""Issue 40's tenth round (CHOICE-RULE-SHARED.md): its rule on the dev set of questions that
name the bare "Green Account" (`shared-dev/dev.jsonl`), as built (65) and as the rule defined
it (the new set's questions from chunks no earlier set drew), from the committed answers. No LLM.

    PYTHONPATH=. python experiments/agent-support/shared_dev.py    # -> shared-rule-dev.json

The set was built by this script's `bare`, `dev` and `recheck` (README, "Tenth round"; the
whole script: `git show 5a1c883:experiments/agent-support/shared_dev.py`); the switch it
judged (`fusion.named_match: shared`) was removed after the verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentic_rag.jsonl import read_records
from agentic_rag.studies.question_file import original_id

HERE = Path(__file__).parent
OUT = HERE / "shared-dev"


def reject_id(r: dict) -> str:
    """The dev id of a question the new set's subject check rejected."""
    return f"rj-{r['chunk_id'].rsplit('@', 1)[-1]}-{original_id(r.get('doc_id', ''))[-3:]}"


def drawn_before(sets: tuple[str, ...] = ("generated", "generated-s1", "generated-s2",
                                          "generated-s3", "generated-s4")) -> list[str]:
    """The dev questions of the new set (and their rewrites) whose chunk an earlier set drew:
    the rule meant them excluded, but `--exclude` matched 0 chunks (the earlier sets' ids say
    `bank-products/`, the new one's `green-docs/`; fixed since: `testset.excluded_here`)."""
    from agentic_rag.datasets.testset import excluded_here

    theirs = [r["chunk_id"] for name in sets for r in read_records(HERE / name / "products.jsonl")]
    kept, rejected = read_records(OUT / "products.jsonl"), read_records(OUT / "products.rejected.jsonl")
    used = excluded_here(theirs, [r["chunk_id"] for r in kept + rejected])
    chunk_of = {r["id"]: r["chunk_id"] for r in kept}
    for r in rejected:
        chunk_of.setdefault(reject_id(r), r["chunk_id"])
    return [r["id"] for r in read_records(OUT / "dev.jsonl")
            if chunk_of.get(r["id"].removesuffix("-c")) in used]


def verdict(write: bool = True) -> dict:
    """The rule's count conditions (correct not lower, wrong not higher) per reading of the set;
    its CI condition on Δ correct is not computed (every set that fails, fails on wrong)."""
    rows = read_records(HERE / "agent-dev-shared-answers.jsonl")
    ids = [r["id"] for r in read_records(OUT / "dev.jsonl")]
    out = {}
    for name, drop in (("as built", []), ("without generated-s4's chunks",
                                          drawn_before(("generated-s4",))),
                       ("as the rule defined it", drawn_before())):
        keep = set(ids) - set(drop)
        n = {s: {k: int(sum(r[k] for r in rows if r["setting"] == s and r["id"] in keep))
                 for k in ("correct", "wrong", "abstained")}
             for s in ("amount+abstain", "shared+abstain")}
        old, new = n["amount+abstain"], n["shared+abstain"]
        out[name] = {"n": len(keep), "dropped": sorted(drop), "longest": old, "shared": new,
                     "admissible": new["correct"] >= old["correct"] and new["wrong"] <= old["wrong"]}
    if write:
        (HERE / "shared-rule-dev.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    print(json.dumps(verdict(), indent=1))
