"""Where the answer's passage stands among the passages served (issue 40), no LLM: for each
committed answer of today's default (`amount+abstain`) on the dev-side sets, the question is
searched again as the agent's tool searches it (`retrieve_first`: the question itself, 5
passages, in the order the model read them), and the positions of the passages stating the gold figure and of
those stating the answer's figures are recorded. A wrong answer whose gold passage was served
after the passage it took its figure from is one that putting the item's passage first could
move; a gold passage not served at all is one no ordering can.

    PYTHONPATH=. python experiments/agent-support/served_order.py <index home>
    # from the repository root → served-order-dev.json (the dev-side sets only: the test parts
    # and generated-s4 are not read)
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import typer

from agentic_rag.agent.result import parse_citations, strip_citations
from agentic_rag.config import RAGConfig
from agentic_rag.datasets.corpora import banking_documents
from agentic_rag.evaluation.figures import strip_passage_refs
from agentic_rag.evaluation.support import numbers
from agentic_rag.jsonl import read_records
from agentic_rag.retrieve.context import citation_id
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.store.index import AgenticIndex
from agentic_rag.studies.question_file import AGENT, SETTINGS
from agentic_rag.studies.strategies import NAMED_BASE

HERE = Path(__file__).parent
_LIST_MARK = re.compile(r"^[ \t]*\d+[.)][ \t]", re.M)  # "1. " opening a list item: not a figure
SETS = {  # answers of today's default → the set they answer (dev side only)
    "dev": ("agent-dev-amount-answers.jsonl", "../../datasets/banking-products/dev.jsonl"),
    "dev customer": ("agent-dev-customer-amount-answers.jsonl", "customer/dev.jsonl"),
    "s2": ("agent-figures-named-generated-s2-amount-answers.jsonl", "generated-s2/figures-named.jsonl"),
    "s2 customer": ("agent-generated-s2-customer-placeholder-answers.jsonl", "customer/generated-s2.jsonl"),
    "s3": ("agent-figures-named-generated-s3-answers.jsonl", "generated-s3/figures-named.jsonl"),
    "s3 customer": ("agent-generated-s3-customer-answers.jsonl", "customer/generated-s3.jsonl"),
}


def positions(texts: list[str], figures: list[str]) -> list[int]:
    """1-based positions of the passages stating any of `figures` (canonical numbers)."""
    return [i + 1 for i, t in enumerate(texts) if set(numbers(t)) & set(figures)]


def main(home: str) -> None:
    cfg = RAGConfig().with_overrides({"home": home, **AGENT, **NAMED_BASE,
                                      **SETTINGS["amount+abstain"]})
    index = AgenticIndex(cfg)
    if index.count() == 0:  # a fresh home: the τ²-banking documents, default chunking
        index.add_documents(banking_documents())
    pipe = Pipeline(cfg, index=index)
    out: dict = {}
    for name, (answers, qset) in SETS.items():
        rows = {r["id"]: r for r in read_records(HERE / qset)}
        counts: Counter = Counter()
        detail = []
        for a in read_records(HERE / answers):
            if a.get("setting") != "amount+abstain" or "answer" not in a:
                continue
            r = rows[a["id"]]
            intent, result = pipe.retrieve(r["question"], {}, [], set(), k=5)
            by_id = {h.chunk.id: h.chunk for h in result.hits[:5]}
            served = [by_id[cid] for cid in pipe.format(result.hits[:5], intent).included]
            texts = [c.text for c in served]
            gold = numbers(r["answer"])[:1]
            said = [n for n in numbers(strip_passage_refs(strip_citations(a["answer"])))
                    if n not in numbers(r["question"]) and n not in gold]
            g, w = positions(texts, gold), positions(texts, said)
            kind = "correct" if a["correct"] else "abstained" if a["abstained"] else "wrong"
            cites = set(parse_citations(a["answer"]))
            if cites:  # did the search give back what the answer cites? (the reproduction check)
                counts["answers citing a passage"] += 1
                counts["... all of whose citations were served again"] += cites <= {
                    citation_id(c.id) for c in served}
            where = ("gold not served" if not g else "gold first" if g[0] == 1 else
                     "gold after the answer's" if w and w[0] < g[0] else "gold later")
            counts[f"{kind}: {where}"] += 1
            if kind == "wrong":
                first = served[g[0] - 1] if g else None  # the first passage stating the gold
                cited = [c for c in served if citation_id(c.id) in cites]
                detail.append({"id": a["id"], "question": r["question"], "gold": r["answer"],
                               "answer": a["answer"], "gold_at": g, "answer_at": w,
                               "gold_chunk_type": first.chunk_type if first else None,
                               "figures_in_gold_passage": len(set(numbers(
                                   _LIST_MARK.sub("", first.text)))) if first else None,
                               # what the answer cites: the served passage(s) it took its figure from
                               "cited_served": len(cited) == len(cites) and bool(cites),
                               "cited_at": [served.index(c) + 1 for c in cited],
                               "cited_chunk_types": [c.chunk_type for c in cited]})
        out[name] = {"counts": dict(sorted(counts.items())), "wrong": detail}
    (HERE / "served-order-dev.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    typer.run(main)
