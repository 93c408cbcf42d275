"""What Sphinx shows for reStructuredText's inline markup, and for the roles MyST shares with
it: a role as its text (`role_shown`), a page's hyperlink, footnote and substitution references
read (`inline`, with the page's `Context`; `:ref:` and `:doc:` to other pages by the
`SiteNames` that `ingest.sphinx_site` reads from the project's folder), a version note's words
(`VERSIONS`). Used by `ingest.rst` (pages) and `ingest.myst` (roles). Pure: tested without
files.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field, replace

from agentic_rag.ingest.markup import is_rst_adornment, list_marker

# roles Sphinx shows as code, by their last part (`py:func`, `c:func`, `external:py:class`);
# any other role (`ref`, `doc`, `term`, extlinks such as `pr`, `source`) reads as its text
CODE_ROLES = {"func", "class", "meth", "mod", "attr", "data", "exc", "obj", "const", "any",
              "file", "samp", "command", "program", "option", "envvar", "kbd", "code",
              "literal", "regexp", "makevar", "mailheader", "keyword", "token", "type",
              "function", "method", "member", "macro", "struct", "enum", "enumerator",
              "var", "expr", "texpr", "property", "attribute", "interface", "decorator"}
# roles whose content is literal: "a <b>" in them is not a title and a target
LITERAL_ROLES = {"code", "literal", "samp", "kbd", "file", "command", "program", "regexp",
                 "makevar", "mailheader", "math", "sub", "sup", "abbr"}
DROPPED_ROLES = {"octicon", "fa", "iconify", "index"}
_CALLED_ROLES = {"func", "meth", "function", "method"}  # Sphinx adds "()" to their names
_TITLE_TARGET = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)


def role_shown(name: str, body: str) -> tuple[str, str]:
    """(text, kind) Sphinx shows for the role `name` (`func`, `py:func`, `ref`, ...) with
    content `body`: kind "code" (show it as inline code), "math", "text", or "" (nothing
    shown: an icon, an index entry)."""
    name, body = name.lower(), " ".join(body.split())
    last = name.rsplit(":", 1)[-1]
    if name in DROPPED_ROLES:
        return "", ""
    # "title <target>" in a cross reference, not in a literal (`:code:`List<int>``)
    titled = None if last in LITERAL_ROLES else _TITLE_TARGET.match(body)
    shown = titled.group(1) if titled and titled.group(1) else (titled.group(2) if titled else body)
    if name in ("pep", "rfc"):
        return (shown if titled and titled.group(1) else f"{name.upper()} {shown}"), "text"
    if name == "math":
        return shown, "math"
    if last not in CODE_ROLES:
        return shown, "text"
    if not titled and last not in LITERAL_ROLES:  # an object's name, not a file's or a key's
        shown = shown.lstrip(".")
        if shown.startswith("~"):
            shown = shown[1:].rsplit(".", 1)[-1]
        shown = shown.lstrip("!~")
        if last in _CALLED_ROLES and shown and not shown.endswith(")"):
            shown += "()"
    return shown, "code"


# a version note's words (shared with `ingest.myst`), as Sphinx 7.3+ words them
VERSIONS = {"versionadded": "Added in version", "versionchanged": "Changed in version",
            "deprecated": "Deprecated since version", "versionremoved": "Removed in version",
            "version-added": "Added in version", "version-changed": "Changed in version",
            "version-deprecated": "Deprecated since version",
            "version-removed": "Removed in version"}
# a role's or reference's content, an inline literal's: may wrap, not past a blank line, and
# stops at the next backtick (a literal's at the next two): each opening looks no further than
# the next one, so a line of unclosed openings reads in linear time
_SPAN = r"(?:[^`\n]|\n(?![ \t]*\n)){1,2000}?"
_LITERAL_SPAN = r"(?:[^`\n]|`(?!`)|\n(?![ \t]*\n)){1,2000}?"
_INLINE = re.compile(
    rf"``(?!\s){_LITERAL_SPAN}``(?![\w`])"                               # an inline literal
    rf"|(?:\\ )?(?<![\w`\\]):((?:[A-Za-z][\w.+-]*:)+)`(?!`)({_SPAN})(?<![\\\s])`(?![`\w])(?:\\ |\\(?=\w))?"
    rf"|(?<![\w`])`(?![`\s])({_SPAN})(?<![\\\s])`__?(?![\w])"          # a hyperlink reference
    r"|\|([^|\n`]{1,80})\|(?:__?(?!\w))?"                                 # a substitution
    r"|(?<![\w`])\[#?([\w-]*)\]_(?![\w])")                                  # a footnote reference
# the same, and `name_` (a reference to a target the page defines), where the page has targets
_INLINE_REFS = re.compile(_INLINE.pattern + r"|(?<![\w`\\])([A-Za-z][\w.+-]*[A-Za-z0-9])__?(?![\w])")
EXPLICIT = re.compile(r"^([ \t]*)\.\.(?:[ \t]+(.*))?$")
_SUBSTITUTION = re.compile(r"^\|([^|]+)\|[ \t]+([\w-]+)::(?:[ \t]+(.*))?$")
_LABEL = re.compile(r"^[ \t]*\.\. _(?:`([^`]+)`|([^:`]+)):[ \t]*$")  # ".. _`a: b`:" quoted
_TARGET = re.compile(r"^[ \t]*\.\. _`?([^:`]+)`?:", re.M)


@dataclass(frozen=True)
class SiteNames:
    """What the pages of a Sphinx project define for one another (`ingest.sphinx_site` reads
    them from its folder): section labels, lower case, each to its section's title (what
    `:ref:`label`` shows on any page), page names (root-relative, no suffix) to their titles
    (what `:doc:`name`` shows), and the name of the page being read."""

    labels: dict[str, str] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    docname: str = ""

    def doc_title(self, target: str) -> str | None:
        """The title `:doc:`target`` shows from this page: "/x/y" from the project's root,
        "y" or "../y" from this page's folder."""
        t = target.strip()
        if not t:
            return None
        # Sphinx's docname_join: relative to this page's folder, "/..." from the root
        name = posixpath.normpath(posixpath.join("/" + self.docname, "..", t))[1:]
        return self.titles.get(name)


