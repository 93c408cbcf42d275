"""Re-score the committed agent answer files of issue 40 with today's `agent_eval.score`
(passage pointers stripped before figures are counted) and print, per file, how many rows'
`wrong_figure` and `correct` change and each setting's correct rate as committed and re-scored.
The banking-products files only (their questions and gold documents); no LLM, no index.

    PYTHONPATH=. python experiments/agent-support/rescore_answers.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentic_rag.datasets.corpora import banking_documents
from agentic_rag.evaluation.support import numbers

HERE = Path(__file__).parent


def rescore(path: Path, questions: dict[str, dict], docs: dict) -> dict:
    sys.path.insert(0, str(HERE))
    from agent_eval import score

    flips = {"wrong_figure": 0, "correct": 0}
    rates: dict[str, list[tuple[float, float]]] = {}
    for line in path.open():
        r = json.loads(line)
        q = questions.get(r["id"])
        if q is None or "error" in r:
            continue
        gold = {x for d in q["doc_ids"] for x in numbers(docs[d].text)}
        s = score(q, r["answer"], bool(r["abstained"]), gold)
        for k in flips:
            flips[k] += s[k] != r[k]
        rates.setdefault(r["setting"], []).append((r["correct"], s["correct"]))
    return {"flips": flips, "correct (committed, re-scored)": {
        k: (round(sum(a for a, _ in v) / len(v), 3), round(sum(b for _, b in v) / len(v), 3))
        for k, v in rates.items()}}


if __name__ == "__main__":
    docs = {d.id: d for d in banking_documents()}
    questions = {q["id"]: q for split in ("dev", "test")
                 for q in map(json.loads, Path(f"datasets/banking-products/{split}.jsonl").open())}
    for path in sorted(HERE.glob("agent-*-answers.jsonl")):
        out = rescore(path, questions, docs)
        if any(out["flips"].values()):
            print(path.name, json.dumps(out))
