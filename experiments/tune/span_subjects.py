"""Kept share of draws by how common the answer span is (issue 38), from committed span-mode
sets and their rejections; no LLM. A span that many chunks of the folder hold ("Flask",
`name`, `url_for`) is what the passage is *about* more often than an answer to a question:
the model writes a question around it ("What does the `url_for` function do?", rejected as
"question repeats the answer") or one whose round trip cannot find the chunk.

    PYTHONPATH=. python experiments/tune/span_subjects.py DOCS SET_STEM [DOCS SET_STEM ...]
    # e.g. /tmp/rst-pallets+flask/docs experiments/tune/flask/questions

Each draw's span is recomputed from the chunk (`testset_sampling.chunk_span`, as the run
drew it) and checked against the recorded answer; features: the share of the folder's
chunks whose text holds the span (case-sensitive), and its count in its own passage.
"""
import json
from collections import Counter
from pathlib import Path

import typer

from agentic_rag.config import ChunkingConfig
from agentic_rag.datasets.testset_sampling import chunk_span
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.ingest.readers import iter_document_paths, read_document
from agentic_rag.jsonl import read_records

BUCKETS = ((0.0, 0.002), (0.002, 0.005), (0.005, 0.01), (0.01, 0.02), (0.02, 1.01))


def draws(docs: Path, stem: str) -> list[dict]:
    documents = [read_document(f, did) for f, did in iter_document_paths([docs])]
    by_id = {d.id: d for d in documents}
    chunks = [c for d in documents for c in AgenticChunker(ChunkingConfig()).chunk(d)]
    texts = [by_id[c.doc_id].text[c.start_char:c.end_char] for c in chunks]
    chunk_of = {c.id: c for c in chunks}
    rows = [dict(r, kept=True) for r in read_records(f"{stem}.jsonl")]
    rows += [dict(r, kept=False) for r in read_records(f"{stem}.rejected.jsonl")]
    out = []
    for r in rows:
        if r.get("reason") == "no answer span" or not r.get("answerable", True):
            continue
        c = chunk_of.get(r["chunk_id"])
        span = c and chunk_span(c, by_id[c.doc_id])
        if span is None or span.text != r.get("answer"):
            out.append({"kept": r["kept"], "matched": False})
            continue
        held = sum(span.text in t for t in texts)
        passage = by_id[c.doc_id].text[c.start_char:c.end_char]
        out.append({"kept": r["kept"], "matched": True, "chunk_share": held / len(texts),
                    "in_passage": passage.count(span.text), "kind": span.kind,
                    "reason": r.get("reason", "kept"), "answer": span.text})
    return out


def table(rows: list[dict]) -> dict:
    got = [r for r in rows if r["matched"]]
    res = {"draws": len(rows), "matched": len(got),
           "kept_share": round(sum(r["kept"] for r in got) / max(1, len(got)), 3)}
    for lo, hi in BUCKETS:
        b = [r for r in got if lo <= r["chunk_share"] < hi]
        res[f"chunks holding it {lo:.3f}-{hi:.3f}"] = {
            "draws": len(b), "kept": sum(r["kept"] for r in b),
            "share": round(sum(r["kept"] for r in b) / max(1, len(b)), 3),
            "rejections": dict(Counter(r["reason"] for r in b if not r["kept"]).most_common(4))}
    for k in (1, 2):
        b = [r for r in got if r["in_passage"] == k]
        res[f"{k}x in its passage"] = {"draws": len(b), "kept": sum(r["kept"] for r in b),
                                       "share": round(sum(r["kept"] for r in b) / max(1, len(b)), 3)}
    return res


def cli(pairs: list[str]) -> None:
    """DOCS STEM [DOCS STEM ...]"""
    print(json.dumps({stem: table(draws(Path(docs), stem))
                      for docs, stem in zip(pairs[::2], pairs[1::2])}, indent=1))


if __name__ == "__main__":
    typer.run(cli)
