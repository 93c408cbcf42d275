"""reStructuredText read as Sphinx builds it (`ingest.rst`), and against Sphinx's own text
builder (the peer) on a page of standard constructs."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from agentic_rag.config import RAGConfig
from agentic_rag.documents import Document
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.ingest.readers import read_document
from agentic_rag.ingest.rst import sphinx_rst
from agentic_rag.ingest.sphinx import role_shown
from agentic_rag.store.lexical import field_text

PAGE = """\
:orphan:

.. _json-module:

:mod:`json` --- JSON encoder and decoder
========================================

.. module:: json
   :synopsis: Encode and decode the JSON format.

.. moduleauthor:: Bob Ippolito <bob@redivi.com>

.. index:: single: JSON

**Source code:** :source:`Lib/json/__init__.py`

JSON is specified by :rfc:`7159` and by `ECMA-404
<https://www.ecma-international.org/publications-and-standards/standards/ecma-404/>`_,
see :ref:`json-usage` and :ref:`the table <py-to-json>`.

.. note::
   Be cautious with untrusted data; see :pep:`8` and :class:`~json.decoder.JSONDecoder`\\ s.

.. function:: dumps(obj, *, skipkeys=False, \\
                    indent=None)

   Serialize *obj* to a :class:`str`, like :func:`dump`.

   .. versionadded:: 3.4

   .. versionchanged:: 3.6
      All optional parameters are now keyword-only.

.. class:: JSONEncoder(*, skipkeys=False)

   .. method:: default(o)

      Return a serializable object for *o*; see :meth:`.JSONEncoder.encode`.

.. _json-usage:

Basic Usage
-----------

Example::

    >>> json.dumps(":func:`not a role`")

>>> import json
>>> json.dumps([1, 2])

.. code-block:: python

   print(":class:`still code`")

.. deprecated-removed:: 3.10 3.12
   Use something else.

.. availability:: Unix, not Emscripten.

.. audit-event:: json.dumps obj,indent json.dumps

.. seealso::

   Module :mod:`pickle`
      Serializing Python objects.

.. testsetup::

   import hidden_setup

.. productionlist:: json
   value: object | array

.. toctree::
   :maxdepth: 2

   json.tool
