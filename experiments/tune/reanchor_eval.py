"""How often `datasets.reanchor` moves a span to the right occurrence of its answer, on the
migration this project made on 2026-12-06: .rst pages read as written → as Sphinx builds them.
No LLM. The rows are the committed Python span sets' LLM-written questions
(`experiments/tune/python/**/questions*.jsonl`, generated from the Python 3.11 library's .rst
as written), their gold spans taken as the old ones; the truth is the same character in
today's reading, found through the lines the reading left unchanged (difflib). "nearest" gives
no question and one row at a time (the occurrence nearest the old start); the shipped rule
re-anchors the set at once: answers that occur once in their page anchor the others (where the
old start stands today), the question's words break near-ties. (After a review's script, a helper session's.)

    PYTHONPATH=. python experiments/tune/reanchor_eval.py
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.corpora import pydocs_root
from agentic_rag.datasets.reanchor import reanchor
from agentic_rag.documents import Document
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.ingest.rst import sphinx_rst
from agentic_rag.jsonl import read_records

HERE = Path(__file__).parent


def offsets(lines: list[str]) -> list[int]:
    out = [0]
    for line in lines:
        out.append(out[-1] + len(line) + 1)
    return out


def mapping(a: str, b: str):  # noqa: ANN201
    """A character offset of `a` to the same character of `b`, on lines both hold (else None)."""
    al, bl = a.split("\n"), b.split("\n")
    ao, bo = offsets(al), offsets(bl)
    lines = {x + k: y + k for x, y, size in
             difflib.SequenceMatcher(None, al, bl, autojunk=False).get_matching_blocks()
             for k in range(size) if al[x + k].strip()}

    def to_b(s: int) -> int | None:
        line = a.count("\n", 0, s)
        return bo[lines[line]] + s - ao[line] if line in lines else None
    return to_b


def main() -> dict:
    """Every usable row re-anchored at once, as `--reanchor` does a set: an answer that occurs
    once in its page anchors the others of that page."""
    chunker = AgenticChunker(RAGConfig().chunking)
    library = pydocs_root() / "library"
    rows = {}
    for f in sorted(HERE.glob("python/**/questions*.jsonl")):
        for r in read_records(f):
            if r.get("spans") and r.get("answer") and r.get("generator"):
                rows[r["id"] + r["question"]] = r
    pages: dict = {}
    usable, truths = [], []
    for n, r in enumerate(rows.values()):
        s, ans = r["spans"][0], r["answer"]
        path = library / (s["doc_id"].split("/")[-1] + ".txt")
        if not path.is_file():
            continue
        raw = path.read_text(encoding="utf-8-sig")
        if raw[s["start"]:s["end"]].lower() != ans.lower():
            continue
        if path.name not in pages:
            new = sphinx_rst(raw)
            pages[path.name] = (Document(id=path.name, text=new, format="rst"), mapping(raw, new),
                                chunker.chunk(Document(id=path.name, text=raw, format="rst")))
        doc, to_new, old_chunks = pages[path.name]
        truth = to_new(s["start"])
        if truth is None or doc.text[truth:truth + len(ans)].lower() != ans.lower():
            continue
        holder = min((c for c in old_chunks if c.start_char <= s["start"] < c.end_char),
                     key=lambda c: c.end_char - c.start_char, default=None)
        usable.append({**r, "id": f"r{n}", "chunk_id": holder.id if holder else None,
                       "spans": [{"doc_id": path.name, "start": s["start"], "end": s["end"]}]})
        truths.append(truth)
    docs = [d for d, _, _ in pages.values()]
    chunks = [c for d in docs for c in chunker.chunk(d)]
    result: dict = {"rows": len(rows), "placed with a known truth": len(usable),
                    "answers repeated in their page": sum(
                        len(re.findall(re.escape(r["answer"]), pages[r["spans"][0]["doc_id"]][0].text,
                                       re.I)) > 1 for r in usable)}
    nearest = [reanchor([{**r, "question": ""}], docs, chunks)[0][0]["spans"][0]["start"]
               for r in usable]
    placed = {o["id"]: o["spans"][0]["start"] for o in reanchor(usable, docs, chunks)[0]}
    anchored = [placed.get(r["id"]) for r in usable]
    for mode, got in (("nearest, one row at a time", nearest),
                      ("anchored, question words break ties", anchored)):
        wrong = sum(g != t for g, t in zip(got, truths))
        result[mode] = f"{wrong}/{len(usable)} on another occurrence"
    return result


if __name__ == "__main__":
    print(main())
