"""The same Node.js API pages read from their HTML and from their Markdown source: chunk types,
and the shipped default pipeline's retrieval of the 34 questions `agentic-rag tune` generated
from the Markdown pages (`nodejs/questions.jsonl`; LLM-written, span-first). No LLM call.

    PYTHONPATH=. python experiments/tune/html_vs_md.py [pages...]   # → nodejs/html-vs-md.json

The HTML pages are Debian's `nodejs` package's (/usr/share/doc/nodejs/api/<page>.html, rendered
by Node's own doc tool from the .md beside them). A question scores answer@5 = 1 when its answer
span is in the text of one of the top 5 chunks (`evaluation.containment.answer_at_k`), doc@5 = 1
when a top-5 chunk comes from its page. The questions were written from the Markdown chunks, so
any phrasing bias favours the Markdown arm.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from agentic_rag.config import RAGConfig
from agentic_rag.documents import iter_document_paths, read_document
from agentic_rag.evaluation.containment import answer_at_k
from agentic_rag.experiments.stats import paired_bootstrap
from agentic_rag.retrieve.pipeline import Pipeline

HERE = Path(__file__).parent
API = Path("/usr/share/doc/nodejs/api")
PAGES = ["path", "os", "timers", "console", "querystring", "readline", "tty", "dgram"]


def arm(pages: list[str], suffix: str, work: Path) -> tuple[dict, list[dict]]:
    folder = work / f"node-{suffix}"
    folder.mkdir()
    for p in pages:
        shutil.copy(API / f"{p}.{suffix}", folder / f"{p}.{suffix}")
    config = RAGConfig().with_overrides({"home": str(work / f"home-{suffix}")})
    pipe = Pipeline(config)
    docs = [read_document(f, did) for f, did in iter_document_paths([folder])]
    pipe.index.add_documents(docs)
    chunks = pipe.index.store.get(None, limit=100_000)
    stats = {"documents": len(docs), "characters": sum(len(d.text) for d in docs),
             "chunks": len(chunks), "by_type": dict(sorted(Counter(c.chunk_type for c in chunks).items()))}
    rows = []
    for q in map(json.loads, (HERE / "nodejs/questions.jsonl").read_text().splitlines()):
        _, result = pipe.retrieve(q["question"], k=5)
        hits = result.hits[:5]
        page = Path(q["doc_ids"][0]).stem
        rows.append({"id": q["id"], "answer@5": answer_at_k(hits, [q["answer"]], 5),
                     "doc@5": float(any(Path(h.chunk.doc_id).stem == page for h in hits))})
    return stats, rows


def main(pages: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        md_stats, md = arm(pages, "md", Path(tmp))
        html_stats, html = arm(pages, "html", Path(tmp))
    out = {"pages": pages, "questions": len(md), "md": md_stats, "html": html_stats}
    for metric in ("answer@5", "doc@5"):
        a, b = [r[metric] for r in md], [r[metric] for r in html]
        out[metric] = {"md": sum(a) / len(a), "html": sum(b) / len(b),
                       "html_minus_md": paired_bootstrap(b, a)}
    out["differ"] = [{"id": x["id"], "md": x["answer@5"], "html": y["answer@5"]}
                     for x, y in zip(md, html) if x["answer@5"] != y["answer@5"]]
    (HERE / "nodejs/html-vs-md.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:] or PAGES), indent=1))