"""


def test_a_sphinx_page_reads_as_built() -> None:
    out = sphinx_rst(PAGE)
    for gone in (":orphan:", ".. ", ":mod:", ":rfc:", ":ref:", ":func:", ":class:", ":meth:",
                 "`_", "Bob Ippolito", "single: JSON", ":synopsis:", "maxdepth", "json.tool",
                 "hidden_setup"):
        assert gone not in out.replace(":func:`not a role`", "").replace(
            ":class:`still code`", "").replace(".. code-block:: ", ""), gone
    assert out.startswith("``json`` --- JSON encoder and decoder\n=====")
    assert "**Source code:** Lib/json/__init__.py" in out
    assert "JSON is specified by RFC 7159 and by ECMA-404,\nsee Basic Usage and the table." in out
    assert ("**Note**\n\nBe cautious with untrusted data; see PEP 8 and ``JSONDecoder``s."
            in out)
    # the signature as written, continued over the backslash; the description below it
    assert ("``dumps(obj, *, skipkeys=False, indent=None)``\n\n"
            "Serialize *obj* to a ``str``, like ``dump()``.\n\nAdded in version 3.4.\n\n"
            "Changed in version 3.6: All optional parameters are now keyword-only.") in out
    # a class after the word Sphinx shows; the role's leading "." gone
    assert "class ``JSONEncoder(*, skipkeys=False)``\n\n``default(o)``\n\n" \
           "Return a serializable object for *o*; see ``JSONEncoder.encode()``." in out
    assert "Deprecated since version 3.10, will be removed in version 3.12: Use something else." \
        in out
    assert "Availability: Unix, not Emscripten." in out
    assert "Raises an auditing event json.dumps with arguments obj, indent." in out
    assert "**See also**\n\nModule ``pickle``\n   Serializing Python objects." in out
    assert ".. code-block:: text\n   value: object | array" in out  # productionlist: code


def test_code_stays_as_written() -> None:
    out = sphinx_rst(PAGE)
    assert 'Example::\n\n    >>> json.dumps(":func:`not a role`")' in out
    assert ">>> import json\n>>> json.dumps([1, 2])" in out
    assert '.. code-block:: python\n\n   print(":class:`still code`")' in out
    assert sphinx_rst("Use ``:func:`x` `` here.\n") == "Use ``:func:`x` `` here.\n"


def test_the_chunker_keeps_the_reading_s_code_and_headings(tmp_path: Path) -> None:
    page = tmp_path / "json.rst"
    page.write_text(PAGE)
    doc = read_document(page)
    assert doc.title == "``json`` --- JSON encoder and decoder"  # not ":orphan:" or a target
    chunks = AgenticChunker(RAGConfig().chunking).chunk(doc)
    code = [c.text for c in chunks if c.chunk_type == "code"]
    assert any("value: object | array" in c for c in code)
    assert any(":func:`not a role`" in c for c in code)
    assert all(".. " not in c.text for c in chunks if c.chunk_type != "code")
    assert any(c.heading_path.endswith("> Basic Usage") for c in chunks)
    # the title field (`fusion.retrievers: [..., title]`) still names the API objects described
    fields = "\n".join(field_text(c) for c in chunks)
    assert "dumps(obj, *, skipkeys=False, indent=None)" in fields
    assert "JSONEncoder(*, skipkeys=False)" in fields and "default(o)" in fields


def test_a_page_without_sphinx_markup_comes_back_byte_for_byte() -> None:
    text = "Title\r\n=====\r\n\r\nPlain *text* with a ``literal`` and a list:\r\n\r\n- one\r\n"
    assert sphinx_rst(text) is text


@pytest.mark.parametrize("name, body, shown", [
    ("func", "os.path.join", ("os.path.join()", "code")),
    ("py:meth", "~dict.items", ("items()", "code")),
    ("class", ".datetime", ("datetime", "code")),
    ("func", "!print", ("print()", "code")),
    ("func", "the join <os.path.join>", ("the join", "code")),
    ("c:func", "PyObject_Call", ("PyObject_Call()", "code")),
    ("ref", "Install <install>", ("Install", "text")),
    ("ref", "install", ("install", "text")),
    ("pep", "8", ("PEP 8", "text")),
    ("rfc", "Title <2822>", ("Title", "text")),
    ("kbd", "Ctrl-<C>", ("Ctrl-<C>", "code")),
    ("term", "wheel <Wheel>", ("wheel", "text")),
    ("index", "x", ("", "")),
])
def test_roles_as_sphinx_shows_them(name: str, body: str, shown: tuple[str, str]) -> None:
    assert role_shown(name, body) == shown


def test_roles_wrap_escape_and_substitute() -> None:
    out = sphinx_rst(".. |tool| replace:: ``pip``\n\nRun :ref:`the\nguide <x>` then :class:`list`\\ s,"
                     " a\\ :class:`dict` and |tool|_ or `the docs`_ and pyblake2_.\n\n"
                     ".. _pyblake2: https://example.org\n")
    assert out == "Run the guide then ``list``s, a``dict`` and ``pip`` or the docs and pyblake2.\n"


def test_directives_not_known_keep_their_line_and_read_their_content() -> None:
    out = sphinx_rst(".. awaitablefunction:: gather(*aws)\n\n   Run :ref:`x` now.\n\n"
                     ".. frobnicate:: a\n\n   See :func:`f`.\n")
    assert out == "awaitable ``gather(*aws)``\n\nRun x now.\n\n.. frobnicate:: a\n\n   See ``f()``.\n"


def test_an_empty_comment_ends_a_block_and_keeps_what_follows() -> None:
    out = sphinx_rst(".. warning::\n\n   Careful.\n..\n\n    >>> 1 + 1\n    2\n")
    assert out == "**Warning**\n\nCareful.\n\n    >>> 1 + 1\n    2\n"


def test_confval_options_and_csv_headers_are_shown() -> None:
    out = sphinx_rst(".. confval:: html_theme\n   :type: :code-py:`str`\n   :default: "
                     "``'alabaster'``\n\n   The theme.\n\n.. csv-table:: Sizes\n   :header: "
                     '"Name", "Size"\n\n   "a", 1\n')
    assert out == ("``html_theme``\n\nType: str\nDefault: ``'alabaster'``\n\nThe theme.\n\n"
                   '**Sizes**\n\n"Name", "Size"\n"a", 1\n')


def test_nesting_deeper_than_python_recursion_is_a_clear_error(tmp_path: Path) -> None:
    from agentic_rag.documents import DocumentError

    page = tmp_path / "deep.rst"
    page.write_text("".join("   " * i + ".. note::\n\n" for i in range(400)) + "x\n")
    with pytest.raises(DocumentError, match="deep.rst: nested too deeply"):
        read_document(page)


_WORD = re.compile(r"[a-z0-9_]+")

PEER_PAGE = """\
Retry settings
==============

