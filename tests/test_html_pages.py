"""HTML documentation pages read as Markdown: the main content only, and the agent-aware
chunker keeps their code blocks and tables whole, as it does for a Markdown file."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_rag import AgenticChunker, read_document
from agentic_rag.config import ChunkingConfig
from agentic_rag.ingest.html import html_to_markdown
from agentic_rag.ingest.readers import iter_document_paths

# the shape of a Sphinx page: a sidebar, a body with permalinks, a highlighted block, a table
SPHINX = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>retry — Retrying calls</title>
<script>var x = "never content";</script><style>.a{}</style></head><body>
<div class="related" role="navigation"><ul><li><a href="index.html">index</a></li></ul></div>
<div class="sphinxsidebar"><h3>Quick search</h3><form><input name="q"></form></div>
<div class="document"><div class="body" role="main">
<section id="retry"><h1>retry — Retrying calls<a class="headerlink" href="#retry">¶</a></h1>
<p>The <code class="docutils literal">retry</code> module calls a function again after
<em>transient</em> errors. See <a href="other.html">the other page</a>.</p>
<div class="highlight-python notranslate"><div class="highlight"><pre><span></span>
<span class="kn">from</span> <span class="nn">retry</span> <span class="kn">import</span> retry

<span class="nd">@retry</span>(tries=3, delay=0.5)
<span class="k">def</span> <span class="nf">fetch</span>():
    <span class="k">return</span> get(url)
</pre></div></div>
<section id="limits"><h2>Limits<a class="headerlink" href="#limits">¶</a></h2>
<table class="docutils"><thead><tr><th>Setting</th><th>Default</th></tr></thead>
<tbody><tr><td>tries</td><td>3</td></tr><tr><td>delay_max_s</td><td>60</td></tr></tbody></table>
<ol><li><p>Install the package.</p></li><li><p>Decorate the call.</p></li></ol>
</section></section></div></div>
<div class="footer">&copy; 2026 The Authors. Created using Sphinx.</div>
<footer>Built with care</footer></body></html>"""


def test_a_sphinx_page_keeps_its_content_and_drops_the_chrome():
    md = html_to_markdown(SPHINX)
    assert md.startswith("# retry — Retrying calls\n")
    assert "## Limits\n" in md and "¶" not in md
    for chrome in ("Quick search", "never content", "index", "Built with care", ".a{}"):
        assert chrome not in md, chrome
    assert ("The `retry` module calls a function again after *transient* errors. See the other "
            "page.") in " ".join(md.split())  # a paragraph keeps the page's line breaks
    fence = md[md.index("```python\n"):]
    assert "@retry(tries=3, delay=0.5)\ndef fetch():\n    return get(url)\n```" in fence
    assert "| Setting | Default |\n| --- | --- |\n| tries | 3 |\n| delay_max_s | 60 |" in md
    assert "1. Install the package.\n2. Decorate the call." in md


def test_an_html_file_is_read_and_chunked_as_markdown(tmp_path):
    page = tmp_path / "retry.html"
    page.write_text(SPHINX, encoding="utf-8")
    doc = read_document(page, "docs/retry.html")
    assert doc.title == "retry — Retrying calls"
    assert doc.metadata == {"converted_from": "html"} and doc.format == "markdown"
    chunks = AgenticChunker(ChunkingConfig(max_tokens=512, overlap_tokens=0)).chunk(doc)
    by_type = {c.chunk_type: c for c in chunks}
    code = by_type["code"]
    assert code.text.startswith("```python") and code.text.rstrip().endswith("```")
    assert "def fetch():" in code.text and code.heading_path.startswith("retry")
    assert "| tries | 3 |" in by_type.get("table", by_type.get("table_row")).text
    for c in chunks:  # offsets point into the converted text
        if c.chunk_type != "table_row":
            assert doc.text[c.start_char:c.end_char] == c.text


def test_the_page_declares_its_encoding():
    raw = ('<html><head><meta charset="iso-8859-1"></head><body><main><p>Caf\xe9 hours: 9\u201317'
           .encode("latin-1", errors="replace") + b"</p></main></body></html>")
    assert html_to_markdown(raw).strip() == "Café hours: 9?17"


def test_main_content_wins_over_the_page_around_it():
    page = ("<body><nav>Home | Docs</nav><div>Banner text</div><main><h2>Fees</h2>"
            "<p>A wire costs $15.00 [1].</p><aside class='footnote'><p>[1] Per transfer.</p></aside>"
            "<div role='navigation'>Previous | Next</div></main></body>")
    # docutils writes footnotes, sidebars and topics as <aside>: content, kept
    assert html_to_markdown(page) == "## Fees\n\nA wire costs $15.00 [1].\n\n[1] Per transfer.\n"
    # no main element: the body, still without its navigation
    assert html_to_markdown("<body><nav>Home</nav><p>Only text.</p></body>") == "Only text.\n"


def test_two_variants_of_one_block_stay_on_their_own_lines():
    page = ('<main><pre><code class="language-js cjs">const a = require("a");</code>'
            '<code class="language-js mjs">import a from "a";</code></pre></main>')
    assert html_to_markdown(page) == '```js\nconst a = require("a");\n\nimport a from "a";\n```\n'


