"""Text a page takes from other files, read in where the build reads it: reStructuredText's
`.. include::` and Sphinx's `.. literalinclude::`, MyST's ```` ```{include} ```` and
```` ```{literalinclude} ````. A docs/ page that is `.. include:: ../README.rst` reads as
the README; a tutorial's `literalinclude` of its example reads as that code.

    text = rst_with_includes(raw_text, page)     # `readers`, before `rst.sphinx_rst`
    text = myst_with_includes(raw_text, page)    # before `myst.myst_markdown`

As Sphinx and MyST-Parser resolve them: the path relative to the page being read, or to the
project's root (`sphinx_site.source_root`) when it starts with "/"; an included file's own
includes too are relative to the page (Sphinx's `relfn2path`), not to that file as plain
docutils reads them.
- include: `:start-line:` / `:end-line:`, then `:start-after:` / `:end-before:`;
  `:literal:` and `:code: lang` as a code block; the text at the directive's indentation;
  includes inside it followed, to `_DEPTH`, never in a circle;
- literalinclude (`literal_lines_of`): `:pyobject:`, `:start-after:` / `:start-at:`,
  `:end-before:` / `:end-at:`, `:lines:`, `:dedent:`, `:prepend:` / `:append:`, in Sphinx's
  order; a code block in `:language:` (else its file's, by suffix), reST's with `:caption:`.
One in a literal block or code block is an example, left as written; one that cannot be read
(missing, not UTF-8, over `MAX_BYTES`, a pattern not found, `<standard>` files, a `:diff:`,
another markup: a `:parser:`, a Markdown file in reST or a reST file in MyST) is left for the
format's reader, which drops it, as a build shows nothing of it.
"""

from __future__ import annotations

import ast
import os
import re
import textwrap
from collections.abc import Callable, Collection
from pathlib import Path

from agentic_rag.ingest.mdx import OPENER, closes_fence, fenced, front_matter
from agentic_rag.ingest.myst import holds_markdown
from agentic_rag.ingest.sphinx import indent_of, literal_lines
from agentic_rag.ingest.sphinx_site import source_root

_RST = re.compile(r"^([ \t]*)\.\.[ \t]+(include|literalinclude)[ \t]*::[ \t]+(\S(?:.*\S)?)[ \t]*$")
_RST_OPTION = re.compile(r"^[ \t]+:([\w-]+):(?:[ \t]+(.*))?$")
_MYST_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,}|:{3,})\{([\w:.+-]+)\}[ \t]*(.*?)[ \t]*$")
_MYST_OPTION = re.compile(r"^[ \t]*:([\w-]+):(?:[ \t]+(.*))?$")
_YAML_OPTION = re.compile(r"^[ \t]*([\w-]+)[ \t]*:[ \t]*(.*?)[ \t]*$")
MAX_BYTES = 1_000_000
_DEPTH = 8  # docutils' own limit is 8 nested includes
# files in another markup than the including page's: not read as its text
_NOT_RST = (".md", ".markdown", ".mdx", ".ipynb", ".html", ".htm")
_NOT_MYST = (".rst", ".rest", ".ipynb", ".html", ".htm")
# a literalinclude without `:language:`: its file's (Sphinx guesses from the content)
_LANGUAGES = {".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript",
              ".ts": "typescript", ".json": "json", ".yaml": "yaml", ".yml": "yaml",
              ".toml": "toml", ".ini": "ini", ".cfg": "ini", ".sh": "bash", ".bash": "bash",
              ".html": "html", ".css": "css", ".c": "c", ".h": "c", ".cpp": "cpp",
              ".rs": "rust", ".go": "go", ".java": "java", ".rb": "ruby", ".sql": "sql",
              ".xml": "xml", ".jinja": "jinja", ".j2": "jinja"}
Expander = Callable[[str, Path, Path, tuple[Path, ...]], str]


def rst_with_includes(text: str, page: str | Path, skip: Collection[str] = ()) -> str:
    """`text`, the reStructuredText page at `page`, with its includes read in (module doc);
    `skip`: folders that are no part of the project (`readers.BUILD_FOLDERS`)."""
    if "include" not in text:
        return text
    page = Path(os.path.abspath(page))
    return _rst(text.replace("\r\n", "\n"), page, source_root(page, frozenset(skip)), (page,))


