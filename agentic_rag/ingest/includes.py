"""Text a page takes from other files, read in where the build reads it: reStructuredText's
`.. include::` and Sphinx's `.. literalinclude::`, MyST's ```` ```{include} ```` and
```` ```{literalinclude} ````, MkDocs' `--8<-- "file"` snippets (`markdown_snippets`). A docs/
page that is `.. include:: ../README.rst` reads as the README; a tutorial's `literalinclude`
(or a snippet in a code fence) of its example reads as that code.

    text = rst_with_includes(raw_text, page)     # `readers`, before `rst.sphinx_rst`
    text = markdown_snippets(raw_text, page)     # then `myst_with_includes`, before `myst.myst_markdown`
    text = myst_with_includes(text, page)

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
- MyST: options as `:name: value` lines or a `---` block; `:heading-offset:`; a reST include
  inside `{eval-rst}`; a code block with a `:caption:` as a `{code-block}` (`ingest.myst`
  reads it as a page's own); any file as MyST, an .rst one too, as MyST-Parser does.
The included text ends with a blank line (docutils adds one). One in a literal block, a code
block or an HTML comment is an example, left as written; one that cannot be read (missing, not
a regular file: a FIFO would block, not UTF-8, over `MAX_BYTES` or the page's `MAX_PAGE`,
a pattern or object not found, an option Sphinx refuses, `<standard>` files, a `:diff:`,
another markup: a `:parser:`, a Markdown file in reST) is left for the format's reader, which
drops it, as a build shows nothing of it. An include of the same file with the same clip
options inside itself is a circle (docutils'), not followed; nor past `_DEPTH` levels.
"""

from __future__ import annotations

import ast
import os
import re
import stat
import textwrap
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from agentic_rag.ingest.mdx import OPENER, closes_fence, fenced, front_matter
from agentic_rag.ingest.myst import holds_markdown
from agentic_rag.ingest.sphinx import indent_of, literal_lines
from agentic_rag.ingest.sphinx_site import source_root

_RST = re.compile(r"^([ \t]*)\.\.[ \t]+(include|literalinclude)[ \t]*::[ \t]+(\S.*)$")
_RST_OPTION = re.compile(r"^[ \t]+:([\w-]+):(?:[ \t]+(.*))?$")
_MYST_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,}|:{3,})\{([\w:.+-]+)\}(.*)$")
_MYST_OPTION = re.compile(r"^[ \t]*:([\w-]+):(?:[ \t]+(.*))?$")
_YAML_OPTION = re.compile(r"^[ \t]*([\w-]+)[ \t]*:(.*)$")
_ATX = re.compile(r"^( {0,3})(#{1,6})(?=[ \t]|$)")
MAX_BYTES = 1_000_000  # an included file larger than this is not read
MAX_PAGE = 4 * MAX_BYTES  # characters a page's includes may add in all (nested ones multiply)
_DEPTH = 8  # nested includes followed (docutils itself only refuses circles)
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
    """MyST's includes, outside code: fenced code, code directives and HTML comments are
    skipped; the fences of containers (`{note}`, `{tab-item}`) followed, so their includes
    are read (a code block left open in one ends with it); `{eval-rst}`'s reST includes."""
    lines = text.split("\n")
    out: list[str] = []
    open_fences: list[str] = []  # containers the line is in
    code: str | None = None  # the fence of the code block the line is in
    i = 0
    while i < len(lines):
        line = lines[i]
        if code is not None:
            if open_fences and closes_fence(line, open_fences[-1]) and not closes_fence(line, code):
                code = None
                open_fences.pop()
            elif closes_fence(line, code):
                code = None
        elif open_fences and closes_fence(line, open_fences[-1]):
            open_fences.pop()
        elif line.lstrip().startswith("<!--") and "-->" not in line:
            k = next((n for n in range(i + 1, len(lines)) if "-->" in lines[n]), len(lines) - 1)
            out.extend(lines[i:k + 1])  # an HTML comment: what is in it is not shown
            i = k + 1
            continue
        elif (m := _MYST_FENCE.match(line)) is not None:
            indent, fence, name, target = m.group(1), m.group(2), m.group(3), m.group(4).strip()
            if name in ("include", "literalinclude", "eval-rst"):
                end, opts = _myst_block(lines, i, fence)
                if end is not None and name == "eval-rst":
                    body = _rst("\n".join(lines[i + 1:end]), page, chain)
                    out.extend([line, *body.split("\n"), lines[end]])
                    i = end + 1
                    continue
                read = None if end is None or not target else _read(name, target, opts, page,
                                                                    chain, _NOT_MYST, _myst)
                if read is not None and end is not None:
                    shown, language = read
                    if language is not None:
                        shown = _myst_code(shown, language, opts, target)
                    out.extend(indent + ln if ln.strip() else "" for ln in [*shown, ""])
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
    if target.startswith("<") or "parser" in opts or "diff" in opts or len(chain) >= _DEPTH:
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
        if not stat.S_ISREG(path.stat().st_mode):
            return None  # a FIFO (opening it waits for a writer) or a device: no file to read
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES or len(raw) > page.left:
            return None
        text = raw.decode(opts.get("encoding") or "utf-8-sig").replace("\r\n", "\n")
        if "tab-width" in opts:
            width = int(opts["tab-width"])
            if not 0 < width <= 64:
                return None
            text = text.expandtabs(width)
        lines = literal_lines_of(text, opts) if name == "literalinclude" else _include_lines(text, opts)
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