.. _retries:

The client retries a request :ref:`three times <retries>` by default; see
:pep:`8`, :rfc:`7231` and `the HTTP guide <https://example.org/http>`_.

.. note::

   A retry waits :math:`2^n` seconds, up to :const:`MAX_WAIT`.

.. warning:: Never retry a ``POST`` blindly.

.. py:function:: retry(request, *, attempts=3, backoff=2.0)

   Send *request* again, at most *attempts* times; raise :exc:`RetryError` after
   the last one (see :meth:`Session.send`).

   .. versionadded:: 2.1

   .. versionchanged:: 2.4
      The *backoff* argument.

.. py:class:: Session(base_url)

   .. py:attribute:: timeout

      Seconds before a request gives up; :data:`None` waits forever.

.. seealso:: :func:`retry` and :class:`Session`.

Run it::

    client.retry(req, attempts=5)

.. code-block:: python

   session = Session("https://example.org")
"""


def _words(text: str) -> Counter:
    return Counter(_WORD.findall(text.lower()))


def test_the_reading_shows_the_words_sphinx_s_text_builder_shows(tmp_path: Path) -> None:
    """The peer: `sphinx-build -b text` on the same page. Of the words the reading keeps,
    nearly all are Sphinx's (no role or directive names); of Sphinx's, nearly all are kept.
    The raw page fails the first (markup words) — the comparison can tell them apart."""
    from sphinx.application import Sphinx  # a dev dependency (pyproject.toml)

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = []\n")
    (src / "index.rst").write_text(PEER_PAGE)
    app = Sphinx(str(src), str(src), str(tmp_path / "out"), str(tmp_path / "dt"), "text",
                 status=None, warning=None, freshenv=True)
    app.build(force_all=True)
    theirs = _words((tmp_path / "out" / "index.txt").read_text())
    doc = Document(id="index.rst", text=sphinx_rst(PEER_PAGE), format="rst")
    chunks = AgenticChunker(RAGConfig().chunking).chunk(doc)  # code chunks without their
    ours, raw = _words("\n".join(c.text for c in chunks)), _words(PEER_PAGE)  # directive line

    def precision(words: Counter) -> float:
        return sum((words & theirs).values()) / sum(words.values())

    recall = sum((ours & theirs).values()) / sum(theirs.values())
    assert precision(ours) >= 0.97, (ours - theirs)
    assert recall >= 0.95, (theirs - ours)
    assert precision(raw) < 0.85


def test_a_space_before_the_double_colon_is_still_a_directive() -> None:
    out = sphinx_rst("Intro:\n\n.. code-block :: python\n\n   import os\n\n.. note ::\n\n"
                     "   Important words.\n\nAfter.\n")
    assert out == ("Intro:\n\n.. code-block :: python\n\n   import os\n\n**Note**\n\n"
                   "Important words.\n\nAfter.\n")


@pytest.mark.parametrize("role, shown", [
    (":file:`.pypirc`", "``.pypirc``"),
    (":file:`~/.local/lib/python{X.Y}/site-packages`", "``~/.local/lib/python{X.Y}/site-packages``"),
    (":command:`./configure`", "``./configure``"),
    (":kbd:`~`", "``~``"),
])
def test_literal_roles_keep_their_text(role: str, shown: str) -> None:
    assert sphinx_rst(f"Edit {role} now.\n") == f"Edit {shown} now.\n"


def test_cpython_notes_keep_their_content() -> None:
    out = sphinx_rst(".. availability:: Linux >= 2.6.38.\n\n   Some algorithm types need newer "
                     "kernels.\n\n.. audit-event:: subprocess.Popen executable,args,cwd,env\n\n"
                     "   Raises an auditing event with *args*, the command as given.\n")
    assert out == ("Availability: Linux >= 2.6.38.\n\nSome algorithm types need newer kernels.\n\n"
                   "Raises an auditing event with *args*, the command as given.\n")


def test_containers_without_arguments_and_one_line_code_directives_keep_their_text() -> None:
    assert sphinx_rst(".. glossary::\n   term\n      The definition.\n") == \
        "term\n   The definition.\n"
    assert sphinx_rst(".. math:: e^{i\\pi} + 1 = 0\n") == \
        ".. code-block:: math\n\n   e^{i\\pi} + 1 = 0\n"
    assert sphinx_rst(".. command-output:: python -V\n") == \
        ".. code-block:: console\n\n   $ python -V\n"


def test_references_inside_literals_stay_and_list_items_end_their_literal_block() -> None:
    out = sphinx_rst("Set ``x = data_`` and data_.\n\n.. _data: http://x\n")
    assert out == "Set ``x = data_`` and data.\n"
    out = sphinx_rst("1. Install it::\n\n      pip install :func:`foo`\n\n   Then call "
                     ":func:`foo.run`.\n\n   .. note:: Be careful.\n")
    assert out == ("1. Install it::\n\n      pip install :func:`foo`\n\n   Then call "
                   "``foo.run()``.\n\n   **Note**\n\n   Be careful.\n")


def test_a_literal_block_under_a_version_note_stays_code() -> None:
    text = sphinx_rst(".. versionchanged:: 3.9\n   The output is now::\n\n      run(:func:`f`)\n")
    assert text == "Changed in version 3.9: The output is now::\n\n   run(:func:`f`)\n"
    chunks = AgenticChunker(RAGConfig().chunking).chunk(Document(id="v.rst", text=text, format="rst"))
    assert [c.chunk_type for c in chunks if "run(" in c.text] == ["code"]


def test_titles_in_a_directive_are_no_sections_and_long_titles_keep_their_underline() -> None:
    page = (".. confval:: html_theme\n\n   The theme.\n\n   Examples\n   --------\n\n   One.\n\n"
            "Later\n=====\n\nText.\n\n.. |proj| replace:: a much longer project name\n\n"
            "Using |proj|\n------------\n\nMore.\n")
    out = sphinx_rst(page)
    assert "**Examples**\n\nOne." in out and "\nExamples\n" not in out
    assert "Using a much longer project name\n--------------------------------\n" in out
    chunks = AgenticChunker(RAGConfig().chunking).chunk(Document(id="c.rst", text=out, format="rst"))
    assert {c.heading_path for c in chunks if "One." in c.text} == {""}
    assert any(c.heading_path.endswith("Using a much longer project name") for c in chunks)


def test_a_section_label_referring_to_itself_is_read_once() -> None:
    out = sphinx_rst(".. _a:\n\nUnlike :ref:`a`\n===============\n\nText.\n")
    assert out.startswith("Unlike Unlike a\n")  # no endless recursion


def test_builder_only_content_goes_and_the_title_field_keeps_options() -> None:
    out = sphinx_rst(".. only:: latex\n\n   For print.\n\n.. only:: html\n\n   For the web.\n\n"
                     ".. testcode::\n   :hide:\n\n   check()\n\n.. admonition::\n\n   Bare.\n\n"
                     ".. option:: -b buildername\n\n   The builder.\n")
    assert out == "For the web.\n\nBare.\n\n``-b buildername``\n\nThe builder.\n"
    doc = Document(id="o.rst", text=out, format="rst")
    fields = "\n".join(field_text(c) for c in AgenticChunker(RAGConfig().chunking).chunk(doc))
    assert "-b buildername" in fields


def test_second_review_cases_read_as_docutils_and_sphinx_do() -> None:
    # a field list entry's literal block ends at the entry's own indentation
    assert sphinx_rst(":param x: Example\n   more::\n\n      code :func:`z`\n\n   After :func:`y`.\n") \
        == ":param x: Example\n   more::\n\n      code :func:`z`\n\n   After ``y()``.\n"
    # `only`: a negated other builder is shown, and its titles are sections of the page
    assert sphinx_rst(".. only:: not latex\n\n   Kept.\n") == "Kept.\n"
    assert sphinx_rst(".. only:: html\n\n   Indices\n   -------\n\n   Text.\n") == \
        "Indices\n-------\n\nText.\n"
    # an underline under 4 characters, shorter than its line, is text (docutils)
    assert sphinx_rst("The output looks like\n...\n\nx :func:`f`\n") == \
        "The output looks like\n...\n\nx ``f()``\n"
    # a dropped block right under a paragraph line leaves the two paragraphs apart
    assert sphinx_rst("Para one.\n.. index:: foo\n\nPara two.\n") == "Para one.\n\nPara two.\n"
