"""`:ref:` and `:doc:` to other pages of a Sphinx project show their titles, as Sphinx
resolves them at build time (`ingest.sphinx_site`, `ingest.sphinx.SiteNames`)."""

from __future__ import annotations

import os
from pathlib import Path

from agentic_rag.ingest import sphinx_site
from agentic_rag.ingest.readers import read_document
from agentic_rag.ingest.rst import sphinx_rst
from agentic_rag.ingest.sphinx import SiteNames, page_title, section_labels
from agentic_rag.ingest.sphinx_site import docname, site_names, source_root

INDEX = """\
=========
Our Tool
=========

.. _install-guide:

Installing it
-------------

Run the installer.
"""
PAGE = """\
Views
=====

Follow :doc:`../index` and :doc:`/index`, then :ref:`install-guide` and
:ref:`Install-Guide`; :ref:`blueprints` is this page's, :ref:`the guide <install-guide>` is
titled, :ref:`nowhere` and :doc:`missing` are not known.

.. _blueprints:

Blueprints
----------

Text.
"""


def _project(root: Path) -> Path:
    (root / "docs" / "tutorial").mkdir(parents=True)
    (root / "docs" / "conf.py").write_text("project = 'x'\n")
    (root / "docs" / "index.rst").write_text(INDEX)
    page = root / "docs" / "tutorial" / "views.rst"
    page.write_text(PAGE)
    (root / "docs" / "_build").mkdir()
    (root / "docs" / "_build" / "old.rst").write_text(".. _install-guide:\n\nOld\n===\n")
    return page


def test_refs_and_docs_to_other_pages_show_their_titles(tmp_path: Path) -> None:
    page = _project(tmp_path)
    text = read_document(page).text
    assert "Follow Our Tool and Our Tool, then Installing it and\nInstalling it;" in text
    assert "Blueprints is this page's, the guide is\ntitled, nowhere and missing are not known." in text
    site = site_names(page, skip={"_build"})  # the build folder's copy of the label is no page
    assert site.docname == "tutorial/views" and site.labels["install-guide"] == "Installing it"
    assert source_root(page.resolve()) == (tmp_path / "docs").resolve()


