"""Markdown as documentation sites write it (front matter, admonitions, MDX components) and
Jupyter notebooks, read as plain Markdown: what a reader sees is kept, what only the site
builder reads is dropped, and a plain .md file reads exactly as it is written."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from agentic_rag import AgenticChunker, read_document
from agentic_rag.config import ChunkingConfig
from agentic_rag.documents import DocumentError
from agentic_rag.ingest.mdx import front_matter, site_markdown
from agentic_rag.ingest.notebook import OUTPUT_LINES, notebook_to_markdown
from agentic_rag.ingest.readers import iter_document_paths

# a Docusaurus page: front matter without a title, admonitions, heading ids, JSX comments
DOCUSAURUS = """---
sidebar_position: 4
last_update:
  date: 2026-03-01
tags: [setup, install]
---

# Install Widgets

Widgets installs with pip.

## Requirements {#reqs}

:::tip[Before you start]

Widgets needs Python 3.10 or later.

:::

Add `{/* #my-id */}` after a heading to set its id. {/* this comment is never shown */}

```md
:::note
kept: this is an example of the syntax
:::
```
"""

# a Starlight page: the title in front matter only, ESM, tabs, cards with nested attributes
STARLIGHT = """---
title: Getting Started
description: Start a new documentation site.
---

import { Tabs, TabItem, LinkCard } from '@astrojs/starlight/components';
export const Highlight = ({children}) => (
  <span style={{color: 'red'}}>{children}</span>
);

Create a new project:

<Tabs syncKey="pkg">
\t<TabItem label="npm">Run `npm create astro@latest` in a terminal.</TabItem>
\t<TabItem label="pnpm">

```sh
pnpm create astro --template starlight
```

\t</TabItem>
</Tabs>

<Aside type="caution" title="Node version">
Starlight needs Node.js 18.17.1 or later.
</Aside>

<LinkCard
\ttitle="Customizing Starlight"
\thref="/guides/customization/"
\tdescription="Make the site your own."
/>

<SidebarPreview config={[{ label: 'Guides', items: [{ label: 'A page', link: '' }] }]} />

This is <Highlight>important</Highlight> text.

