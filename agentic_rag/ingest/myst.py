"""MyST Markdown (Sphinx's Markdown, Jupyter Book) read as the built page reads: directives and
roles as their text, what only the builder reads dropped.

    text = myst_markdown(raw_text)      # before `mdx.site_markdown`, which takes the front matter

- an admonition (```` ```{note} ````, ```` ```{admonition} Title ````, `:::{tip}`, a version
  note: ```` ```{versionadded} 3.1 ```` → "**Added in version 3.1**") and a container that shows
  its content (`{tab-item} pip`, `{dropdown} Title`, `{card}`, `{figure}`'s caption,
  `{eval-rst}`, ...) become a bold line over their content (`mdx`'s admonition form); their
  options (`:class: info`, a `---` YAML block) go, and so do a card's `^^^`/`+++` rules;
- a code directive (```` ```{code-block} python ````, `{code-cell} ipython3`,
  `{jupyter-execute}`, `{math}`, a language such as ```` ```{r} ````) becomes a plain fenced
  block in its language, without its options; an unknown directive is code when its content
  starts with a prompt (`$ `, `>>> `: pip's `{pip-cli}`), else text under its arguments;
- navigation and build-only directives (`{toctree}`, `{image}`, `{raw}`, autodoc, an
  `{include}` whose file `ingest.includes` could not read in,
  and the same written in RST inside `{eval-rst}`, with `.. currentmodule::`) go;
- roles read as Sphinx shows them: a code role (``{py:func}`~os.path.join` ``, every
  `domain:role` whose role is code) as inline code (`join`: "~" keeps the last part), a
  cross-reference or link (``{ref}`Install <install>` ``, ``{doc}`usage` ``, ``{pr}`1234` ``)
  as its title or target, ``{pep}`8` `` as "PEP 8"; a role may wrap to the next line;
- a target line `(label)=` and a `% comment` line go.
Only a page that shows MyST (a directive fence, a role Sphinx knows, a target line) is read
so; any other page comes back byte for byte. Code blocks (fenced, as the chunker opens them)
and inline code are not rewritten. Pure: tested without files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter

from agentic_rag.ingest.mdx import (
    OPENER,
    bold,
    closed_at,
    closes_fence,
    front_matter,
    shallow,
)
from agentic_rag.ingest.sphinx import CODE_ROLES, VERSIONS, Context, SiteNames, role_shown, title_of

_LIST_MARK = r"(?:[-*+]|\d{1,9}[.)])[ \t]+"
# ```{name} args  /  :::{name} args (the colon_fence extension), maybe after a list marker
_DIRECTIVE = re.compile(rf"^([ \t]*(?:{_LIST_MARK})?)(`{{3,}}|~{{3,}}|:{{3,}})"
                        r"\{([A-Za-z][\w:.+-]*)\}(.*)$")
_ITEM_FENCE = re.compile(rf"^([ \t]*{_LIST_MARK})(`{{3,}}|~{{3,}})")  # "- ```yaml"
_OPTION = re.compile(r"^([ \t]*):[\w-]+:(?:[ \t].*)?$")
_YAML_FENCE = re.compile(r"^-{3,}[ \t]*$")
_YAML_LINE = re.compile(r"^(?:[ \t]*[\w-]+[ \t]*:(?:[ \t].*)?|[ \t]+\S.*|[ \t]*-[ \t].*|[ \t]*#.*|)$")
_PROMPT = re.compile(r"(?:\$|>>>|PS>|C:\\>)[ \t]")
_TARGET = re.compile(r"^\(([^()\n]+)\)=[ \t]*$")  # "(label)=", "(hash-checking mode)=" (pip)
_COMMENT = re.compile(r"^%(?:[ \t].*)?$")
_CARD_RULE = re.compile(r"^[ \t]*(?:\^{3,}|\+{3,})[ \t]*$")
# a role or inline code, whichever starts first (a role shown inside inline code stays); both
# may wrap to the next line, not past a blank one; bounded, so a long line is linear
_SPAN = r"(?:[^\n]|\n(?![ \t]*\n)){1,2000}?"
_TITLED = re.compile(r"^.*?\S\s*<[^<>]+>$", re.S)  # a role's "title <target>"
_ROLE_OR_CODE = re.compile(rf"\{{([A-Za-z][\w:.+-]*)\}}(`+)(?!`)({_SPAN})(?<!`)\2(?!`)"
                           rf"|(?<!`)(`+)(?!`){_SPAN}(?<!`)\4(?!`)")

_ADMONITIONS = {"note", "tip", "hint", "important", "warning", "caution", "danger", "error",
                "attention", "seealso"}
# content shown, the arguments (if any) as its title
_CONTAINERS = {"admonition", "dropdown", "tab-set", "tab-item", "tab", "grid", "grid-item",
               "grid-item-card", "card", "card-carousel", "topic", "sidebar", "margin",
               "container", "div", "epigraph", "pull-quote", "highlights", "compound",
               "eval-rst", "only", "glossary", "hlist", "centered", "rubric", "figure",
               "figure-md", "table", "list-table", "csv-table", "tabbed", "details"}
# containers whose arguments are a layout, a condition or a file, not a title
_UNTITLED = {"grid", "tab-set", "container", "div", "card-carousel", "hlist", "only", "eval-rst",
             "glossary", "compound", "figure", "figure-md"}
# code: their language (None: the first argument's, e.g. {code-block} python)
_CODE = {"code-block": None, "code": None, "sourcecode": None, "code-cell": None,
         "jupyter-execute": "python", "ipython": "python", "doctest": "pycon",
         "testcode": "python", "testoutput": "text", "testsetup": "python",
         "testcleanup": "python", "math": "math", "mermaid": "mermaid", "graphviz": "dot",
         "digraph": "dot", "graph": "dot", "plantuml": "plantuml", "prompt": "console",
         "program-output": "text", "command-output": "console", "exec": "python",
         "literal": "text", "parsed-literal": "text"}
_LANGUAGES = {"python", "py", "python3", "ipython3", "pycon", "r", "julia", "bash", "sh",
              "shell", "console", "zsh", "powershell", "sql", "javascript", "js", "ts",
              "typescript", "json", "yaml", "toml", "ini", "c", "cpp", "rust", "go", "java",
              "html", "css", "ojs", "dot", "latex", "tex", "text", "none", "xml", "scala"}
_DROPPED = {"toctree", "contents", "include", "literalinclude", "image", "raw",
            "tableofcontents", "bibliography", "footbibliography", "autosummary",
            "automodule", "autoclass", "autofunction", "automethod", "autoattribute",
            "autodata", "autoexception", "autoprogram", "click", "argparse", "sectionauthor",
            "moduleauthor", "index", "meta", "tags", "youtube", "video", "iframe",
            "currentmodule", "module", "highlight", "default-domain", "default-role"}
# `.. toctree::`, `.. js:autosummary::`, `.. py:currentmodule::` in `{eval-rst}`
_RST_DROPPED = re.compile(r"^\.\. (?:[\w-]+:)?(?:auto[\w-]*|"
                          + "|".join(map(re.escape, sorted(_DROPPED))) + ")::")
_KNOWN = _ADMONITIONS | set(VERSIONS) | _CONTAINERS | set(_CODE) | _DROPPED
_EVIDENCE = re.compile(r"^[ \t]*(?:\S+[ \t]+)?(?:`{3,}|~{3,}|:{3,})\{(?:"
                       + "|".join(map(re.escape, sorted(_KNOWN))) + r")\}|\{(?:[\w+-]+:)*(?:"
                       + "|".join(sorted(CODE_ROLES))
                       + r"|ref|doc|term|numref|pep|rfc|download|abbr)\}`|^\([\w.:/-]+\)=[ \t]*$",
                       re.M)


_ATX = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*))?$")
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_REFERENCE = re.compile(r"\{(?:std:)?(?:ref|doc)\}`|\[\]\(|<project:")
# MyST's links that show their target's title: `[](#label)`, `[](page.md)`, `<project:#label>`;
# inline code first, so a link written inside it stays as written
_LINK_OR_CODE = re.compile(r"(?<!`)(`+)(?!`)(?:[^`\n]|\n(?![ \t]*\n)){1,2000}?(?<!`)\1(?!`)"
                           r"|\[\]\(([^()\s]+)\)|<project:([^<>\s]+)>")
_MD_LINK = re.compile(r"!?\[([^\[\]\n]*)\]\([^()\s]*\)")


def markdown_code_lines(lines: list[str], opened: set[int] | None = None) -> set[int]:
    """The lines of a MyST page that show no Markdown of its own: fenced blocks, code and
    other non-text directives (`{include}`), HTML comments (shown as nothing), and every
    fence line (a container's too: read as text, "```{note}" would open inline code); an
    admonition's or container's content (```` ```{note} ````, `:::{tip}`) is Markdown, and a
    code block left open in one ends with it. `opened`, where given, gets the first line of
    each block opened outside code (`ingest.includes` reads the include directives there)."""
    out: set[int] = set()
    code: str | None = None
    comment = False
    containers: list[str] = []
    for i, line in enumerate(lines):
        if comment:
            out.add(i)
            comment = "-->" not in line
        elif code is not None:
            out.add(i)
            if containers and closes_fence(line, containers[-1]) and not closes_fence(line, code):
                code = None
                containers.pop()
                continue
            code = None if closes_fence(line, code) else code
        elif containers and closes_fence(line, containers[-1]):
            containers.pop()
            out.add(i)
        elif line.lstrip().startswith("<!--"):
            out.add(i)
            comment = "-->" not in line
        elif (d := _DIRECTIVE.match(line)) is not None and holds_markdown(d.group(3).lower()):
            containers.append(d.group(2))
            out.add(i)
        elif (o := _DIRECTIVE.match(line) or OPENER.match(line)) is not None:
            code = o.group(2)
            out.add(i)
            if opened is not None:
                opened.add(i)
    return out


def myst_names(text: str) -> tuple[str, dict[str, str]]:
    """(title, labels) a MyST page defines for the project (`ingest.sphinx_site`): its first
    heading (`#` or underlined), and each `(label)=` target line right before a heading (blank
    lines between), lower case, to the heading's words as Sphinx shows them (no markup).
    Headings in code are examples."""
    title, labels, pending = "", {}, []
    lines = text.split("\n")
    code = markdown_code_lines(lines)
    for i, line in enumerate(lines):
        heading = None
        if i in code:
            pending = []
            continue
        if (t := _TARGET.match(line.rstrip("\r"))) is not None:
            pending.append(" ".join(t.group(1).split()).lower())
            continue
        if (h := _ATX.match(line.rstrip("\r"))) is not None:
            heading = _closed_atx(h.group(1) or "")
        elif (line.strip() and i + 1 < len(lines) and i + 1 not in code
              and _SETEXT.match(lines[i + 1].rstrip("\r")) and not _SETEXT.match(line)):
            heading = line.strip()
        if heading:
            shown = plain_heading(heading)
            title = title or shown
            labels.update((label, shown) for label in pending)
        if line.strip():
            pending = []
    return title, labels


def _closed_atx(text: str) -> str:
    """An ATX heading's text without its closing run of "#" (linear: no regex backtracking)."""
    t = text.rstrip()
    bare = t.rstrip("#")
    return bare.rstrip() if bare != t and (not bare or bare[-1] in " \t") else t


def plain_heading(text: str) -> str:
    """A heading's words as a built page shows them: roles as their text, inline code and
    links as their text, emphasis marks dropped."""
    text = _ROLE_OR_CODE.sub(lambda m: m.group(0).strip("`") if m.group(1) is None
                             else role_shown(m.group(1), m.group(3))[0], text)
    text = _MD_LINK.sub(r"\1", text)
    return " ".join(re.sub(r"(?<!\w)[*_]{1,2}|[*_]{1,2}(?!\w)", "", text).split())


def titled_references(text: str, site: SiteNames | None, links: bool = True) -> str:
    """`text` with each untitled `{ref}`label`` and `{doc}`page`` shown as the title Sphinx
    shows (this page's `(label)=` targets, then the project's: `site`), and, where `links`
    (a Sphinx project: a plain Markdown site shows an empty link as nothing),
    `[](#label)`, `[](page.md)`, `[](page.md#label)`, `<project:#label>` as the title too;
    one not known stays as written. Code (fenced blocks, code directives, inline code) is
    not read."""
    if not _REFERENCE.search(text):
        return text
    ctx = Context(labels=myst_names(text)[1], site=site)

    def role(m: re.Match[str]) -> str:
        name = (m.group(1) or "").lower()
        if name not in ("ref", "std:ref", "doc", "std:doc") or _TITLED.match(m.group(3)):
            return m.group(0)  # inline code, another role, or a titled one
        return _shown(m.group(0), title_of(name, " ".join(m.group(3).split()), ctx))

    def link(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return m.group(0)  # inline code
        target = (m.group(2) or m.group(3)).removeprefix("project:")
        page, _, fragment = target.partition("#")
        if ":" in page:  # a URL (`https:`, `mailto:`) shows itself
            return m.group(0)
        if fragment:  # a label (of that page or any: Sphinx's labels are the project's)
            return _shown(m.group(0), title_of("ref", fragment, ctx))
        name = re.sub(r"\.(?:md|rst|txt)$", "", page)  # a page, else any label (MyST looks it up)
        return _shown(m.group(0), title_of("doc", name, ctx) or title_of("ref", page, ctx))

    lines = text.split("\n")
    code = markdown_code_lines(lines)
    out, run = [], []
    for i, line in enumerate([*lines, None]):
        if line is not None and i not in code:
            run.append(line)
            continue
        if run:
            piece = _ROLE_OR_CODE.sub(role, "\n".join(run))
            out.append(_LINK_OR_CODE.sub(link, piece) if links else piece)
            run = []
        if line is not None:
            out.append(line)
    return "\n".join(out)


def _shown(written: str, title: str | None) -> str:
    """The title where known, as plain words (no markup the page would read again)."""
    return written if not title else " ".join(re.sub(r"[`{}<>\[\]]", "", title).split()) or written


def holds_markdown(name: str) -> bool:
    """Whether a directive's content is Markdown the page shows (an admonition, a
    container, an unknown directive), not code or what only the builder reads."""
    name = name.rsplit(":", 1)[-1]
    return name not in _CODE and name not in _DROPPED and name != "eval-rst"


@dataclass
class _Open:
    """A fenced block the reader is inside."""

    fence: str  # its opening fence ("```", "::::", ...)
    kind: str  # "code", "text", "drop", "plain" (a fenced block that is no directive),
    #            "unknown" (a directive read as code or text by its first line of content)
    name: str = ""
    indent: str = ""
    title: str = ""  # an unknown directive's arguments: its title if it reads as text
    options: bool = False  # still where its options may be
    dropping: bool = False  # in an RST navigation directive (`{eval-rst}`)

    def code_fence(self) -> str:
        """The fence of its code block as written out (a colon fence becomes backticks)."""
        return "```" if self.fence[0] == ":" else self.fence


def myst_markdown(text: str) -> str:
    """`text` with MyST's directives, roles and targets read (the module doc); byte for byte
    `text` when it shows no MyST."""
    if not _EVIDENCE.search(text):
        return text
    body = front_matter(text)[1]  # left as it is, for `site_markdown`
    if len(body) < len(text):
        head = text[:len(text) - len(body)]
        return head + myst_markdown(body) if _EVIDENCE.search(body) else text
    lines = text.splitlines(keepends=True)
    out: list[tuple[bool, str]] = []  # (is code, text)
    stack: list[_Open] = []
    i = 0
    while i < len(lines):
        line, top = lines[i], (stack[-1] if stack else None)
        i += 1
        if top is not None and closes_fence(line, top.fence):
            stack.pop()
            out.append((top.kind in ("code", "plain"), _closing(top, line)))
            continue
        if top is not None and top.options:
            if (skip := _options(lines, i - 1, top)) is not None:
                i += skip
                continue
        if top is not None and _skipped(line, top):
            continue
        if top is not None and top.kind == "unknown":
            if not line.strip():
                continue
            out.append((False, _decided(top, line)))
        if top is not None and top.kind in ("code", "plain", "drop"):
            if top.kind != "drop":
                out.append((True, line))
            continue
        depth = len(stack)
        pieces = _opened(lines, i - 1, stack)
        code = len(stack) > depth and stack[-1].kind in ("code", "plain")
        out.extend((code, p) for p in pieces)
    return _roles(out)


def _closing(top: _Open, line: str) -> str:
    """What a block's closing fence line becomes: the line for a plain block, the fence the
    block was written out with for code, a blank line after text."""
    if top.kind == "plain":
        return line
    if top.kind == "code":
        return f"{top.indent}{top.code_fence()}{_end(line)}"
    return _end(line) if top.kind == "text" else ""


def _options(lines: list[str], n: int, top: _Open) -> int | None:
    """Lines `lines[n:]` that are the directive's options, to skip (`:key: value` lines, each
    maybe continued on indented lines, or a `---` YAML block that closes before the
    directive does and holds only YAML), with the blank line after them; None when line n
    is content (the options are over)."""
    first = n
    if _YAML_FENCE.match(lines[n].rstrip("\r\n")):
        end = next((j for j in range(n + 1, min(len(lines), n + 200))
                    if _YAML_FENCE.match(lines[j].rstrip("\r\n"))
                    or closes_fence(lines[j], top.fence)
                    or not _YAML_LINE.match(lines[j].rstrip("\r\n"))), None)
        if end is None or not _YAML_FENCE.match(lines[end].rstrip("\r\n")):
            top.options = False
            return None
        n = end + 1
    else:
        while n < len(lines) and (m := _OPTION.match(lines[n].rstrip("\r\n"))):
            n += 1
            while n < len(lines) and _indent(lines[n]) > m.end(1) and lines[n].strip() \
                    and not closes_fence(lines[n], top.fence):
                n += 1  # a value continued on a deeper line (`:header:` of a csv-table)
    top.options = False
    if n == first:
        return None
    if n < len(lines) and not lines[n].strip():
        n += 1
    return n - first - 1


def _skipped(line: str, top: _Open) -> bool:
    """Whether `line` is builder-only inside a text block: a card's `^^^`/`+++` rule, or, in
    `{eval-rst}`, an RST navigation directive (`.. toctree::` and its indented body)."""
    if top.kind != "text":
        return False
    if top.name in ("card", "grid-item-card") and _CARD_RULE.match(line):
        return True
    if top.name == "eval-rst":
        if _RST_DROPPED.match(line):
            top.dropping = True
            return True
        top.dropping = top.dropping and (not line.strip() or line[:1] in " \t")
        return top.dropping
    return False


def _opened(lines: list[str], n: int, stack: list[_Open]) -> list[str]:
    """What line n outside code becomes; a directive or fence it opens pushed on `stack`. A
    fence indented past 3 spaces opens only where a closing line at its indentation follows
    (as `mdx.code_segments` reads it)."""
    line = lines[n]
    d = _DIRECTIVE.match(line)
    if d and _opens(lines, n, d.group(1), d.group(2)):
        indent, fence, name, args = d.group(1), d.group(2), d.group(3).lower(), d.group(4)
        kind, head, body = _directive(name, " ".join(args.split()))
        pad = indent if indent.isspace() or not indent else " " * len(indent)  # "- " → "  "
        top = _Open(fence, kind, name, indent=pad, title=head, options=name != "eval-rst")
        stack.append(top)
        if kind == "code":
            return [f"{indent}{top.code_fence()}{head}{_end(line)}"]
        if kind != "text" or not (head or body):
            return []
        return [f"{indent}{head}{_end(line)}" if head else indent] + \
            ([f"{pad if head else ''}{body}{_end(line)}"] if body else [])
    m = OPENER.match(line) or _ITEM_FENCE.match(line)
    if m and _opens(lines, n, m.group(1), m.group(2)):
        stack.append(_Open(m.group(2), "plain"))
        return [line]
    if _TARGET.match(line.rstrip("\r\n")) or _COMMENT.match(line.rstrip("\r\n")):
        return []
    return [line]


def _opens(lines: list[str], n: int, indent: str, fence: str) -> bool:
    lead = indent[:len(indent) - len(indent.lstrip(" \t"))]
    return shallow(lead) or lead != indent or closed_at(lines, n, lead, fence)


def _directive(name: str, args: str) -> tuple[str, str, str]:
    """(kind, head, body): for code, head is the fence's language; for text, its bold title
    line, and body the text its first line holds (`{note} Remember this.`: a directive that
    takes no title starts its content there)."""
    if name in _CODE or name in _LANGUAGES:
        lang = _CODE.get(name, name) or (args.split()[0] if args.split() else "")
        return "code", lang, ""
    if name in _DROPPED:
        return "drop", "", ""
    if name in _ADMONITIONS:
        return "text", bold("See also" if name == "seealso" else name, None), _inline(args)
    if name in VERSIONS:
        version, _, rest = args.partition(" ")
        return "text", f"**{' '.join((VERSIONS[name], version)).strip()}**", _inline(rest)
    title = bold(None, _inline(args)) if args else ""
    if name in _CONTAINERS:
        return "text", "" if name in _UNTITLED else title, ""
    return "unknown", title, ""


def _decided(top: _Open, line: str) -> str:
    """An unknown directive (`{pip-cli}`, `{exercise}`) read by its first line of content:
    code when it is a shell or REPL prompt (`$ pip install x`, `>>> f()`), else text under
    its title; what it writes out before that line."""
    if _PROMPT.match(line.lstrip()):
        top.kind = "code"
        return f"{top.indent}{top.code_fence()}console{_end(line)}"
    top.kind = "text"
    return f"{top.indent}{top.title}{_end(line)}" if top.title else ""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t")) if line.strip() else 0


def _end(line: str) -> str:
    return "\r\n" if line.endswith("\r\n") else "\n"


def _roles(pieces: list[tuple[bool, str]]) -> str:
    """The pieces joined, the roles of those that are not code read (`_role`; a role may wrap
    to the next line of its paragraph)."""
    runs = [(code, "".join(p for _, p in run)) for code, run in groupby(pieces, key=itemgetter(0))]
    return "".join(text if code or "}`" not in text else _ROLE_OR_CODE.sub(_role, text)
                   for code, text in runs)


def _inline(text: str) -> str:
    """A directive's arguments with their roles read, on one line (`{octicon}` gone)."""
    return " ".join(_ROLE_OR_CODE.sub(_role, text).split())


def _role(m: re.Match[str]) -> str:
    if m.group(1) is None:  # inline code: as it is
        return m.group(0)
    shown, kind = role_shown(m.group(1), m.group(3))
    if kind == "math":
        return f"${shown}$"
    if kind != "code":
        return shown
    tick = "`" * (max((len(r) for r in re.findall(r"`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{tick}{pad}{shown}{pad}{tick}"
