"""`:ref:` and `:doc:` to other pages of a Sphinx project show their titles, as Sphinx
resolves them at build time (`ingest.sphinx_site`, `ingest.sphinx.SiteNames`)."""

from __future__ import annotations

import os
from pathlib import Path

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
    site = site_names(page)  # the build folder's copy of the label is not a page
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
