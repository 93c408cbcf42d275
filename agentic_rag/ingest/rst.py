"""reStructuredText (Sphinx's, docutils') read as the built page reads: roles as their text,
directives as what they show, what only the builder reads dropped. The text stays
reStructuredText, for `markup.parse_blocks` to split.

    text = sphinx_rst(raw_text)      # `readers` for .rst / .rst.txt / .rest files

- roles read as Sphinx shows them (`role_shown`, shared with `ingest.myst`): a code role as
  an inline literal (``:func:`~os.path.join` `` → ``` ``join()`` ```, a function's or method's
  name with the parentheses Sphinx adds), a cross-reference as its title or target
  (``:ref:`Install <install>` `` → Install), ``:pep:`8` `` as "PEP 8"; a hyperlink reference
  `` `Python <https://python.org>`_ `` as its text; a `|name|` defined by `replace::` as
  its text; "\\ " around a role (``:class:`list`\\ s``) goes;
- an API description (`.. function:: dumps(obj, *, skipkeys=False)`, `.. class::`,
  `.. method::`, any domain's, autodoc's) as its signature in a literal, as the source writes
  it (``` ``dumps(obj, *, skipkeys=False)`` ```; Sphinx also shows the module, "json.dumps",
  which the page's title and heading path already name, and which would keep an answer
  quoted from the source, "dumps(obj, ...)", from matching as a phrase), after the word
  Sphinx shows before it ("class", "exception", "classmethod", ...), its options dropped (a
  confval's type and default shown) and its description below it;
- an admonition (`.. note::`, `.. seealso::`, `.. admonition:: Title`, a topic, a sidebar,
  CPython's `impl-detail`) as a bold line over its content; a version note as its sentence
  (`.. versionadded:: 3.8` → "Added in version 3.8.", as Sphinx 7.3+ words it;
  `.. versionchanged:: 3.9` with text → "Changed in version 3.9: text"); CPython's
  `availability` and `audit-event` as theirs, with their content; a section title inside a
  directive's content as a bold line (it is no section of the page);
- a container (`.. glossary::`, `.. list-table:: Title`, tabs, cards, a figure's caption) as
  its content, under its title where it has one; `.. only::` as its content where an HTML
  build shows it (`not latex`), its titles still sections; a footnote as "[1] text";
- what only the builder reads goes: comments, targets (`.. _label:`), `index`, `toctree`,
  `module` / `currentmodule`, `highlight`, `image`, `include`, `raw`, `testsetup`, hidden
  test code and output, `only:: latex`, and a page's leading metadata fields (`:orphan:`).
Code is left as written: `::` literal blocks (a list item's too), `>>>` doctest blocks, code
directives (`code-block`, `doctest`; `productionlist`, `testoutput`, a one-line `math::` as
code-blocks), inline literals; a directive this module does not know keeps its line, its
content read. Content is dedented to its directive's indentation. Pure: tested without files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

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


# -- reStructuredText --------------------------------------------------------------------
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
_EXPLICIT = re.compile(r"^([ \t]*)\.\.(?:[ \t]+(.*))?$")
_DIRECTIVE = re.compile(r"^([\w:+.-]+) ?::(?:[ \t]+(.*))?$")  # docutils allows "name ::"
_OPTION = re.compile(r"^:[\w -]+:(?:[ \t].*)?$")
_ADORNMENT = set("=-~^\"'`#*+<>:._!$%&,/;?@[]\\{}|")
_SUBSTITUTION = re.compile(r"^\|([^|]+)\|[ \t]+([\w-]+)::(?:[ \t]+(.*))?$")
_METADATA = re.compile(r"^:(?:orphan|nosearch|nocomments|tocdepth|hide-toc|hide-navigation)"
                       r":(?:[ \t].*)?$")
# code: left as written where `markup` reads them as code, else rewritten as a code-block in
# their language (None: their first argument's); the hidden ones dropped
_CODE = {"code-block": None, "code": None, "sourcecode": None, "doctest": None,
         "testcode": None, "productionlist": "text", "parsed-literal": "text",
         "literal": "text", "math": "math", "graphviz": "dot", "digraph": "dot", "graph": "dot",
         "mermaid": "mermaid", "plantuml": "plantuml", "prompt": "console",
         "program-output": "text", "command-output": "console", "ipython": "python",
         "jupyter-execute": "python", "code-cell": "", "exec": "python", "testoutput": "text",
         "code-tab": ""}
_ARGUMENT_IS_CODE = {"math", "program-output", "command-output"}
_HIDDEN = {"testsetup", "testcleanup"}  # Sphinx runs them, the page does not show them
_DROPPED = {*_HIDDEN, "toctree", "index", "highlight", "moduleauthor", "sectionauthor",
            "tabularcolumns", "raw", "image", "include", "literalinclude", "contents", "meta",
            "autosummary", "default-role", "default-domain", "audit-event-table", "program",
            "tags", "youtube", "video", "iframe", "bibliography", "footbibliography",
            "sidebar-links", "rst-class", "inheritance-diagram", "namespace", "namespace-push",
            "namespace-pop", "autoprogram", "click", "argparse", "module", "currentmodule",
            "automodule"}
# a bold line over their content: the kind's name, or the title their argument gives
_ADMONITIONS = {"note", "tip", "hint", "important", "warning", "caution", "danger", "error",
                "attention", "seealso", "impl-detail", "todo", "admonition", "topic", "sidebar",
                "dropdown", "tab", "tab-item", "group-tab", "card", "grid-item-card", "details"}
_ADMONITION_LABEL = {"seealso": "See also", "impl-detail": "CPython implementation detail"}
_TITLED = {"admonition", "topic", "sidebar", "dropdown", "tab", "tab-item", "group-tab", "card",
           "grid-item-card", "details", "list-table", "table", "csv-table", "rubric"}
# no argument: the text on their first line and the lines under it are content
_NO_ARGUMENTS = (_ADMONITIONS - _TITLED) | {"glossary", "hlist", "compound", "pull-quote",
                                            "epigraph", "highlights", "tab-set", "tabs"}
# their content shown (under their title, where `_TITLED`)
_CONTAINERS = {"only", "glossary", "hlist", "container", "compound", "grid", "grid-item",
               "tab-set", "tabs", "epigraph", "highlights", "pull-quote", "figure",
               "list-table", "table", "csv-table", "rubric", "centered", "cssclass", "div"}
# a version note's words (shared with `ingest.myst`), as Sphinx 7.3+ words them
VERSIONS = {"versionadded": "Added in version", "versionchanged": "Changed in version",
            "deprecated": "Deprecated since version", "versionremoved": "Removed in version",
            "version-added": "Added in version", "version-changed": "Changed in version",
            "version-deprecated": "Deprecated since version",
            "version-removed": "Removed in version"}
_CPYTHON = {"deprecated-removed", "availability", "audit-event"}  # CPython's own notes
# API descriptions (any domain, autodoc's too): their arguments are signatures, one a line
_DESCRIPTIONS = {"function", "class", "method", "attribute", "data", "exception", "decorator",
                 "decoratormethod", "classmethod", "staticmethod", "abstractmethod",
                 "coroutinefunction", "coroutinemethod", "awaitablefunction", "awaitablemethod",
                 "property", "type", "macro", "member", "var", "struct", "union", "enum",
                 "enumerator", "concept", "alias", "interface", "describe", "object", "option",
                 "cmdoption", "envvar", "opcode", "pdbcommand", "2to3fixer", "monitoring-event",
                 "directive", "role", "confval", "setting", "event", "cfunction", "cmember",
                 "cmacro", "ctype", "cvar", "autoclass", "autoexception", "autofunction",
                 "automethod", "autoattribute", "autodata", "autodecorator", "autoproperty"}
_KNOWN = _DROPPED | _ADMONITIONS | _CONTAINERS | set(VERSIONS) | _CPYTHON | _DESCRIPTIONS
# the word Sphinx shows before a signature
_ANNOTATIONS = {"class": "class", "exception": "exception", "classmethod": "classmethod",
                "staticmethod": "staticmethod", "abstractmethod": "abstractmethod",
                "property": "property", "coroutinefunction": "coroutine",
                "coroutinemethod": "coroutine", "awaitablefunction": "awaitable",
                "awaitablemethod": "awaitable", "autoclass": "class",
                "autoexception": "exception", "autoproperty": "property"}
_LABEL = re.compile(r"^[ \t]*\.\. _([^:`]+):[ \t]*$")
_TARGET = re.compile(r"^[ \t]*\.\. _`?([^:`]+)`?:", re.M)


@dataclass
class _Context:
    substitutions: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # `.. _label:` -> its section's title
    targets: set[str] = field(default_factory=set)  # every `.. _name:` of the page, lower case


def sphinx_rst(text: str) -> str:
    """`text` read as Sphinx builds it (the module doc), still reStructuredText; `text`
    itself when nothing in it changes."""
    lines = text.replace("\r\n", "\n").split("\n")
    k = 0
    while k < len(lines) and _METADATA.match(lines[k]):
        k += 1  # a page's leading metadata: ":orphan:", ":tocdepth: 2"
    if k and (k == len(lines) or not lines[k].strip()):
        lines = lines[k:]
    ctx = _Context(substitutions=_substitutions(lines), labels=_labels(lines),
                   targets={t.strip().lower() for t in _TARGET.findall(text)})
    out = "\n".join(_read(lines, ctx)).lstrip("\n")
    return text if out == text.replace("\r\n", "\n") else out


def _substitutions(lines: list[str]) -> dict[str, str]:
    """`.. |name| replace:: text` definitions of the page (any line, any depth)."""
    found = {}
    for line in lines:
        m = _EXPLICIT.match(line)
        s = _SUBSTITUTION.match(m.group(2) or "") if m else None
        if s and s.group(2) == "replace" and s.group(3):
            found[s.group(1)] = s.group(3).strip()
    return found


def _labels(lines: list[str]) -> dict[str, str]:
    """The page's section labels: `.. _label:` lines (one or more) right before a heading,
    each to the heading's title (what `:ref:`label`` shows)."""
    found, pending = {}, []
    for k, line in enumerate(lines):
        if (m := _LABEL.match(line)) is not None:
            pending.append(m.group(1).strip())
            continue
        if not line.strip() or not pending:
            continue
        title, under = line.strip(), lines[k + 1].strip() if k + 1 < len(lines) else ""
        if set(title) <= _ADORNMENT and k + 2 < len(lines) and lines[k + 2].strip() == title:
            title, under = under, title  # an overlined heading
        if under and set(under) <= _ADORNMENT and len(set(under)) == 1 and len(under) >= 3:
            found.update((label, title) for label in pending)
        pending = []
    return found


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _block_end(lines: list[str], i: int, indent: int) -> int:
    """The last line of the block opened at line i: the lines after it indented past
    `indent` (blank lines between), trailing blank lines not included."""
    j = last = i
    while j + 1 < len(lines) and (not lines[j + 1].strip() or _indent(lines[j + 1]) > indent):
        j += 1
        if lines[j].strip():
            last = j
    return last


