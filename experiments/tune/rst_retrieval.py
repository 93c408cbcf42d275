"""python-library-qa's 52 pages read as written (the .rst source: roles, directives) and as
Sphinx builds them (`ingest.rst`): chunk types and the shipped default pipeline's retrieval on
the 66 questions. No LLM call.

    PYTHONPATH=. python experiments/tune/rst_retrieval.py      # → python/rst-reading.json

The questions were written by an LLM session reading the pages, not by a person
(`datasets/python-library-qa/RUBRIC.md`), quoting the .rst source: 6 of the 66 answers hold a
role (":exc:`KeyError`"). The read arm is scored twice: with the answers as quoted, and with
the answers read as their page is (`sphinx_rst` on the answer: ":exc:`KeyError`" →
"``KeyError``"), the fair reading of a quote from the page. Metrics, CIs and the retrieval call
as `html_vs_source.py` (`studies.reading_arms`; its HTML arm is the same pages as Sphinx's HTML builder wrote them).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from html_vs_source import python  # this folder's

from agentic_rag.documents import Document
from agentic_rag.ingest.readers import first_line
from agentic_rag.ingest.rst import sphinx_rst
from agentic_rag.studies.reading_arms import arm, compare

HERE = Path(__file__).parent


def main() -> dict:
    arms, questions = python()
    source = arms["source"]
    read = []
    for d in source:
        text = sphinx_rst(d.text)
        read.append(Document(id=d.id, text=text, title=first_line(text), source=d.source,
                             format="rst", metadata=d.metadata))
    for q in questions:
        q["read_answers"] = [sphinx_rst(a).strip() for a in q["answers"]]
    out: dict = {"corpus": "python-library-qa, 52 pages",
                 "answers with a role": sum(a != r for q in questions
                                            for a, r in zip(q["answers"], q["read_answers"]))}
    with tempfile.TemporaryDirectory() as tmp:
        out["source"], rows_source = arm(source, questions, Path(tmp) / "source")
        out["read"], rows_read_quoted = arm(read, questions, Path(tmp) / "read")
        # the same index again (its home reused: unchanged documents are not embedded again)
        _, rows_read_own = arm(read, questions, Path(tmp) / "read", answers="read_answers")
    test = [i for i, q in enumerate(questions) if q["split"] == "test"]
    for name, rows in (("read, answers as quoted", rows_read_quoted),
                       ("read, answers read", rows_read_own)):
        out[name] = {"all": compare(rows_source, rows, ("source", "read")),
                     "test": compare([rows_source[i] for i in test], [rows[i] for i in test],
                                     ("source", "read"))}
    out["differ (answer@5, answers read)"] = [
        {"id": q["id"], "source": a["answer@5"], "read": b["answer@5"]}
        for q, a, b in zip(questions, rows_source, rows_read_own) if a["answer@5"] != b["answer@5"]]
    (HERE / "python" / "rst-reading.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
