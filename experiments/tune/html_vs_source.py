"""The same documentation read from its HTML pages and from its source markup: chunk types, and
the shipped default pipeline's retrieval on the same questions. No LLM call.

    PYTHONPATH=. python experiments/tune/html_vs_source.py node     # → nodejs/html-vs-source.json
    PYTHONPATH=. python experiments/tune/html_vs_source.py python   # → python/html-vs-source.json
    PYTHONPATH=. python experiments/tune/html_vs_source.py pdf      # → shared-mime-info-pdf.json

- node: 8 Node.js API pages, Debian's `nodejs` package (/usr/share/doc/nodejs/api/<page>.html,
  rendered by Node's doc tool from the .md beside it); the 34 questions `agentic-rag tune`
  generated from the .md pages (`nodejs/questions.jsonl`: LLM-written, span-first), so any
  phrasing bias favours the Markdown arm.
- python: the 52 pages of the Python 3.11 library reference python-library-qa's 66 questions are
  about (`make datasets`: the .rst sources and the Sphinx HTML of `python3.11-doc`); the HTML
  page of each gets the .rst page's document id, so the qrels hold. The questions were written
  by an LLM session reading the pages, not by a person (`datasets/python-library-qa/RUBRIC.md`).

answer@5 = 1 when a question's answer is in one of the top 5 chunks, its heading line included
(`evaluation.containment.answer_at_k`, SQuAD-normalised; for the HTML arm of python, the answer
as the page prints it: python-library-qa quotes the .rst, ":exc:`KeyError`" reads "KeyError");
"loose answer@5" the same with punctuation read as a space (`studies.reading_arms.loose_at_5`), so a signature the
HTML prints with its module ("os.getenv(key, ...)") holds the answer quoted from the .rst;
nDCG@10 by document (ir-measures);
paired bootstrap CIs (HTML − source) over the questions.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.documents import Document
from agentic_rag.ingest.readers import read_document
from agentic_rag.studies.reading_arms import arm, compare_splits, recovered, rendered, set_questions

HERE = Path(__file__).parent
NODE_API = Path("/usr/share/doc/nodejs/api")
NODE_PAGES = ["path", "os", "timers", "console", "querystring", "readline", "tty", "dgram"]


def node() -> tuple[dict[str, list[Document]], list[dict]]:
    arms = {fmt: [read_document(NODE_API / f"{p}.{fmt}", f"node-docs/{p}.md") for p in NODE_PAGES]
            for fmt in ("md", "html")}
    return {"source": arms["md"], "html": arms["html"]}, set_questions(HERE / "nodejs/questions.jsonl")


def python() -> tuple[dict[str, list[Document]], list[dict]]:
    from agentic_rag.datasets.corpora import pydocs_root
    from agentic_rag.datasets.qa import python_library_qa

    ds = python_library_qa()
    gold = {d for rel in ds.qrels.values() for d in rel}
    source = [d for d in ds.corpus if d.id in gold]
    html_root = pydocs_root().parent  # .../html/_sources → .../html
    html = [read_document(html_root / d.id.removeprefix("pydocs/").replace(".rst", ".html"), d.id)
            for d in source]
    split = ds.fixed_split
    questions = [{"id": q.id, "text": q.text, "answers": q.answers, "qrels": ds.qrels[q.id],
                  "split": split.get(q.id, ""), "html_answers": [rendered(a) for a in q.answers]}
                 for q in ds.queries]
    return {"source": source, "html": html}, questions


SPEC = Path("/usr/share/doc/shared-mime-info")


def pdf_recovery() -> dict:
    """The Shared MIME-info specification as PDF and as HTML (Debian's shared-mime-info):
    `reading_arms.recovered`."""
    html = "\n".join(read_document(f).text for f in sorted((SPEC / "shared-mime-info-spec.html")
                                                              .glob("*.html")))
    return recovered(read_document(SPEC / "shared-mime-info-spec.pdf").text, html)


def main(corpus: str) -> dict:
    if corpus == "pdf":
        out = pdf_recovery()
        (HERE / "shared-mime-info-pdf.json").write_text(json.dumps(out, indent=1) + "\n")
        return out
    arms, questions = {"node": node, "python": python}[corpus]()
    with tempfile.TemporaryDirectory() as tmp:
        results = {name: arm(docs, questions, Path(tmp) / name,
                             "html_answers" if name == "html" else "answers")
                   for name, docs in arms.items()}
    src, html = results["source"][1], results["html"][1]
    out = {"corpus": corpus, "source": results["source"][0], "html": results["html"][0],
           **compare_splits(src, html)}
    out["differ"] = [{"id": x["id"], "source": x["loose answer@5"], "html": y["loose answer@5"]}
                     for x, y in zip(src, html) if x["loose answer@5"] != y["loose answer@5"]]
    folder = HERE / {"node": "nodejs", "python": "python"}[corpus]
    (folder / "html-vs-source.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


def cli(corpus: Annotated[str, typer.Argument(help="node | python | pdf")] = "node") -> None:
    result = main(corpus)
    print(json.dumps({k: v for k, v in result.items() if k != "differ"}, indent=1))


if __name__ == "__main__":
    typer.run(cli)