def _read(lines: list[str], ctx: _Context, nested: bool = False) -> list[str]:
    """The lines read: explicit markup blocks (`_explicit`) and paragraphs (roles read,
    `_inline`, titles `_titled`); literal and doctest blocks as written. `nested`: a
    directive's content, where a title is no section of the page."""
    out: list[str] = []
    para: list[str] = []
    literal_at: int | None = None  # a paragraph ended with "::" at this indentation
    i = 0

    def flush() -> None:
        if para:
            out.extend(_titled(_inline("\n".join(para), ctx).split("\n"), nested))
            para.clear()

    while i < len(lines):
        line, s = lines[i], lines[i].strip()
        if not s:
            flush()
            out.append(line)
            i += 1
            continue
        if literal_at is not None and not para and _indent(line) > literal_at:
            end = _block_end(lines, i, literal_at)
            out.extend(lines[i:end + 1])
            i, literal_at = end + 1, None
            continue
        literal_at = None if not para else literal_at
        if s.startswith(">>>") and not para:  # a doctest block: to its blank line
            j = i
            while j + 1 < len(lines) and lines[j + 1].strip():
                j += 1
            out.extend(lines[i:j + 1])
            i = j + 1
            continue
        if _EXPLICIT.match(line):
            flush()
            empty = s == ".." and (i + 1 == len(lines) or not lines[i + 1].strip())
            end = i if empty else _block_end(lines, i, _indent(line))  # ".." ends a block
            shown = _explicit(lines[i:end + 1], ctx)
            out.extend(shown)
            i = end + 1
            while not shown and not empty and (not out or not out[-1].strip()) \
                    and i < len(lines) and not lines[i].strip():
                i += 1  # a block that shows nothing leaves no blank lines behind it
            continue
        para.append(line)
        if s.endswith("::"):
            # a one-line list item's text ("1. Install it::"), not its marker; else the line's
            literal_at = _text_indent(para[0]) if len(para) == 1 else _indent(line)
            flush()
        i += 1
    flush()
    return out


