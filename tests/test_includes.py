"""Text a page takes from other files (`ingest.includes`): reStructuredText's `include` and
Sphinx's `literalinclude`, MyST's `{include}` and `{literalinclude}`, read in as the build
reads them."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from agentic_rag import AgenticChunker
from agentic_rag.config import RAGConfig
from agentic_rag.ingest.include_clips import literal_lines_of
from agentic_rag.ingest.includes import myst_with_includes
from agentic_rag.ingest.readers import read_document
from agentic_rag.ingest.rst import sphinx_rst


def _words(text: str) -> Counter:
    return Counter(re.findall(r"[a-z0-9_]+", text.lower()))


# -- `.. include::` and `.. literalinclude::` ----------------------------------------------
APP = '''import flask

app = flask.Flask(__name__)


@app.route("/")
def index():
    # start here
    return "Hello"


class Store:
    def put(self, key, value):
        self.data[key] = value
'''


def _included_project(root: Path) -> Path:
    (root / "docs" / "includes").mkdir(parents=True)
    (root / "docs" / "examples").mkdir()
    (root / "docs" / "conf.py").write_text("project = 'x'\n")
    # an included file's includes are relative to the page (Sphinx), not to that file
    (root / "README.rst").write_text("Frobnicator\n===========\n\nFrobnicator turns widgets into "
                                     "gadgets.\n\n.. include:: includes/note.rst\n\n"
                                     ".. include:: docs/includes/note.rst\n")
    (root / "docs" / "includes" / "note.rst").write_text(
        ".. note::\n\n   It needs Python 3.10 or later.\n\n.. include:: index.rst\n")
    (root / "LICENSE.txt").write_text("Copyright 2024 Frob\n")
    (root / "CHANGES.rst").write_text("Changes\n=======\n\n.. start\n\n* 2.0: faster gadgets.\n\n"
                                      ".. end\n\n* 1.0: first.\n")
    (root / "docs" / "examples" / "app.py").write_text(APP)
    page = root / "docs" / "index.rst"
    page.write_text(""".. include:: ../README.rst

License
-------

.. include:: ../LICENSE.txt
   :literal:

.. include:: ../CHANGES.rst
   :start-after: .. start
   :end-before: .. end

.. note::

   .. include:: /includes/note.rst

Showing the directive::

   .. include:: ../LICENSE.txt

.. include:: missing.rst

.. literalinclude:: examples/app.py
   :pyobject: Store.put
   :dedent: 4

.. literalinclude:: /examples/app.py
   :start-after: # start here
   :end-before: class Store
   :caption: the view

.. literalinclude:: examples/app.py
   :lines: 1, 3-
   :end-at: def index

.. literalinclude:: examples/app.py
   :pyobject: nowhere
""")
    return page


def test_includes_show_the_files_text_as_docutils_and_sphinx_read_it(tmp_path: Path) -> None:
    """A docs/ page that is `.. include:: ../README.rst` reads as the README (nested includes
    followed, relative to the page as Sphinx resolves them, "/" from the project's root,
    never in a circle); literal includes and literalinclude's filters as code blocks; an include
    shown as an example, or one that cannot be read, shows nothing of the file."""
    text = read_document(_included_project(tmp_path)).text
    assert text.startswith("Frobnicator\n===========\n\nFrobnicator turns widgets into gadgets.")
    assert text.count("It needs Python 3.10 or later.") == 2  # the README's and the note's
    assert text.count("Frobnicator turns widgets") == 1  # note.rst including index.rst: a circle
    assert ".. code-block:: text\n\n   Copyright 2024 Frob\n" in text
    assert "* 2.0: faster gadgets." in text and "1.0: first" not in text
    assert "   .. include:: ../LICENSE.txt" in text and "missing" not in text
    assert "docs/includes/note.rst" not in text  # not found from the page: shows nothing
    assert ".. code-block:: python\n\n   def put(self, key, value):\n       self.data[key] = value\n" in text
    assert (".. code-block:: python\n   :caption: the view\n\n       return \"Hello\"\n\n\n"
            ".. code-block:: python\n\n   import flask\n   app = flask.Flask(__name__)\n") in text
    assert "nowhere" not in text and "class Store:" not in text


def test_literalinclude_filters_in_sphinx_order() -> None:
    opts = {"start-at": "def index", "end-at": "return", "lines": "2-", "prepend": "# shown",
            "dedent": ""}
    assert literal_lines_of(APP, opts) == ["# shown", "# start here", 'return "Hello"']
    assert literal_lines_of(APP, {"end-before": "import"}) is None  # first line ignored
    assert literal_lines_of(APP, {"lines": "-1"}) == ["import flask"]
    assert literal_lines_of(APP, {"pyobject": "index"})[0] == '@app.route("/")'


def _myst_project(root: Path) -> Path:
    (root / "docs" / "examples").mkdir(parents=True)
    (root / "docs" / "conf.py").write_text("extensions = ['myst_parser']\n")
    (root / "README.md").write_text("---\ntitle: x\n---\n# Frobnicator\n\nIt turns widgets "
                                    "into gadgets.\n\n<!-- start -->\nInstall with pip.\n"
                                    "<!-- end -->\n")
    (root / "docs" / "examples" / "app.py").write_text(APP)
    page = root / "docs" / "index.md"
    page.write_text("""\
