"""The twelfth round's rule (CHOICE-RULE-CONFIDENCE.md) on the agent's rows: each threshold of
`agent.support.figure_confidence` read from one run that records the confidence without acting
(`confidence+abstain`): an answer the gate passed whose least sure figure digit was written
below the threshold becomes the gate's "I don't know" (what `abstain` does, no further call).
Per set: the answers turned (lost: were correct; saved: were wrong), paired Δ correct vs off;
pooled over distinct question texts; the AUROC of the confidence for wrong vs correct
answers; and whether the answers equal the committed rows of today's default (greedy: asking
for log-probabilities must not change them). No LLM.

(The answer files were made at ad8f118, where `agent.support.figure_confidence` existed; it was
removed after the verdict. This script reads only the committed files.)

    PYTHONPATH=. python experiments/agent-support/confidence_rule.py dev \
        dev-customer-confidence=customer/dev.jsonl generated-s2-customer-confidence=customer/generated-s2.jsonl \
        generated-s3-customer-confidence=customer/generated-s3.jsonl \
        dev-confidence=../../datasets/banking-products/dev.jsonl       # → confidence-rule-dev.json
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from agentic_rag.experiments.stats import paired_bootstrap
from agentic_rag.jsonl import read_records
from agentic_rag.studies.question_file import rule_round, turn_verdict

HERE = Path(__file__).parent
RECORDED = "confidence+abstain"
BASELINE = "amount+abstain"  # today's default, as committed
THRESHOLDS = (0.3, 0.5, 0.7, 0.9)
# today's default's committed rows of each set (the latest file holding all of them)
COMMITTED = {
    "dev-customer-confidence": "agent-dev-customer-amount-answers.jsonl",
    "generated-s2-customer-confidence": "agent-generated-s2-customer-placeholder-answers.jsonl",
    "generated-s3-customer-confidence": "agent-generated-s3-customer-reorder-answers.jsonl",
    "dev-confidence": "agent-dev-amount-answers.jsonl",
}


def rows(name: str, setting: str) -> dict[str, dict]:
    return {r["id"]: r for r in read_records(HERE / name)
            if r.get("setting") == setting and "answer" in r}


def turned(r: dict, t: float) -> bool:
    """The answer this threshold turns into "I don't know"."""
    c = r.get("figure_confidence")
    return r["gate_action"] == "none" and not r["abstained"] and c is not None and c < t


def auroc(wrong: list[float], right: list[float]) -> float | None:
    """P(a wrong answer's confidence < a correct one's), ties half."""
    if not wrong or not right:
        return None
    pairs = sum((w < c) + 0.5 * (w == c) for w in wrong for c in right)
    return pairs / (len(wrong) * len(right))


def per_set(tag: str, committed: str) -> dict:
    got = rows(f"agent-{tag}-answers.jsonl", RECORDED)
    before = rows(committed, BASELINE)
    same = [i for i in got if i in before and got[i]["answer"] == before[i]["answer"]]
    out = {"n": len(got), "answers equal to the committed rows": f"{len(same)} of {len(got)}",
           "differ": [{"id": i, "now": got[i]["answer"], "committed": before[i]["answer"]}
                      for i in got if i in before and i not in same],
           "off": {k: sum(r[k] for r in got.values()) / len(got)
                   for k in ("correct", "wrong", "abstained")}}
    for t in THRESHOLDS:
        new = [0.0 if turned(r, t) else r["correct"] for r in got.values()]
        out[str(t)] = {"lost": sum(turned(r, t) and r["correct"] == 1 for r in got.values()),
                       "saved": sum(turned(r, t) and r["wrong"] == 1 for r in got.values()),
                       "correct": sum(new) / len(new),
                       "correct diff": paired_bootstrap(new, [r["correct"] for r in got.values()])}
    return out


def rule(part: str, sets: dict[str, str]) -> None:
    per = {t: per_set(t, COMMITTED[t]) for t in sets}
    distinct: dict[str, dict] = {}  # question text → its row, each text once
    for t, qset in sets.items():
        text = {r["id"]: r["question"] for r in read_records(HERE / qset)}
        for i, r in rows(f"agent-{t}-answers.jsonl", RECORDED).items():
            distinct.setdefault(text[i], r)
    verdict = {}
    for t in THRESHOLDS:
        lost = sum(turned(r, t) and r["correct"] == 1 for r in distinct.values())
        saved = sum(turned(r, t) and r["wrong"] == 1 for r in distinct.values())
        verdict[str(t)] = turn_verdict(per, str(t), lost, saved, min_net=1)
    answered = [r for r in distinct.values() if not r["abstained"]
                and r.get("figure_confidence") is not None and r["gate_action"] == "none"]
    signal = {"answers with a figure confidence (distinct)": len(answered),
              "wrong": sorted(r["figure_confidence"] for r in answered if r["wrong"] == 1),
              "AUROC (wrong below correct)": auroc(
                  [r["figure_confidence"] for r in answered if r["wrong"] == 1],
                  [r["figure_confidence"] for r in answered if r["correct"] == 1])}
    res = rule_round(HERE / f"confidence-rule-{part}.json", per, verdict,
                     lambda k, v: (v["net"], -float(k)), "off", show=(), signal=signal)
    print(json.dumps({"verdict": res["verdict"], "choice": res["choice"], "signal": res["signal"],
                      "identity": {s: p["answers equal to the committed rows"]
                                   for s, p in res["sets"].items()}}, indent=1))


def main(part: str, sets: list[str]) -> None:
    rule(part, dict(a.split("=", 1) for a in sets))


if __name__ == "__main__":
    typer.run(main)