```mdx
import { Tabs } from '@astrojs/starlight/components';

<Tabs><TabItem label="kept">inside a code block</TabItem></Tabs>
```
"""


def test_front_matter_gives_title_description_tags_and_last_update(tmp_path: Path) -> None:
    p = tmp_path / "start.mdx"
    p.write_text(STARLIGHT)
    doc = read_document(p)
    assert doc.title == "Getting Started"
    assert doc.metadata == {"description": "Start a new documentation site."}
    # the title as the page's H1, the description (the author's summary) under it
    assert doc.text.startswith("# Getting Started\n\nStart a new documentation site.\n\n"
                               "Create a new project:")
    assert "title:" not in doc.text and "---" not in doc.text

    q = tmp_path / "install.md"
    q.write_text(DOCUSAURUS)
    doc = read_document(q)
    assert doc.title == "Install Widgets"  # no title in the front matter: its own H1
    assert doc.metadata == {"tags": "setup, install", "last_updated": "2026-03-01"}
    assert doc.text.startswith("# Install Widgets\n") and doc.text.count("# Install Widgets") == 1


def test_toml_front_matter_and_what_is_not_front_matter() -> None:
    meta, body = front_matter('+++\ntitle = "Hugo page"\nlastmod = 2025-12-31\n+++\nText.\n')
    assert meta["title"] == "Hugo page" and meta["lastmod"] == date(2025, 12, 31)
    assert body == "Text.\n"
    text, fields = site_markdown('+++\ntitle = "Hugo page"\nlastmod = 2025-12-31\n+++\nText.\n')
    assert fields == {"title": "Hugo page", "last_updated": "2025-12-31"}
    assert text == "# Hugo page\n\nText.\n"
    # a thematic break opening a page, a paragraph, another break: not front matter
    for text in ("---\nSome words here.\n---\nMore.\n", "---\n- a list\n---\n",
                 "---\nkey: [unclosed\n---\nx\n"):
        assert front_matter(text) == ({}, text)
        assert site_markdown(text)[0] == text


def test_a_plain_markdown_file_reads_exactly_as_written(tmp_path: Path) -> None:
    text = ("# Title\n\n\n\nText with `<Component>` and {braces} and a :::colon.\n\n"
            "<!-- a comment -->\n\n    indented\n\n---\n\nimport this line stays in .md\n")
    p = tmp_path / "plain.md"
    p.write_text(text)
    doc = read_document(p)
    assert doc.text == text and doc.title == "Title" and doc.metadata == {}


def test_admonitions_and_heading_ids_read_as_their_text() -> None:
    text, _ = site_markdown(DOCUSAURUS)
    assert "**Tip: Before you start**\n\nWidgets needs Python 3.10 or later." in text
    assert "## Requirements\n" in text and "{#reqs}" not in text
    assert ":::tip" not in text
    assert ":::note\nkept: this is an example" in text  # inside a code block: untouched
    # .md keeps what looks like JSX: only MDX reads it as such
    assert "{/* this comment is never shown */}" in text

    mkdocs = ('Intro.\n\n!!! warning "Data loss"\n    Back up first.\n\n    ```bash\n'
              '    cp -r data data.bak\n    ```\n\nAfter.\n')
    out, _ = site_markdown(mkdocs)
    assert out == ("Intro.\n\n**Warning: Data loss**\nBack up first.\n\n```bash\n"
                   "cp -r data data.bak\n```\n\nAfter.\n")
    chunks = AgenticChunker(ChunkingConfig(max_tokens=64)).chunk(
        read_document_text(out))
    assert [c.text for c in chunks if c.chunk_type == "code"] == [
        "```bash\ncp -r data data.bak\n```"]


def read_document_text(text: str):  # noqa: ANN201 - a Document from text, as the reader makes
    from agentic_rag.documents import Document

    return Document(id="page", text=text, title="page")


def test_mdx_components_keep_what_a_reader_sees() -> None:
    text, fields = site_markdown(STARLIGHT, mdx=True)
    assert fields["title"] == "Getting Started"
    assert "import " not in text.split("```mdx")[0]  # ESM gone outside code
    assert "export const" not in text and "<span" not in text
    assert "**npm**: Run `npm create astro@latest` in a terminal." in text
    assert "**pnpm**\n\n```sh\npnpm create astro --template starlight\n```" in text
    assert "**Caution: Node version**\nStarlight needs Node.js 18.17.1 or later." in text
    assert "**Customizing Starlight** — Make the site your own." in text
    assert "SidebarPreview" not in text and "A page" not in text  # data, not text
    assert "This is important text." in text
    assert "<Tabs" not in text.split("```mdx")[0] and "</" not in text.split("```mdx")[0]
    # the example inside a fenced block is the page's content: kept verbatim
    assert text.endswith("```mdx\nimport { Tabs } from '@astrojs/starlight/components';\n\n"
                         "<Tabs><TabItem label=\"kept\">inside a code block</TabItem></Tabs>\n```\n")
    text, _ = site_markdown(DOCUSAURUS, mdx=True)
    assert "never shown" not in text and "`{/* #my-id */}`" in text  # inline code kept


def test_mdx_chunks_carry_the_front_matter_title_in_their_heading_path(tmp_path: Path) -> None:
    p = tmp_path / "guide.mdx"
    p.write_text(STARLIGHT.replace("Create a new project:", "## Create\n\nCreate a new project:"))
    chunks = AgenticChunker(ChunkingConfig(max_tokens=64)).chunk(read_document(p))
    create = [c for c in chunks if "pnpm create" in c.text]
    assert create and create[0].chunk_type == "code"
    assert create[0].heading_path == "Getting Started > Create"
    assert all(c.metadata["title"] == "Getting Started" for c in chunks)


def _notebook(cells: list[dict], **meta) -> bytes:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "cells": cells,
                       "metadata": meta}).encode()


def test_a_notebook_reads_as_markdown_with_code_and_short_outputs(tmp_path: Path) -> None:
    many = "".join(f"line {i}\n" for i in range(OUTPUT_LINES + 5))
    raw = _notebook([
        {"cell_type": "markdown", "source": ["# Retry calls\n", "\n", "Call `retry` on errors."]},
        {"cell_type": "code", "source": "from retry import retry\nprint(retry.DEFAULT_TRIES)",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["\x1b[32m3\x1b[0m\n"]}]},
        {"cell_type": "code", "source": "plot()", "outputs": [
            {"output_type": "display_data",
             "data": {"image/png": "iVBOR...", "text/plain": "<Figure size 640x480>"}}]},
        {"cell_type": "code", "source": "table", "outputs": [
            {"output_type": "execute_result", "data": {"text/plain": many}}]},
        {"cell_type": "code", "source": "", "outputs": []},
    ], language_info={"name": "python"})
    text, title = notebook_to_markdown(raw)
    assert title == "Retry calls"
    assert text.startswith("# Retry calls\n\nCall `retry` on errors.\n\n```python\n"
                           "from retry import retry\nprint(retry.DEFAULT_TRIES)\n```\n\n"
                           "```text\n3\n```\n\n```python\nplot()\n```\n\n```python\ntable\n```")
    assert "Figure" not in text  # an image's repr is not text
    assert f"line {OUTPUT_LINES - 1}\n... (5 more lines)\n```" in text
    assert f"line {OUTPUT_LINES}\n" not in text

    p = tmp_path / "retry.ipynb"
    p.write_bytes(raw)
    doc = read_document(p)
    assert doc.title == "Retry calls" and doc.metadata == {"converted_from": "ipynb"}
    chunks = AgenticChunker(ChunkingConfig(max_tokens=64)).chunk(doc)
    assert "```python\nfrom retry import retry\nprint(retry.DEFAULT_TRIES)\n```" in [
        c.text for c in chunks if c.chunk_type == "code"]


@pytest.mark.parametrize(("raw", "says"), [
    (b"not json", "not JSON"),
    (json.dumps({"nbformat": 3, "worksheets": []}).encode(), "nbformat 3"),
    (json.dumps([1, 2]).encode(), "no 'cells' list"),
])
def test_a_bad_notebook_is_refused_by_name(tmp_path: Path, raw: bytes, says: str) -> None:
    p = tmp_path / "broken.ipynb"
    p.write_bytes(raw)
    with pytest.raises(DocumentError, match=rf"broken\.ipynb: .*{says}"):
        read_document(p)


def test_a_folder_walk_takes_mdx_and_notebooks_but_not_checkpoints(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.mdx").write_text("# A\n")
    (tmp_path / "docs" / "b.ipynb").write_bytes(_notebook([]))
    (tmp_path / "docs" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "docs" / ".ipynb_checkpoints" / "b-checkpoint.ipynb").write_bytes(_notebook([]))
    (tmp_path / "docs" / "c.astro").write_text("<div/>")
    names = sorted(p.name for p, _ in iter_document_paths([tmp_path]))
    assert names == ["a.mdx", "b.ipynb"]


def test_hugo_shortcodes_read_as_their_text() -> None:
    page = ('---\ntitle: Pods\n---\n\nA {{< glossary_tooltip text="Pod" term_id="pod" >}} runs '
            'containers. {{< new-in 0.120.0 >}}\n\n{{< note >}}\nPods are ephemeral.\n'
            '{{< /note >}}\n\n{{% tab name="Linux" %}}\nRun it.\n{{% /tab %}}\n\n'
            '{{< code-toggle file=hugo >}}\n[security]\nenable = true\n{{< /code-toggle >}}\n\n'
            'Write `{{< note >}}` for a note; {{</* audio src=/a.mp3 */>}} shows one.\n\n'
            '```go-html-template\n{{< youtube abc >}}\n```\n')
    text, fields = site_markdown(page)
    assert fields == {"title": "Pods"}
    assert text.startswith("# Pods\n\nA Pod runs containers. new-in 0.120.0\n")
    assert "**Note**\nPods are ephemeral." in text
    assert "**Linux**\nRun it." in text
    assert "code-toggle" not in text and "\n[security]\nenable = true\n" in text
    assert "Write `{{< note >}}` for a note; {{< audio src=/a.mp3 >}} shows one." in text
    assert text.endswith("```go-html-template\n{{< youtube abc >}}\n```\n")
    assert "{{</" not in text and "{{%" not in text


def test_mkdocs_content_tabs_and_nested_admonitions_are_dedented() -> None:
    page = ('Intro.\n\n=== "Python"\n\n    ```python\n    import x\n    ```\n\n'
            '    !!! note inline end "Careful"\n        Nested text.\n\n=== "Shell"\n\n'
            '    ```sh\n    x --run\n    ```\n\n!!! tip ""\n    No title.\n\nAfter.\n')
    text, _ = site_markdown(page)
    assert text == ('Intro.\n\n**Python**\n\n```python\nimport x\n```\n\n**Note: Careful**\n'
                    'Nested text.\n\n**Shell**\n\n```sh\nx --run\n```\n\n**Tip**\nNo title.\n\n'
                    'After.\n')
    doc = read_document_text(text)
    codes = [c.text for c in AgenticChunker(ChunkingConfig(max_tokens=64)).chunk(doc)
             if c.chunk_type == "code"]
    assert codes == ["```python\nimport x\n```", "```sh\nx --run\n```"]


# found by a review (helper session) of this reader: each was wrong before its fix
@pytest.mark.parametrize(("page", "expected"), [
    ("Title\n===\n\n    code block\n", None),  # a setext H1, not a content tab
    ("---\nWarning: do not run this as root.\n---\n\nText\n", None),  # a thematic break
    ("---\n---\nText\n", "Text\n"),  # Jekyll's empty front matter
    ("---\n# Do not remove front matter.\n---\n\n## Methods\n", "## Methods\n"),
    ("Intro:\n\n    :::python\n    x = 1\n", None),  # codehilite's language line
    ('=== "final"\nnot indented after it\n', None),
    ("1. Step\n\n   :::tip[Hint]\n   Use it.\n   :::\n", "1. Step\n\n   **Tip: Hint**\n   Use it.\n\n"),
    ("::: code-group\n```sh\nnpm i\n```\n:::\n", "\n```sh\nnpm i\n```\n\n"),
    ('See [the page]({{< ref "page.md" >}}).\n{{% include "/_common/x.md" %}}\n',
     "See [the page](page.md).\n\n"),
    ('{{< figure src="a.png" caption="The build graph" >}}\n', "The build graph\n"),
    ("---\ntitle: |\n  Line one\n  Line two\n---\nBody\n", "# Line one Line two\n\nBody\n"),
    ("---\ntitle: T\n---\nT\n=\n\nBody\n", "T\n=\n\nBody\n"),  # its own setext H1: no second
    ("---\ndescription: D.\n---\nT\n===\nBody\n", "T\n===\n\nD.\n\nBody\n"),  # under its H1
    ("---\ndescription: D.\n---\nNo heading.\n", "No heading.\n"),  # no H1, no title: metadata
    (':::info{title="X"}\nBody\n:::\n', "**Info: X**\nBody\n\n"),
    ("1. Write it:\n\n    ```markdown\n    :::tip[T]\n    x\n    :::\n    ```\n", None),  # code
    ("To open one, type:\n\n    ```\n\nThen:\n\n```\n:::tip\n## H {#x}\n```\n", None),
    ("{{< code-toggle file=hugo >}}\n[security]\nenable = true\n{{< /code-toggle >}}\n",
     "```toml\n[security]\nenable = true\n```\n"),
    ("{{< highlight go >}}\nfunc main() {}\n{{< /highlight >}}\n", "```go\nfunc main() {}\n```\n"),
    ('```md\n{{</* figure src="a.jpg" */>}}\n```\n', '```md\n{{< figure src="a.jpg" >}}\n```\n'),
    ("---\ntitle: strings.Contains\ndescription: Reports whether s contains t.\n---\n\n```go\nx\n```\n",
     "# strings.Contains\n\nReports whether s contains t.\n\n```go\nx\n```\n"),
])
def test_review_cases_read_right(page: str, expected: str | None) -> None:
    assert site_markdown(page)[0] == (page if expected is None else expected)


@pytest.mark.parametrize(("page", "expected"), [
    ("<>Hello world</>\n\nA para.\n\n> A quote\n", "Hello world\n\nA para.\n\n> A quote\n"),
    ("<>\nAlpha beta\n</>\n\nNext para > quote.\n", "Alpha beta\n\nNext para > quote.\n"),
    ("- a\n\t- nested\n", "- a\n\t- nested\n"),
    ("The <Badge text=\"Beta\" /> API\n", "The **Beta** API\n"),
    ("<Tabs>\n\t<TabItem label=\"npm\">\n\t\t```sh\n\t\tnpm create astro\n\t\t```\n\t</TabItem>\n"
     "</Tabs>\n", "**npm**\n```sh\nnpm create astro\n```"),  # a child's code dedented: code
    ("export const data = {\n  a: 1,\n\n  b: 2,\n};\n\nText.\n", "\nText.\n"),
])
def test_mdx_review_cases_read_right(page: str, expected: str) -> None:
    assert site_markdown(page, mdx=True)[0].strip("\n") == expected.strip("\n")


def test_unclosed_tags_and_shortcodes_are_left_as_written() -> None:
    page = "<A b\n" * 2000 + "<Tabs>\nkept\n</Tabs>\n"
    text, _ = site_markdown(page, mdx=True)
    assert text == "<A b\n" * 2000 + "\nkept\n\n"
    page = "{{< a\n" * 2000 + "{{< note >}}\n"
    assert site_markdown(page)[0] == "{{< a\n" * 2000 + "**Note**\n"


def test_notebook_review_cases(tmp_path: Path) -> None:
    prompt = 'prompt = """Reply with:\n```json\n{"a": 1}\n```\n"""'
    raw = _notebook([
        {"cell_type": "code", "source": prompt, "outputs": [
            {"output_type": "stream", "name": "stderr", "text": "WARNING: slow\n"},
            {"output_type": "stream", "name": "stdout", "text": "x" * 900 + "\n"}]},
        {"cell_type": "markdown", "source": "## Calling the model\n\n```python\nopen fence"},
        {"cell_type": "markdown", "source": "Text after."},
    ], language_info="python")  # not a mapping: the default language
    text, title = notebook_to_markdown(raw)
    assert text.startswith(f"````python\n{prompt}\n````\n\n```text\n{'x' * 500} ...\n```")
    assert "WARNING" not in text and title == "Calling the model"
    assert "```python\nopen fence\n```\n\nText after." in text
    blocks = [c for c in AgenticChunker(ChunkingConfig(max_tokens=256)).chunk(
        read_document_text(text)) if "Text after" in c.text]
    assert blocks and blocks[0].chunk_type == "prose"
    shown = _notebook([{"cell_type": "code", "source": "display(Markdown(report))", "outputs": [
        {"output_type": "display_data", "data": {"text/markdown": ["## Result\n", "All **3** passed."],
                                                 "text/plain": "<IPython.core.display.Markdown object>"}}]}])
    assert notebook_to_markdown(shown)[0].endswith("```\n\n## Result\nAll **3** passed.\n")
    p = tmp_path / "untitled-analysis.ipynb"
    p.write_bytes(_notebook([{"cell_type": "code", "source": "1 + 1", "outputs": []}]))
    assert read_document(p).title == "untitled-analysis"  # no heading: the file's name
    q = tmp_path / "huge.ipynb"
    q.write_bytes(b'{"cells": [], "n": ' + b"9" * 5000 + b"}")
    with pytest.raises(DocumentError, match="huge.ipynb: not a Jupyter notebook"):
        read_document(q)