def test_an_empty_page_is_an_empty_document_and_folders_take_html(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "redirect.htm").write_text(
        '<html><head><meta http-equiv="refresh" content="0; url=new.html"></head><body></body></html>')
    (tmp_path / "docs" / "page.html").write_text("<main><p>Text.</p></main>")
    (tmp_path / "docs" / "app.js").write_text("never a document")
    found = dict((did, f) for f, did in iter_document_paths([tmp_path / "docs"]))
    assert sorted(found) == ["docs/page.html", "docs/redirect.htm"]
    assert read_document(found["docs/redirect.htm"]).text == ""
    assert read_document(found["docs/page.html"]).text == "Text.\n"


def test_an_api_entry_is_a_heading_over_its_description_and_a_glossary_term_is_bold():
    page = """<main><h1>os</h1><dl class="py function"><dt class="sig sig-object py" id="os.getenv">
    <span class="sig-prename descclassname"><span class="pre">os.</span></span><span class="sig-name
    descname"><span class="pre">getenv</span></span><span class="sig-paren">(</span><em
    class="sig-param"><span class="n">key</span></em>, <em class="sig-param"><span
    class="n">default</span><span class="o">=</span><span class="default_value">None</span></em><span
    class="sig-paren">)</span><a class="headerlink" href="#os.getenv">¶</a></dt>
    <dd><p>Return the value of the environment variable <em>key</em>.</p>
    <div class="highlight-python3"><div class="highlight"><pre>os.getenv("HOME")</pre></div></div>
    <dl class="py method"><dt class="sig sig-object py"><span class="sig-name">inner</span>()</dt>
    <dd><p>Nested entry.</p></dd></dl></dd></dl>
    <dl class="glossary"><dt>BDFL</dt><dd><p>Benevolent dictator.</p></dd></dl></main>"""
    md = html_to_markdown(page)
    assert "#### os.getenv(key, default=None)\n\nReturn the value of the environment variable *key*." in md
    assert '```python3\nos.getenv("HOME")\n```' in md  # not indented: still a fence
    assert "##### inner()\n\nNested entry." in md
    assert "**BDFL**\n\nBenevolent dictator." in md


NODE_API = Path("/usr/share/doc/nodejs/api")


@pytest.mark.skipif(not (NODE_API / "path.html").exists(), reason="Debian's nodejs docs absent")
def test_a_real_page_gives_the_headings_of_its_markdown_source():
    """Node's HTML is rendered from the .md beside it: the same section headings, in order."""
    import re

    def headings(text: str) -> list[str]:
        return [re.sub(r"[`\\]", "", m).strip().lower()
                for m in re.findall(r"^#{1,6} (.+)$", text, re.M)]

    md = (NODE_API / "path.md").read_text(encoding="utf-8")
    html = read_document(NODE_API / "path.html").text
    assert headings(html) == headings(md)
    assert html.count("```js") >= 20


def test_a_word_document_reads_as_markdown_through_its_styles(tmp_path):
    import docx

    d = docx.Document()
    d.add_heading("Fee schedule", 1)
    d.add_paragraph("The Blue Account charges these fees.")
    d.add_heading("Wires", 2)
    table = d.add_table(rows=3, cols=2)  # a Word table has no header cells
    for r, (item, fee) in enumerate([("Item", "Fee"), ("Domestic wire", "$15.00"),
                                     ("International wire", "$45.00")]):
        table.cell(r, 0).text, table.cell(r, 1).text = item, fee
    d.add_paragraph("Open the app.", style="List Number")
    d.add_paragraph("Choose Transfer.", style="List Number")
    d.save(tmp_path / "fees.docx")
    doc = read_document(tmp_path / "fees.docx")
    assert doc.metadata == {"converted_from": "docx"} and doc.title == "Fee schedule"
    assert doc.text == ("# Fee schedule\n\nThe Blue Account charges these fees.\n\n## Wires\n\n"
                        "| Item | Fee |\n| --- | --- |\n| Domestic wire | $15.00 |\n"
                        "| International wire | $45.00 |\n\n1. Open the app.\n2. Choose Transfer.\n")
    chunks = AgenticChunker(ChunkingConfig(max_tokens=512, overlap_tokens=0)).chunk(doc)
    rows = [c for c in chunks if c.chunk_type == "table_row"]
    assert any("Domestic wire | $15.00" in c.text and c.heading_path == "Fee schedule > Wires"
               for c in rows + [c for c in chunks if c.chunk_type == "table"])
    (tmp_path / "old.docx").write_bytes(b"\xd0\xcf\x11\xe0 a Word 97 file, not a zip")
    from agentic_rag import DocumentError

    with pytest.raises(DocumentError, match=r"old\.docx: not a readable \.docx"):
        read_document(tmp_path / "old.docx")