```{include} ../README.md
:relative-images:
```

:::{note}
````{include} ../README.md
---
start-after: <!-- start -->
end-before: <!-- end -->
---
````
:::

```{literalinclude} /examples/app.py
:pyobject: index
```

````markdown
```{include} ../README.md
```
````

```{include} missing.md
```

```{include} ../README.md
""")
    return page


def test_myst_includes_read_the_file_outside_code(tmp_path: Path) -> None:
    """MyST's includes: the file's Markdown (its front matter left out), options as
    `:name: value` lines or a `---` block, inside a container too; a literalinclude as a
    fenced block in its file's language; in a code block it is an example; one not closed,
    or of a missing file, is left for the reader, which drops it."""
    page = _myst_project(tmp_path)
    raw = page.read_text()
    text = myst_with_includes(raw, page)
    assert text.startswith("# Frobnicator\n\nIt turns widgets into gadgets.") and "title: x" not in text
    assert ":::{note}\n\nInstall with pip.\n\n\n:::" in text  # a blank line after, as docutils
    assert '```python\n@app.route("/")\ndef index():' in text
    assert "````markdown\n```{include} ../README.md\n```\n````" in text
    assert "```{include} missing.md\n```" in text and text.endswith("```{include} ../README.md\n")
    read = read_document(page).text
    assert "It turns widgets into gadgets." in read and "missing.md" not in read
    assert myst_with_includes("No directive here.\n", page) == "No directive here.\n"


def test_an_included_page_reads_as_sphinx_builds_it(tmp_path: Path) -> None:
    """The peer: Sphinx's text builder on the same project. Of Sphinx's words on the page
    that includes the README, the license, a changelog's part and example code, nearly all
    are read; the reading without includes loses most of them."""
    from sphinx.application import Sphinx  # a dev dependency (pyproject.toml)

    page = _included_project(tmp_path)
    (tmp_path / "docs" / "conf.py").write_text("extensions = []\n")
    (tmp_path / "docs" / "docutils.conf").write_text("[general]\nreport_level: 5\n")
    app = Sphinx(str(tmp_path / "docs"), str(tmp_path / "docs"), str(tmp_path / "out"),
                 str(tmp_path / "dt"), "text", status=None, warning=None, freshenv=True)
    app.build(force_all=True)
    theirs = _words((tmp_path / "out" / "index.txt").read_text())
    doc = read_document(page)
    read = _words(doc.text)  # its precision as chunks: code without its directive line
    chunks = _words("\n".join(c.text for c in AgenticChunker(RAGConfig().chunking).chunk(doc)))
    assert sum((read & theirs).values()) / sum(theirs.values()) >= 0.95, theirs - read
    assert sum((chunks & theirs).values()) / sum(chunks.values()) >= 0.95, chunks - theirs
    without = _words(sphinx_rst(page.read_text()))
    assert sum((without & theirs).values()) / sum(theirs.values()) < 0.5