@dataclass
class Context:
    """A page's names: what `inline` reads references by."""

    substitutions: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # `.. _label:` (lower) -> its title
    targets: set[str] = field(default_factory=set)  # every `.. _name:` of the page, lower case
    site: SiteNames | None = None  # the other pages' labels and titles, where known


def _substitutions(lines: list[str]) -> dict[str, str]:
    """`.. |name| replace:: text` definitions of the page (any line, any depth)."""
    found = {}
    for line in lines:
        m = EXPLICIT.match(line)
        s = _SUBSTITUTION.match(m.group(2) or "") if m else None
        if s and s.group(2) == "replace" and s.group(3):
            found[s.group(1)] = s.group(3).strip()
    return found



# directives that show nothing where they stand: a label before them labels what follows
_SILENT = re.compile(r"^[ \t]*\.\.[ \t]+(?:py:)?(?:currentmodule|module|highlight|default-role|"
                     r"default-domain|index)[ \t]*::")
_RUBRIC = re.compile(r"^[ \t]*\.\.[ \t]+rubric[ \t]*::[ \t]+(\S.*)$")
_CODE_OPENING = re.compile(r"^[ \t]*\.\.[ \t]+(?:code-block|code|sourcecode|parsed-literal)[ \t]*::")


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _heading_at(lines: list[str], k: int) -> str | None:
    """The title of the section heading starting at line k (underlined, or over- and
    underlined with the same line), or None."""
    title, under = lines[k].strip(), lines[k + 1].strip() if k + 1 < len(lines) else ""
    if is_rst_adornment(title) and k + 2 < len(lines) and lines[k + 2].strip() == title:
        title, under = under, title  # an overlined heading
    elif not title or is_rst_adornment(title) or title.startswith(".. "):
        return None
    return title if is_rst_adornment(under) else None


def literal_lines(lines: list[str]) -> set[int]:
    """The lines inside literal blocks (after a paragraph ending in `::`) and code
    directives: a `.. _label:` there is an example, no label. A list item's literal block
    is indented past the item's text ("* Build it::"), not past its marker."""
    out: set[int] = set()
    k = 0
    while k < len(lines):
        s = lines[k].strip()
        if (s.endswith("::") and not s.startswith("..")) or _CODE_OPENING.match(lines[k]):
            marker = list_marker(lines[k], True) if not s.startswith("..") else None
            j, ind = k + 1, marker[0] if marker else indent_of(lines[k])
            while j < len(lines) and (not lines[j].strip() or indent_of(lines[j]) > ind):
                out.add(j)
                j += 1
            k = j
            continue
        k += 1
    return out