def myst_with_includes(text: str, page: str | Path, skip: Collection[str] = ()) -> str:
    """`text`, the MyST Markdown page at `page`, with its includes read in (module doc)."""
    if "include}" not in text:
        return text
    page = Path(os.path.abspath(page))
    return _myst(text.replace("\r\n", "\n"), page, source_root(page, frozenset(skip)), (page,))


def _rst(text: str, page: Path, root: Path, chain: tuple[Path, ...]) -> str:
    lines = text.split("\n")
    literal = literal_lines(lines)
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _RST.match(lines[i]) if i not in literal else None
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        indent, name, target = m.groups()
        opts, j = {}, i + 1
        while j < len(lines) and (o := _RST_OPTION.match(lines[j])) and indent_of(lines[j]) > len(indent):
            opts[o.group(1)] = (o.group(2) or "").strip()
            j += 1
        read = _read(name, target, opts, page, root, chain, _NOT_RST, _rst)
        if read is None:
            out.extend(lines[i:j])
        else:
            shown, language = read
            if language is not None:
                caption = [f"   :caption: {opts['caption']}"] if opts.get("caption") else []
                shown = [f".. code-block:: {language}", *caption, "", *("   " + ln for ln in shown)]
            out.extend(indent + ln if ln.strip() else "" for ln in shown)
        i = j
    return "\n".join(out)


def _myst(text: str, page: Path, root: Path, chain: tuple[Path, ...]) -> str:
    """MyST's includes, outside code: fenced code and code directives are skipped, the
    fences of containers (`{note}`, `{tab-item}`) followed, so their includes are read."""
    lines = text.split("\n")
    out: list[str] = []
    open_fences: list[str] = []  # containers the line is in
    code: str | None = None  # the fence of the code block the line is in
    i = 0
    while i < len(lines):
        line = lines[i]
        if code is not None:
            code = None if closes_fence(line, code) else code
        elif open_fences and closes_fence(line, open_fences[-1]):
            open_fences.pop()
        elif (m := _MYST_FENCE.match(line)) is not None:
            indent, fence, name, target = m.groups()
            if name in ("include", "literalinclude") and target:
                end, opts = _myst_block(lines, i, fence)
                read = None if end is None else _read(name, target, opts, page, root, chain,
                                                      _NOT_MYST, _myst)
                if read is not None and end is not None:
                    shown, language = read
                    if language is not None:
                        shown = fenced("\n".join(shown), language).split("\n")
                    out.extend(indent + ln if ln.strip() else "" for ln in shown)
                    i = end + 1
                    continue
            if holds_markdown(name):
                open_fences.append(fence)
            else:
                code = fence
        elif (o := OPENER.match(line)) is not None:
            code = o.group(2)
        out.append(line)
        i += 1
    return "\n".join(out)


def _myst_block(lines: list[str], i: int, fence: str) -> tuple[int | None, dict[str, str]]:
    """The closing line of the directive opened on line i and its options (`:name: value`
    lines, or a `---` YAML block); None where it is not closed."""
    opts: dict[str, str] = {}
    j = i + 1
    if j < len(lines) and lines[j].strip() == "---":
        j += 1
        while j < len(lines) and lines[j].strip() != "---":
            if (y := _YAML_OPTION.match(lines[j])) is not None:
                opts[y.group(1)] = y.group(2).strip("\"'")
            j += 1
        j += 1
    while j < len(lines) and (o := _MYST_OPTION.match(lines[j])) is not None:
        opts[o.group(1)] = (o.group(2) or "").strip()
        j += 1
    while j < len(lines):
        if closes_fence(lines[j], fence):
            return j, opts
        j += 1
    return None, opts


