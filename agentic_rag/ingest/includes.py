"""Text a page takes from other files, read in where the build reads it: reStructuredText's
`.. include::` and Sphinx's `.. literalinclude::`, MyST's ```` ```{include} ```` and
```` ```{literalinclude} ```` (MkDocs' `--8<--` snippets: `ingest.snippets`). A docs/ page that
is `.. include:: ../README.rst` reads as the README; a tutorial's `literalinclude` of its
example reads as that code. Which part of a file shows: `ingest.include_clips`.

    text = rst_with_includes(raw_text, page)     # `readers`, before `rst.sphinx_rst`
    text = myst_with_includes(raw_text, page)    # after `snippets.markdown_snippets`, before `myst.myst_markdown`

As Sphinx and MyST-Parser resolve them: the path relative to the page being read, or to the
project's root (`sphinx_site.source_root`) when it starts with "/"; an included file's own
includes too are relative to the page (Sphinx's `relfn2path`), not to that file as plain
docutils reads them.
- include: `:start-line:` / `:end-line:`, then `:start-after:` / `:end-before:`;
  `:literal:` and `:code: lang` as a code block; the text at the directive's indentation;
  includes inside it followed, to `DEPTH`, never in a circle;
- literalinclude (`include_clips.literal_lines_of`): `:pyobject:`, `:start-after:` / `:start-at:`,
  `:end-before:` / `:end-at:`, `:lines:`, `:dedent:`, `:prepend:` / `:append:`, in Sphinx's
  order; a code block in `:language:` (else its file's, by suffix), reST's with `:caption:`.
- MyST: options as `:name: value` lines or a `---` block; `:heading-offset:`; a reST include
  inside `{eval-rst}`; a code block with a `:caption:` as a `{code-block}` (`ingest.myst`
  reads it as a page's own); any file as MyST, an .rst one too, as MyST-Parser does.
The included text ends with a blank line (docutils adds one). One in a literal block, a code
block or an HTML comment is an example, left as written; one that cannot be read (missing, not
a regular file: a FIFO would block, not UTF-8, over `MAX_BYTES` or the page's `MAX_PAGE`,
a pattern or object not found, an option Sphinx refuses, `<standard>` files, a `:diff:`,
another markup: a `:parser:`, a Markdown file in reST) is left for the format's reader, which
drops it, as a build shows nothing of it. An include of the same file with the same clip
options inside itself is a circle (docutils'), not followed; nor past `DEPTH` levels.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from agentic_rag.ingest.include_clips import include_lines, literal_lines_of
from agentic_rag.ingest.mdx import closes_fence, fenced, front_matter
from agentic_rag.ingest.myst import markdown_code_lines
from agentic_rag.ingest.sphinx import indent_of, literal_lines
from agentic_rag.ingest.sphinx_site import source_root

_RST = re.compile(r"^([ \t]*)\.\.[ \t]+(include|literalinclude)[ \t]*::[ \t]+(\S.*)$")
_RST_OPTION = re.compile(r"^[ \t]+:([\w-]+):(?:[ \t]+(.*))?$")
_MYST_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,}|:{3,})\{([\w:.+-]+)\}(.*)$")
_MYST_OPTION = re.compile(r"^[ \t]*:([\w-]+):(?:[ \t]+(.*))?$")
_YAML_OPTION = re.compile(r"^[ \t]*([\w-]+)[ \t]*:(.*)$")
_ATX = re.compile(r"^( {0,3})(#{1,6})(?=[ \t]|$)")
MAX_BYTES = 1_000_000  # an included file larger than this is not read (snippets too)
MAX_PAGE = 4 * MAX_BYTES  # characters a page's includes may add in all (nested ones multiply)
DEPTH = 8  # nested includes followed (docutils itself only refuses circles)
# files in another markup than the including page's: not read as its text (MyST-Parser reads
# any file as MyST, an .rst one too)
_NOT_RST = (".md", ".markdown", ".mdx", ".ipynb", ".html", ".htm")
_NOT_MYST = (".ipynb", ".html", ".htm")
_CLIPS = ("start-line", "end-line", "start-after", "end-before", "start-at", "end-at", "lines",
          "pyobject")
# a literalinclude without `:language:`: its file's (Sphinx guesses from the content)
_LANGUAGES = {".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript",
              ".ts": "typescript", ".json": "json", ".yaml": "yaml", ".yml": "yaml",
              ".toml": "toml", ".ini": "ini", ".cfg": "ini", ".sh": "bash", ".bash": "bash",
              ".html": "html", ".css": "css", ".c": "c", ".h": "c", ".cpp": "cpp",
              ".rs": "rust", ".go": "go", ".java": "java", ".rb": "ruby", ".sql": "sql",
              ".xml": "xml", ".jinja": "jinja", ".j2": "jinja"}


@dataclass
class _Page:
    """The page being read: where its paths start, and what its includes may still add."""

    path: Path
    root: Path
    left: int = field(default_factory=lambda: MAX_PAGE)


Chain = tuple[tuple[Path, tuple[str, ...]], ...]  # the files being included, with their clips
Expander = Callable[[str, _Page, Chain], str]


def rst_with_includes(text: str, page: str | Path, skip: Collection[str] = ()) -> str:
    """`text`, the reStructuredText page at `page`, with its includes read in (module doc);
    `skip`: folders that are no part of the project (`readers.BUILD_FOLDERS`)."""
    if "include" not in text:
        return text
    path = Path(os.path.abspath(page))
    return _rst(text.replace("\r\n", "\n"), _Page(path, source_root(path, frozenset(skip))), ())


def myst_with_includes(text: str, page: str | Path, skip: Collection[str] = ()) -> str:
    """`text`, the MyST Markdown page at `page`, with its includes read in (module doc)."""
    if "include" not in text:  # "{include}", "{literalinclude}", `.. include::` in {eval-rst}
        return text
    path = Path(os.path.abspath(page))
    return _myst(text.replace("\r\n", "\n"), _Page(path, source_root(path, frozenset(skip))), ())


def _rst(text: str, page: _Page, chain: Chain) -> str:
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
        indent, name, target = m.group(1), m.group(2), m.group(3).rstrip()
        opts, j = {}, i + 1
        while j < len(lines) and (o := _RST_OPTION.match(lines[j])) and indent_of(lines[j]) > len(indent):
            opts[o.group(1)] = (o.group(2) or "").strip()
            j += 1
        read = _read(name, target, opts, page, chain, _NOT_RST, _rst)
        if read is None:
            out.extend(lines[i:j])
        else:
            shown, language = read
            if language is not None:
                caption = [f"   :caption: {_caption(opts, target)}"] if "caption" in opts else []
                shown = [f".. code-block:: {language}", *caption, "", *("   " + ln for ln in shown)]
            out.extend(indent + ln if ln.strip() else "" for ln in [*shown, ""])
        i = j
    return "\n".join(out)


def _myst(text: str, page: _Page, chain: Chain) -> str:
    """MyST's includes where the page shows Markdown (`myst.markdown_code_lines`: not in code,
    HTML comments or examples; in a container's fence, yes), and `{eval-rst}`'s reST ones."""
    lines = text.split("\n")
    opened: set[int] = set()
    markdown_code_lines(lines, opened)
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _MYST_FENCE.match(lines[i]) if i in opened else None
        if m is None or m.group(3) not in ("include", "literalinclude", "eval-rst"):
            out.append(lines[i])
            i += 1
            continue
        indent, fence, name, target = m.group(1), m.group(2), m.group(3), m.group(4).strip()
        end, opts = _myst_block(lines, i, fence)
        if end is not None and name == "eval-rst":
            out.extend([lines[i], *_rst("\n".join(lines[i + 1:end]), page, chain).split("\n"), lines[end]])
            i = end + 1
            continue
        read = None if end is None or not target else _read(name, target, opts, page, chain,
                                                            _NOT_MYST, _myst)
        if read is None or end is None:
            out.append(lines[i])
            i += 1
            continue
        shown, language = read
        if language is not None:
            shown = _myst_code(shown, language, opts, target)
        out.extend(indent + ln if ln.strip() else "" for ln in [*shown, ""])
        i = end + 1
    return "\n".join(out)


def _myst_code(lines: list[str], language: str, opts: dict[str, str], target: str) -> list[str]:
    """A code block as a MyST page writes one: a `{code-block}` with its caption where it has
    one (read as a page's own by `ingest.myst`), else a fenced block."""
    body = fenced("\n".join(lines), language).split("\n")
    if "caption" not in opts:
        return body
    return [f"{body[0][:body[0].index(language)]}{{code-block}} {language}",
            f":caption: {_caption(opts, target)}", *body[1:]]


def _caption(opts: dict[str, str], target: str) -> str:
    return opts["caption"] or target  # an empty caption: the file's name, as Sphinx shows


def _myst_block(lines: list[str], i: int, fence: str) -> tuple[int | None, dict[str, str]]:
    """The closing line of the directive opened on line i and its options (`:name: value`
    lines, or a `---` YAML block); None where it is not closed."""
    opts: dict[str, str] = {}
    j = i + 1
    if j < len(lines) and lines[j].strip() == "---":
        j += 1
        while j < len(lines) and lines[j].strip() != "---":
            if (y := _YAML_OPTION.match(lines[j])) is not None:
                opts[y.group(1)] = _unquoted(y.group(2).strip())
            j += 1
        j += 1
    while j < len(lines) and (o := _MYST_OPTION.match(lines[j])) is not None:
        opts[o.group(1)] = _unquoted((o.group(2) or "").strip())  # YAML, as the `---` block
        j += 1
    while j < len(lines):
        if closes_fence(lines[j], fence):
            return j, opts
        j += 1
    return None, opts


def _unquoted(value: str) -> str:
    """A MyST option's value as YAML reads a quoted scalar: `'### Title'` is `### Title`
    (quoting is how a value starting with "#" survives YAML)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        inner = value[1:-1]
        return inner.replace("''", "'") if value[0] == "'" else inner.replace('\\"', '"')
    return value


def _read(name: str, target: str, opts: dict[str, str], page: _Page, chain: Chain,
          foreign: tuple[str, ...], expand: Expander) -> tuple[list[str], str | None] | None:
    """The included file's lines and, for code, their language (None: text in the page's
    markup, its own includes read by `expand`); None where it is not read, as Sphinx shows
    nothing for it (an error it reports)."""
    if target.startswith("<") or "parser" in opts or "diff" in opts or len(chain) >= DEPTH:
        return None
    path = Path(os.path.abspath(page.root / target[1:] if target.startswith("/")
                                else page.path.parent / target))
    code = name == "literalinclude" or "literal" in opts or "code" in opts
    clips = tuple(opts.get(k, "") for k in _CLIPS)
    link = (path, clips)  # docutils: a circle is the same file with the same clip
    if (path == page.path and not any(clips)) or link in chain or (
            not code and path.name.lower().endswith(foreign)):
        return None
    try:
        text = read_capped(path, page.left, opts.get("encoding") or "utf-8-sig")
        if text is None:
            return None
        if "tab-width" in opts:
            width = int(opts["tab-width"])
            if not 0 < width <= 64:
                return None
            text = text.expandtabs(width)
        lines = literal_lines_of(text, opts) if name == "literalinclude" else include_lines(text, opts)
    except (OSError, UnicodeDecodeError, LookupError, ValueError, SyntaxError, RecursionError,
            OverflowError):
        return None
    if lines is None:
        return None
    page.left -= sum(len(ln) + 1 for ln in lines)
    if not code:
        body = "\n".join(lines)
        if expand is _myst:
            body = _offset_headings(front_matter(body)[1], opts.get("heading-offset", ""))
        return expand(body, page, (*chain, link)).split("\n"), None
    while lines and not lines[-1].strip():
        lines.pop()
    language = opts.get("language") or opts.get("code") or (
        _LANGUAGES.get(path.suffix.lower(), "text") if name == "literalinclude" else "text")
    return lines, language


def read_capped(path: Path, left: int, encoding: str = "utf-8-sig") -> str | None:
    """An included file's text (CRLF as LF), or None where it is not read: not a regular
    file (a FIFO's open waits for a writer; a device never ends), over `MAX_BYTES` or the
    `left` a page's includes may still add. Decoding errors and OSError are the caller's."""
    if not stat.S_ISREG(path.stat().st_mode):
        return None
    with path.open("rb") as f:
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > min(MAX_BYTES, left):
        return None
    return raw.decode(encoding).replace("\r\n", "\n")


def _offset_headings(text: str, offset: str) -> str:
    """MyST's `:heading-offset: n`: the included file's headings n levels deeper (to h6),
    where it shows Markdown."""
    n = int(offset) if offset.strip().isdigit() else 0
    if not n:
        return text
    lines = text.split("\n")
    code = markdown_code_lines(lines)
    for i, line in enumerate(lines):
        if i not in code and (h := _ATX.match(line)) is not None:
            lines[i] = h.group(1) + "#" * min(6, len(h.group(2)) + n) + line[h.end():]
    return "\n".join(lines)