def _labels(lines: list[str]) -> dict[str, str]:
    """The page's section labels: `.. _label:` lines (one or more) right before a heading
    (or a rubric; directives that show nothing between), each to the heading's title (what
    `:ref:`label`` shows). Labels inside literal blocks are examples, not labels."""
    found, pending = {}, []
    literal = literal_lines(lines)
    k = -1
    while k + 1 < len(lines):
        k += 1
        line = lines[k]
        if k in literal:
            continue
        if (m := _LABEL.match(line)) is not None:
            pending.append(" ".join((m.group(1) or m.group(2)).split()))
            continue
        if not line.strip() or not pending:
            continue
        if _SILENT.match(line):  # skip it and its content; the labels wait for what follows
            while k + 1 < len(lines) and (not lines[k + 1].strip()
                                          or indent_of(lines[k + 1]) > indent_of(line)):
                k += 1
            continue
        if (r := _RUBRIC.match(line)) is not None:
            found.update((label, r.group(1).strip()) for label in pending)
            pending = []
            continue
        if (title := _heading_at(lines, k)) is not None:
            found.update((label, title) for label in pending)
        pending = []
    return found



def section_labels(lines: list[str]) -> dict[str, str]:
    """A page's section labels, lower case as Sphinx keys them (whitespace collapsed), to
    their titles (as written)."""
    return {label.lower(): title for label, title in _labels(lines).items()}


def page_title(lines: list[str]) -> str:
    """A page's title as written: its first section heading (underlined, or over- and
    underlined, with the same character), or "" when it has none."""
    for k in range(len(lines) - 1):
        if not lines[k][:1].isspace() and (title := _heading_at(lines, k)):
            return title
    return ""


def page_context(lines: list[str], text: str, site: SiteNames | None = None) -> Context:
    """The substitutions, section labels and targets a page defines; `site`: the other
    pages' (`ingest.sphinx_site`)."""
    return Context(substitutions=_substitutions(lines), labels=section_labels(lines),
                   targets={t.strip().lower() for t in _TARGET.findall(text)}, site=site)


def inline(text: str, ctx: Context) -> str:
    """A paragraph's roles, hyperlink references and substitutions read; inline literals
    as they are."""
    if "`" not in text and "|" not in text and "_" not in text:
        return text

    def shown(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            name, target = m.group(1)[:-1].lower(), " ".join(m.group(2).split())
            title = title_of(name, target, ctx)
            if title:  # a section's or a page's title, read once
                return title
            body, kind = role_shown(name, m.group(2))
            return f"``{body}``" if kind == "code" and body and "``" not in body else body
        if m.group(3) is not None:  # `text <url>`_
            titled = _TITLE_TARGET.match(" ".join(m.group(3).split()))
            return (titled.group(1) or titled.group(2)) if titled else m.group(3)
        if m.group(4) is not None:
            return ctx.substitutions.get(m.group(4), m.group(0))  # `|name|_`: its text
        if m.group(5) is not None:  # [1]_, [#note]_
            return f"[{m.group(5)}]" if m.group(5) else ""
        if m.re.groups >= 6 and m.group(6) is not None:  # pyblake2_
            return m.group(6) if m.group(6).lower() in ctx.targets else m.group(0)
        return m.group(0)

    return (_INLINE_REFS if ctx.targets else _INLINE).sub(shown, text)


def title_of(role: str, target: str, ctx: Context) -> str | None:
    """The title an untitled `:ref:` (this page's label, then any page's) or `:doc:` shows,
    as plain text (Sphinx's reference shows a title's words, not its markup); another page's
    title is read without this page's substitutions."""
    title = None
    if role in ("ref", "std:ref"):
        title = ctx.labels.get(target.lower())
        if title:
            return _plain(inline(title, replace(ctx, labels={}, site=None)))
        title = ctx.site.labels.get(target.lower()) if ctx.site else None
    elif role in ("doc", "std:doc") and ctx.site:
        title = ctx.site.doc_title(target)
    return _plain(inline(title, Context())) if title else None


def _plain(text: str) -> str:
    """An inline literal's text without its backquotes (``x`` → x)."""
    return re.sub(r"``(?!\s)(.+?)(?<!\s)``", r"\1", text)