def test_a_myst_page_with_includes_reads_as_myst_parser_builds_it(tmp_path: Path,
                                                                  monkeypatch) -> None:
    """The peer for MyST: Sphinx with MyST-Parser on the same project (colon fences on). Of
    its words, nearly all are read (not without the includes); of the chunks' words, most are
    its: 4 of 27 are not, the fences' languages ("python", "markdown") and the README's
    `<!-- start -->` / `<!-- end -->` markers (HTML comments stay in a Markdown reading)."""
    from sphinx.application import Sphinx

    import agentic_rag.ingest.includes as includes

    page = _myst_project(tmp_path)
    page.write_text(page.read_text().rsplit("```{include} missing.md", 1)[0])  # warnings only
    (tmp_path / "docs" / "conf.py").write_text(
        "extensions = ['myst_parser']\nmyst_enable_extensions = ['colon_fence']\n")
    app = Sphinx(str(tmp_path / "docs"), str(tmp_path / "docs"), str(tmp_path / "out"),
                 str(tmp_path / "dt"), "text", status=None, warning=None, freshenv=True)
    app.build(force_all=True)
    theirs = _words((tmp_path / "out" / "index.txt").read_text())
    doc = read_document(page)
    read = _words(doc.text)
    chunks = _words("\n".join(c.text for c in AgenticChunker(RAGConfig().chunking).chunk(doc)))
    assert sum((read & theirs).values()) / sum(theirs.values()) >= 0.95, theirs - read
    assert sum((chunks & theirs).values()) / sum(chunks.values()) >= 0.85, chunks - theirs
    monkeypatch.setattr(includes, "myst_with_includes", lambda text, page, skip=(): text)
    without = _words(read_document(page).text)
    assert sum((without & theirs).values()) / sum(theirs.values()) < 0.6


def test_review_cases_read_as_sphinx_and_myst_parser_do(tmp_path: Path, monkeypatch) -> None:
    """What a review found (each checked against Sphinx 9 / MyST-Parser 5 at the time):
    an include after a list item's literal block, `{eval-rst}`'s include, `:pyobject:` in
    `if`/`try` blocks (the last definition wins), `:heading-offset:`, an include inside an
    HTML comment, a code block left open in a container, an empty caption, refused option
    pairs, a file without a final newline."""
    import agentic_rag.ingest.includes as includes

    (tmp_path / "conf.py").write_text("")
    (tmp_path / "tips.rst").write_text("Tip text")  # no final newline
    (tmp_path / "sec.md").write_text("# Installation\n\nRun pip.\n\n```sh\n# a comment\n```\n")
    (tmp_path / "ex.py").write_text("from typing import overload\n@overload\ndef parse(x: int) -> int: ...\n"
                                    "def parse(x):\n    return x\ntry:\n    import fast\nexcept ImportError:\n"
                                    "    def compat():\n        return 0\nelse:\n    def compat():\n"
                                    "        return 1\n")
    page = tmp_path / "index.rst"
    rst = ("* Build the docs::\n\n     make html\n\n  .. include:: tips.rst\n  After.\n\n"
           ".. literalinclude:: ex.py\n   :pyobject: parse\n   :caption:\n\n"
           ".. literalinclude:: ex.py\n   :pyobject: compat\n\n"
           ".. literalinclude:: ex.py\n   :start-at: def\n   :start-after: def\n\n"
           ".. parsed-literal::\n\n   .. include:: tips.rst\n")
    text = includes.rst_with_includes(rst, page)
    assert "  Tip text\n\n  After." in text  # the item's text, then a blank line (docutils)
    assert ".. code-block:: python\n   :caption: ex.py\n\n   def parse(x):\n       return x\n" in text
    assert "       def compat():\n           return 1\n" in text and "return 0" not in text
    assert text.count("overload") == 0 and text.count("Tip text") == 1  # pair refused; an example
    md = ("## Setup\n\n```{include} sec.md\n:heading-offset: 2\n```\n\n<!--\n```{include} tips.rst\n```\n-->\n\n"
          ":::{note}\n```python\nx = 1\n:::\n\n```{eval-rst}\n.. include:: tips.rst\n```\n\n"
          "```{literalinclude} ex.py\n:lines: 4-5\n:caption: the parser\n```\n")
    text = includes.myst_with_includes(md, tmp_path / "index.md")
    assert "### Installation\n\nRun pip.\n\n```sh\n# a comment\n```" in text
    assert "<!--\n```{include} tips.rst\n```\n-->" in text  # commented out: not shown
    assert "```{eval-rst}\nTip text\n\n```" in text
    only_rst = "```{eval-rst}\n.. include:: tips.rst\n```\n"  # no "{include}" on the page
    assert includes.myst_with_includes(only_rst, tmp_path / "x.md") == "```{eval-rst}\nTip text\n\n```\n"
    assert "```{code-block} python\n:caption: the parser\ndef parse(x):\n    return x\n```" in text
    read = read_document(_write(tmp_path / "page.md", md)).text
    assert "Tip text" in read and "the parser" not in read.split("def parse")[1]