def test_html_as_browsers_parse_it_and_text_that_looks_like_markdown():
    assert html_to_markdown("<ul><li>one<li>two<li>three</ul>") == "- one\n- two\n- three\n"
    assert html_to_markdown("<table><tr><th>a<th>b<tr><td>1<td>2</table>") == (
        "| a | b |\n| --- | --- |\n| 1 | 2 |\n")
    assert html_to_markdown("<table><tr><th>op<th>result<tr><td><code>x | y</code><td>or"
                            "</table>") == "| op | result |\n| --- | --- |\n| `x \\| y` | or |\n"
    # a line of text starting with "#" is no heading, nor "```" a fence
    assert html_to_markdown("<p>Install:<br># Modify this<br>```<br>x</p>") == (
        "Install:\n\\# Modify this\n\\```\nx\n")


def test_the_title_is_the_first_h1_not_the_navigation_bar(tmp_path):
    page = tmp_path / "fees.html"
    page.write_text("<html><head><title>Fees - Bank docs</title></head><body>"
                    "<div class='header'>Next: Loans, Up: Top [Index]</div>"
                    "<table class='nav'><tr><td>Prev</td><td>Bank docs</td></tr></table>"
                    "<h1>Fees<a class='headerlink' href='#fees'>¶</a></h1><p>A wire: $15.</p>"
                    "</body></html>")
    doc = read_document(page)
    assert doc.title == "Fees" and doc.text == "# Fees\n\nA wire: $15.\n"
    page.write_text("<html><head><title>Fees - Bank docs</title></head><body><p>A wire.</p>")
    assert read_document(page).title == "Fees - Bank docs"  # no <h1>: the <title>


def test_signatures_over_one_description_share_its_heading():
    page = ('<div class="body"><dl class="py method"><dt class="sig">bytes.expandtabs(tabsize=8)'
            '</dt><dt class="sig">bytearray.expandtabs(tabsize=8)</dt><dd><p>Return a copy.</p>'
            "</dd></dl></div>")
    assert html_to_markdown(page) == (
        "#### bytes.expandtabs(tabsize=8) / bytearray.expandtabs(tabsize=8)\n\nReturn a copy.\n")


def test_a_page_nested_too_deeply_is_named(tmp_path):
    from agentic_rag import DocumentError

    (tmp_path / "deep.html").write_text("<font size=2>word " * 600)
    with pytest.raises(DocumentError, match=r"deep\.html: nested too deeply"):
        read_document(tmp_path / "deep.html")


def test_a_built_sphinx_site_gives_its_pages_not_its_copies_or_generated_pages(tmp_path):
    site = tmp_path / "html"
    for rel in ("index.html", "library/os.html", "genindex.html", "genindex-A.html",
                "py-modindex.html", "search.html", "searchindex.js", "_sources/library/os.rst.txt",
                "_static/basic.css", "_static/doctools.html", "_modules/os.html",
                ".git/README.md", "node_modules/pkg/README.md"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text("<main><p>x</p></main>")
    assert sorted(d for _, d in iter_document_paths([site])) == [
        "html/index.html", "html/library/os.html"]
    # without searchindex.js it is no Sphinx site: a page named search.html is a document
    (site / "searchindex.js").unlink()
    assert "html/search.html" in {d for _, d in iter_document_paths([site])}


def test_a_sphinx_build_beside_its_sources_is_left_out_and_read_alone_it_is_the_site(tmp_path):
    docs = tmp_path / "docs"
    for rel in ("index.rst", "api.rst", "_build/html/index.html", "_build/html/api.html",
                "_build/html/searchindex.js", "_build/html/_sources/api.rst.txt",
                "blog/_site/post.html"):
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text("Title\n=====\n\ntext\n")
    assert sorted(d for _, d in iter_document_paths([docs])) == ["docs/api.rst", "docs/index.rst"]
    # the build folder alone, or a folder that holds nothing else: its pages are the documents
    assert sorted(d for _, d in iter_document_paths([docs / "_build"])) == [
        "_build/html/api.html", "_build/html/index.html"]
    for rel in ("index.rst", "api.rst"):
        (docs / rel).unlink()
    assert len(list(iter_document_paths([docs]))) == 3  # the two built pages and the post


def test_damaged_pages_and_word_files_are_named_and_legacy_pages_decode(tmp_path):
    import zipfile

    from agentic_rag import DocumentError

    with zipfile.ZipFile(tmp_path / "sheet.docx", "w") as z:  # an .xlsx renamed .docx
        z.writestr("xl/workbook.xml", "<workbook/>")
    with pytest.raises(DocumentError, match=r"sheet\.docx: not a readable \.docx"):
        read_document(tmp_path / "sheet.docx")
    (tmp_path / "image.html").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(DocumentError, match=r"image\.html: looks like a binary file"):
        read_document(tmp_path / "image.html")
    # no <meta charset> and not UTF-8: Windows-1252, as browsers read it, not a guess
    (tmp_path / "old.html").write_bytes("<p>café crème</p>".encode("latin-1"))
    assert read_document(tmp_path / "old.html").text == "café crème\n"
    (tmp_path / "wide.html").write_bytes(b"\xff\xfe" + "<p>UTF-16 page</p>".encode("utf-16-le"))
    assert read_document(tmp_path / "wide.html").text == "UTF-16 page\n"
