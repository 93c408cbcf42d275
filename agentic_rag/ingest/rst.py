"""reStructuredText (Sphinx's, docutils') read as the built page reads: roles as their text,
directives as what they show, what only the builder reads dropped. The text stays
reStructuredText, for `markup.parse_blocks` to split.

    text = sphinx_rst(raw_text)      # `readers` for .rst / .rst.txt / .rest files

The line reader is here; what Sphinx shows of roles and references is `ingest.sphinx` (shared
with MyST), and the directive tables and parts `ingest.rst_directives`.

- roles read as Sphinx shows them (`sphinx.role_shown`): a code role as
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
  `module` / `currentmodule`, `highlight`, `image`, `raw`, `testsetup`, hidden test code and
  output, `only:: latex`, a page's leading metadata fields (`:orphan:`), and an `include` /
  `literalinclude` whose file `ingest.includes` could not read in before this module runs.
Code is left as written: `::` literal blocks (a list item's too), `>>>` doctest blocks, code
directives (`code-block`, `doctest`; `productionlist`, `testoutput`, a one-line `math::` as
code-blocks), inline literals; a directive this module does not know keeps its line, its
content read. Content is dedented to its directive's indentation. Pure: tested without files.
"""

from __future__ import annotations

import re

from agentic_rag.ingest.markup import is_rst_adornment
from agentic_rag.ingest.rst_directives import (
    ADMONITION_LABEL,
    ADMONITIONS,
    ANNOTATIONS,
    CODE,
    DESCRIPTIONS,
    DROPPED,
    KNOWN,
    NO_ARGUMENTS,
    TITLED,
    code_block,
    dedented,
    indent_of,
    not_html,
    parts,
)
from agentic_rag.ingest.sphinx import EXPLICIT, VERSIONS, Context, SiteNames, inline, page_context

# -- reStructuredText --------------------------------------------------------------------
_DIRECTIVE = re.compile(r"^([\w:+.-]+) ?::(?:[ \t]+(.*))?$")  # docutils allows "name ::"
_METADATA = re.compile(r"^:(?:orphan|nosearch|nocomments|tocdepth|hide-toc|hide-navigation)"
                       r":(?:[ \t].*)?$")


def sphinx_rst(text: str, site: SiteNames | None = None) -> str:
    """`text` read as Sphinx builds it (the module doc), still reStructuredText; `text`
    itself when nothing in it changes. `site`: the project's other pages' labels and titles
    (`ingest.sphinx_site`), for `:ref:` and `:doc:` to them."""
    lines = text.replace("\r\n", "\n").split("\n")
    k = 0
    while k < len(lines) and _METADATA.match(lines[k]):
        k += 1  # a page's leading metadata: ":orphan:", ":tocdepth: 2"
    if k and (k == len(lines) or not lines[k].strip()):
        lines = lines[k:]
    ctx = page_context(lines, text, site)
    out = "\n".join(_read(lines, ctx)).lstrip("\n")
    return text if out == text.replace("\r\n", "\n") else out


def _block_end(lines: list[str], i: int, indent: int) -> int:
    """The last line of the block opened at line i: the lines after it indented past
    `indent` (blank lines between), trailing blank lines not included."""
    j = last = i
    while j + 1 < len(lines) and (not lines[j + 1].strip() or indent_of(lines[j + 1]) > indent):
        j += 1
        if lines[j].strip():
            last = j
    return last


def _read(lines: list[str], ctx: Context, nested: bool = False) -> list[str]:
    """The lines read: explicit markup blocks (`_explicit`) and paragraphs (roles read,
    `inline`, titles `_titled`); literal and doctest blocks as written. `nested`: a
    directive's content, where a title is no section of the page."""
    out: list[str] = []
    para: list[str] = []
    literal_at: int | None = None  # a paragraph ended with "::" at this indentation
    i = 0

    def flush() -> None:
        if para:
            out.extend(_titled(inline("\n".join(para), ctx).split("\n"), nested))
            para.clear()

    while i < len(lines):
        line, s = lines[i], lines[i].strip()
        if not s:
            flush()
            out.append(line)
            i += 1
            continue
        if literal_at is not None and not para and indent_of(line) > literal_at:
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
        if EXPLICIT.match(line):
            flush()
            empty = s == ".." and (i + 1 == len(lines) or not lines[i + 1].strip())
            end = i if empty else _block_end(lines, i, indent_of(line))  # ".." ends a block
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
            literal_at = _text_indent(para[0]) if len(para) == 1 else indent_of(line)
            flush()
        i += 1
    flush()
    return out


_MARKER = re.compile(r"^[ \t]*(?:[-*+\u2022]|\d+[.)]|#\.|\(?[A-Za-z0-9]\)|[A-Za-z][.)])[ \t]+")


