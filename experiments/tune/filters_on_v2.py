"""What the issue-38 filters remove from the committed v2 set (no LLM call): each kept
question of experiments/testset-validation/python/generated.jsonl (76, today's generator
before issue 38) checked by `answer_in_question_words`, `fragment_answer` and
`premise_not_in_passage` against its own passage, and the `knowable` share bound.

    PYTHONPATH=. python experiments/tune/filters_on_v2.py   # -> experiments/tune/python/filters-on-v2.json
"""

from __future__ import annotations

import json
from pathlib import Path

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.testset_filters import (
    answer_in_question_words,
    fragment_answer,
    premise_not_in_passage,
)
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.studies.testset_validation import source_documents

SET = Path("experiments/testset-validation/python/generated.jsonl")
OUT = Path("experiments/tune/python/filters-on-v2.json")


def main() -> None:
    docs = {d.id: d for d in source_documents("python")}
    chunker = AgenticChunker(RAGConfig().chunking)
    rows = [json.loads(x) for x in SET.read_text().splitlines() if x.strip()]
    chunks = {}
    for r in rows:
        if r["chunk_id"] not in chunks:
            chunks.update({c.id: c for c in chunker.chunk(docs[r["doc_ids"][0]])})
    hits = []
    for r in rows:
        c, d = chunks[r["chunk_id"]], docs[r["doc_ids"][0]]
        why = {"answer made of the question's words":
               answer_in_question_words(r["question"], r["answer"]) or None,
               "fragment answer": fragment_answer(r["answer"]),
               "premise not in the passage": premise_not_in_passage(
                   r["question"], f"{d.title or ''} {c.heading_path} {c.text}")}
        for reason, detail in why.items():
            if detail:
                hits.append({"id": r["id"], "reason": reason, "detail": detail,
                             "question": r["question"], "answer": r["answer"]})
    knowable = sum(bool(r.get("knowable")) for r in rows)
    out = {"set": str(SET), "kept": len(rows),
           "removed_by": {k: sum(h["reason"] == k for h in hits) for k in
                          ("answer made of the question's words", "fragment answer",
                           "premise not in the passage")},
           "questions_removed": len({h["id"] for h in hits}),
           "knowable": knowable,
           "knowable_beyond_25_percent": max(0, knowable - int(0.25 * (len(rows) - knowable)
                                                             / 0.75)),
           "hits": hits}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v for k, v in out.items() if k != "hits"}, indent=1))
    for h in hits:
        print(f"- [{h['reason']}] {h['question']!r} -> {h['answer']!r} ({h['detail']})")


if __name__ == "__main__":
    main()
