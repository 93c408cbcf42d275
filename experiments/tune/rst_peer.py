"""reStructuredText read three ways, against Sphinx's own text builder (the peer): the words of
each page as written, as `ingest.rst` reads it, and as `sphinx-build -b text` renders it.

    PYTHONPATH=. python experiments/tune/rst_peer.py FOLDER [OUT.json] [--root TREE] [--without-includes] [--myst]

`--without-includes`: the reading as before `ingest.includes` (2026-12-06), each include
dropped, for the before/after of `rst-includes.json`.
`--myst`: MyST Markdown pages (.md) too, built with MyST-Parser (a dev dependency) and its
optional syntax `reading_arms.MYST` on, read by `ingest.myst`.
`--root TREE`: the project's tree FOLDER is in (a repository holding docs/), copied for
Sphinx whole, so that an `.. include:: ../CHANGES.rst` resolves for Sphinx as it does for
the reader; without it only FOLDER is copied (an include outside it shows nothing in Sphinx).

Per page, the word multisets (`[A-Za-z0-9_]+`, lower case) of the raw text and of the reading
are compared with Sphinx's: precision (of a reading's words, the share Sphinx shows too) and
recall (of Sphinx's words, the share the reading has). Markup Sphinx does not show (role
names, directive names, targets, option lines) costs precision; text Sphinx shows that a
reading drops costs recall. Sphinx runs with no extension: a directive or role from an
extension (autodoc, CPython's `availability`) is an error it drops with its content, so on
such pages the reading keeps words Sphinx does not show (its recall is the fairer figure
there). Pages Sphinx does not build to text (an error, an `.. only::` page) are left out.
No LLM, no index.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.ingest.readers import read_document
from agentic_rag.studies.reading_arms import overlap, peer_suffixes, sphinx_text, words


def main(folder: Path, out: Path | None, root: Path | None = None, myst: bool = False) -> dict:
    pages = sorted(p for p in folder.rglob("*") if p.name.endswith(peer_suffixes(myst)))
    built = sphinx_text(folder, pages, root, myst)
    rows = []
    for p, text in built.items():
        theirs = words(text)
        source = p.read_text(encoding="utf-8-sig")
        raw = words(source)
        read = words(read_document(p).text)
        rows.append({"page": p.relative_to(folder).as_posix(),
                     "raw": overlap(raw, theirs), "read": overlap(read, theirs),
                     "include": bool(re.search(r"^\s*\.\. (?:literal)?include::", source, re.M))})

    def mean(arm: str, k: int) -> float:
        return round(sum(r[arm][k] for r in rows) / max(1, len(rows)), 4)

    result = {"folder": str(folder), "root": str(root) if root else None, "pages": len(pages),
              "built by Sphinx": len(rows),
              "sphinx": __import__("sphinx").__version__,
              "mean precision": {"raw": mean("raw", 0), "read": mean("read", 0)},
              "mean recall": {"raw": mean("raw", 1), "read": mean("read", 1)},
              "pages where the reading's precision is lower than raw's":
                  sum(r["read"][0] < r["raw"][0] - 1e-9 for r in rows),
              "pages where the reading's recall is lower than raw's":
                  sum(r["read"][1] < r["raw"][1] - 1e-9 for r in rows),
              "pages with an include or literalinclude (read precision, recall)": {
                  r["page"]: [round(x, 3) for x in r["read"]] for r in rows if r["include"]},
              "lowest recall (read)": sorted((round(r["read"][1], 3), r["page"]) for r in rows)[:5]}
    if out is not None:
        out.write_text(json.dumps(result, indent=1) + "\n")
    return result


def cli(folder: Path, out: Annotated[Path | None, typer.Argument()] = None,
        root: Annotated[Path | None, typer.Option(metavar="TREE")] = None,
        without_includes: bool = False, myst: bool = False) -> None:
    if without_includes:  # the reading as before `ingest.includes`, each include dropped
        import agentic_rag.ingest.includes as includes

        includes.rst_with_includes = includes.myst_with_includes = lambda text, page, skip=(): text
    print(json.dumps(main(folder, out, root, myst), indent=1))


if __name__ == "__main__":
    typer.run(cli)