def _text_indent(line: str) -> int:
    """Where a paragraph's text starts: past a list item's marker ("1. Install it::")."""
    m = _MARKER.match(line)
    return len(m.group(0)) if m else indent_of(line)


def _titled(lines: list[str], nested: bool) -> list[str]:
    """A paragraph's section titles: in a directive's content (`nested`), a bold line (a
    title there is no section of the page: Sphinx's confval "Examples"); else an underline
    (and overline) as long as the title, which a role read may have made longer."""
    out: list[str] = []
    k = 0
    while k < len(lines):
        title = lines[k]
        under = lines[k + 1].strip() if k + 1 < len(lines) else ""
        if under and title.strip() and not is_rst_adornment(title) and is_rst_adornment(lines[k + 1]) \
                and indent_of(title) == 0 and (len(under) >= 4 or len(under) >= len(title.rstrip())):
            over = bool(out) and out[-1] == lines[k + 1] and is_rst_adornment(out[-1])
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


def _explicit(block: list[str], ctx: Context) -> list[str]:
    """An explicit markup block (`.. ` and its indented lines) read."""
    m = EXPLICIT.match(block[0])
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
    if short in CODE:
        return code_block(block, indent, short, args)
    if short not in KNOWN:
        return block[:1] + _read(block[1:], ctx, nested=True)  # not known: its line as written
    if short in DROPPED:
        return []
    if short == "only" and not_html(args):
        return []
    more, options, content = parts(block[1:], short in NO_ARGUMENTS)
    args = " ".join([args, *more]).strip() if short not in DESCRIPTIONS else args
    if short in DESCRIPTIONS:
        return _description(indent, short, [args, *more], options, content, ctx)
    return _shown(indent, short, args, options, content, ctx)


def _with_content(indent: str, head: str, first: str, content: list[str], ctx: Context,
                  sep: str = " ") -> list[str]:
    """`head` (and the content's first line, `first`, after `sep`), then the content read."""
    least = min((indent_of(ln) for ln in content if ln.strip()), default=len(indent) + 3)
    # the first line where the content starts: the next line's indentation when it goes on
    # there, else no deeper than a directive's content (a literal block under it stays deeper)
    at = indent_of(content[0]) if content and content[0].strip() else min(least, len(indent) + 3)
    body = _read(dedented(([" " * at + first] if first else []) + content, indent), ctx,
                 nested=True)
    while body and not body[0].strip():
        body.pop(0)
    if body and first and sep:
        return [f"{indent}{head}{sep}{body[0].strip()}", *body[1:]]
    return [f"{indent}{head}", ""] + body if body else [f"{indent}{head}"]


def _shown(indent: str, short: str, args: str, options: dict[str, str], content: list[str],
           ctx: Context) -> list[str]:
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
        return [f"{indent}**{inline(args, ctx)}**" if short == "rubric" else indent + args]
    title = inline(args, ctx) if short in TITLED else ""
    if short in ADMONITIONS:
        label = ADMONITION_LABEL.get(short, "" if short in TITLED else short.title())
        head = f"**{label}: {title}**" if label and title else f"**{label or title}**"
        first = "" if short in TITLED else args
        if not (label or title):  # `.. admonition::` with no title: its content
            return _body(content, indent, ctx)
        return _with_content(indent, head, first, content, ctx, sep="")
    if short == "csv-table" and options.get("header"):  # the header row over the rows
        while content and not content[0].strip():
            content = content[1:]
        content = [" " * (indent_of(content[0]) if content else 3) + options["header"], *content]
    if title:
        return _with_content(indent, f"**{title}**", "", content, ctx)
    if short in NO_ARGUMENTS and args:  # `.. glossary:: term`
        least = min((indent_of(ln) for ln in content if ln.strip()), default=3)
        content = [" " * least + args, *content]
    return _body(content, indent, ctx, nested=short != "only")  # `only`'s titles are sections


def _body(content: list[str], indent: str, ctx: Context, nested: bool = True) -> list[str]:
    """A directive's content read at `indent`, without the blank lines before it."""
    body = _read(dedented(content, indent), ctx, nested=nested)
    while body and not body[0].strip():
        body.pop(0)
    return body


def _description(indent: str, short: str, signatures: list[str], options: dict[str, str],
                 content: list[str], ctx: Context) -> list[str]:
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
        elif short in ANNOTATIONS:
            shown = f"{ANNOTATIONS[short]} {shown}"
        head.append(indent + shown)
    shown_options = [f"{indent}{k.title()}: {inline(options[k], ctx)}"
                     for k in ("type", "value", "default") if options.get(k)]  # a confval's
    body = _body(content, indent, ctx)
    return head + ([""] + shown_options if shown_options else []) + ([""] + body if body else [])
