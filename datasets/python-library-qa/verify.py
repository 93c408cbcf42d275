"""Check the python-library-qa set against its rubric (RUBRIC.md); exit 1 on any failure.

    .venv/bin/python datasets/python-library-qa/verify.py

Checks: at least 60 questions with unique ids; every gold document is a page of the library
reference (not the FAQ) present in the corpus; every answer occurs verbatim in its gold
document (line wrapping aside) and is not given away by the question; the committed split is
the seeded one (random.Random(22) shuffle of the ids, first half dev) and halves the set.
It also reports, as information, how many answers sit inside one chunk of the default
chunking (256 tokens): only those can be found by answer@k.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 22


def seeded_split(ids: list[str]) -> dict[str, str]:
    order = sorted(ids)
    random.Random(SEED).shuffle(order)
    dev = set(order[:len(order) // 2])
    return {i: "dev" if i in dev else "test" for i in ids}


def main() -> int:
    from agentic_rag.ingest.chunking import AgenticChunker
    from agentic_rag.datasets.corpora import python_docs
    from agentic_rag.datasets.qa import find_answer
    from agentic_rag.evaluation.answers import normalize_answer

    rows = [json.loads(line) for line in (HERE / "questions.jsonl").read_text().splitlines()
            if line.strip()]
    corpus = {d.id: d for d in python_docs(("tutorial", "howto", "faq", "library"))}
    errors: list[str] = []
    ids = [r["id"] for r in rows]
    if len(rows) < 60:
        errors.append(f"{len(rows)} questions, the rubric asks for at least 60")
    if len(set(ids)) != len(ids):
        errors.append("ids repeat")
    want = seeded_split(ids)
    chunker = AgenticChunker()
    in_one_chunk = 0
    for r in rows:
        where = f"{r['id']} ({r['doc_id']})"
        if not r["doc_id"].startswith("pydocs/library/"):
            errors.append(f"{where}: gold document is not in the library reference")
            continue
        doc = corpus.get(r["doc_id"])
        if doc is None:
            errors.append(f"{where}: gold document not in the corpus")
            continue
        at = find_answer(doc.text, r["answer"])
        if at is None:
            errors.append(f"{where}: answer {r['answer']!r} not found verbatim")
            continue
        if normalize_answer(r["answer"]) in normalize_answer(r["question"]):
            errors.append(f"{where}: the question contains its answer")
        if r["split"] != want[r["id"]]:
            errors.append(f"{where}: split {r['split']} but the seeded split says {want[r['id']]}")
        if any(c.start_char <= at[0] and at[1] <= c.end_char for c in chunker.chunk(doc)):
            in_one_chunk += 1
    dev = sum(r["split"] == "dev" for r in rows)
    print(f"{len(rows)} questions ({dev} dev, {len(rows) - dev} test) over "
          f"{len({r['doc_id'] for r in rows})} library pages; {in_one_chunk} answers inside "
          "one default (256-token) chunk")
    for e in errors:
        print("FAIL", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