_MARKER = re.compile(r"^[ \t]*(?:[-*+\u2022]|\d+[.)]|#\.|\(?[A-Za-z0-9]\)|[A-Za-z][.)])[ \t]+")


def _text_indent(line: str) -> int:
    """Where a paragraph's text starts: past a list item's marker ("1. Install it::")."""
    m = _MARKER.match(line)
    return len(m.group(0)) if m else _indent(line)


def _is_adornment(line: str) -> bool:
    t = line.strip()
    return len(t) >= 3 and t[0] in _ADORNMENT and t == t[0] * len(t) and _indent(line) == 0


def _titled(lines: list[str], nested: bool) -> list[str]:
    """A paragraph's section titles: in a directive's content (`nested`), a bold line (a
    title there is no section of the page: Sphinx's confval "Examples"); else an underline
    (and overline) as long as the title, which a role read may have made longer."""
    out: list[str] = []
    k = 0
    while k < len(lines):
        title = lines[k]
        under = lines[k + 1].strip() if k + 1 < len(lines) else ""
        if under and title.strip() and not _is_adornment(title) and _is_adornment(lines[k + 1]) \
                and _indent(title) == 0 and (len(under) >= 4 or len(under) >= len(title.rstrip())):
            over = bool(out) and out[-1] == lines[k + 1] and _is_adornment(out[-1])
            if nested:
                out = out[:-1] if over else out
                out.append(f"**{title.strip()}**")
            else:
                mark = lines[k + 1].strip()[0] * max(len(lines[k + 1].strip()), len(title.rstrip()))
                out = out[:-1] + [mark] if over else out
                out += [title, mark]
            k += 2
            continue
        out.append(title)
        k += 1
    return out


