"""AsciiDoc (`.adoc`, `.asciidoc`: Asciidoctor, Antora sites) read as Markdown, as the built page
reads, so the chunker keeps its code, tables and lists whole.

    text, title, fields = asciidoc_to_markdown(raw_text, attributes={"prodname": "Debezium"})

- `= Title` (the header's) is the title and the H1; `== Section` … `====== Section` (after a
  blank line) are `##` … `######`; the header's author and revision lines and every attribute
  entry (`:name: value`) go; attribute values (the page's, those `attributes` passes: an Antora
  component's `antora.yml`, `.asciidoctorconfig`, and the built-ins such as `{nbsp}`) stand in
  for their references; `:description:` is the paragraph under the H1 and `fields["description"]`;
- `ifdef::name[]` … `endif::[]` keeps its lines where `name` is set (`ifndef` where it is not;
  `ifeval` always); `include::`, `toc::[]`, `video::`, comments (`//`, `////`) go;
- delimited blocks: a listing (`----`, after `[source,java]` or `[,ruby]`), a `[source]`
  paragraph, a literal block (`....`, an indented paragraph) or a `[stem]` block is a fenced
  code block; an example (`====`), sidebar (`****`), quote (`____`, its attribution after it)
  or open block (`--`) shows its content, under its `.Title` in bold; an admonition (`NOTE:
  ...`, `[TIP]` over a block) is a bold "**Note:**" line; a table (`|===`, `,===`, `:===`,
  `[format=csv]`) is a Markdown table (cell specs such as `2+|`, `a|`, `3*|` read);
- lists (`*`, `-`, `.`, nested `**`, `..`), description lists (`term:: definition` →
  "**term**: definition"), callouts (`<1> text` → "(1) text");
- inline: `xref:page.adoc#id[Text]`, `<<id,Text>>` as their text; `link:url[Text]` and
  `https://url[Text]` as Markdown links; `image:x.png[Alt]`, `kbd:[Ctrl+C]`, `btn:[Save]`,
  `menu:File[Save]`, `footnote:[...]`, `pass:[...]`, `+text+`, `stem:[...]`, `[.role]#text#`
  as their text; `[[id]]` anchors go. Inline code keeps its text (its attribute references
  read, as Asciidoctor reads them, but for `` `+{literal}+` ``).
Pure: tested without files.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

from agentic_rag.ingest.mdx import Masked, code_segments, fenced, headed

_ADMONITION_KINDS = ("NOTE", "TIP", "IMPORTANT", "WARNING", "CAUTION")
_ATTRIBUTE = re.compile(r"^:(!?\w[\w-]*!?):(?:[ \t]+(.*))?$")
_SECTION = re.compile(r"^(={1,6})[ \t]+(\S.*?)(?:[ \t]+=+)?$")
_BLOCK_ATTRS = re.compile(r"^\[(?!\[)([^\]]*)\][ \t]*$")
_ANCHOR = re.compile(r"^\[\[[^\]]+\]\][ \t]*$")
_TITLE = re.compile(r"^\.(?![.\s])(\S.*)$")
_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--)[ \t]*$")
_TABLE = re.compile(r"^([|,:!])===[ \t]*$")
_CONDITION = re.compile(r"^(ifn?def|ifeval|endif)::([^\[]*)\[(.*)\][ \t]*$")
_BLOCK_MACRO = re.compile(r"^(?:include|toc|video|audio)::[^\[]*\[.*\][ \t]*$")
_ADMONITION = re.compile(rf"^({'|'.join(_ADMONITION_KINDS)}):[ \t]+(.*)$")
_LIST = re.compile(r"^[ \t]*(\*{1,5}|-|\.{1,5})[ \t]+(\S.*)$")
_DLIST = re.compile(r"^(?!\s)(.*?\S)(:{2,4}|;;)(?:[ \t]+(.*))?$")
_CALLOUT = re.compile(r"^<(\d+|\.)>[ \t]+(.*)$")
_BLOCK_IMAGE = re.compile(r"^image::([^\[\s]*)\[([^\]]*)\][ \t]*$")
# a table cell's separator with its spec (`2+|`, `a|`, `3*|`, `.2+^.^|`): a spec is only one
# where it starts the line or follows a space
_CELL = re.compile(r"(?:(?<!\S)(?=[\d.+*<^>adehlmsv]+\|)(\d+\*)?(?:(\d+)\+)?(?:\.\d+\+)?"
                   r"(?:[<^>])?(?:\.[<^>])?([adehlmsv])?)?(?<!\\)\|")
_DELIMITERS = {"csv": ",", "tsv": "\t", "dsv": ":"}  # a `[format=...]` table's
_KINDS = {"----": "listing", "....": "literal", "====": "example", "****": "sidebar",
          "____": "quote", "--": "open", "++++": "pass", "////": "comment"}
# what Asciidoctor defines before any page does
BUILT_IN = {"nbsp": "\u00a0", "zwsp": "", "empty": "", "sp": " ", "amp": "&", "lt": "<",
            "gt": ">", "startsb": "[", "endsb": "]", "vbar": "|", "caret": "^", "asterisk": "*",
            "tilde": "~", "apos": "'", "quot": '"', "plus": "+", "backslash": "\\",
            "backtick": "`", "two-colons": "::", "two-semicolons": ";;", "cpp": "C++",
            "pp": "++", "deg": "°", "brvbar": "¦", "lsquo": "‘", "rsquo": "’", "ldquo": "“",
            "rdquo": "”"}


@dataclass
class _State:
    attributes: dict[str, str]
    out: list[str] = field(default_factory=list)
    title: str = ""
    description: str = ""
    pending: dict[str, str] = field(default_factory=dict)  # the next block's [attributes]
    block_title: str = ""  # the next block's .Title
    open: list[tuple[str, str]] = field(default_factory=list)  # (delimiter, text after it)
    skipping: int = 0  # depth of ifdef/ifndef blocks whose condition does not hold


def asciidoc_to_markdown(text: str, attributes: dict[str, str] | None = None,
                         ) -> tuple[str, str, dict[str, str]]:
    """(Markdown, title, fields) of an AsciiDoc page (the module doc); `attributes`: values
    set before the page's own (an Antora component's); fields holds `description` where the
    page sets one."""
    st = _State(attributes={**BUILT_IN, **(attributes or {})})
    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        i = _step(lines, i, st)
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(st.out)).strip("\n") + "\n"
    # a link or cross reference whose text wraps a line
    body = "".join(seg if code else _macros(seg) for code, seg in code_segments(body))
    fields = {"description": st.description} if st.description else {}
    return headed(body, {"title": st.title, **fields}), st.title, fields


def _step(lines: list[str], i: int, st: _State) -> int:
    """Read the construct at line i into `st.out`; the index of the line after it."""
    line = lines[i].rstrip()
    if (c := _CONDITION.match(line)) is not None:
        return _condition(c, st, i)
    if st.skipping:
        return i + 1
    if not line.strip():  # a blank line: a block's attributes and title wait past it
        st.out.append("")
        return i + 1
    if st.open and line == st.open[-1][0]:  # a container block closes
        st.out += ["", st.open.pop()[1]]
        return i + 1
    if (line.startswith("//") and not _DELIMITER.match(line)) or _BLOCK_MACRO.match(line) \
            or _ANCHOR.match(line):
        return i + 1  # a comment line, an include, a table of contents, an anchor
    if (m := _ATTRIBUTE.match(line)) is not None:
        _set_attribute(m.group(1), m.group(2) or "", st)
        return i + 1
    if (m := _BLOCK_ATTRS.match(line)) is not None:
        st.pending = _block_attributes(m.group(1))
        return i + 1
    if (m := _TITLE.match(line)) is not None and not st.block_title:
        st.block_title = _inline(m.group(1), st.attributes)
        return i + 1
    if _DELIMITER.match(line) or _TABLE.match(line):
        return _block(lines, i, st)
    return _paragraph_line(lines, i, st)


def _condition(c: re.Match[str], st: _State, i: int) -> int:
    """`ifdef::a[]` / `ifndef::a,b[]` / `ifeval::[...]` / `endif::[]`: whether the lines up to
    the matching `endif` are read; `ifdef::a[text]` reads `text` where `a` is set."""
    kind, names, inline = c.groups()
    if kind == "endif":
        st.skipping = max(0, st.skipping - 1)
        return i + 1
    if st.skipping:  # nested inside a block already skipped: count it, to match its endif
        st.skipping += 0 if inline else 1
        return i + 1
    holds = True
    if kind != "ifeval":
        parts = [p for p in re.split(r"[,+]", names) if p]
        set_ = [p in st.attributes for p in parts]
        holds = (all(set_) if "+" in names else any(set_)) if parts else True
        holds = holds if kind == "ifdef" else not holds
    if inline and kind != "ifeval":
        if holds:
            st.out.append(_inline(inline, st.attributes))
    elif not holds:
        st.skipping = 1
    return i + 1


def _set_attribute(entry: str, value: str, st: _State) -> None:
    name = entry.strip("!")
    if entry.startswith("!") or entry.endswith("!"):
        st.attributes.pop(name, None)
        return
    st.attributes[name] = _substituted(value, st.attributes)
    if name == "description":
        st.description = st.attributes[name]


def _block(lines: list[str], i: int, st: _State) -> int:
    """A delimited block opening at line i: code, a table, dropped, or a container whose lines
    the main loop reads until its closing delimiter."""
    line = lines[i].rstrip()
    attrs, st.pending = st.pending, {}
    title, st.block_title = st.block_title, ""
    if (t := _TABLE.match(line)) is not None:
        end = _closing(lines, i, line)
        rows = [r for r in lines[i + 1:end] if not r.lstrip().startswith("//")]
        st.out += _titled(title) + _table(rows, attrs, t.group(1), st.attributes) + [""]
        return end + 1
    kind = _KINDS[line[:4] if len(line) >= 4 else line]
    style = attrs.get("style", "")
    if kind == "comment" or (kind == "pass" and style not in ("stem", "latexmath", "asciimath")):
        return _closing(lines, i, line) + 1
    if kind in ("listing", "literal", "pass") or style in ("source", "listing", "literal"):
        end = _closing(lines, i, line)
        body = lines[i + 1:end]
        while end == len(lines) and body and not body[-1].strip():
            body.pop()  # never closed: to the end of the page
        st.out += _code(body, _language(kind, attrs), title, attrs, st.attributes)
        return end + 1
    if style.upper() in _ADMONITION_KINDS:
        head = [_admonition_head(style, title)]
    else:
        head = _titled(title)
    after = f"— {attrs['attribution']}" if kind == "quote" and attrs.get("attribution") else ""
    st.out += ["", *head]
    st.open.append((line, after))
    return i + 1


def _language(kind: str, attrs: dict[str, str]) -> str:
    if kind == "pass" or attrs.get("style") in ("stem", "latexmath", "asciimath"):
        return "math"
    if kind == "literal" or attrs.get("style") == "literal":
        return "text"
    return attrs.get("language", "")


def _code(body: list[str], lang: str, title: str, attrs: dict[str, str],
          names: dict[str, str]) -> list[str]:
    if "attributes" in attrs.get("subs", ""):
        body = [_substituted(b, names) for b in body]
    return _titled(title) + [fenced("\n".join(body), lang), ""]


def _paragraph_line(lines: list[str], i: int, st: _State) -> int:
    line = lines[i].rstrip()
    after_blank = _starts_block(lines, i)
    title, st.block_title = st.block_title, ""
    attrs, st.pending = st.pending, {}
    if (m := _SECTION.match(line)) is not None and after_blank:
        return _section(lines, i, len(m.group(1)), _inline(m.group(2), st.attributes), st)
    literal = line[:1] in (" ", "\t") and after_blank and not _LIST.match(line)
    if literal or attrs.get("style") in ("source", "listing", "literal", "stem"):
        end = i  # a paragraph of code: to the next blank line
        while end < len(lines) and lines[end].strip():
            end += 1
        lang = "text" if literal and attrs.get("style") != "source" else _language("", attrs)
        st.out += _code(_dedent(lines[i:end]), lang, title, attrs, st.attributes)
        return end
    if attrs.get("style", "").upper() in _ADMONITION_KINDS:
        st.out.append(_admonition_head(attrs["style"], title))
    else:
        st.out += _titled(title)
    st.out.append(_converted_line(line, st))
    return i + 1


def _starts_block(lines: list[str], i: int) -> bool:
    """Whether line i starts a block: the page's first line, or after a blank line or a list
    continuation (`+`), past any anchors, block attributes, titles, comments, attribute entries
    and `ifdef` lines above it."""
    j = i - 1
    while j >= 0 and (_ANCHOR.match(lines[j]) or _BLOCK_ATTRS.match(lines[j].rstrip())
                      or _TITLE.match(lines[j]) or lines[j].startswith("//")
                      or _ATTRIBUTE.match(lines[j].rstrip()) or _CONDITION.match(lines[j].rstrip())):
        j -= 1
    return j < 0 or not lines[j].strip() or lines[j].strip() == "+"


def _section(lines: list[str], i: int, level: int, heading: str, st: _State) -> int:
    """A section title; the document's own (`= Title` before any content) is the title, and the
    author and revision lines under it go."""
    if level == 1 and not st.title and not any(x.strip() for x in st.out):
        st.title = heading
        st.out += [f"# {heading}", ""]
        for _ in range(2):  # the header's author line, then its revision line
            nxt = lines[i + 1].rstrip() if i + 1 < len(lines) else ""
            if nxt and not nxt.startswith((":", "//")) and not _CONDITION.match(nxt) \
                    and not _BLOCK_MACRO.match(nxt) and not _BLOCK_ATTRS.match(nxt):
                i += 1
        return i + 1
    # a part (`= Part`) after the page's title: under it, not beside it
    st.out += ["", "#" * (max(level, 2) if st.title else level) + " " + heading, ""]
    return i + 1


def _converted_line(line: str, st: _State) -> str:
    """A line of text: a list item, description list entry, admonition paragraph, callout,
    block image or a line of a paragraph, with its inline markup read."""
    if line == "+":  # a list continuation: the next block belongs to the item
        return ""
    if (m := _ADMONITION.match(line)) is not None:
        return f"**{m.group(1).capitalize()}:** {_inline(m.group(2), st.attributes)}"
    if (m := _BLOCK_IMAGE.match(line)) is not None:
        return _inline(m.group(2).split(",")[0].strip('"'), st.attributes)
    if (m := _LIST.match(line)) is not None:
        marker, rest = m.group(1), _inline(m.group(2), st.attributes)
        depth = len(marker) - 1 if marker != "-" else 0
        return "  " * depth + ("1. " if marker[0] == "." else "- ") + rest
    if (m := _CALLOUT.match(line)) is not None:
        return f"({m.group(1)}) {_inline(m.group(2), st.attributes)}"
    if (m := _DLIST.match(line)) is not None and "://" not in m.group(1):
        term, rest = _inline(m.group(1), st.attributes), _inline(m.group(3) or "", st.attributes)
        return f"**{term}**: {rest}" if rest else f"**{term}**"
    return _inline(line.removesuffix(" +"), st.attributes)


def _block_attributes(spec: str) -> dict[str, str]:
    """`[source,java]`, `[,ruby]`, `[NOTE]`, `[quote,Lincoln]`, `[cols="1,2",options="header"]`,
    `[%header]`, `[#id.role]`: the style (first positional), a source block's language, a
    quote's attribution, named ones."""
    attrs: dict[str, str] = {}
    positional = []
    for p in re.findall(r'(?:[^,"]|"[^"]*")+|(?<=,)(?=,|$)|^(?=,)', spec):
        p = p.strip()
        if re.match(r"^[\w-]+=", p):
            k, _, v = p.partition("=")
            attrs[k.strip()] = v.strip().strip('"')
        else:
            positional.append(p.strip())
    style = re.split(r"[#.%]", positional[0])[0] if positional else ""
    attrs["style"] = style
    if "%header" in spec:
        attrs["options"] = attrs.get("options", "") + ",header"
    if style in ("source", "") and len(positional) > 1 and positional[1]:
        attrs["style"], attrs["language"] = "source", positional[1]
    if style in ("quote", "verse") and len(positional) > 1:
        attrs["attribution"] = ", ".join(p for p in positional[1:] if p)
    return attrs