def _offset_headings(text: str, offset: str) -> str:
    """MyST's `:heading-offset: n`: the included file's headings n levels deeper (to h6),
    outside code."""
    n = int(offset) if offset.strip().isdigit() else 0
    if not n:
        return text
    out, code = [], None
    for line in text.split("\n"):
        if code is not None:
            code = None if closes_fence(line, code) else code
        elif (o := OPENER.match(line)) is not None:
            code = o.group(2)
        elif (h := _ATX.match(line)) is not None:
            line = h.group(1) + "#" * min(6, len(h.group(2)) + n) + line[h.end():]
        out.append(line)
    return "\n".join(out)


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
    if ("start-at" in opts and "start-after" in opts) or ("end-at" in opts and "end-before" in opts):
        return None  # Sphinx refuses the pair
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
            if int(width) < 0:
                return None  # Sphinx refuses it
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
        out.extend(range(begin, min(end, total)))  # past the file's end: what there is
    return out


def _python_object(source: str, name: str) -> tuple[int, int] | None:
    """The first and last line (1-based) of the class or function `name` ("Class.method")
    in Python `source`, decorators included, as Sphinx's `:pyobject:` finds it: definitions
    inside `if` / `try` / `with` blocks too, not inside functions; the last one of a name
    (an `@overload` stub's implementation, a fallback's redefinition) wins."""
    found: dict[str, tuple[int, int]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found[prefix + node.name] = (first, node.end_lineno or node.lineno)
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}{node.name}.")
                continue
            for block in ("body", "handlers", "orelse", "finalbody", "cases"):  # in source order
                inner = getattr(node, block, None)
                for x in inner if isinstance(inner, list) else []:
                    if isinstance(x, ast.stmt):
                        visit([x], prefix)
                    elif isinstance(getattr(x, "body", None), list):  # an except, a case
                        visit(x.body, prefix)

    visit(ast.parse(source).body, "")
    return found.get(name)


# -- MkDocs' snippets (pymdownx.snippets): `--8<-- "file"` -------------------------------------
_SNIPPET = re.compile(r"""^([ \t]*)(;*)(?:-+8<-+[ \t]+("(?:\\"|[^"\n])+?"|'(?:\\'|[^'\n])+?')|(-+8<-+))$""")
_SNIPPET_SECTION = re.compile(r"(?i)^(.*?)(;*)(-+8<-+[ \t]+)(\[[ \t]*(start|end)[ \t]*:[ \t]*"
                              r"([a-z][-_0-9a-z]*)[ \t]*\])(.*)$")
_SNIPPET_FILE = re.compile(r"(?i)(.*?)(?:((?::-?[0-9]*){1,2}(?:(?:,(?=[-0-9:])-?[0-9]*)(?::-?[0-9]*)?)*)"
                           r"|(:[a-z][-_0-9a-z]*))?$")
_SECTION_HINT = re.compile(r"-8<-+[ \t]+\[")  # a cheap look before `_SNIPPET_SECTION`
_MKDOCS_FILES = ("mkdocs.yml", "mkdocs.yaml")


@dataclass
class _Snippets:
    """A MkDocs project's snippet settings (`mkdocs.yml`: `pymdownx.snippets`), and what a
    page's snippets may still add."""

    base: list[Path]
    dedent: bool = False
    left: int = field(default_factory=lambda: MAX_PAGE)


