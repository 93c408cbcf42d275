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
