"""Re-score the committed agent answer files of issue 40 with today's
`studies.question_file.score` (passage pointers stripped before figures are counted) and print,
per file, how many rows' `wrong_figure` and `correct` change and each setting's correct rate as
committed and re-scored. The banking-products files only; no LLM, no index.

    PYTHONPATH=. python experiments/agent-support/rescore_answers.py
"""

from __future__ import annotations

import json
from pathlib import Path

from agentic_rag.datasets.corpora import banking_documents
from agentic_rag.jsonl import read_records
from agentic_rag.studies.question_file import gold_numbers, load_questions, score

HERE = Path(__file__).parent

if __name__ == "__main__":
    docs = {d.id: d for d in banking_documents()}
    questions = {q["id"]: q for split in ("dev", "test") for q in load_questions(split)[0]}
    for path in sorted(HERE.glob("agent-*-answers.jsonl")):
        flips = {"wrong_figure": 0, "correct": 0}
        rates: dict[str, list[tuple[float, float]]] = {}
        for r in read_records(path):
            q = questions.get(r["id"])
            if q is None or "error" in r:
                continue
            s = score(q, r["answer"], bool(r["abstained"]), gold_numbers(q, docs))
            for k in flips:
                flips[k] += s[k] != r[k]
            rates.setdefault(r["setting"], []).append((r["correct"], s["correct"]))
        out = {"flips": flips, "correct (committed, re-scored)": {
            k: (round(sum(a for a, _ in v) / len(v), 3), round(sum(b for _, b in v) / len(v), 3))
            for k, v in rates.items()}}
        if any(out["flips"].values()):
            print(path.name, json.dumps(out))
