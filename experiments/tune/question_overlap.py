"""Do generated questions share more words with their passage than the human ones do? (issue 38:
a lexical bias would favour BM25 in `tune`'s choice.) No LLM.

    PYTHONPATH=. python experiments/tune/question_overlap.py span.jsonl span-200.jsonl \
        span-200-rt.jsonl span-100-norepair.jsonl v2-full/questions.jsonl   # under python/

Per question: the share of its content words (stop words out) found within 600 characters
around its answer in its document ("window"), and anywhere in the document ("doc"). Human:
python-library-qa's 66 questions (written by an LLM session of this project, not by a person),
the answer located verbatim (else by its first 30 characters)."""

import json
import re
import statistics as st
import sys

from agentic_rag.studies.testset_validation import source_documents

STOP = set("the a an of to and or in on for with by is it this that what which how does do i my "
           "if can when be are was were from as at not use used using python module function "
           "method class default value returns return".split())
DOCS = {d.id: d for d in source_documents("python")}


def overlap(question: str, text: str) -> float:
    words = [w for w in re.findall(r"[a-z0-9_]+", question.lower()) if w not in STOP and len(w) > 1]
    have = set(re.findall(r"[a-z0-9_]+", text.lower()))
    return sum(w in have for w in words) / len(words) if words else 0.0


def pair(question: str, doc_id: str, start: int, end: int) -> tuple[float, float]:
    doc = DOCS[doc_id].text
    return overlap(question, doc[max(0, start - 600):end + 600]), overlap(question, doc)


def human() -> list[tuple[float, float]]:
    out = []
    for r in map(json.loads, open("datasets/python-library-qa/questions.jsonl")):
        doc = DOCS.get(r["doc_id"])
        i = -1 if doc is None else doc.text.find(r["answer"])
        if doc is not None and i < 0:
            i = doc.text.lower().find(r["answer"].lower()[:30])
        if i >= 0:
            out.append(pair(r["question"], r["doc_id"], i, i + len(r["answer"])))
    return out


def generated(path: str) -> list[tuple[float, float]]:
    return [pair(r["question"], s["doc_id"], s["start"], s["end"])
            for r in map(json.loads, open(path)) for s in (r.get("spans") or [])[:1]
            if s["doc_id"] in DOCS]


if __name__ == "__main__":
    for name, rows in [("human", human())] + [(p, generated(f"experiments/tune/python/{p}"))
                                              for p in sys.argv[1:]]:
        print(f"{name:28s} n={len(rows):4d} window={st.mean(x for x, _ in rows):.3f} "
              f"doc={st.mean(y for _, y in rows):.3f}")
