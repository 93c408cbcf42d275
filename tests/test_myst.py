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
Widgets needs `load()` and the settings.


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
    assert "**Added in version 3.1**\nThe `fast` mode.\n" in out
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
    assert out == ("Install requests, edit `pip.conf`, see 12, wheel, `pyodide.runPython()`, "
                   "`Path.open()` and roles.\n")


def test_a_fence_in_a_list_item_is_code_and_a_title_reads_its_roles() -> None:
    out = myst_markdown("* - Directives\n  - ```yaml\n    {ref}`not a role`\n    ```\n"
                        "  - See {ref}`Install <install>`.\n\n"
                        "::::{grid} 1 2 2 3\n:::{grid-item-card} {octicon}`rocket` Fast\nRuns.\n:::\n::::\n")
    assert "  - ```yaml\n    {ref}`not a role`\n    ```\n  - See Install.\n" in out
    assert "1 2 2 3" not in out and "**Fast**\nRuns.\n" in out


def test_a_body_that_starts_with_a_rule_or_a_yaml_example_keeps_the_rest_of_the_page() -> None:
    out = myst_markdown("```{note}\n---\nA rule above.\n```\n\n# Next section\n\nLots of text.\n")
    assert "A rule above." in out and "# Next section\n\nLots of text.\n" in out
    out = myst_markdown("```{code-block} yaml\n---\nkey: v\n```\n\n# Next\n")
    assert out == "```yaml\n---\nkey: v\n```\n\n# Next\n"
    out = myst_markdown("```{figure} a.png\n---\nname: f\n----\nCaption\n```\nAfter\n")
    assert "Caption" in out and "After" in out and "name: f" not in out


def test_crlf_options_and_line_ends() -> None:
    out = myst_markdown("```{code-block} python\r\n:linenos:\r\n:emphasize-lines: 2\r\n\r\n"
                        "x = 1\r\n```\r\n:::{dropdown} Title\r\n:open:\r\n\r\nBody\r\n:::\r\n")
    assert out == "```python\r\nx = 1\r\n```\r\n**Title**\r\nBody\r\n\r\n"


def test_content_on_the_directive_line_and_field_lists_in_rst_are_text() -> None:
    out = myst_markdown("```{note} Remember to activate the venv first.\n```\n\n"
                        "```{deprecated} 2.0 Use y instead.\n```\n\n"
                        "```{eval-rst}\n:returns: the parsed value\n\n.. currentmodule:: pkg\n\n"
                        ".. js:autosummary:: pyodide\n   :members:\n\nMore.\n```\n")
    assert "**Note**\nRemember to activate the venv first.\n" in out
    assert "**Deprecated since version 2.0**\nUse y instead.\n" in out
    assert ":returns: the parsed value\n" in out and "More.\n" in out
    assert "currentmodule" not in out and "autosummary" not in out


def test_wrapped_roles_comments_card_rules_and_option_continuations() -> None:
    out = myst_markdown("See {ref}`Pyodide in a WebWorker\n<using_from_webworker>` now.\n"
                        "% a MyST comment\n\n:::{card} Fast\n:link: x\n^^^\nRuns.\n+++\nFooter\n"
                        ":::\n\n```{csv-table} Sizes\n:header: \"a\",\n    \"b\"\n:widths: 1 1\n\n"
                        "1, 2\n```\n")
    assert "See Pyodide in a WebWorker now.\n" in out and "comment" not in out
    assert "**Fast**\nRuns.\nFooter\n" in out and "^^^" not in out
    assert "**Sizes**\n1, 2\n" in out and '"b"' not in out


def test_list_items_and_indented_code() -> None:
    out = myst_markdown("- ```{note}\n  Inside the item.\n  ```\n- ```{code-block} sh\n  ls\n  ```\n")
    assert out.startswith("- **Note**\n  Inside the item.\n") and "- ```sh\n  ls\n  ```\n" in out
    text = "{ref}`I <i>` first.\n\nBad:\n\n    ```python\n    x\n\n```{note}\nReal.\n```\n"
    out = myst_markdown(text)
    assert out.startswith("I first.") and "**Note**\nReal.\n" in out


def test_pages_with_no_myst_stay_as_written() -> None:
    for plain in ("Set {key}`value` in the file.\n", "(a+b)=\n(a+b)(a+b)\n",
                  "% of users\n\n```{r}\nx\n```\n"):
        assert myst_markdown(plain) == plain


def test_front_matter_is_left_to_site_markdown_and_an_option_ends_at_the_fence() -> None:
    text = ("---\ntitle: Extensions\nmyst:\n  key2: |\n    ```{note}\n    x\n    ```\n---\n\n"
            "(ext)=\n# Extensions\n\n```{image} a.png\n:width: 200px\n```\n\nKept.\n")
    out = myst_markdown(text)
    assert out.startswith("---\ntitle: Extensions\nmyst:\n  key2: |\n    ```{note}\n")
    assert out.endswith("---\n\n# Extensions\n\n\nKept.\n")


def test_a_literal_role_keeps_its_angle_brackets_and_a_titled_pep_shows_its_title() -> None:
    assert myst_markdown("Use {code}`List<int>` per {pep}`Style Guide <8>` and {ref}`x`.\n") == \
        "Use `List<int>` per Style Guide and x.\n"
