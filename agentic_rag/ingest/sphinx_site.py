"""The names a Sphinx project's pages define for one another, read from its folder: what an
untitled `:ref:`label`` to another page's section and a `:doc:`page`` show (their titles),
as Sphinx resolves them at build time. `ingest.readers` passes them to `ingest.rst`.

    site = site_names(Path("docs/tutorial/views.rst"))
    site.labels["blueprints"], site.doc_title("../api"), site.docname   # "tutorial/views"

The project's root is the nearest folder above the page holding `conf.py` (Sphinx's source
folder), else the page's own folder (a built site's `_sources/`: the pages beside it). Its
pages are read once per process; they are read again when the page being read has changed
since (an edit to another page alone is seen on the next change or process).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from agentic_rag.ingest.sphinx import SiteNames, page_title, section_labels

SOURCE_SUFFIXES = (".rst.txt", ".rst", ".rest")
MAX_PAGES = 5000  # a folder with more pages than this is not read for names (none are shown)
_UP = 8  # how many folders above a page `conf.py` is looked for
_SITES: dict[Path, tuple[dict[Path, tuple[int, int]], SiteNames]] = {}


def site_names(page: str | Path, skip: Collection[str] = ()) -> SiteNames:
    """The labels and page titles of the project `page` belongs to, and `page`'s name in it;
    pages under a folder named in `skip` (a build's output: `readers.BUILD_FOLDERS`) or a
    hidden one are not the project's."""
    page = Path(page).resolve()
    root = source_root(page)
    st = page.stat()
    known = _SITES.get(root)
    if known is None or known[0].get(page) != (st.st_mtime_ns, st.st_size):
        known = _SITES[root] = _read_site(root, set(skip))
    return replace(known[1], docname=docname(page, root))


def source_root(page: Path) -> Path:
    for folder in list(page.parents)[:_UP]:
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


def _read_site(root: Path, skip: set[str]) -> tuple[dict[Path, tuple[int, int]], SiteNames]:
    pages = sorted(f for f in root.rglob("*") if f.name.lower().endswith(SOURCE_SUFFIXES)
                   and not any(p in skip or p.startswith(".")
                               for p in f.relative_to(root).parts[:-1]) and f.is_file())
    stamps: dict[Path, tuple[int, int]] = {}
    labels: dict[str, str] = {}
    titles: dict[str, str] = {}
    if len(pages) > MAX_PAGES:
        return stamps, SiteNames()
    for f in pages:
        try:
            st, text = f.stat(), f.read_text("utf-8-sig")
        except (OSError, UnicodeDecodeError):
            continue  # the reader names an unreadable page when it reads it
        stamps[f.resolve()] = (st.st_mtime_ns, st.st_size)
        lines = text.replace("\r\n", "\n").split("\n")
        for label, title in section_labels(lines).items():
            labels.setdefault(label, title)
        if title := page_title(lines):
            titles[docname(f, root)] = title
    return stamps, SiteNames(labels=labels, titles=titles)
