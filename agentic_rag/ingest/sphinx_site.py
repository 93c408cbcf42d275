"""The names a Sphinx project's pages define for one another, read from its folder: what an
untitled `:ref:`label`` to another page's section and a `:doc:`page`` show (their titles),
as Sphinx resolves them at build time; MyST pages' (.md) titles and `(label)=` targets too,
for MyST's `{ref}`, `{doc}` and `[](#label)` (`myst.titled_references`). `ingest.readers` passes them to `ingest.rst`.

    site = site_names(Path("docs/tutorial/views.rst"))
    site.labels["blueprints"], site.doc_title("../api"), site.docname   # "tutorial/views"

The project's root is the nearest folder above the page holding `conf.py` (Sphinx's source
folder) with no skipped or hidden folder between them, else the page's own folder (a built
site's `_sources/`: the pages beside it). Its pages are read once per process, without
descending into hidden or skipped folders or another project (a folder with its own
`conf.py`); they are read again when the page being read has changed since (an edit to
another page alone is seen on the next change or process). A project of more than
`MAX_PAGES` pages is not read: its references show their targets, as before.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from agentic_rag.ingest.mdx import front_matter
from agentic_rag.ingest.myst import myst_names
from agentic_rag.ingest.sphinx import SiteNames, page_title, section_labels

SOURCE_SUFFIXES = (".rst.txt", ".rst", ".rest", ".md")  # .md: MyST pages (`myst.myst_names`)
MAX_PAGES = 5000
_UP = 8  # how many folders above a page `conf.py` is looked for
# (root, skip) -> (each page's (mtime, size), or None for a project too large to read; names)
_SITES: dict[tuple[Path, frozenset[str]], tuple[dict[Path, tuple[int, int]] | None, SiteNames]] = {}


def site_names(page: str | Path, skip: Collection[str] = ()) -> SiteNames:
    """The labels and page titles of the project `page` belongs to, and `page`'s name in it;
    pages under a folder named in `skip` (`readers.BUILD_FOLDERS`, `SKIPPED_FOLDERS`) or a
    hidden one are not the project's."""
    page = Path(os.path.abspath(page))  # a link's own place names it, as Sphinx does
    skipped = frozenset(skip)
    root = source_root(page, skipped)
    key = (root, skipped)
    known = _SITES.get(key)
    if known is None or (known[0] is not None and known[0].get(page) != _stamp(page)):
        known = _SITES[key] = _read_site(root, skipped)  # a page changed or new since
    return replace(known[1], docname=docname(page, root))


def source_root(page: Path, skip: Collection[str] = ()) -> Path:
    """The nearest folder above `page` holding `conf.py` with no hidden or `skip` folder
    between them (a build's `_sources/` under a project is not the project's), else
    `page`'s own folder."""
    for folder in list(page.parents)[:_UP]:
        between = page.parent.relative_to(folder).parts
        if any(p.startswith(".") or p in skip for p in between):
            break
        if (folder / "conf.py").is_file():
            return folder
    return page.parent


def docname(page: Path, root: Path) -> str:
    """`page`'s name as `:doc:` writes it: root-relative, POSIX, without its suffix."""
    rel = page.relative_to(root).as_posix()
    for suffix in SOURCE_SUFFIXES:
        if rel.lower().endswith(suffix):
            return rel[:-len(suffix)]
    return rel


def _stamp(page: Path) -> tuple[int, int]:
    st = page.stat()
    return st.st_mtime_ns, st.st_size


def _pages(root: Path, skip: frozenset[str]) -> list[Path] | None:
    """The project's pages, sorted; None past `MAX_PAGES`."""
    found: list[Path] = []
    for folder, subs, files in os.walk(root, followlinks=True):  # as Sphinx reads linked folders
        here = Path(folder)
        subs[:] = sorted(s for s in subs if not s.startswith(".") and s not in skip
                         and not (here / s / "conf.py").is_file())
        found += [here / f for f in files if f.lower().endswith(SOURCE_SUFFIXES)]
        if len(found) > MAX_PAGES:
            return None
    return sorted(found)


def _read_site(root: Path, skip: frozenset[str]
               ) -> tuple[dict[Path, tuple[int, int]] | None, SiteNames]:
    pages = _pages(root, skip)
    if pages is None:
        return None, SiteNames()
    stamps: dict[Path, tuple[int, int]] = {}
    labels: dict[str, str] = {}
    titles: dict[str, str] = {}
    for f in pages:
        try:
            stamp, text = _stamp(f), f.read_text("utf-8-sig")
        except (OSError, UnicodeDecodeError):
            continue  # the reader names an unreadable page when it reads it
        stamps[f] = stamp
        text = text.replace("\r\n", "\n")
        if f.name.lower().endswith(".md"):
            title, found = myst_names(front_matter(text)[1])
        else:
            lines = text.split("\n")
            title, found = page_title(lines), section_labels(lines)
        labels.update(found)  # a label defined twice: the last page's, as Sphinx
        if title:
            titles[docname(f, root)] = title
    return stamps, SiteNames(labels=labels, titles=titles)
