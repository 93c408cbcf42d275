"""The reading studies' library part (`studies.reading_arms`, used by experiments/tune/): the
two readings of a folder and what each leaves of a site builder's syntax, the peer reading by
Sphinx's text builder and its word overlap, a role as the HTML page prints it, what a PDF
reading recovers of the HTML one, a text pass's unchanged files, and the split comparison."""

from __future__ import annotations

import pytest

from agentic_rag.studies import reading_arms as ra


def test_readings_and_their_leftovers(tmp_path) -> None:  # noqa: ANN001
    (tmp_path / "a.mdx").write_text("---\ntitle: Tabs\n---\nimport { Tabs } from 'x';\n\n# Tabs\n\n"
                                    "Use <Tabs> to group.\n\n:::note\nA note.\n:::\n")
    (tmp_path / "b.adoc").write_text("= Guide\n\nSee xref:other.adoc[the other page].\n\n"
                                     "NOTE: careful.\n")
    (tmp_path / "c.rst").write_text("Title\n=====\n\nCall :func:`os.getenv`.\n\n.. note::\n\n"
                                    "   Mind it.\n")
    arms = ra.readings(tmp_path)
    assert [d.title for d in arms["raw"]] == ["title: Tabs", "= Guide", "Title"]
    assert [d.title for d in arms["site"]] == ["Tabs", "Guide", "Title"]
    raw, site = ra.leftovers(arms["raw"]), ra.leftovers(arms["site"])
    assert {k: v for k, v in raw["with leftovers"].items() if v} == {
        "esm": 1, "component tag": 1, "front matter": 1, "admonition fence": 1,
        "asciidoc macro": 1, "asciidoc section title": 1, "asciidoc admonition label": 1,
        "rst role": 1, "rst explicit markup": 1}
    assert (raw["documents"], raw["chunks"], raw["any leftover"],
            raw["titles that are front matter"]) == (3, 4, 4, 1)
    assert (site["chunks"], site["any leftover"], site["titles that are front matter"]) == (3, 0, 0)
    assert set(site["with leftovers"].values()) == {0} and site["by_type"] == {"prose": 3}


def test_words_overlap_and_the_sphinx_peer(tmp_path) -> None:  # noqa: ANN001
    assert ra.words("Use os.getenv, os.GETENV!") == {"os": 2, "getenv": 2, "use": 1}
    assert ra.overlap(ra.words("a a b c"), ra.words("a b b d")) == (0.5, 0.5)
    assert ra.peer_suffixes(False) == (".rst", ".rst.txt")
    assert ra.peer_suffixes(True) == (".rst", ".rst.txt", ".md")
    assert ra._without_index("Top\n\n.. index::\n   single: x\n   pair: y\n\nText\n") == \
        "Top\n\nText\n"
    pytest.importorskip("sphinx")
    page = tmp_path / "c.rst"
    page.write_text("Title\n=====\n\nCall :func:`os.getenv`.\n\n.. note::\n\n   Mind it.\n")
    assert ra.sphinx_text(tmp_path, [page]) == {
        page: 'Title\n*****\n\nCall "os.getenv()".\n\nNote:\n\n  Mind it.\n'}


def test_rendered_recovered_and_unchanged(tmp_path) -> None:  # noqa: ANN001
    assert ra.rendered(":exc:`KeyError`, :func:`~os.path.join`, ``x``, :ref:`text <label>`") == \
        "KeyError, join, x, text"
    html = ("# Intro\n\nThe quick brown fox jumps over it.\n\nA short one.\n\n"
            "```\nprint(1)\nprint(2)\n```\n")
    assert ra.recovered("# Intro\n\nThe  quick brown fox jumps over it. print(1)", html) == {
        "pdf_headings": 1, "pdf_headings_in_html": 1, "html_sentences": 1, "found_in_pdf": 1,
        "share": 1.0, "not_found_examples": [], "html_code_lines": 2, "code_lines_in_pdf": 1,
        "code_not_found": ["print(2)"]}
    same, other = tmp_path / "x.md", tmp_path / "y.md"
    same.write_text("same\n")
    other.write_text("one\ntwo\n")
    assert ra.unchanged_by(lambda t: t.replace("two", "2"), [same, other]) == {
        "files": 2, "changed": 1, "changes": {str(other): "two"}}


def test_compare_splits() -> None:
    def rows(values: tuple) -> list[dict]:
        return [{"split": s, "answer@5": v, "loose answer@5": v, "ndcg@10": v}
                for s, v in zip(("dev", "test", "test"), values)]
    out = ra.compare_splits(rows((1.0, 0.0, 1.0)), rows((1.0, 1.0, 1.0)), ("x", "y"))
    assert list(out) == ["all", "test"] and out["test"]["questions"] == 2
    assert out["test"]["answer@5"]["x"] == 0.5 and out["test"]["answer@5"]["y_minus_x"]["diff"] == 0.5
    assert out["all"] == ra.compare(rows((1.0, 0.0, 1.0)), rows((1.0, 1.0, 1.0)), ("x", "y"))
    # only test questions (or none): no separate test part
    assert list(ra.compare_splits(rows((1.0, 0.0, 1.0))[1:], rows((1.0, 1.0, 1.0))[1:])) == ["all"]
