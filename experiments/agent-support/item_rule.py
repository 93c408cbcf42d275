"""The seventh round's rule (CHOICE-RULE-ITEM.md) on the agent's rows (made at 973fb8e, which
has the item check; removed since): per set and candidate, the answers the item check turns
into "I don't know" — `lost` (scored correct with the check off), `saved` (scored wrong) — and
Δ correct / Δ wrong vs `amount+abstain` (the check off) with paired bootstrap 95 % CIs. No
LLM: it reads `agent-*-answers.jsonl`.

    PYTHONPATH=. python experiments/agent-support/item_rule.py dev-item dev-customer-item \
        figures-named-generated-s2-item        # the three dev sets → item-rule-dev.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentic_rag.experiments.stats import paired_bootstrap

HERE = Path(__file__).parent
OFF = "amount+abstain"
CANDIDATES = ("item-lexical+abstain", "item-embedding+abstain")


def compare(tag: str, off: str = OFF, candidates: tuple[str, ...] = CANDIDATES) -> dict:
    """Per candidate vs `off` on the rows of `agent-<tag>-answers.jsonl`: totals, the answers
    turned into "I don't know" (`lost`, `saved`, `turned`), the answers that changed their
    score (`changed`), and paired bootstrap Δ correct / Δ wrong."""
    rows: dict[str, dict[str, dict]] = {}
    for line in (HERE / f"agent-{tag}-answers.jsonl").open():
        r = json.loads(line)
        rows.setdefault(r["setting"], {})[r["id"]] = r
    base = rows[off]
    out = {"n": len(base), off: {k: sum(r[k] for r in base.values()) / len(base)
                                 for k in ("correct", "wrong", "abstained")}}
    for name in candidates:
        if name not in rows:
            continue
        cand = rows[name]
        ids = sorted(base)
        turned = [i for i in ids if cand[i]["abstained"] and not base[i]["abstained"]]
        out[name] = {
            **{k: sum(cand[i][k] for i in ids) / len(ids) for k in ("correct", "wrong", "abstained")},
            "lost": sum(base[i]["correct"] for i in turned),
            "saved": sum(base[i]["wrong"] for i in turned),
            "correct diff": paired_bootstrap([cand[i]["correct"] for i in ids],
                                             [base[i]["correct"] for i in ids]),
            "wrong diff": paired_bootstrap([cand[i]["wrong"] for i in ids],
                                           [base[i]["wrong"] for i in ids]),
            "turned": [{"id": i, "was": "correct" if base[i]["correct"] else "wrong",
                        "answer": base[i]["answer"], "gate_notes": cand[i]["gate_notes"]}
                       for i in turned],
            "changed": [{"id": i, "was": _verdict(base[i]), "now": _verdict(cand[i]),
                         "before": base[i]["answer"], "after": cand[i]["answer"]}
                        for i in ids if _verdict(base[i]) != _verdict(cand[i])]}
    return out


def _verdict(r: dict) -> str:
    return "correct" if r["correct"] else "wrong" if r["wrong"] else "abstained"


def rule(tags: list[str]) -> dict:
    per = {t: compare(t) for t in tags}
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
    return {"sets": per, "verdict": verdict, "choice": choice}


if __name__ == "__main__":
    tags = sys.argv[1:]
    res = rule(tags)
    out = HERE / ("item-rule-" + ("dev" if "dev-item" in tags else "test") + ".json")
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({"verdict": res["verdict"], "choice": res["choice"]}, indent=1))