def _inline(text: str, ctx: _Context) -> str:
    """A paragraph's roles, hyperlink references and substitutions read; inline literals
    as they are."""
    if "`" not in text and "|" not in text and "_" not in text:
        return text

    def shown(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            name, target = m.group(1)[:-1].lower(), " ".join(m.group(2).split())
            if name in ("ref", "std:ref") and target in ctx.labels:  # its title, read once
                return _inline(ctx.labels[target], replace(ctx, labels={}))
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


def _explicit(block: list[str], ctx: _Context) -> list[str]:
    """An explicit markup block (`.. ` and its indented lines) read."""
    m = _EXPLICIT.match(block[0])
    assert m is not None
    indent, rest = m.group(1), (m.group(2) or "").strip()
    d = _DIRECTIVE.match(rest)
    if d is None:
        f = re.match(r"^\[#?([^\]\s]*)\][ \t]*(.*)$", rest)
        if f is None:  # a comment, a target, a substitution definition
            return []
        head = f"[{f.group(1)}]" if f.group(1) else ""
        return _with_content(indent, head, f.group(2), block[1:], ctx, sep=" " if head else "")
    name, args = d.group(1).lower(), (d.group(2) or "").strip()
    short = name.rsplit(":", 1)[-1]
    if short in _CODE:
        return _code(block, indent, short, args)
    if short not in _KNOWN:
        return block[:1] + _read(block[1:], ctx, nested=True)  # not known: its line as written
    if short in _DROPPED:
        return []
    if short == "only" and _not_html(args):
        return []
    more, options, content = _parts(block[1:], short in _NO_ARGUMENTS)
    args = " ".join([args, *more]).strip() if short not in _DESCRIPTIONS else args
    if short in _DESCRIPTIONS:
        return _description(indent, short, [args, *more], options, content, ctx)
    return _shown(indent, short, args, options, content, ctx)


def _code(block: list[str], indent: str, short: str, args: str) -> list[str]:
    """A code directive as a code-block `markup` reads (in its language), or as written where
    it already does; a `testoutput` with `:hide:` goes, as on the page."""
    if short in ("testoutput", "testcode") and any(ln.strip() == ":hide:" for ln in block[1:]):
        return []
    if _CODE[short] is None:
        return block
    lang = _CODE[short] or (args.split()[0] if args.split() else "")
    rest = block[1:]
    if args and short in _ARGUMENT_IS_CODE:  # `.. math:: e^{i\pi} = -1`: the formula
        shown = f"$ {args}" if short == "command-output" else args
        rest = ["", f"{indent}   {shown}", *[ln for ln in rest if not _OPTION.match(ln.strip())]]
    return [f"{indent}.. code-block:: {lang}".rstrip(), *rest]


def _parts(lines: list[str], no_arguments: bool) -> tuple[list[str], dict[str, str], list[str]]:
    """A directive's lines after its first: (arguments continued, options, content). A
    directive that takes no arguments (an admonition) starts its content there."""
    k, more, options = 0, [], {}
    while not no_arguments and k < len(lines) and lines[k].strip() \
            and not _OPTION.match(lines[k].strip()):
        more.append(lines[k].strip())
        k += 1
    while k < len(lines) and _OPTION.match(lines[k].strip()):
        key, _, value = lines[k].strip()[1:].partition(":")
        options[key.strip()] = value.strip()
        k += 1
    return more, options, lines[k:]


def _dedented(lines: list[str], indent: str) -> list[str]:
    """`lines` moved to `indent`, their own indentation relative to the least kept."""
    least = min((_indent(ln) for ln in lines if ln.strip()), default=0)
    return [indent + ln[least:] if ln.strip() else "" for ln in lines]


def _with_content(indent: str, head: str, first: str, content: list[str], ctx: _Context,
                  sep: str = " ") -> list[str]:
    """`head` (and the content's first line, `first`, after `sep`), then the content read."""
    least = min((_indent(ln) for ln in content if ln.strip()), default=len(indent) + 3)
    # the first line where the content starts: the next line's indentation when it goes on
    # there, else no deeper than a directive's content (a literal block under it stays deeper)
    at = _indent(content[0]) if content and content[0].strip() else min(least, len(indent) + 3)
    body = _read(_dedented(([" " * at + first] if first else []) + content, indent), ctx,
                 nested=True)
    while body and not body[0].strip():
        body.pop(0)
    if body and first and sep:
        return [f"{indent}{head}{sep}{body[0].strip()}", *body[1:]]
    return [f"{indent}{head}", ""] + body if body else [f"{indent}{head}"]


def _shown(indent: str, short: str, args: str, options: dict[str, str], content: list[str],
           ctx: _Context) -> list[str]:
    """An admonition, version note, container or CPython note as the page shows it."""
    if short in VERSIONS or short == "deprecated-removed":
        version, _, text = args.partition(" ")
        if short == "deprecated-removed":
            removed, _, text = text.partition(" ")
            head = f"Deprecated since version {version}, will be removed in version {removed}"
        else:
            head = f"{VERSIONS[short]} {version}"
        if not text and not any(ln.strip() for ln in content):
            return [f"{indent}{head}."]
        return _with_content(indent, f"{head}:", text, content, ctx)
    if short == "availability":
        return _with_content(indent, "Availability:", args, content, ctx)
    if short == "audit-event":
        if any(ln.strip() for ln in content):  # its own words instead of the sentence
            return _body(content, indent, ctx)
        event, _, rest = args.partition(" ")
        names = ", ".join(a for a in rest.split(" ", 1)[0].split(",") if a)
        text = f"with arguments {names}" if names else "with no arguments"
        return [f"{indent}Raises an auditing event {event} {text}."]
    if short in ("rubric", "centered"):
        return [f"{indent}**{_inline(args, ctx)}**" if short == "rubric" else indent + args]
    title = _inline(args, ctx) if short in _TITLED else ""
    if short in _ADMONITIONS:
        label = _ADMONITION_LABEL.get(short, "" if short in _TITLED else short.title())
        head = f"**{label}: {title}**" if label and title else f"**{label or title}**"
        first = "" if short in _TITLED else args
        if not (label or title):  # `.. admonition::` with no title: its content
            return _body(content, indent, ctx)
        return _with_content(indent, head, first, content, ctx, sep="")
    if short == "csv-table" and options.get("header"):  # the header row over the rows
        while content and not content[0].strip():
            content = content[1:]
        content = [" " * (_indent(content[0]) if content else 3) + options["header"], *content]
    if title:
        return _with_content(indent, f"**{title}**", "", content, ctx)
    if short in _NO_ARGUMENTS and args:  # `.. glossary:: term`
        least = min((_indent(ln) for ln in content if ln.strip()), default=3)
        content = [" " * least + args, *content]
    return _body(content, indent, ctx, nested=short != "only")  # `only`'s titles are sections


def _body(content: list[str], indent: str, ctx: _Context, nested: bool = True) -> list[str]:
    """A directive's content read at `indent`, without the blank lines before it."""
    body = _read(_dedented(content, indent), ctx, nested=nested)
    while body and not body[0].strip():
        body.pop(0)
    return body


_HTML_TAGS = {"html", "format_html", "builder_html", "dirhtml", "builder_dirhtml",
              "singlehtml", "builder_singlehtml"}
_OTHER_BUILDERS = re.compile(r"(?:format_|builder_)?(?:latex|man|texinfo|epub|text|xml|"
                             r"pseudoxml|linkcheck|gettext|changes|json|pickle|qthelp|devhelp)")


def _not_html(condition: str) -> bool:
    """Whether an `.. only::` condition leaves its content out of the HTML page: the
    expression (`and`, `or`, `not`, parentheses) with the HTML builder's tags true, other
    builders' false and any other tag (a project's own) true; one that does not parse is
    shown."""
    import ast

    try:
        tree = ast.parse(condition.strip(), mode="eval").body
    except SyntaxError:
        return False

    def value(node: ast.AST) -> bool:
        if isinstance(node, ast.BoolOp):
            parts = [value(v) for v in node.values]
            return all(parts) if isinstance(node.op, ast.And) else any(parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not value(node.operand)
        if isinstance(node, ast.Name):
            return node.id in _HTML_TAGS or not _OTHER_BUILDERS.fullmatch(node.id)
        raise ValueError(node)

    try:
        return not value(tree)
    except ValueError:
        return False


def _description(indent: str, short: str, signatures: list[str], options: dict[str, str],
                 content: list[str], ctx: _Context) -> list[str]:
    """An API description: each signature in a literal (a line ending in "\\" continues on
    the next), then its description."""
    joined: list[str] = []
    for sig in signatures:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1].rstrip() + " " + sig
        elif sig:
            joined.append(sig)
    head = []
    for sig in joined:
        shown = f"``{sig}``" if "``" not in sig and not sig.endswith("`") else sig
        if short in ("decorator", "autodecorator"):
            shown = f"``@{sig}``" if shown != sig else f"@{sig}"
        elif short in _ANNOTATIONS:
            shown = f"{_ANNOTATIONS[short]} {shown}"
        head.append(indent + shown)
    shown_options = [f"{indent}{k.title()}: {_inline(options[k], ctx)}"
                     for k in ("type", "value", "default") if options.get(k)]  # a confval's
    body = _body(content, indent, ctx)
    return head + ([""] + shown_options if shown_options else []) + ([""] + body if body else [])
