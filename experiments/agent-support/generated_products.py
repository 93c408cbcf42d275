"""Issue 40 on questions `agentic-rag testset` generated (LLM-written, span first), not the
template set: the τ²-banking product documents written to a folder, the testset command run on
it, then the retrieval settings (no LLM) and the agent (LLM) scored on every kept question whose
answer is a figure. Nothing is chosen on this set: the settings were chosen on the template
set's dev part (CHOICE-RULE-NAMED.md), so all of it is held out.

    PYTHONPATH=. python experiments/agent-support/generated_products.py folder /tmp/bank-products
    .venv/bin/agentic-rag testset /tmp/bank-products --n 100 --mode span --unanswerable 0 \\
        --out experiments/agent-support/generated/products.jsonl
    PYTHONPATH=. python experiments/agent-support/generated_products.py rows
      # -> generated/figures.jsonl (answers with a figure), figures-named.jsonl (those naming
      #    their source's product)
    PYTHONPATH=. python experiments/agent-support/generated_products.py retrieval experiments/cache/index-208cf5ffff8b
    PYTHONPATH=. python experiments/agent-support/agent_eval.py \\
        experiments/agent-support/generated/figures-named.jsonl \\
        experiments/cache/index-208cf5ffff8b all today,named+flag,named+abstain generated

A second set (2026-12-04, after the generator's subject check, issue 40): the same with
`--seed 1` and `--out experiments/agent-support/generated-s1/products.jsonl`, then
`AGENT_SUPPORT_GEN=generated-s1` before `rows` and `retrieval`.

The third round (CHOICE-RULE-LEXICAL.md), once, with the setting chosen on dev, today's
default and the old default (relative to today's default):

    AGENT_SUPPORT_GEN=generated-s1 PYTHONPATH=. python \
        experiments/agent-support/generated_products.py retrieval <index home> lexical <chosen>
      # -> retrieval-top5-generated-s1-lexical-figures{,-named}.json
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from agentic_rag.datasets.corpora import banking_documents
from agentic_rag.datasets.products import product_of
from agentic_rag.evaluation.support import numbers

HERE = Path(__file__).parent
# another set beside the first: AGENT_SUPPORT_GEN=generated-s1 (its testset output goes there)
GEN = HERE / os.environ.get("AGENT_SUPPORT_GEN", "generated")


def folder(out: str) -> int:
    """The product documents (not the general policy ones), one Markdown file each, named by
    the document id, its title as the heading."""
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    n = 0
    for d in banking_documents():
        if product_of(d.id):
            (path / f"{d.id}.md").write_text(f"# {d.title}\n\n{d.text}")
            n += 1
    return n


def original_id(doc_id: str) -> str:
    """`bank-products/doc_x_001.md` → `doc_x_001` (the index's id)."""
    return doc_id.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".md")


def rows() -> list[dict]:
    """The kept questions whose answer states a figure, in banking-products' row format
    (`id`, `question`, `answer`, `doc_ids` = the source document), each answer checked
    verbatim in its source document's original text."""
    docs = {d.id: d for d in banking_documents()}
    out = []
    for line in (GEN / "products.jsonl").open():
        r = json.loads(line)
        if not r.get("answerable", True) or not numbers(r["answer"]):
            continue
        ids = [original_id(d) for d in r["doc_ids"]]
        assert all(r["answer"] in docs[d].text or r["answer"] in docs[d].title for d in ids), r
        out.append({"id": r["id"], "question": r["question"], "answer": r["answer"],
                    "doc_ids": ids, "split": r.get("split"),
                    "names_product": names_product(r["question"], ids[0]),
                    "made_by": "llm: agentic-rag testset"})
    for name, keep in (("figures", out), ("figures-named", [r for r in out if r["names_product"]])):
        with (GEN / f"{name}.jsonl").open("w") as f:
            for r in keep:
                f.write(json.dumps(r) + "\n")
    return out


def names_product(question: str, doc_id: str) -> bool:
    """Does the question name its source document's product: every word of the product's
    id part (`lime_green`, `green_account_(savings)` without the qualifier) at a word start?
    The generator sometimes names another product than its passage's ("What is the APY bonus
    for the Diamond Elite Card?" from a Silver Plus Account page) or none."""
    _, prod = product_of(doc_id) or ("", "")
    words = prod.replace("_(checking)", "").replace("_(savings)", "").split("_")
    q = question.lower()
    return bool(prod) and all(re.search(rf"\b{re.escape(w)}", q) for w in words)


def retrieval(home: str, chosen: str | None = None) -> dict:
    """doc@5 and answer@5 (retrieval_top5's scoring) on the figure questions; with `chosen`
    (the third round), that setting and the old default beside today's default."""
    sys.path.insert(0, str(HERE))
    from retrieval_top5 import run

    names = ("default", "title coverage 1.0", "named boost, 2 per doc")
    suffix = "-generated" if GEN.name == "generated" else f"-{GEN.name}"
    base = None
    if chosen == "longest name":  # the fifth round: on the default then (coverage matching)
        from agentic_rag.studies.strategies import BEFORE_LONGEST

        names, suffix, base = ("default", chosen), f"{suffix}-longest", BEFORE_LONGEST
    elif chosen:
        tag = "question" if chosen.startswith("question") else "lexical"
        from agentic_rag.studies.strategies import DENSE_NAMED  # the default before round 4

        names, suffix, base = ("default", "named scope off", chosen), f"{suffix}-{tag}", DENSE_NAMED
    return {name: run(str(GEN / f"{name}.jsonl"), home, names, suffix, base)
            for name in ("figures", "figures-named")}


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "folder":
        print(folder(sys.argv[2]), "documents")
    elif cmd == "rows":
        print(len(rows()), "figure questions")
    elif cmd == "retrieval":
        chosen = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] in ("lexical", "question") \
            else "longest name" if len(sys.argv) > 3 and sys.argv[3] == "longest" else None
        print(json.dumps(retrieval(sys.argv[2], chosen), indent=1))
