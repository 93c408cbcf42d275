"""The test-set generator's subject check (`testset_filters.SubjectCheck`, issue 40) run post
hoc on two committed generated sets, no LLM: which kept questions it would have rejected.

    PYTHONPATH=. python experiments/agent-support/subject_check.py products
      # the 93 figure questions on the product pages (generated/figures.jsonl), against
      # generated_products.names_product (does the question name its page's product?)
    PYTHONPATH=. python experiments/agent-support/subject_check.py tau2
      # the 60 span-first questions on all 698 τ²-banking documents (experiments/tune/tau2)

    PYTHONPATH=. python experiments/agent-support/subject_check.py tau2 --write
      # also writes experiments/tune/tau2/span-subject.jsonl: the set without the questions
      # the check rejects (splits kept; its summary beside it), for experiments/tune/evidence.py

Prints every rejection (reason, source, question → answer) and the counts; --quiet: counts.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import typer

from agentic_rag.datasets.corpora import banking_documents
from agentic_rag.datasets.products import product_of
from agentic_rag.datasets.testset_filters import SubjectCheck
from agentic_rag.documents import Document
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.jsonl import read_records

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def check(docs: list[Document], rows: list[dict], label: dict[str, str], quiet: bool,
          kept: list | None = None) -> Counter:
    chunks = [c for d in docs for c in AgenticChunker().chunk(d)]
    print(f"{len(docs)} documents, {len(chunks)} chunks; the check applies: "
          f"{SubjectCheck.applies([d.id for d in docs])}")
    sc = SubjectCheck.of(chunks, docs)
    counts: Counter = Counter()
    for r in rows:
        out = sc.check(r["question"], r["answer"], r["doc_ids"][0])
        counts[(out["reason"] if out else "kept", label.get(r["id"], "-"))] += 1
        if out is None and kept is not None:
            kept.append(r)
        if out and not quiet:
            print(f"  {out['reason']:22} [{label.get(r['id'], '-')}] {r['doc_ids'][0]}: "
                  f"{r['question']} → {r['answer']}\n      {out['detail']}")
    return counts


def main(which: str, quiet: bool = False, write: bool = False) -> Counter:
    if which == "products":  # as the testset read them: generated_products.folder's files
        docs = [Document(id=f"bank-products/{d.id}.md", text=f"# {d.title}\n\n{d.text}",
                         title=d.title)
                for d in banking_documents() if product_of(d.id)]
        rows = read_records(HERE / "generated" / "figures.jsonl")
        for r in rows:
            r["doc_ids"] = [f"bank-products/{d}.md" for d in r["doc_ids"]]
        label = {r["id"]: "names its product" if r["names_product"] else "does not"
                 for r in rows}
    elif which == "tau2":
        docs = banking_documents()
        rows = [r for r in read_records(ROOT / "experiments/tune/tau2/span.jsonl")
                if r.get("answerable", True)]
        label = {}
    else:
        raise SystemExit(f"{which!r}: products or tau2")
    kept: list[dict] = []
    counts = check(docs, rows, label, quiet, kept)
    if write and which == "tau2":
        src = ROOT / "experiments/tune/tau2/span.jsonl"
        dst = src.with_name("span-subject.jsonl")
        unanswerable = [r for r in read_records(src) if not r.get("answerable", True)]
        dst.write_text("".join(json.dumps(r) + "\n" for r in kept + unanswerable))
        summary = json.loads(src.with_name("span.summary.json").read_text())
        summary["subject_check_post_hoc"] = {"kept": len(kept), "of": len(rows)}
        dst.with_name("span-subject.summary.json").write_text(json.dumps(summary, indent=2))
        print(f"wrote {dst}: {len(kept)} of {len(rows)} answerable questions")
    for k, v in sorted(counts.items()):
        print(f"{k[0]:22} {k[1]:18} {v}")
    return counts


if __name__ == "__main__":
    typer.run(main)
