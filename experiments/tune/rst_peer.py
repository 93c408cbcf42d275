"""reStructuredText read three ways, against Sphinx's own text builder (the peer): the words of
each page as written, as `ingest.rst` reads it, and as `sphinx-build -b text` renders it.

    PYTHONPATH=. python experiments/tune/rst_peer.py FOLDER [OUT.json] [--root TREE] [--without-includes] [--myst]

`--without-includes`: the reading as before `ingest.includes` (2026-12-06), each include
dropped, for the before/after of `rst-includes.json`.
`--myst`: MyST Markdown pages (.md) too, built with MyST-Parser (a dev dependency) and its
optional syntax `MYST` on, read by `ingest.myst`.
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
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.ingest.readers import read_document

_WORD = re.compile(r"[a-z0-9_]+")


def words(text: str) -> Counter:
    return Counter(_WORD.findall(text.lower()))


MYST = ["colon_fence", "deflist", "dollarmath", "fieldlist", "substitution", "tasklist",
        "attrs_inline", "attrs_block", "html_admonition"]  # MyST-Parser's optional syntax


def sphinx_text(folder: Path, pages: list[Path], root: Path | None = None,
                myst: bool = False) -> dict[Path, str]:
    """Each page's text as Sphinx's text builder writes it (no extension, no warnings);
    `root`: the tree copied around FOLDER (its files as they are, FOLDER's pages below);
    `myst`: .md pages too, with MyST-Parser (`pip install myst-parser`) and `MYST` on."""
    from sphinx.application import Sphinx

    with tempfile.TemporaryDirectory() as tmp:
        tree, out = Path(tmp) / "tree", Path(tmp) / "out"
        src = tree / folder.resolve().relative_to(root.resolve()) if root else tree
        if root is not None:
            shutil.copytree(root, tree, ignore=shutil.ignore_patterns(".git"), symlinks=True)
            for stale in (p for p in src.rglob("*") if p.name.endswith(_suffixes(myst))):
                stale.unlink()  # FOLDER's pages are written below, as without a root
        for p in pages:
            dest = src / p.relative_to(folder)
            if p.name.endswith(".rst.txt"):
                dest = dest.with_name(p.name.removesuffix(".rst.txt") + ".rst")
            dest.parent.mkdir(parents=True, exist_ok=True)
            text = p.read_text(encoding="utf-8-sig")
            dest.write_text(text if p.suffix == ".md" else _without_index(text), encoding="utf-8")
        conf = "extensions = []\nroot_doc = '__root__'\n"
        if myst:
            conf = (f"extensions = ['myst_parser']\nroot_doc = '__root__'\nmyst_enable_extensions = "
                    f"{MYST!r}\nsource_suffix = {{'.rst': 'restructuredtext', '.md': 'markdown'}}\n")
        (src / "conf.py").write_text(conf)
        (src / "__root__.rst").write_text("Root\n====\n")
        (src / "docutils.conf").write_text("[general]\nreport_level: 5\nhalt_level: 5\n")
        app = Sphinx(str(src), str(src), str(out), str(Path(tmp) / "doctrees"), "text",
                     status=None, warning=None, freshenv=True, verbosity=0)
        app.build(force_all=True)
        texts = {}
        for p in pages:
            rel = p.relative_to(folder).as_posix().removesuffix(".txt").removesuffix(".rst")
            rel = rel.removesuffix(".md")
            built = out / f"{rel}.txt"
            if built.is_file():
                texts[p] = built.read_text(encoding="utf-8")
        return texts


def _suffixes(myst: bool) -> tuple[str, ...]:
    return (".rst", ".rst.txt", ".md") if myst else (".rst", ".rst.txt")


def _without_index(text: str) -> str:
    """`.. index::` blocks out: they show nothing, and CPython 3.11's older entry forms
    ("module: signal") stop Sphinx 9's build."""
    out, skip_deeper = [], None
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip())
        if skip_deeper is not None and (not line.strip() or indent > skip_deeper):
            continue
        skip_deeper = indent if line.strip().startswith(".. index::") else None
        if skip_deeper is None:
            out.append(line)
    return "\n".join(out)


def overlap(ours: Counter, theirs: Counter) -> tuple[float, float]:
    common = sum((ours & theirs).values())
    return common / max(1, sum(ours.values())), common / max(1, sum(theirs.values()))


def main(folder: Path, out: Path | None, root: Path | None = None, myst: bool = False) -> dict:
    pages = sorted(p for p in folder.rglob("*") if p.name.endswith(_suffixes(myst)))
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