def _read(name: str, target: str, opts: dict[str, str], page: Path, root: Path,
          chain: tuple[Path, ...], foreign: tuple[str, ...], expand: Expander
          ) -> tuple[list[str], str | None] | None:
    """The included file's lines and, for code, their language (None: text in the page's
    markup, its own includes read by `expand`); None where it is not read."""
    if target.startswith("<") or "parser" in opts or "diff" in opts or len(chain) > _DEPTH:
        return None
    path = Path(os.path.abspath(root / target[1:] if target.startswith("/") else page.parent / target))
    code = name == "literalinclude" or "literal" in opts or "code" in opts
    if path in chain or (not code and path.name.lower().endswith(foreign)):
        return None
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        text = path.read_bytes().decode(opts.get("encoding") or "utf-8-sig").replace("\r\n", "\n")
        if "tab-width" in opts:
            text = text.expandtabs(int(opts["tab-width"]))
        lines = literal_lines_of(text, opts) if name == "literalinclude" else _include_lines(text, opts)
    except (OSError, UnicodeDecodeError, LookupError, ValueError, SyntaxError):
        return None
    if lines is None:
        return None
    if not code:
        body = "\n".join(lines)
        if expand is _myst:
            body = front_matter(body)[1]
        return expand(body, page, root, (*chain, path)).split("\n"), None
    while lines and not lines[-1].strip():
        lines.pop()
    language = opts.get("language") or opts.get("code") or (
        _LANGUAGES.get(path.suffix.lower(), "text") if name == "literalinclude" else "text")
    return lines, language


def _include_lines(text: str, opts: dict[str, str]) -> list[str] | None:
    """docutils' include: `:start-line:` / `:end-line:`, then the text between
    `:start-after:` and `:end-before:`; None where a marker is not found."""
    first, last = (int(opts[k]) if opts.get(k) else None for k in ("start-line", "end-line"))
    text = "\n".join(text.split("\n")[first:last])
    for option, keep_after in (("start-after", True), ("end-before", False)):
        if marker := opts.get(option):
            k = text.find(marker)
            if k < 0:
                return None  # docutils stops the build: nothing is shown
            text = text[k + len(marker):] if keep_after else text[:k]
    return text.strip("\n").split("\n") if "literal" in opts or "code" in opts else text.split("\n")


def literal_lines_of(text: str, opts: dict[str, str]) -> list[str] | None:
    """Sphinx's literalinclude filters, in its order: pyobject, start, end, lines, dedent,
    prepend, append; None where a pattern or object is not found (Sphinx shows nothing)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if obj := opts.get("pyobject"):
        span = _python_object(text, obj)
        if span is None:
            return None
        lines = lines[span[0] - 1:span[1]]
    for option, at in (("start-at", 0), ("start-after", 1)):
        if marker := opts.get(option):
            k = next((n for n, ln in enumerate(lines) if marker in ln), None)
            if k is None:
                return None
            lines = lines[k + at:]
            break
    for option, at in (("end-at", 1), ("end-before", 0)):
        if marker := opts.get(option):
            # Sphinx's end-before ignores the first line
            k = next((n for n, ln in enumerate(lines) if marker in ln and (at or n)), None)
            if k is None:
                return None
            lines = lines[:k + at]
            break
    if spec := opts.get("lines"):
        lines = [lines[n] for n in _line_numbers(spec, len(lines)) if n < len(lines)]
        if not lines:
            return None
    if "dedent" in opts:
        if width := opts["dedent"]:
            lines = [ln[int(width):] for ln in lines]  # as Sphinx: what is cut, is cut
        else:
            lines = textwrap.dedent("\n".join(lines)).split("\n")
    return [*filter(None, [opts.get("prepend")]), *lines, *filter(None, [opts.get("append")])]


def _line_numbers(spec: str, total: int) -> list[int]:
    """Sphinx's `:lines:` ("1,3,5-10,20-", "-4"): 0-based line indices, in order."""
    out: list[int] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        first, dash, last = part.partition("-")
        begin = int(first) - 1 if first.strip() else 0
        end = (int(last) if last.strip() else total) if dash else begin + 1
        if begin < 0 or end < begin + 1:
            raise ValueError(f"invalid line number spec: {spec!r}")
        out.extend(range(begin, end))
    return out


def _python_object(source: str, name: str) -> tuple[int, int] | None:
    """The first and last line (1-based) of the class or function `name` ("Class.method")
    in Python `source`, decorators included, as Sphinx's `:pyobject:` finds it."""
    scope: list = ast.parse(source).body
    node = None
    for part in name.split("."):
        node = next((n for n in scope if isinstance(n, (ast.ClassDef, ast.FunctionDef,
                                                          ast.AsyncFunctionDef))
                     and n.name == part), None)
        if node is None:
            return None
        scope = node.body
    if node is None or node.end_lineno is None:
        return None
    return min([node.lineno, *(d.lineno for d in node.decorator_list)]), node.end_lineno
