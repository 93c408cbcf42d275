"""How often the support gate's product check names the right product (no LLM): for each
banking-products question, `named_documents(question)` (the documents whose name the question
covers best, store/coverage.py) against the gold product (the gold documents' id family).
`right` = named and every named document is the gold product's; `other` = names another
product; `none` = names nothing (the product check is then skipped, only "the figure is in a
cited passage" applies).

    PYTHONPATH=. python experiments/agent-support/named_documents.py
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.corpora import banking_documents
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.store.coverage import TitleCoverage
from agentic_rag.store.lexical import LexicalIndex


def family(doc_id: str) -> str:
    return doc_id.rsplit("_", 1)[0]


def main() -> dict:
    cfg = RAGConfig()
    chunks = AgenticChunker(cfg.chunking).chunk_many(banking_documents())
    cov = TitleCoverage(LexicalIndex(cfg.lexical).build(chunks, [c.index_text() for c in chunks]))
    out = {}
    for split in ("dev", "test"):
        counts: Counter = Counter()
        misses = []
        for line in Path(f"datasets/banking-products/{split}.jsonl").open():
            r = json.loads(line)
            named = cov.named_documents(r["question"])
            gold = {family(d) for d in r["doc_ids"]}
            if not named:
                counts["none"] += 1
            elif {family(d) for d in named} <= gold:
                counts["right"] += 1
            else:
                counts["other"] += 1
                misses.append([r["question"], sorted({family(d) for d in named})[:3]])
        out[split] = {"n": sum(counts.values()), **counts, "other_examples": misses[:5]}
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
