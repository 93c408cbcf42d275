"""Exploratory, not a choice (CHOICE-RULE-CONFIDENCE.md chose on the figure digits only): do
other readings of the same log-probabilities tell the agent's wrong answers from its right
ones better? Each answer the gate passed is matched to its reply in the index home's reply
cache (`cache/llm.sqlite`: the reply whose text is the answer), and scored by:
- `figure digits`: the rule's signal, the least sure digit of the answer's figures;
- `answer, any token`: the least sure token before the first citation bracket;
- `answer, mean`: the mean log-probability of those tokens (length-normalised);
- `up to the first figure`: the least sure token from the start to the end of the first figure.
AUROC (a wrong answer scores below a right one, ties half), pooled over distinct question
texts. No LLM.

(Runs at ff96b41, where `agent.support.figure_confidence` existed: removed after the verdict.
It needs the home's reply cache of the dev runs, which is not committed: `agent_eval.py ...
confidence+abstain` at ff96b41 remakes it, ~40 min of LLM calls. Replies are matched by their
text: 7 answer texts occur twice in the cache, so 5 correct answers read another call's tokens
(the review found it; the AUROCs are unaffected).)

    PYTHONPATH=. python experiments/agent-support/confidence_signals.py experiments/cache/index-208cf5ffff8b \
        dev-customer-confidence=customer/dev.jsonl generated-s2-customer-confidence=customer/generated-s2.jsonl \
        generated-s3-customer-confidence=customer/generated-s3.jsonl \
        dev-confidence=../../datasets/banking-products/dev.jsonl       # → confidence-signals-dev.json
"""

from __future__ import annotations

import json
import math
import sqlite3
import sys
from pathlib import Path

from confidence_rule import HERE, RECORDED, auroc, rows

from agentic_rag.evaluation.figures import figure_confidence
from agentic_rag.evaluation.support import number_spans, numbers


def replies(home: str) -> dict[str, list[tuple[str, float]]]:
    """Every cached reply with log-probabilities, by its text (stripped)."""
    out = {}
    with sqlite3.connect(Path(home) / "cache" / "llm.sqlite") as db:
        for (text,) in db.execute("SELECT reply FROM chat"):
            r = json.loads(text)
            if r.get("tokens"):
                out[r["content"].strip()] = [tuple(t) for t in r["tokens"]]
    return out


def signals(question: str, answer: str, tokens: list[tuple[str, float]]) -> dict[str, float]:
    starts, text = [], ""
    for tok, _ in tokens:
        starts.append(len(text))
        text += tok
    cut = text.find("[") if "[" in text else len(text)
    body = [lp for (_, lp), st in zip(tokens, starts) if st < cut] or [0.0]
    out = {"answer, any token": math.exp(min(body)),
           "answer, mean": math.exp(sum(body) / len(body))}
    least = figure_confidence(question, answer, tokens)
    if least is not None:
        out["figure digits"] = least[1]
        asked = set(numbers(question))
        ends = [b for _, b, fig in number_spans(text[:cut]) if fig not in asked]
        if ends:  # every token up to the end of the first figure
            out["up to the first figure"] = math.exp(min(
                lp for (_, lp), st in zip(tokens, starts) if st < ends[0]))
    return out


def main(home: str, sets: dict[str, str]) -> dict:
    cache = replies(home)
    distinct: dict[str, dict] = {}
    unmatched = 0
    for t, qset in sets.items():
        text = {r["id"]: r["question"] for r in map(json.loads, (HERE / qset).open())}
        for i, r in rows(f"agent-{t}-answers.jsonl", RECORDED).items():
            if r["gate_action"] != "none" or r["abstained"]:
                continue
            tokens = cache.get(r["answer"].strip())
            if tokens is None:
                unmatched += 1
                continue
            distinct.setdefault(text[i], {**r, "signals": signals(text[i], r["answer"], tokens)})
    names = ["figure digits", "answer, any token", "answer, mean", "up to the first figure"]
    out = {"answers (distinct, passed by the gate)": len(distinct), "unmatched": unmatched,
           "wrong": sum(r["wrong"] == 1 for r in distinct.values()), "AUROC": {}}
    for name in names:
        have = [r for r in distinct.values() if name in r["signals"]]
        out["AUROC"][name] = {
            "n": len(have),
            "auroc": auroc([r["signals"][name] for r in have if r["wrong"] == 1],
                           [r["signals"][name] for r in have if r["correct"] == 1])}
    return out


if __name__ == "__main__":
    home, *args = sys.argv[1:]
    res = main(home, dict(a.split("=", 1) for a in args))
    (HERE / "confidence-signals-dev.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