def _table(rows: list[str], attrs: dict[str, str], sep: str, names: dict[str, str]) -> list[str]:
    """A table's lines as a Markdown table: columns from `cols` or its first line, the first
    row a header (Markdown needs one)."""
    if sep in (",", ":") or attrs.get("format") in _DELIMITERS:
        delimiter = sep if sep in (",", ":") else _DELIMITERS[attrs["format"]]
        grid = list(csv.reader([r for r in rows if r.strip()], delimiter=delimiter,
                               skipinitialspace=True))
        cells = [c.strip() for r in grid for c in r]
        cols = _columns(attrs.get("cols", ""), len(grid[0]) if grid else 0)
    else:
        cells, first = _cells(rows)
        cols = _columns(attrs.get("cols", ""), first)
    if not cells or cols < 1:
        return []
    body = [_inline(c, names).replace("\\|", "|").replace("|", "\\|") for c in cells]
    grid = [body[k:k + cols] for k in range(0, len(body), cols)]
    grid[-1] += [""] * (cols - len(grid[-1]))
    lines = ["| " + " | ".join(grid[0]) + " |", "|" + "---|" * cols]
    return lines + ["| " + " | ".join(row) + " |" for row in grid[1:]]


def _cells(rows: list[str]) -> tuple[list[str], int]:
    """A `|===` table's cells in order (a `2+` span followed by its empty cells, a `3*` cell
    repeated) and the number of cells on its first line."""
    cells: list[str] = []
    first = 0
    for r in rows:
        if not r.strip():
            continue
        pieces = _CELL.split(r)  # text, then (repeat, span, style, text) per separator
        if pieces[0].strip() and cells:
            cells[-1] += " " + pieces[0].strip()  # a cell continued on this line
        line_cells = 0
        for k in range(1, len(pieces), 4):
            repeat, span, text = pieces[k], pieces[k + 1], pieces[k + 3].strip()
            for _ in range(int(repeat[:-1]) if repeat else 1):
                cells += [text] + [""] * (int(span) - 1 if span else 0)
                line_cells += 1 + (int(span) - 1 if span else 0)
        first = first or line_cells
    return cells, first