def markdown_snippets(text: str, page: str | Path, skip: Collection[str] = ()) -> str:
    """`text`, a Markdown page of a MkDocs site whose `mkdocs.yml` enables
    `pymdownx.snippets`, with its snippets read in as that extension does before the page is
    parsed: a line `--8<-- "file"` (inside a code fence too: a tutorial's example code), a
    `--8<--` block of file names, `"file:3:10"` line ranges and `"file:name"` sections
    (`--8<-- [start:name]` / `[end:name]` marker lines removed everywhere), nested snippets,
    a `;--8<--` escape shown as `--8<--`. Paths are relative to the extension's `base_path`
    (`!relative $config_dir`, `$docs_dir` and a bare `!relative`, the page's folder, as MkDocs
    reads them; default: the folder holding `mkdocs.yml`, where `mkdocs build` runs), never
    outside it (`restrict_base_path`, its default). A page of no such site comes back as it
    is. `auto_append` files are not appended: they are abbreviation lists a page shows as
    tooltips, and would repeat on every page. A snippet that cannot be read is dropped, as
    the extension drops it (`check_paths` off); URLs are not fetched (nothing leaves the
    machine)."""
    if "8<" not in text:
        return text
    path = Path(os.path.abspath(page))
    cfg = _snippet_settings(path, frozenset(skip))
    if cfg is None:
        return text
    return "\n".join(_snippet_lines(text.replace("\r\n", "\n").split("\n"), cfg, set(), False))


def _snippet_settings(page: Path, skip: frozenset[str]) -> _Snippets | None:
    """The snippet settings of the MkDocs site `page` belongs to (the nearest `mkdocs.yml`
    above it, no hidden or skipped folder between), or None where it has none or the site
    does not enable `pymdownx.snippets`."""
    for folder in list(page.parents)[:_DEPTH]:
        if any(p.startswith(".") or p in skip for p in page.parent.relative_to(folder).parts):
            return None
        config = next((folder / n for n in _MKDOCS_FILES if (folder / n).is_file()), None)
        if config is None:
            continue
        data = _mkdocs_config(config)
        opts = _extension_options(data, "pymdownx.snippets")
        if opts is None:
            return None
        docs = data.get("docs_dir") if isinstance(data.get("docs_dir"), str) else "docs"
        where = {"$config_dir": folder, "$docs_dir": folder / docs, "": page.parent}
        base = opts.get("base_path", ["."])
        bases = []
        for b in base if isinstance(base, list) else [base]:
            if isinstance(b, _Relative):
                bases.append(where.get(b.value.strip(), folder / b.value.strip()))
            elif isinstance(b, str):
                bases.append(folder / b)
        return _Snippets([Path(os.path.abspath(b)) for b in bases] or [folder],
                         opts.get("dedent_subsections") is True)
    return None


@dataclass(frozen=True)
class _Relative:
    """MkDocs' `!relative` tag: a path from the config's, the docs' or the page's folder."""

    value: str


def _mkdocs_config(config: Path) -> dict:
    """`mkdocs.yml` as a mapping ({} where it does not parse): `!relative` kept, `!ENV` as
    its variable's value or its default, other tags (`!!python/name:`) as nothing."""
    import yaml

    class Loose(yaml.SafeLoader):
        pass

    def env(loader: yaml.SafeLoader, node: yaml.Node) -> str | None:
        names = (loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode)
                 else [loader.construct_scalar(node)])  # type: ignore[arg-type]
        found = next((os.environ[n] for n in names[:-1] if isinstance(n, str) and n in os.environ), None)
        return found if found is not None else (names[-1] if len(names) > 1 else os.environ.get(str(names[0])))

    Loose.add_constructor("!relative", lambda loader, node: _Relative(str(loader.construct_scalar(node))))
    Loose.add_constructor("!ENV", env)
    Loose.add_multi_constructor("", lambda loader, suffix, node: None)
    try:
        data = yaml.load(config.read_text(encoding="utf-8-sig"), Loader=Loose)  # a SafeLoader
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def _extension_options(data: dict, name: str) -> dict | None:
    """The options `mkdocs.yml` gives the Markdown extension `name` ({} where it is enabled
    without any), or None where it is not enabled; `markdown_extensions` as a list (of names
    and one-key mappings) or a mapping."""
    extensions = data.get("markdown_extensions")
    items = extensions.items() if isinstance(extensions, dict) else (
        [next(iter(e.items())) if isinstance(e, dict) and len(e) == 1 else (e, {})
         for e in extensions] if isinstance(extensions, list) else [])
    for key, opts in items:
        if key == name:
            return opts if isinstance(opts, dict) else {}
    return None


