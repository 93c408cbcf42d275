"""How often `datasets.reanchor` moves a span to the right occurrence of its answer, on the
migration this project made on 2026-12-06: .rst pages read as written → as Sphinx builds them.
No LLM. The truth comes from lines the reading left unchanged (difflib); the answers are inline
literals of 40 pages of the Python 3.11 library (seeded), 15 a page, each with its old chunk id
and a proxy question (8 words drawn from 150 characters either side: generated questions
paraphrase their passage, so this flatters the context score); "nearest" gives no question.
(After a review's script, a helper session's.)

    PYTHONPATH=. python experiments/tune/reanchor_eval.py
"""

from __future__ import annotations

import difflib
import random
import re

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.corpora import pydocs_root
from agentic_rag.datasets.reanchor import reanchor
from agentic_rag.documents import Document
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.ingest.rst import sphinx_rst


def offsets(lines: list[str]) -> list[int]:
    out = [0]
    for line in lines:
        out.append(out[-1] + len(line) + 1)
    return out


def main() -> dict:
    chunker = AgenticChunker(RAGConfig().chunking)
    rng = random.Random(1)
    pages = sorted((pydocs_root() / "library").glob("*.rst.txt"))
    rng.shuffle(pages)
    res = {"context": [0, 0], "nearest": [0, 0]}  # [answers, wrong]
    for p in pages[:40]:
        raw = p.read_text(encoding="utf-8-sig")
        new = sphinx_rst(raw)
        rl, nl = raw.split("\n"), new.split("\n")
        ro, no = offsets(rl), offsets(nl)
        linemap = {a + k: b + k for a, b, size in
                   difflib.SequenceMatcher(None, rl, nl, autojunk=False).get_matching_blocks()
                   for k in range(size) if rl[a + k].strip()}
        old_chunks = chunker.chunk(Document(id=p.name, text=raw, format="rst"))
        doc = Document(id=p.name, text=new, format="rst")
        chunks = chunker.chunk(doc)
        found = [m for m in re.finditer(r"``([^`\n]+)``", raw)
                 if raw.count("\n", 0, m.start()) in linemap]
        for m in rng.sample(found, min(15, len(found))):
            ans, s = m.group(1), m.start(1)
            line = raw.count("\n", 0, s)
            truth = no[linemap[line]] + s - ro[line]
            holder = min((c for c in old_chunks if c.start_char <= s and s + len(ans) <= c.end_char),
                         key=lambda c: c.end_char - c.start_char, default=None)
            around = raw[max(0, s - 150): s + len(ans) + 150].replace(ans, " ").split()
            question = " ".join(rng.sample(around, min(8, len(around))))
            for mode in res:
                row = {"id": "q", "question": question if mode == "context" else "",
                       "answer": ans, "generator": "g", "chunk_id": holder.id if holder else None,
                       "spans": [{"doc_id": p.name, "start": s, "end": s + len(ans)}]}
                out, _ = reanchor([row], [doc], chunks)
                if out:
                    res[mode][0] += 1
                    res[mode][1] += out[0]["spans"][0]["start"] != truth
    return {k: f"{w}/{n} on another occurrence ({w / n:.1%})" for k, (n, w) in res.items()}


if __name__ == "__main__":
    print(main())
