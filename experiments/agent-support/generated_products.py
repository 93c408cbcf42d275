"""Issue 40 on questions `agentic-rag testset` generated (LLM-written, span first), not the
template set: the τ²-banking product documents written to a folder, the testset command run on
it, then the retrieval settings (no LLM) and the agent (LLM) scored on every kept question whose
answer is a figure (`agentic-rag question-eval`). Nothing is chosen on these sets: the settings
were chosen on the template set's dev part (CHOICE-RULE-NAMED.md), so all of it is held out.

    PYTHONPATH=. python experiments/agent-support/generated_products.py folder /tmp/bank-products
    .venv/bin/agentic-rag testset /tmp/bank-products --n 100 --mode span --unanswerable 0 \\
        --out experiments/agent-support/generated/products.jsonl
    PYTHONPATH=. python experiments/agent-support/generated_products.py rows generated
      # -> generated/figures.jsonl (answers with a figure), figures-named.jsonl (those naming
      #    their source's product)
    for s in figures figures-named; do .venv/bin/agentic-rag question-eval \\
        experiments/agent-support/generated/$s.jsonl --home experiments/cache/index-208cf5ffff8b \\
        --settings default "title coverage 1.0" "named boost, 2 per doc" --tag generated; done
    .venv/bin/agentic-rag question-eval experiments/agent-support/generated/figures-named.jsonl \\
        --home experiments/cache/index-208cf5ffff8b --agent --settings today named+flag \\
        named+abstain --tag generated

Other sets: `--seed 1` and `--out experiments/agent-support/generated-s1/products.jsonl`, then
`rows generated-s1`, `--tag generated-s1`. The third round (CHOICE-RULE-LEXICAL.md), once, with
the setting chosen on dev, today's default and the old default: `--settings default "named
scope off" <chosen> --base dense-named --tag generated-s1-lexical` (the fifth: `--settings
default "longest name" --base before-longest --tag generated-s1-longest`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.datasets.corpora import banking_documents
from agentic_rag.datasets.products import product_of
from agentic_rag.evaluation.support import numbers
from agentic_rag.jsonl import read_records
from agentic_rag.studies.question_file import names_product, original_id, write_rows

HERE = Path(__file__).parent
app = typer.Typer()


@app.command()
def folder(out: Path) -> None:
    """The product documents (not the general policy ones), one Markdown file each, named by
    the document id, its title as the heading."""
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for d in banking_documents():
        if product_of(d.id):
            (out / f"{d.id}.md").write_text(f"# {d.title}\n\n{d.text}")
            n += 1
    print(n, "documents")


@app.command()
def rows(name: Annotated[str, typer.Argument()] = "generated") -> None:
    """The kept questions of <name>/products.jsonl whose answer states a figure, in
    banking-products' row format (`id`, `question`, `answer`, `doc_ids` = the source document),
    each answer checked verbatim in its source document's original text."""
    gen = HERE / name
    docs = {d.id: d for d in banking_documents()}
    out = []
    for r in read_records(gen / "products.jsonl"):
        if not r.get("answerable", True) or not numbers(r["answer"]):
            continue
        ids = [original_id(d) for d in r["doc_ids"]]
        assert all(r["answer"] in docs[d].text or r["answer"] in docs[d].title for d in ids), r
        out.append({"id": r["id"], "question": r["question"], "answer": r["answer"],
                    "doc_ids": ids, "split": r.get("split"),
                    "names_product": names_product(r["question"], ids[0]),
                    "made_by": "llm: agentic-rag testset"})
    write_rows(gen / "figures.jsonl", out)
    write_rows(gen / "figures-named.jsonl", [r for r in out if r["names_product"]])
    print(len(out), "figure questions")


if __name__ == "__main__":
    app()
