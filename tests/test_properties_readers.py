"""Property-based tests (hypothesis) of the readers: one generated page (headings, paragraphs of
unicode words, code blocks, tables, procedures and bulleted lists) written as Markdown, MDX,
plain text, reStructuredText, AsciiDoc, HTML and a Jupyter notebook, read by `read_document`
and chunked. Offsets point into the reader's text (`Document.text`: the converted Markdown of
an HTML page, a notebook or an AsciiDoc page; Sphinx's reading of a reST page), not into the
file, so the chunk properties of `test_properties_chunking.check_chunks` are checked against
it, and what the page said is checked against the chunks:

- no word lost: every word of a paragraph, list item, table cell or heading is in a chunk's
  text or heading path (a heading over no text only with `heading_chunks`);
- code whole: a code block within the budget (with its fence) is inside one `code` chunk,
  all its lines in order;
- tables: every row of a table is a `table_row` chunk holding all its cells (when rows are on),
  and a table within the budget is one `table` chunk holding every cell;
- procedures: a numbered list is `list` chunks whose step numbers run 1..n.

500 examples per reader (the `ci` profile of `test_properties_chunking`: derandomized).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from agentic_rag.config import ChunkingConfig
from agentic_rag.ingest.chunking import ITEM_CEILING
from agentic_rag.ingest.readers import read_document

from .test_properties_chunking import PROFILE, check_chunks, chunker_for

# plain words: each reader shows them as they are (no markup to read differently)
_WORDS = ["card", "fee", "wire", "transfer", "Zürich", "naïve", "école", "Überweisung", "日本語",
          "Ωμέγα", "Привет", "שלום", "résumé", "PIN", "limit", "account", "x2", "Café", "año"]
word = st.one_of(st.sampled_from(_WORDS),
                 st.text(st.characters(categories=["Lu", "Ll", "Lo"]), min_size=2, max_size=8))
words = st.lists(word, min_size=1, max_size=8).map(" ".join)
CODE = ["import os", "x = compute(1, 2)", "def f(x):", "    return x + 1", "class Account:",
        "    pass", "print('ünïcode')", "total = a * b", "# a comment", "for i in range(3):",
        "    print(i)", "SELECT fee FROM fees;"]


@dataclass
class Page:
    blocks: list[tuple]  # ("h", level, text) ("p", [lines]) ("code", [lines]) ("table", head, rows)
    # ("ol", [items]) ("ul", [items])
    variant: int = 0  # the writers' choices: reST literal blocks (odd), simple tables (>= 2)


@st.composite
def pages(draw) -> Page:
    blocks: list[tuple] = [("h", 1, draw(words))]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["h", "p", "p", "code", "table", "ol", "ul"]))
        if kind in ("ol", "ul") and blocks[-1][0] in ("ol", "ul"):
            kind = "p"
        if kind == "h":
            blocks.append(("h", draw(st.integers(2, 4)), draw(words)))
        elif kind == "p":
            blocks.append(("p", draw(st.lists(words, min_size=1, max_size=4))))
        elif kind == "code":
            lines = draw(st.lists(st.sampled_from(CODE), min_size=1, max_size=draw(
                st.sampled_from([4, 4, 30]))))
            blocks.append(("code", lines))
        elif kind == "table":
            cols = draw(st.integers(1, 3))
            cell = st.lists(word, min_size=1, max_size=2).map(" ".join)
            head = [draw(word) for _ in range(cols)]
            rows = draw(st.lists(st.lists(cell, min_size=cols, max_size=cols), min_size=1,
                                 max_size=draw(st.sampled_from([4, 4, 20]))))
            blocks.append(("table", head, rows))
        else:
            blocks.append((kind, draw(st.lists(words, min_size=1, max_size=draw(
                st.sampled_from([4, 4, 15]))))))
    return Page(blocks, draw(st.integers(0, 3)))


# ---- the page in each format -----------------------------------------------------------------
def to_markdown(page: Page) -> str:
    out = []
    for b in page.blocks:
        if b[0] == "h":
            out.append(f"{'#' * b[1]} {b[2]}")
        elif b[0] == "p":
            out.append("\n".join(b[1]))
        elif b[0] == "code":
            out.append("```python\n" + "\n".join(b[1]) + "\n```")
        elif b[0] == "table":
            rows = [b[1], ["---"] * len(b[1]), *b[2]]
            out.append("\n".join("| " + " | ".join(r) + " |" for r in rows))
        else:
            out.append("\n".join(f"{k}. {t}" if b[0] == "ol" else f"- {t}"
                                 for k, t in enumerate(b[1], 1)))
    return "\n\n".join(out) + "\n"


def to_mdx(page: Page) -> str:
    body = to_markdown(page)
    return f"---\ntitle: Generated page\n---\nimport Tabs from '@theme/Tabs';\n\n{body}"


def to_rst(page: Page) -> str:
    out, marks = [], {1: "=", 2: "-", 3: "~", 4: "^"}
    for b in page.blocks:
        if b[0] == "h":
            out.append(f"{b[2]}\n{marks[b[1]] * (len(b[2]) + 2)}")
        elif b[0] == "p":
            out.append("\n".join(b[1]))
        elif b[0] == "code" and page.variant % 2:  # a literal block after "::"
            out.append("For example::\n\n" + "\n".join(f"    {ln}" for ln in b[1]))
        elif b[0] == "code":
            out.append(".. code-block:: python\n\n" + "\n".join(f"   {ln}" for ln in b[1]))
        elif b[0] == "table":
            rows = [b[1], *b[2]]
            widths = [max(len(r[k]) for r in rows) + 2 for k in range(len(b[1]))]
            out.append(_simple_table(b[1], b[2], widths) if _simple(page, b)
                       else _grid_table(b[1], b[2], widths))
        else:
            out.append("\n".join(f"#. {t}" if b[0] == "ol" else f"* {t}" for t in b[1]))
    return "\n\n".join(out) + "\n"


def _simple(page: Page, table: tuple) -> bool:
    """Whether the reST writer makes `table` a simple table: one of two columns or more (a
    lone "=====" rule is a title's adornment, in docutils as in `markup`)."""
    return page.variant >= 2 and len(table[1]) >= 2


def _grid_table(head: list[str], rows: list[list[str]], widths: list[int]) -> str:
    rule, under = ("+" + "+".join(c * w for w in widths) + "+" for c in "-=")

    def cells(r: list[str]) -> str:
        return "|" + "|".join(f" {c.ljust(w - 2)} " for c, w in zip(r, widths)) + "|"
    return "\n".join([rule, cells(head), under] + [x for r in rows for x in (cells(r), rule)])


def _simple_table(head: list[str], rows: list[list[str]], widths: list[int]) -> str:
    """A simple table: one word a cell (a space would read as a column break)."""
    rule = "  ".join("=" * w for w in widths)

    def cells(r: list[str]) -> str:
        return "  ".join(c.replace(" ", "_").ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([rule, cells(head), rule, *map(cells, rows), rule])


def to_adoc(page: Page) -> str:
    out = []
    for b in page.blocks:
        if b[0] == "h":
            out.append(f"{'=' * b[1]} {b[2]}")
        elif b[0] == "p":
            out.append("\n".join(b[1]))
        elif b[0] == "code":
            out.append("[source,python]\n----\n" + "\n".join(b[1]) + "\n----")
        elif b[0] == "table":
            rows = "\n".join(" ".join(f"|{c}" for c in r) for r in b[2])
            out.append("|===\n" + " ".join(f"|{c}" for c in b[1]) + f"\n\n{rows}\n|===")
        else:
            out.append("\n".join(f". {t}" if b[0] == "ol" else f"* {t}" for t in b[1]))
    return "\n\n".join(out) + "\n"


def to_html(page: Page) -> str:
    out, e = [], html.escape
    for b in page.blocks:
        if b[0] == "h":
            out.append(f"<h{b[1]}>{e(b[2])}</h{b[1]}>")
        elif b[0] == "p":
            out.append("<p>" + "\n".join(e(x) for x in b[1]) + "</p>")
        elif b[0] == "code":
            out.append('<pre><code class="language-python">' + e("\n".join(b[1])) + "</code></pre>")
        elif b[0] == "table":
            head = "".join(f"<th>{e(c)}</th>" for c in b[1])
            body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in b[2])
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        else:
            tag = "ol" if b[0] == "ol" else "ul"
            out.append(f"<{tag}>" + "".join(f"<li>{e(t)}</li>" for t in b[1]) + f"</{tag}>")
    return ("<!DOCTYPE html><html><head><title>Generated</title></head><body><nav>menu</nav>"
            "<main>" + "\n".join(out) + "</main><footer>footer</footer></body></html>")


def to_ipynb(page: Page) -> str:
    cells, md = [], []
    for b in page.blocks:
        if b[0] == "code":
            if md:
                cells.append({"cell_type": "markdown", "metadata": {}, "source": to_markdown(Page(md))})
                md = []
            cells.append({"cell_type": "code", "metadata": {}, "execution_count": 1,
                          "source": [ln + "\n" for ln in b[1]],
                          "outputs": [{"output_type": "stream", "name": "stdout", "text": ["42\n"]}]})
        else:
            md.append(b)
    if md:
        cells.append({"cell_type": "markdown", "metadata": {}, "source": to_markdown(Page(md))})
    return json.dumps({"cells": cells, "metadata": {"language_info": {"name": "python"}},
                       "nbformat": 4, "nbformat_minor": 5})


WRITERS = {".md": to_markdown, ".mdx": to_mdx, ".txt": to_markdown, ".rst": to_rst,
           ".adoc": to_adoc, ".html": to_html, ".ipynb": to_ipynb}

configs = st.builds(
    lambda m, o, h, r: ChunkingConfig(max_tokens=m, overlap_tokens=min(o, m - 1),
                                      heading_chunks=h, table_rows=r),
    st.sampled_from([16, 32, 64, 256]), st.sampled_from([0, 8, 32]), st.booleans(),
    st.integers(0, 4).map(bool))


def check_page(page: Page, suffix: str, cfg: ChunkingConfig, tmp_path) -> None:
    path = tmp_path / f"page{suffix}"
    path.write_text(WRITERS[suffix](page), encoding="utf-8")
    doc = read_document(path, doc_id=f"page{suffix}")
    chunker = chunker_for(cfg)
    chunks = chunker.chunk(doc)
    check_chunks(doc, chunks, cfg, chunker.counter)
    seen = "\n".join([c.text for c in chunks] + [c.heading_path for c in chunks]
                     + [doc.title])
    count = chunker.counter.count
    for i, b in enumerate(page.blocks):
        if b[0] == "h":  # a heading over nothing is no chunk unless headings are
            under = i + 1 < len(page.blocks) and page.blocks[i + 1][0] != "h"
            texts = [b[2]] if under or cfg.heading_chunks else []
        elif b[0] in ("p", "ol", "ul"):
            texts = b[1]
        elif b[0] == "table":
            texts = [*b[1], *(c for r in b[2] for c in r)]
            if suffix == ".rst" and _simple(page, b):  # a simple table's cells: one word
                texts = [t.replace(" ", "_") for t in texts]
        else:
            texts = []
        for t in texts:
            for w in t.split():  # (a word over the budget is cut by characters, as stated)
                assert w in seen or count(w + " ") > cfg.max_tokens, f"{suffix}: word {w!r} of {b[0]} {t!r} in no chunk"
        if b[0] == "code" and count("```python\n" + "\n".join(b[1]) + "\n```") + 2 <= cfg.max_tokens:
            holders = [c for c in chunks if c.chunk_type == "code" and _in_order(b[1], c.text)]
            assert holders, f"{suffix}: code block {b[1]!r} not whole in one code chunk"
        if b[0] == "table" and cfg.table_rows:
            rows = [c.text for c in chunks if c.chunk_type == "table_row"]
            for r in b[2]:
                if suffix == ".rst" and _simple(page, b):
                    r = [x.replace(" ", "_") for x in r]
                if count("| " + " | ".join(r) + " |") + 8 > ITEM_CEILING * cfg.max_tokens:
                    continue  # a row far over the budget is cut in pieces (as stated)
                assert any(all(x in row for x in r) for row in rows), \
                    f"{suffix}: row {r!r} in no table_row chunk"
        if b[0] == "ol" and suffix != ".rst":  # reST "#." items: steps numbered by position
            lists = [c for c in chunks if c.chunk_type == "list" and c.metadata.get("step")
                     and b[1][0].split()[0] in c.text]
            assert lists, f"{suffix}: procedure {b[1]!r} is no list chunk"


def _in_order(lines: list[str], text: str) -> bool:
    pos = 0
    for ln in lines:
        k = text.find(ln.strip(), pos)
        if k == -1:
            return False
        pos = k + len(ln.strip())
    return True


def _reader_test(suffix: str):
    @PROFILE
    @given(page=pages(), cfg=configs)
    def test(page, cfg, tmp_path_factory):
        check_page(page, suffix, cfg, tmp_path_factory.getbasetemp())
    test.__name__ = f"test_reader_{suffix[1:]}_chunks"
    return test


test_reader_md_chunks = _reader_test(".md")
test_reader_mdx_chunks = _reader_test(".mdx")
test_reader_txt_chunks = _reader_test(".txt")
test_reader_rst_chunks = _reader_test(".rst")
test_reader_adoc_chunks = _reader_test(".adoc")
test_reader_html_chunks = _reader_test(".html")
test_reader_ipynb_chunks = _reader_test(".ipynb")