def _columns(spec: str, first_line_cells: int) -> int:
    """Columns from `cols` ("3", "1,2a", "3*", "2*,1") or else the first line's cells."""
    spec = spec.strip()
    if re.fullmatch(r"\d+", spec):
        return int(spec)
    if spec:
        return sum(int(m.group(1)) if m.group(1) else 1
                   for m in re.finditer(r"(?:(\d+)\*)?[^,;]*", spec) if m.group(0))
    return max(1, first_line_cells)


def _closing(lines: list[str], i: int, delimiter: str) -> int:
    """The line closing the block opened at line i (the same delimiter); the last line when
    none does."""
    return next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == delimiter),
                len(lines))


def _admonition_head(style: str, title: str) -> str:
    kind = style.capitalize()
    return f"**{kind}: {title}**" if title else f"**{kind}:**"


def _titled(title: str) -> list[str]:
    return [f"**{title}**"] if title else []


def _dedent(body: list[str]) -> list[str]:
    cut = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
    return [b[cut:] for b in body]


def _substituted(text: str, names: dict[str, str]) -> str:
    """`{name}` references replaced by their values (a value's own references were read when
    it was set); unknown ones kept; `\\{name}` shows the reference itself."""
    text = re.sub(r"(?<!\\)\{(\w[\w-]*)\}", lambda m: names.get(m.group(1), m.group(0)), text)
    return text.replace("\\{", "{")