def test_site_names_are_read_again_when_the_page_changes(tmp_path: Path) -> None:
    page = _project(tmp_path)
    assert "Follow Our Tool" in read_document(page).text
    (tmp_path / "docs" / "index.rst").write_text(INDEX.replace("Our Tool", "New Tool"))
    page.write_text(PAGE + "\nMore.\n")
    st = page.stat()  # a changed size is a change, whatever the clock's resolution
    os.utime(page, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert "Follow New Tool" in read_document(page).text


def test_without_conf_py_the_pages_beside_it_are_the_project(tmp_path: Path) -> None:
    (tmp_path / "a.rst.txt").write_text(".. _intro:\n\nIntro Part\n==========\n\nText.\n")
    b = tmp_path / "b.rst.txt"
    b.write_text("Other\n=====\n\nSee :ref:`intro` and :doc:`a`.\n")
    assert "See Intro Part and Intro Part." in read_document(b).text
    assert docname(b, tmp_path) == "b"


def test_the_pure_parts() -> None:
    lines = INDEX.split("\n")
    assert page_title(lines) == "Our Tool"
    assert page_title("Text only.\n\n.. note:: x\n".split("\n")) == ""
    assert page_title("  indented\n  ========\n\nTitle\n=====\n".split("\n")) == "Title"
    assert section_labels(".. _Mixed-Case:\n\nAlpha\n=====\n".split("\n")) == {"mixed-case": "Alpha"}
    site = SiteNames(titles={"index": "Home", "tutorial/a": "A"}, docname="tutorial/b")
    assert site.doc_title("a") == "A" and site.doc_title("../index") == "Home"
    assert site.doc_title("/tutorial/a") == "A" and site.doc_title("b") is None
    # without a site, as before: the label's text; a page's own label is still its title
    assert sphinx_rst("See :doc:`a` and :ref:`x`.\n") == "See a and x.\n"


def test_review_cases_resolve_as_sphinx_does(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "usage").mkdir(parents=True)
    (docs / "conf.py").write_text("")
    (docs / "usage" / "referencing.rst").write_text("Cross-references\n================\n")
    (docs / "examples.rst").write_text(
        "Examples\n========\n\nWrite it so::\n\n   .. _installation:\n\n   Installation\n   ------------\n\n"
        ".. _search  Adapters:\n\n.. currentmodule:: x.y\n\n.. index:: pair: a; b\n\nSearch Adapters\n"
        "---------------\n\n.. _options:\n\n.. rubric:: Makefile options\n\n"
        ".. _async:\n\nUsing ``async`` and |x|\n=======================\n\n.. |x| replace:: await\n")
    page = docs / "usage" / "page.rst"
    page.write_text(".. |x| replace:: WRONG\n\nPage\n====\n\nSee :doc:`/usage/referencing/`, "
                    ":doc:`../examples`, :ref:`installation`, :ref:`search adapters`, "
                    ":ref:`options` and :ref:`async`.\n")
    text = read_document(page).text
    assert ("See Cross-references, Examples, installation, Search Adapters, Makefile options "
            "and Using async and |x|.") in text, text


def test_a_build_folder_under_a_project_is_its_own_site_and_the_scan_skips_it(tmp_path: Path) -> None:
    page = _project(tmp_path)
    built = tmp_path / "docs" / "_build" / "html" / "_sources"
    built.mkdir(parents=True)
    (built / "a.rst.txt").write_text("A Page\n======\n")
    (built / "b.rst.txt").write_text("B\n=\n\nSee :doc:`a`.\n")
    assert "See A Page." in read_document(built / "b.rst.txt").text  # named from its own folder
    assert "_build/old" not in site_names(page, skip={"_build"}).titles
    assert site_names(page).titles["_build/old"] == "Old"  # skip is part of the cache key


def test_a_project_is_read_once_for_all_its_pages(tmp_path: Path, monkeypatch) -> None:
    for i in range(5):
        (tmp_path / f"p{i}.rst").write_text(f"Page {i}\n======\n\nSee :doc:`p{(i + 1) % 5}`.\n")
    reads = []
    real = sphinx_site._read_site
    monkeypatch.setattr(sphinx_site, "_read_site", lambda *a: reads.append(a) or real(*a))
    texts = [read_document(tmp_path / f"p{i}.rst").text for i in range(5)]
    assert len(reads) == 1 and "See Page 2." in texts[1]
    monkeypatch.setattr(sphinx_site, "MAX_PAGES", 3)  # too large: read once, nothing resolved
    (tmp_path / "p0.rst").write_text("Page 0\n======\n\nSee :doc:`p1` again.\n")
    assert "See p1 again." in read_document(tmp_path / "p0.rst").text
    assert "See p3." in read_document(tmp_path / "p2.rst").text and len(reads) == 2


def test_backquoted_labels_are_labels(tmp_path: Path) -> None:
    """``.. _`name`:`` (docutils' quoted form; pytest writes 148 of them) labels the section
    below, as a plain one stacked beside it does (a review on pytest's docs: 114 of 224
    untitled `:ref:`s showed the bare label)."""
    (tmp_path / "a.rst").write_text(".. _`captures`:\n\nHow to capture output\n=====================\n\n"
                                    "Text.\n\n.. _plain:\n.. _`quoted one`:\n\nSecond section\n"
                                    "--------------\n\nMore.\n")
    page = tmp_path / "b.rst"
    page.write_text("Page B\n======\n\nSee :ref:`captures`, :ref:`plain` and :ref:`quoted one`.\n")
    assert "See How to capture output, Second section and Second section." in read_document(page).text


def test_myst_pages_are_part_of_the_project(tmp_path: Path) -> None:
    """A mixed project (pip's docs: .rst and MyST .md): MyST pages' titles and `(label)=`
    targets (with spaces, as pip writes them) are the project's names; MyST's untitled
    `{ref}`, `{doc}` and `[](label)` show their titles, as reST's `:ref:`/`:doc:` to a MyST
    page do (each checked against Sphinx with MyST-Parser by a review, 2026-12-06)."""
    (tmp_path / "conf.py").write_text("")
    (tmp_path / "secure.md").write_text("(hash-checking mode)=\n\n## Hash-checking Mode\n\nText.\n\n"
                                        "```md\n(fake)=\n# Not a heading\n```\n")
    (tmp_path / "guide.rst").write_text("Installing\n==========\n\n.. _plain-label:\n\nPlain section\n"
                                        "-------------\n\nSee :ref:`hash-checking mode` and :doc:`secure`.\n")
    topics = tmp_path / "topics.md"
    topics.write_text("# Topics\n\nSee {ref}`hash-checking mode`, {ref}`plain-label`, {doc}`guide`, "
                      "[](plain-label), [](#local), <project:secure.md> and {ref}`fake`.\n\n"
                      "(local)=\n## Local part\n\n`{ref}`plain-label`` stays code.\n")
    assert ("See Hash-checking Mode, Plain section, Installing, Plain section, Local part, "
            "Hash-checking Mode and fake.") in read_document(topics).text
    assert "`{ref}`plain-label`` stays code." in read_document(topics).text
    assert "See Hash-checking Mode and Hash-checking Mode." in read_document(tmp_path / "guide.rst").text
    from agentic_rag.ingest.myst import myst_names

    assert myst_names((tmp_path / "secure.md").read_text()) == (
        "Hash-checking Mode", {"hash-checking mode": "Hash-checking Mode"})


def test_myst_references_review_cases(tmp_path: Path) -> None:
    """A review's cases, each checked against Sphinx 9 with MyST-Parser 5: references inside
    an admonition's fence are read (a code fence's are not); a title with markup shows its
    words; inline code stays; `[](page.md#label)` is the label's title, `project:` a page;
    an underlined heading is a title; outside a Sphinx project `[](page.md)` stays (the site
    shows an empty link as nothing) while `{ref}` is still read."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "conf.py").write_text("")
    (proj / "other.md").write_text("Other page\n==========\n\n(inst)=\n## The `attrs` {py:class}`~a.Foo` "
                                       "[guide](https://x.org) ##\n\nText.\n")
    page = proj / "page.md"
    page.write_text("# Page\n\n```{note}\nSee {ref}`inst`.\n```\n\n```md\n{ref}`inst`\n```\n\n"
                    "Code `[](#inst)` and [](other.md#inst), [](other.md#nowhere), <project:other.md>, "
                    "[](project:other.md), {doc}`other`.\n")
    text = read_document(page).text
    assert "See The attrs Foo guide." in text and "```md\n{ref}`inst`\n```" in text
    assert ("Code `[](#inst)` and The attrs Foo guide, [](other.md#nowhere), Other page, Other page, "
            "Other page.") in text
    plain = tmp_path / "site"
    plain.mkdir()
    (plain / "a.md").write_text("# A page\n\n(x)=\n## Part\n")
    (plain / "b.md").write_text("# B\n\nSee [](a.md) and {ref}`x`.\n")
    assert "See [](a.md) and Part." in read_document(plain / "b.md").text
