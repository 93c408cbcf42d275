"""MyST Markdown (Sphinx, Jupyter Book) read as the built page reads: admonitions as prose, code
directives as code, navigation dropped, roles as their text; a page without MyST unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from agentic_rag import AgenticChunker, read_document
from agentic_rag.config import ChunkingConfig
from agentic_rag.ingest.myst import myst_markdown
from agentic_rag.ingest.notebook import notebook_to_markdown

PAGE = """(install)=
# Install widgets

```{note}
:class: dropdown

Widgets needs {py:func}`~widgets.config.load` and {ref}`the settings <settings>`.
```

```{code-block} python
:linenos:
:emphasize-lines: 2

import widgets
widgets.run()
```

```{toctree}
:hidden:

usage
api
```

See {pep}`8`, {doc}`usage` and {octicon}`rocket` the {math}`x^2` rule.
"""


def test_directives_and_roles_read_as_the_built_page() -> None:
    out = myst_markdown(PAGE)
    assert out == """# Install widgets

**Note**
Widgets needs `load` and the settings.


```python
import widgets
widgets.run()
```


See PEP 8, usage and  the $x^2$ rule.
"""


def test_a_page_without_myst_reads_byte_for_byte() -> None:
    plain = ("# Title\r\n\r\nSome {braces} and `code {x}` here.\n\n```python\nd = {'a': 1}\n"
             "```\n\n```{.python}\npandoc attributes\n```\n(not a target)\n")
    assert myst_markdown(plain) == plain


def test_a_directive_inside_code_or_inline_code_is_shown_as_written() -> None:
    text = ("````markdown\n```{note}\nA note.\n```\n````\n\nWrite `` {ref}`x` `` for a link; "
            "{ref}`Real <real>` is one.\n")
    out = myst_markdown(text)
    assert out.startswith("````markdown\n```{note}\nA note.\n```\n````\n")
    assert out.endswith("Write `` {ref}`x` `` for a link; Real is one.\n")


def test_nested_containers_keep_their_code_and_titles() -> None:
    text = """::::{tab-set}
:::{tab-item} pip
```bash
pip install widgets
```
:::
:::{tab-item} conda
---
sync: conda
---
```{code-cell} ipython3
---
tags: [hide-output]
---
import widgets
```
:::
::::
"""
    out = myst_markdown(text)
    assert "```bash\npip install widgets\n```\n" in out
    assert "**pip**" in out and "**conda**" in out
    assert "```ipython3\nimport widgets\n```\n" in out
    assert ":::" not in out and "tags:" not in out and "sync:" not in out and "---" not in out


def test_version_notes_titled_admonitions_and_languages() -> None:
    out = myst_markdown("```{versionadded} 3.1\nThe `fast` mode.\n```\n\n"
                        "```{admonition} Packages with C extensions\n:class: warning\n\nBuild "
                        "them first.\n```\n\n```{r}\nsummary(cars)\n```\n\n"
                        "```{mystery-widget} arg\n:opt: 1\n\nShown as text.\n```\n")
    assert "**New in version 3.1**\nThe `fast` mode.\n" in out
    assert "**Packages with C extensions**\nBuild them first.\n" in out
    assert "```r\nsummary(cars)\n```\n" in out
    assert "**arg**\nShown as text.\n" in out and ":opt:" not in out


def test_eval_rst_keeps_its_text_and_drops_its_toctree() -> None:
    out = myst_markdown("```{eval-rst}\n.. toctree::\n   :hidden:\n\n   a.md\n   b.md\n\n"
                        "Some **RST** text.\n\n.. note:: kept\n```\n")
    assert "toctree" not in out and "a.md" not in out
    assert "Some **RST** text.\n\n.. note:: kept\n" in out


def test_a_myst_page_chunks_its_note_as_prose_and_its_code_as_code(tmp_path: Path) -> None:
    p = tmp_path / "install.md"
    p.write_text(PAGE, encoding="utf-8")
    doc = read_document(p)
    assert doc.title == "Install widgets"
    chunks = AgenticChunker(ChunkingConfig(max_tokens=64)).chunk(doc)
    note = [c for c in chunks if "needs" in c.text]
    code = [c for c in chunks if "widgets.run()" in c.text]
    assert note and note[0].chunk_type == "prose" and "{py:func}" not in note[0].text
    assert code and code[0].chunk_type == "code"
    assert not any("usage\napi" in c.text for c in chunks)


def test_a_jupyter_book_notebook_reads_its_myst_cells() -> None:
    raw = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "source": "# Fit\n\n```{warning}\nSlow on {py:class}`big.Frame`.\n```"},
        {"cell_type": "code", "source": "fit()", "outputs": []}]}).encode()
    text, title = notebook_to_markdown(raw)
    assert title == "Fit"
    assert "**Warning**\nSlow on `big.Frame`.\n" in text and "```{warning}" not in text


def test_an_unknown_directive_is_code_when_it_starts_with_a_prompt() -> None:
    out = myst_markdown("```{pip-cli}\n$ pip install sampleproject\n[...]\n```\n\n"
                        ":::{exercise} Count\n:label: ex1\n\nCount the words.\n:::\n\n"
                        ":::{code-block} toml\nname = 'x'\n:::\n")
    assert out == ("```console\n$ pip install sampleproject\n[...]\n```\n\n"
                   "**Count**\nCount the words.\n\n\n```toml\nname = 'x'\n```\n")


def test_roles_read_as_sphinx_shows_them() -> None:
    out = myst_markdown("Install {pypi}`requests`, edit {file}`pip.conf`, see {issue}`12`, "
                        "{term}`wheel <pypug:Wheel>`, {js:func}`pyodide.runPython`, "
                        "{py:meth}`!Path.open` and {external+sphinx:ref}`roles`.\n")
    assert out == ("Install requests, edit `pip.conf`, see 12, wheel, `pyodide.runPython`, "
                   "`Path.open` and roles.\n")


def test_a_fence_in_a_list_item_is_code_and_a_title_reads_its_roles() -> None:
    out = myst_markdown("* - Directives\n  - ```yaml\n    {ref}`not a role`\n    ```\n"
                        "  - See {ref}`Install <install>`.\n\n"
                        "::::{grid} 1 2 2 3\n:::{grid-item-card} {octicon}`rocket` Fast\nRuns.\n:::\n::::\n")
    assert "  - ```yaml\n    {ref}`not a role`\n    ```\n  - See Install.\n" in out
    assert "1 2 2 3" not in out and "**Fast**\nRuns.\n" in out