def test_odd_targets_and_options_are_not_read_and_never_hang(tmp_path: Path, monkeypatch) -> None:
    """A FIFO, a huge tab width or line range, a negative dedent, a Python file too deep to
    parse: the include shows nothing (a build reports an error) and the page still reads;
    includes that multiply stop at the page's budget."""
    import os

    import agentic_rag.ingest.includes as includes

    os.mkfifo(tmp_path / "pipe.rst")
    (tmp_path / "ex.py").write_text("def f():\n\treturn 1\n")
    (tmp_path / "deep.py").write_text("x = " + "(" * 2000 + "1" + ")" * 2000 + "\n")
    page = _write(tmp_path / "index.rst", "Title\n=====\n\n.. include:: pipe.rst\n\n"
                  ".. literalinclude:: ex.py\n   :tab-width: 100000000000000000000\n\n"
                  ".. literalinclude:: ex.py\n   :lines: 1-3000000000\n\n"
                  ".. literalinclude:: ex.py\n   :dedent: -3\n\n"
                  ".. literalinclude:: deep.py\n   :pyobject: f\n\nEnd.\n")
    text = read_document(page).text
    assert text.count("def f():") == 1 and text.rstrip().endswith("End.")
    for n in range(4):  # each includes the next six times: 6**4 copies unbounded
        nxt = "\n\n".join(f".. include:: p{n + 1}.rst\n   :end-line: {100 + k}" for k in range(6))
        _write(tmp_path / f"p{n}.rst", nxt if n < 3 else "word " * 50)
    monkeypatch.setattr(includes, "MAX_PAGE", 20_000)
    grown = includes.rst_with_includes(".. include:: p0.rst\n", tmp_path / "top.rst")
    assert 0 < grown.count("word") <= 20_000 // 5 < 6 ** 3 * 50


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_quoted_myst_options_and_a_page_including_a_clip_of_itself(tmp_path: Path) -> None:
    """MyST reads `:name: value` options as YAML: a quoted value is its inside (a marker
    starting with "#" must be quoted). docutils refuses only the same file with the same
    clip: a page may include a part of itself (Scrapy's settings page does)."""
    import agentic_rag.ingest.includes as includes

    (tmp_path / "README.md").write_text("Top\n<!-- code-begin -->\nIncluded words here.\n"
                                        "<!-- code-end -->\n### Enterprise\nPaid support.\n")
    md = ("```{include} README.md\n:start-after: 'code-begin -->'\n:end-before: \"<!-- code-end\"\n```\n\n"
          "```{include} README.md\n:start-after: '### Enterprise'\n```\n")
    text = includes.myst_with_includes(md, tmp_path / "overview.md")
    assert "Included words here." in text and "Top" not in text and text.count("Paid support.") == 1
    page = _write(tmp_path / "settings.rst", "Page\n====\n\n.. shared-starts\n\nShared sentence.\n\n"
                  ".. shared-ends\n\nLater\n-----\n\n.. include:: settings.rst\n   :start-after: "
                  "shared-starts\n   :end-before: shared-ends\n\n.. include:: settings.rst\n")
    assert read_document(page).text.count("Shared sentence.") == 2  # the whole page: a circle


