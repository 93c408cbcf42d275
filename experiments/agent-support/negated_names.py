"""A name said negated (issue 40's leftover: "Green Account? (the regular checking one, not
fee-free)" was scoped to the Green Fee-Free Account). Every committed question of the bank's
sets whose text holds a negation `coverage._NEGATED` reads, through today's default tool path
(`Pipeline.retrieve`, k 5, the gate included), with the negated words read as before (as name
words) and as now (`coverage.unnegated`): the documents the question is scoped to
(`AgenticIndex.named_documents`), whether its gold document is among them, and among the 5
served passages' documents. No LLM.

    PYTHONPATH=. python experiments/agent-support/negated_names.py experiments/cache/index-208cf5ffff8b
      # -> negated-names.json
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

import agentic_rag.store.coverage as coverage
from agentic_rag.config import RAGConfig
from agentic_rag.jsonl import read_records
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.store.index import AgenticIndex

HERE = Path(__file__).parent
SETS = sorted((HERE / "customer").glob("*.jsonl")) + sorted(
    Path("datasets/banking-products").glob("*.jsonl")) + sorted(HERE.glob("generated*/*.jsonl"))


def questions() -> list[dict]:
    """Every row with a question and gold documents, its set named; each text once."""
    out, seen = [], set()
    for path in SETS:
        for r in read_records(path):
            q = r.get("question")
            if not isinstance(q, str) or not r.get("doc_ids") or q in seen:
                continue
            seen.add(q)
            out.append({"set": os.path.relpath(path), "id": r.get("id"), "question": q,
                        "doc_ids": r["doc_ids"]})
    return out


def read(rows: list[dict], home: str, negation_read: bool) -> list[dict]:
    """Scope and top-5 documents of each row, the negation read or not."""
    coverage.unnegated = real if negation_read else (lambda text: text)
    cfg = RAGConfig().with_overrides({"home": home})
    index = AgenticIndex(cfg)
    pipe = Pipeline(cfg, index=index)
    out = []
    for r in rows:
        named = index.named_documents(r["question"], match=cfg.fusion.named_match)
        _, res = pipe.retrieve(r["question"], k=5)
        docs = [h.chunk.doc_id for h in res.hits[:5]]
        out.append({"named": named, "gold named": any(d in r["doc_ids"] for d in named),
                    "doc@5": any(d in r["doc_ids"] for d in docs)})
    return out


real = coverage.unnegated


def main(home: str) -> None:
    rows = questions()
    hit = [r for r in rows if coverage._NEGATED.search(r["question"])]  # noqa: SLF001
    before, after = read(hit, home, False), read(hit, home, True)
    changed = [{**r, "negated": coverage._NEGATED.search(r["question"]).group(0),  # noqa: SLF001
                "before": b, "after": a}
               for r, b, a in zip(hit, before, after) if b != a]
    result = {"questions": len(rows), "with a negation": len(hit),
              "scope or top 5 changed": len(changed),
              "gold named: before / after": [sum(b["gold named"] for b in before),
                                             sum(a["gold named"] for a in after)],
              "doc@5: before / after": [sum(b["doc@5"] for b in before),
                                        sum(a["doc@5"] for a in after)],
              "changed": changed,
              "unchanged": [{"set": r["set"], "question": r["question"],
                             "negated": coverage._NEGATED.search(r["question"]).group(0)}  # noqa: SLF001
                            for r, b, a in zip(hit, before, after) if b == a]}
    (HERE / "negated-names.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("changed", "unchanged")}))
    for c in changed:
        print(c["set"].split("/")[-1], "|", c["question"], "|", c["negated"], "|",
              c["before"]["named"][:2], "->", c["after"]["named"][:2], "| gold", c["doc_ids"])


if __name__ == "__main__":
    typer.run(main)