def _snippet_lines(lines: list[str], cfg: _Snippets, seen: set[Path], is_section: bool) -> list[str]:
    """pymdownx.snippets' `parse_snippets`: the lines with snippets read in."""
    out: list[str] = []
    block = False
    for line in lines:
        m = _SNIPPET.match(line) if "8<" in line else None
        inline = False
        if m is not None:
            if m.group(2):  # escaped: shown, one ";" fewer
                out.append(line.replace(";", "", 1))
                continue
            if m.group(3) is None:  # a block's opening or closing marker
                block = not block
                continue
            if block:
                continue  # the inline form is not read inside a block
            inline = True
        elif not block:
            s = _SNIPPET_SECTION.match(line) if not is_section and _SECTION_HINT.search(line) else None
            if s is not None and not s.group(2):
                continue  # a section marker: not shown
            out.append(line if s is None else s.group(1) + s.group(2).replace(";", "", 1) + s.group(3)
                       + s.group(4) + s.group(7))
            continue
        space = (m.group(1) if inline and m is not None else line[:len(line) - len(line.lstrip())]).expandtabs(4)
        name = m.group(3)[1:-1].strip() if inline and m is not None else line.strip()
        if not inline and not name:
            out.append("")
            continue
        if name.startswith(";"):
            continue
        out.extend(space + ln for ln in _snippet(name, cfg, seen))
    return out


def _snippet(spec: str, cfg: _Snippets, seen: set[Path]) -> list[str]:
    """One snippet's lines (its own snippets read), [] where it cannot be read."""
    f = _SNIPPET_FILE.match(spec) if len(spec) <= 1000 else None
    name = f.group(1).strip() if f else ""
    if not name or name.lower().startswith(("http://", "https://")):
        return []  # URLs are not fetched (pymdownx's `url_download` is off by default too)
    path = _snippet_path(name, cfg.base)
    if path is None or path in seen or len(seen) >= _DEPTH:
        return []
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return []
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES or len(raw) > cfg.left:
            return []
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return []
    cfg.left -= len(text)
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines = lines if text.endswith("\n") else lines[:-1]
    if f is not None and f.group(2):
        picked: list[str] = []
        total = len(lines)
        for part in f.group(2)[1:].split(","):
            bounds = [b[:9] for b in part.split(":")]  # a line number past 10**9 is past the end
            first = int(bounds[0]) if bounds[0] not in ("", "-") else None
            last = int(bounds[1]) if len(bounds) > 1 and bounds[1] not in ("", "-") else None
            first = None if first is None else (max(0, total + first) if first < 0 else max(0, first - 1))
            last = None if last is None else (max(0, min(total, total + 1 + last)) if last < 0 else last)
            picked.extend(lines[first:last])
        lines = textwrap.dedent("\n".join(picked)).split("\n") if cfg.dedent else picked
    elif f is not None and f.group(3):
        lines = _snippet_section(lines, f.group(3)[1:], cfg.dedent)
    return _snippet_lines(lines, cfg, seen | {path}, bool(f is not None and f.group(3)))


def _snippet_path(name: str, bases: list[Path]) -> Path | None:
    """The first base's file `name`, not outside that base (pymdownx's `restrict_base_path`);
    a base that is a file names itself only."""
    for base in bases:
        try:
            if base.is_dir():
                path = Path(os.path.abspath(base / name))
                if path.is_relative_to(base) and path.exists():
                    return path
            elif base.is_file() and (base.parent / name).exists() and os.path.samefile(base.parent / name, base):
                return base
        except (OSError, ValueError):  # a name too long for the file system, a NUL in it
            continue
    return None


def _snippet_section(lines: list[str], section: str, dedent: bool) -> list[str]:
    """The lines between `--8<-- [start:section]` and `--8<-- [end:section]` (other sections'
    markers left out)."""
    out: list[str] = []
    inside = False
    for line in lines:
        m = _SNIPPET_SECTION.match(line) if _SECTION_HINT.search(line) else None
        if m is not None and inside and m.group(2):
            line = m.group(1) + m.group(2).replace(";", "", 1) + m.group(3) + m.group(4) + m.group(7)
        elif m is not None and m.group(6) == section:
            if m.group(5) == "start":  # a second start is passed over
                inside = True
                continue
            break  # its end, an end before a start, or "[START:x]" (pymdownx compares "start")
        elif m is not None and inside:
            continue
        if inside:
            out.append(line)
    return textwrap.dedent("\n".join(out)).split("\n") if dedent else out
