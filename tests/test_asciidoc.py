"""AsciiDoc (Asciidoctor, Antora) read as Markdown, as the built page reads: code listings as
code blocks, tables as tables, admonitions and titles as bold lines, links and cross
references as their text, attribute entries, comments and includes gone."""

from __future__ import annotations

from pathlib import Path

from agentic_rag import AgenticChunker, read_document
from agentic_rag.config import ChunkingConfig
from agentic_rag.ingest.asciidoc import asciidoc_to_markdown
from agentic_rag.ingest.readers import iter_document_paths

PAGE = """= Process AsciiDoc Using the API
Dan Allen <dan@example.org>
v2.0, 2024-01-01
:description: How to call Asciidoctor from Ruby.
:url-api: https://example.org/api
:release: 2.0.23
// a comment nobody sees

Asciidoctor provides a {url-api}[Ruby API^] (version {release}), see xref:cli:index.adoc[the CLI]
and <<entrypoints,its entrypoints>>.

[#entrypoints]
== API entrypoints

.Load a file
[source,ruby]
----
doc = Asciidoctor.load_file 'my.adoc' # <1>
----
<1> Returns a `Document`.

NOTE: Attribute names must be Strings.

[TIP]
.Faster
====
Pass `safe: :unsafe`.
====

////
A block comment.
////

include::partial$footer.adoc[]

`Asciidoctor.load`:: parses the source
* one
** nested
. first step

 $ asciidoctor -a toc doc.adoc

.Options
[cols="1,2",options="header"]
|===
|Name |Effect

|`safe`
|The safe mode
|`to_file` |Where to write
|===
"""


def test_a_page_reads_as_the_built_page() -> None:
    text, title, fields = asciidoc_to_markdown(PAGE)
    assert title == "Process AsciiDoc Using the API"
    assert fields == {"description": "How to call Asciidoctor from Ruby."}
    assert text.startswith("# Process AsciiDoc Using the API\n\nHow to call Asciidoctor from Ruby.\n")
    assert "Dan Allen" not in text and "v2.0" not in text and ":release:" not in text
    assert "comment" not in text and "include::" not in text and "footer" not in text
    assert ("Asciidoctor provides a [Ruby API](https://example.org/api) (version 2.0.23), see "
            "the CLI\nand its entrypoints.") in text
    assert "## API entrypoints\n" in text and "[#entrypoints]" not in text
    assert "**Load a file**\n```ruby\ndoc = Asciidoctor.load_file 'my.adoc' # <1>\n```\n" in text
    assert "(1) Returns a `Document`." in text
    assert "**Note:** Attribute names must be Strings." in text
    assert "**Tip: Faster**\nPass `safe: :unsafe`.\n" in text
    assert "**`Asciidoctor.load`**: parses the source" in text
    assert "- one\n  - nested\n1. first step" in text
    assert "```text\n$ asciidoctor -a toc doc.adoc\n```" in text
    assert ("**Options**\n| Name | Effect |\n|---|---|\n| `safe` | The safe mode |\n"
            "| `to_file` | Where to write |\n") in text


def test_a_page_chunks_its_listing_as_code_and_its_table_as_a_table(tmp_path: Path) -> None:
    p = tmp_path / "docs" / "api.adoc"
    p.parent.mkdir()
    p.write_text(PAGE, encoding="utf-8")
    assert [d for _, d in iter_document_paths([tmp_path / "docs"])] == ["docs/api.adoc"]
    doc = read_document(p)
    assert doc.title == "Process AsciiDoc Using the API"
    assert doc.metadata["converted_from"] == "asciidoc"
    chunks = AgenticChunker(ChunkingConfig(max_tokens=64)).chunk(doc)
    code = [c for c in chunks if "load_file" in c.text]
    assert code and code[0].chunk_type == "code"
    assert code[0].heading_path == "Process AsciiDoc Using the API > API entrypoints"
    assert any(c.chunk_type in ("table", "table_row") and "safe mode" in c.text for c in chunks)


def test_inline_macros_read_as_their_text_and_inline_code_is_kept() -> None:
    text, _, _ = asciidoc_to_markdown(
        "Press kbd:[Ctrl+T] then btn:[Save] in menu:File[Save As], see image:x.png[A diagram]"
        "footnote:[In 2.0.] and link:https://x.org/a[the site].\n"
        "A [.term]_template_ and #marked# text, issue #4402 and #4403; `xref:a.adoc[]` "
        "and `+{literal}+` stay.\n")
    assert text == ("Press Ctrl+T then Save in File > Save As, see A diagram (In 2.0.) and "
                    "[the site](https://x.org/a).\nA _template_ and marked text, issue #4402 and "
                    "#4403; `xref:a.adoc[]` and `{literal}` stay.\n")


def test_an_unclosed_block_and_unknown_attributes_do_not_lose_text() -> None:
    text, title, _ = asciidoc_to_markdown("Intro {undefined} here.\n\n----\ncode to the end\n")
    assert title == "" and text == "Intro {undefined} here.\n\n```\ncode to the end\n```\n"
    text, _, _ = asciidoc_to_markdown("====\nAn example never closed.\n\nStill here.\n")
    assert "An example never closed.\n\nStill here.\n" in text


def test_a_link_or_cross_reference_whose_text_wraps_a_line() -> None:
    text, _, _ = asciidoc_to_markdown("does not support link:https://x.org/log[binary\n"
                                      "log compression] nor xref:a.adoc#p[the connector\n"
                                      "property].\n\n----\nxref:kept.adoc[in code]\n----\n")
    assert text == ("does not support [binary\nlog compression](https://x.org/log) nor the "
                    "connector\nproperty.\n\n```\nxref:kept.adoc[in code]\n```\n")
    assert "xref:a.adoc" not in text and "xref:kept.adoc[in code]" in text


