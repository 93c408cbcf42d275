"""Kept share of draws by the shape of the span a question was written for (issue 38), from
committed generated sets and their rejections; no LLM. Shapes: an identifier (`os.path`,
`!P_PID`, `join()`), a number (with an optional unit word), plain words, anything else.

    PYTHONPATH=. python experiments/tune/span_shapes.py > experiments/tune/span-shapes.json
"""
import json
import re
from collections import Counter

SETS = ["experiments/tune/python/span-100-norepair", "experiments/tune/nodejs/questions",
        "experiments/agent-support/generated-s4/products"]


def shape(answer: str) -> str:
    a = answer.strip()
    if re.fullmatch(r"[!~]?[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(\(\))?", a):
        return "identifier"
    if re.fullmatch(r"[\d.,]+(\s*\S+)?", a):
        return "number"
    if re.fullmatch(r"[A-Za-z][A-Za-z -]*", a):
        return "words"
    return "other"


def shares(stem: str) -> dict:
    kept = [json.loads(x) for x in open(f"{stem}.jsonl")]
    rejected = [json.loads(x) for x in open(f"{stem}.rejected.jsonl")
                if json.loads(x)["reason"] != "no answer span"]
    drawn = Counter(shape(r["answer"]) for r in kept) + \
        Counter(shape(r.get("answer") or "") for r in rejected)
    ok = Counter(shape(r["answer"]) for r in kept)
    return {s: {"draws": drawn[s], "kept": ok[s], "share": round(ok[s] / drawn[s], 2)}
            for s in ("identifier", "number", "words", "other") if drawn[s]}


if __name__ == "__main__":
    print(json.dumps({s: shares(s) for s in SETS}, indent=1))