def test_mkdocs_snippets_read_in_as_pymdownx_does(tmp_path: Path) -> None:
    """MkDocs' `--8<-- "file"` (pymdownx.snippets), as it reads them before the page is
    parsed: inside a code fence too (a tutorial's example code), paths from the folder holding
    `mkdocs.yml`, sections and line ranges, blocks of names, nested snippets, escapes; a
    missing file, a URL, a path outside the base and `auto_append` add nothing."""
    (tmp_path / "docs" / "tutorial").mkdir(parents=True)
    (tmp_path / "docs_src").mkdir()
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: Demo\nmarkdown_extensions:\n  - pymdownx.emoji:\n      emoji_index: "
        "!!python/name:material.extensions.emoji.twemoji\n  - pymdownx.snippets:\n"
        "      auto_append:\n        - docs/abbr.md\n")
    (tmp_path / "docs" / "abbr.md").write_text("*[HTML]: Hyper Text Markup Language\n")
    (tmp_path / "docs_src" / "app.py").write_text(
        "# --8<-- [start:setup]\nimport demo\n\napp = demo.App()\n# --8<-- [end:setup]\n\n\n"
        "@app.route(\"/\")\ndef index():\n    return \"Hello\"\n")
    (tmp_path / "docs" / "note.md").write_text("Restart the server.\n--8<-- \"docs/inner.md\"\n")
    (tmp_path / "docs" / "inner.md").write_text("Inner words.\n--8<-- \"docs/note.md\"\n")  # a circle
    (tmp_path.parent / "secret.md").write_text("Outside the base.\n")
    page = _write(tmp_path / "docs" / "tutorial" / "first.md",
                  "# First steps\n\n```python\n--8<-- \"docs_src/app.py\"\n```\n\n```python\n"
                  "--8<-- \"docs_src/app.py:setup\"\n```\n\n```python\n--8<-- \"docs_src/app.py:8:9\"\n```\n\n"
                  "!!! note\n    --8<-- \"docs/note.md\"\n\n--8<--\ndocs/note.md\nmissing.md\n--8<--\n\n"
                  ";--8<-- \"docs/note.md\"\n\n--8<-- \"https://example.com/x.md\"\n\n"
                  "--8<-- \"../secret.md\"\n")
    text = read_document(page).text
    assert "```python\nimport demo\n\napp = demo.App()\n\n\n@app.route(\"/\")\ndef index():\n" \
           "    return \"Hello\"\n" in text and "[start:setup]" not in text
    assert "```python\nimport demo\n\napp = demo.App()\n```" in text
    assert "```python\n@app.route(\"/\")\ndef index():\n```" in text
    assert text.count("Restart the server.") == 2 and text.count("Inner words.") == 2
    assert '--8<-- "docs/note.md"' in text  # the escaped one, shown
    assert "example.com" not in text and "Outside the base" not in text and "HTML" not in text


def test_mkdocs_snippets_settings_and_odd_input(tmp_path: Path) -> None:
    """A review's cases, each against pymdownx.snippets: `base_path: !relative $config_dir`
    (MkDocs' own advice) and `!ENV` read, the mapping form of `markdown_extensions`, a base
    that is a file; a site without the extension (or no `mkdocs.yml`) is left as it is; a
    name too long for the file system, a 5,000-digit line number and "[START:x]" never raise."""
    from agentic_rag.ingest.snippets import markdown_snippets

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "part.md").write_text("Part words.\n")
    (tmp_path / "docs" / "code.py").write_text("# --8<-- [START:x]\nhidden = 1\n# --8<-- [end:x]\n")
    page = tmp_path / "docs" / "page.md"
    body = ('--8<-- "part.md"\n\n--8<-- "code.py:x"\n\n--8<-- "part.md:' + "9" * 5000 + '"\n\n--8<--\n'
            + "n" * 300 + "\n--8<--\n")
    (tmp_path / "mkdocs.yml").write_text("markdown_extensions:\n  - toc\n")
    assert markdown_snippets(body, page) == body  # the site does not enable snippets
    (tmp_path / "mkdocs.yml").write_text(
        "docs_dir: docs\nmarkdown_extensions:\n  pymdownx.snippets:\n    base_path: !relative $docs_dir\n"
        "  pymdownx.emoji:\n    emoji_index: !!python/name:material.extensions.emoji.twemoji\n")
    text = markdown_snippets(body, page)
    assert text.startswith("Part words.\n") and "hidden" not in text and "nnn" not in text
    (tmp_path / "mkdocs.yml").write_text(
        "markdown_extensions:\n  - pymdownx.snippets:\n"
        "      base_path: [!relative $config_dir, !ENV [NO_SUCH_VAR_X, docs]]\n")
    assert markdown_snippets('--8<-- "part.md"\n', page) == "Part words.\n\n"  # the file's last newline
    (tmp_path / "mkdocs.yml").write_text(
        "markdown_extensions:\n  - pymdownx.snippets:\n      base_path: [docs/part.md]\n")
    assert markdown_snippets('--8<-- "part.md"\n--8<-- "code.py"\n', page) == "Part words.\n\n"
    assert markdown_snippets('--8<-- "part.md"\n', tmp_path.parent / "elsewhere.md") == '--8<-- "part.md"\n'