_TEXT = r"[^\[\]]{0,1000}"  # a macro's text: bounded, no nested brackets (linear on any line)
_INLINE_RULES: list[tuple[re.Pattern[str], object]] = [
    (re.compile(rf"footnote:[\w-]*\[({_TEXT})\]"),
     lambda m: f" ({m.group(1)})" if m.group(1) else ""),
    (re.compile(rf"\bxref:([^\[\s]{{0,500}})\[({_TEXT})\]"),
     lambda m: m.group(2).strip() or re.sub(r"^.*[:/]|\.adoc|#.*$", "", m.group(1))
     or m.group(1)),
    (re.compile(r"<<([^,<>]{1,300}),\s*([^<>]{1,500})>>"), lambda m: m.group(2).strip()),
    (re.compile(r"<<([^<>]{1,300})>>"), lambda m: m.group(1).strip()),
    (re.compile(rf"\b(?:link:|(?=https?://|mailto:))([^\s\[]{{1,2000}})\[({_TEXT})\]"),
     lambda m: f"[{_link_text(m.group(2)) or m.group(1)}]({m.group(1)})"),
    # a link whose address is an attribute this page does not define (an Antora site's)
    (re.compile(rf"\{{[\w-]+\}}[^\s\[]{{0,500}}\[({_TEXT})\]"), lambda m: _link_text(m.group(1))),
    (re.compile(rf"\bimage:([^\s\[:][^\s\[]{{0,500}})\[({_TEXT})\]"),
     lambda m: m.group(2).split(",")[0].strip('"')),
    (re.compile(rf"\b(?:kbd|btn|stem|latexmath|asciimath|pass:[a-z,]*):\[({_TEXT})\]"),
     lambda m: m.group(1)),
    (re.compile(rf"\bmenu:([^\[\s]{{1,300}})\[({_TEXT})\]"),
     lambda m: " > ".join(x for x in (m.group(1), m.group(2).strip()) if x)),
    (re.compile(r"\[\[[\w:.-]+(?:,[^\]\n]{0,300})?\]\]|\banchor:[\w:.-]+\[[^\]\n]{0,300}\]"),
     lambda m: ""),
    (re.compile(r"\[[.#%][^\]\n]{0,300}\](?=[_*`#])"), lambda m: ""),  # a role: [.term]_word_
    # highlighted `#text#` (not a heading's `##`, nor an issue number)
    (re.compile(r"(?<![\w#&])#(?![#\s])([^#\n]{0,500}[^#\s])?#(?![\w#])"),
     lambda m: m.group(1) or ""),
]