def test_deeper_sections_keep_their_level_and_a_title_needs_a_blank_line_above() -> None:
    text, _, _ = asciidoc_to_markdown("= T\n\n=== Sec\n\n[[deep]]\n==== Sub\nText\n== not a heading\n")
    assert "### Sec\n" in text and "#### Sub\n" in text and "Text\n== not a heading" in text
    text, title, _ = asciidoc_to_markdown("Preface.\n\n= Part\nline1\nline2\n")
    assert title == "" and "# Part\n" in text and "line1\nline2" in text
    text, _, _ = asciidoc_to_markdown("= Whats new\n\nAll releases.\n\n= Release 2.0.19\n\n== Fixes\n")
    assert "# Whats new\n" in text and "## Release 2.0.19\n" in text and "## Fixes\n" in text


def test_code_paragraphs_and_literal_paragraphs_after_a_continuation() -> None:
    text, _, _ = asciidoc_to_markdown("[source,yaml]\nkind: Debezium\n  - name: x\n\nAfter.\n\n"
                                      "* Install it:\n+\n $ gem install coderay\n\n[stem]\n++++\n"
                                      "sqrt(4) = 2\n++++\n")
    assert "```yaml\nkind: Debezium\n  - name: x\n```\n\nAfter." in text
    assert "- Install it:\n\n```text\n$ gem install coderay\n```" in text
    assert "```math\nsqrt(4) = 2\n```" in text


def test_tables_read_their_column_specs_spans_csv_comments_and_escaped_pipes() -> None:
    text, _, _ = asciidoc_to_markdown(
        '[cols="2*"]\n|===\n|a |b\n// a comment\n|c |d\n|===\n\n'
        "|===\n^|CLI ^|API |More\n\n|x 2+|spans two\n|a \\| b |c |d\n|===\n\n"
        '[format=csv]\n|===\nName,Age\n"Doe, J",42\n|===\n')
    assert "| a | b |\n|---|---|\n| c | d |\n" in text and "comment" not in text
    assert "| CLI | API | More |\n|---|---|---|\n| x | spans two |  |\n| a \\| b | c | d |" in text
    assert "| Name | Age |\n|---|---|\n| Doe, J | 42 |" in text


def test_builder_syntax_goes_and_attributes_read() -> None:
    text, _, _ = asciidoc_to_markdown(
        ":product!:\ntoc::[]\n\n[[prop-name]]<<prop-name,`name`>>{nbsp}is the {prodname} "
        "name, written `+{prodname}+` or +{prodname}+; https://x.org[\"Quoted, text\"] and "
        "stem:[x^2].\n\nifdef::community[]\nCommunity only.\nendif::community[]\n"
        "ifdef::product[]\nProduct only.\nendif::product[]\nifndef::product[Not a product.]\n\n"
        '[quote,Abraham Lincoln]\n____\nFour score.\n____\n',
        attributes={"prodname": "Debezium", "community": "", "product": ""})
    assert "toc::" not in text and "[[prop-name]]" not in text and "<<" not in text
    assert "`name`\u00a0is the Debezium name, written `{prodname}` or {prodname};" in text
    assert '[Quoted, text](https://x.org)' in text and "x^2." in text
    assert "Community only." in text and "Product only." not in text
    assert "Not a product." in text
    assert "Four score.\n\n— Abraham Lincoln" in text


def test_a_folder_reads_its_antora_component_attributes(tmp_path: Path) -> None:
    root = tmp_path / "documentation"
    page = root / "modules" / "ROOT" / "pages" / "mysql.adoc"
    page.parent.mkdir(parents=True)
    (root / "antora.yml").write_text("name: reference\nasciidoc:\n  attributes:\n"
                                     "    prodname: Debezium\n    xrefstyle: short@\n"
                                     "    community: true\n    product: false\n")
    page.write_text("= {prodname} connector for MySQL\n\nifdef::community[]\nOpen.\n"
                    "endif::[]\nifdef::product[]\nPaid.\nendif::[]\n")
    doc = read_document(page)
    assert doc.title == "Debezium connector for MySQL"
    assert "Open." in doc.text and "Paid." not in doc.text


def test_an_antora_sites_navigation_is_not_a_document(tmp_path: Path) -> None:
    pages = tmp_path / "docs" / "modules" / "api" / "pages"
    pages.mkdir(parents=True)
    (pages / "index.adoc").write_text("= API\n\nText.\n")
    (pages.parent / "nav.adoc").write_text("* xref:index.adoc[]\n")
    (pages.parent.parent / "ROOT").mkdir()
    (pages.parent.parent / "ROOT" / "nav-top.adoc").write_text("* xref:a.adoc[]\n")
    assert [d for _, d in iter_document_paths([tmp_path / "docs"])] == \
        ["docs/modules/api/pages/index.adoc"]


def test_block_attributes_and_a_title_wait_past_a_blank_line() -> None:
    text, _, _ = asciidoc_to_markdown("[source,ruby]\n\n----\nputs 1\n----\n\n.Example\n\n"
                                      "----\nx\n----\n\n[literal]\n\n")
    assert "```ruby\nputs 1\n```" in text and "**Example**\n```\nx\n```" in text
    text, title, _ = asciidoc_to_markdown("= Guide\nifdef::product[]\nProduct intro.\n"
                                          "endif::[]\n\nBody.\n")
    assert title == "Guide" and "Product intro." not in text and "Body." in text