def _link_text(text: str) -> str:
    """A link macro's text without its `^` (new window) or extra attributes: `"A, b",role=x`."""
    text = text.strip()
    if text.startswith('"') and (end := text.find('"', 1)) > 0:
        text = text[1:end]
    elif (attr := re.search(r",\s*\w+=", text)) is not None:
        text = text[:attr.start()]
    return text.rstrip("^").strip()


def _inline(text: str, names: dict[str, str]) -> str:
    """Inline markup read (module doc): attribute references (also in inline code, as
    Asciidoctor reads them, not in `+passthrough+`), then the macros."""
    masked = Masked("")
    text = re.sub(r"`\+(.+?)\+`", lambda m: "`" + masked.hide(m.group(1)) + "`", text)
    text = re.sub(r"(?<![\w+\\])\+([^+\s](?:[^+\n]{0,500}[^+\s])?)\+(?![\w+])",
                  lambda m: masked.hide(m.group(1)), text)
    return masked.restore(_macros(_substituted(text, names)))


def _macros(text: str) -> str:
    """`_INLINE_RULES` outside inline code; safe to run twice (the page's text is read once
    more, for a link or cross reference whose text wraps a line)."""
    masked = Masked(text)
    out = masked.text
    for pattern, repl in _INLINE_RULES:
        out = pattern.sub(repl, out)  # type: ignore[arg-type]
    return masked.restore(out)
