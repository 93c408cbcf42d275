"""AsciiDoc (`.adoc`, `.asciidoc`: Asciidoctor, Antora sites) read as Markdown, as the built page
reads, so the chunker keeps its code, tables and lists whole.

    text, title, fields = asciidoc_to_markdown(raw_text)

- `= Title` is the title (an H1); `== Section` … `====== Section` are headings `##` … `######`;
  the header's author and revision lines and every attribute entry (`:name: value`) go; an
  attribute's value stands in for its references (`{name}`) in the text; `:description:` is
  the paragraph under the H1 and `fields["description"]`;
- delimited blocks: a listing (`----`, after `[source,java]` or `[,ruby]`) or a literal block
  (`....`, an indented paragraph) is a fenced code block in its language; an example (`====`),
  sidebar (`****`), quote (`____`) or open block (`--`) shows its content, under its `.Title`
  in bold; an admonition (`NOTE: ...`, `[TIP]` over a block) is a bold "**Note:**" line; a
  table (`|===`, `,===`) is a Markdown table; comments (`//`, `////`), passthrough
  (`++++`), `include::` and `ifdef::`/`endif::` lines go;
- lists (`*`, `-`, `.`, nested `**`, `..`), description lists (`term:: definition` →
  "**term**: definition"), callouts (`<1> text` → "(1) text");
- inline: `xref:page.adoc#id[Text]`, `<<id,Text>>` as their text; `link:url[Text]` and
  `https://url[Text]` as Markdown links; `image:x.png[Alt]`, `kbd:[Ctrl+C]`, `btn:[Save]`,
  `menu:File[Save]`, `footnote:[...]`, `pass:[...]`, `[.role]#text#` as their text. Inline code
  is not rewritten.
Pure: tested without files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agentic_rag.ingest.mdx import Masked, code_segments

_ATTRIBUTE = re.compile(r"^:(!?[\w][\w-]*!?):(?:[ \t]+(.*))?$")
_SECTION = re.compile(r"^(={1,6})[ \t]+(\S.*?)(?:[ \t]+=+)?$")
_BLOCK_ATTRS = re.compile(r"^\[(?!\[)([^\]]*)\][ \t]*$")
_ANCHOR = re.compile(r"^\[\[[^\]]+\]\][ \t]*$")
_TITLE = re.compile(r"^\.(?![.\s])(\S.*)$")
_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--)[ \t]*$")
_TABLE = re.compile(r"^([|,:!])===[ \t]*$")
_PREPROCESSOR = re.compile(r"^(?:ifn?def|ifeval|endif|include)::[^\[]*\[.*\][ \t]*$")
_ADMONITION = re.compile(r"^(NOTE|TIP|IMPORTANT|WARNING|CAUTION):[ \t]+(.*)$")
_ADMONITION_KINDS = {"NOTE", "TIP", "IMPORTANT", "WARNING", "CAUTION"}
_LIST = re.compile(r"^[ \t]*(\*{1,5}|-|\.{1,5})[ \t]+(\S.*)$")
_DLIST = re.compile(r"^(?!\s)(.*?\S)(:{2,4}|;;)(?:[ \t]+(.*))?$")
_CALLOUT = re.compile(r"^<(\d+|\.)>[ \t]+(.*)$")
_BLOCK_IMAGE = re.compile(r"^image::([^\[\s]*)\[([^\]]*)\][ \t]*$")
_CELL_SPEC = re.compile(r"^[ \t]*(?:\d+[+*])?(?:\.?[<^>])*[adehlmsv]?\|")
_KINDS = {"----": "listing", "....": "literal", "====": "example", "****": "sidebar",
          "____": "quote", "--": "open", "++++": "pass", "////": "comment"}


@dataclass
class _State:
    attributes: dict[str, str] = field(default_factory=dict)
    out: list[str] = field(default_factory=list)
    title: str = ""
    description: str = ""
    pending: dict[str, str] = field(default_factory=dict)  # the next block's [attributes]
    block_title: str = ""  # the next block's .Title
    open: list[str] = field(default_factory=list)  # delimiters of the blocks we are inside


def asciidoc_to_markdown(text: str) -> tuple[str, str, dict[str, str]]:
    """(Markdown, title, fields) of an AsciiDoc page (the module doc); fields holds
    `description` where the page sets one."""
    st = _State()
    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        i = _step(lines, i, st)
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(st.out)).strip("\n") + "\n"
    body = "".join(seg if code else _macros(seg) for code, seg in code_segments(body))
    if st.description and body.startswith("# "):
        head, _, rest = body.partition("\n")
        body = f"{head}\n\n{st.description}\n{rest}"
    return body, st.title, ({"description": st.description} if st.description else {})


def _step(lines: list[str], i: int, st: _State) -> int:
    """Read the construct at line i into `st.out`; the index of the line after it."""
    line = lines[i].rstrip()
    if st.open and line == st.open[-1]:  # a container block closes
        st.open.pop()
        st.out.append("")
        return i + 1
    if line.startswith("//") and not _DELIMITER.match(line):
        return i + 1  # a comment line
    if (m := _ATTRIBUTE.match(line)) is not None:
        name = m.group(1).strip("!")
        if m.group(1).startswith("!") or m.group(1).endswith("!"):
            st.attributes.pop(name, None)
        else:
            st.attributes[name] = _substituted(m.group(2) or "", st.attributes)
            if name == "description":
                st.description = st.attributes[name]
        return i + 1
    if _PREPROCESSOR.match(line) or _ANCHOR.match(line):
        return i + 1
    if (m := _BLOCK_ATTRS.match(line)) is not None:
        st.pending = _block_attributes(m.group(1))
        return i + 1
    if (m := _TITLE.match(line)) is not None and not st.block_title:
        st.block_title = _inline(m.group(1), st.attributes)
        return i + 1
    if (m := _DELIMITER.match(line)) or _TABLE.match(line):
        return _block(lines, i, st)
    return _paragraph_line(lines, i, st)


def _block(lines: list[str], i: int, st: _State) -> int:
    """A delimited block opening at line i: code, a table, dropped, or a container whose lines
    the main loop reads until its closing delimiter."""
    line = lines[i].rstrip()
    attrs, st.pending = st.pending, {}
    title, st.block_title = st.block_title, ""
    if (t := _TABLE.match(line)) is not None:
        end = _closing(lines, i, line)
        st.out += _titled(title) + _table(lines[i + 1:end], attrs, t.group(1), st.attributes) + [""]
        return end + 1
    kind = _KINDS[line[:4] if len(line) >= 4 else line]
    style = attrs.get("style", "")
    if kind in ("comment", "pass"):
        return _closing(lines, i, line) + 1
    if kind in ("listing", "literal") or style in ("source", "listing", "literal"):
        end = _closing(lines, i, line)
        lang = attrs.get("language", "") if kind != "literal" and style != "literal" else "text"
        body = lines[i + 1:end]
        while end == len(lines) and body and not body[-1].strip():
            body.pop()  # never closed: to the end of the page
        if "attributes" in attrs.get("subs", ""):
            body = [_substituted(b, st.attributes) for b in body]
        st.out += _titled(title) + [_fence(body) + lang, *body, _fence(body), ""]
        return end + 1
    head = _admonition_head(style, title) if style.upper() in _ADMONITION_KINDS else \
        _titled(title)
    st.out += [""] + head
    st.open.append(line)
    return i + 1


def _paragraph_line(lines: list[str], i: int, st: _State) -> int:
    line = lines[i].rstrip()
    title, st.block_title = st.block_title, ""
    attrs, st.pending = st.pending, {}
    if (m := _SECTION.match(line)) is not None:
        level = len(m.group(1))
        heading = _inline(m.group(2), st.attributes)
        if level == 1 and not st.title:
            st.title = heading
            st.out += [f"# {heading}", ""]
            return _after_header(lines, i + 1)
        st.out += ["", "#" * level + " " + heading, ""]
        return i + 1
    if line[:1] in (" ", "\t") and (i == 0 or not lines[i - 1].strip()) \
            and not _LIST.match(line):  # an indented (literal) paragraph
        end = i
        while end < len(lines) and lines[end].strip():
            end += 1
        body = _dedent(lines[i:end])
        st.out += _titled(title) + [_fence(body) + "text", *body, _fence(body), ""]
        return end
    if attrs.get("style", "").upper() in _ADMONITION_KINDS:
        st.out += _admonition_head(attrs["style"], title)
    else:
        st.out += _titled(title)
    st.out.append(_converted_line(line, st))
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


def _after_header(lines: list[str], i: int) -> int:
    """Past the author and revision lines under the document title (up to two lines that are
    not attribute entries, comments or blank)."""
    for _ in range(2):
        if i < len(lines) and lines[i].strip() and not lines[i].startswith((":", "//")):
            i += 1
    return i


def _block_attributes(spec: str) -> dict[str, str]:
    """`[source,java]`, `[,ruby]`, `[NOTE]`, `[cols="1,2",options="header"]`, `[%header]`,
    `[#id.role]`: the style (first positional), a source block's language, named ones."""
    attrs: dict[str, str] = {}
    parts = re.findall(r'(?:[^,"]|"[^"]*")+|(?<=,)(?=,|$)|^(?=,)', spec)
    positional = []
    for p in (x.strip() for x in parts):
        if "=" in p and not p.startswith(("#", ".", "%")):
            k, _, v = p.partition("=")
            attrs[k.strip()] = v.strip().strip('"')
        else:
            positional.append(p)
    style = re.split(r"[#.%]", positional[0])[0] if positional else ""
    attrs["style"] = style
    if "%header" in spec:
        attrs["options"] = attrs.get("options", "") + ",header"
    if style in ("source", "") and len(positional) > 1 and positional[1]:
        attrs["style"], attrs["language"] = "source", positional[1]
    return attrs


def _table(rows: list[str], attrs: dict[str, str], sep: str, names: dict[str, str]) -> list[str]:
    """A `|===` table's lines as a Markdown table: columns from `cols` or its first line, the
    first row a header (Markdown needs one)."""
    sep = {"!": "!", ":": ":", ",": ","}.get(sep, "|")
    cells: list[str] = []
    first_line = next((r for r in rows if r.strip()), "")
    for r in rows:
        if not r.strip():
            continue
        r = _CELL_SPEC.sub("|", r) if sep == "|" else r  # "2+|x", "a|x": a cell's spec
        if sep == "|" and not r.lstrip().startswith("|") and cells:
            cells[-1] += " " + r.strip()  # a cell continued on the next line
            continue
        parts = re.split(r"(?<!\\)" + re.escape(sep), r if sep != "|" else r.lstrip()[1:])
        cells += [p.strip() for p in parts]
    cols = _columns(attrs.get("cols", ""), first_line, sep)
    if not cells or cols < 1:
        return []
    body = [_inline(c, names).replace("|", "\\|") for c in cells]
    grid = [body[k:k + cols] for k in range(0, len(body), cols)]
    grid[-1] += [""] * (cols - len(grid[-1]))
    lines = ["| " + " | ".join(grid[0]) + " |", "|" + "---|" * cols]
    return lines + ["| " + " | ".join(row) + " |" for row in grid[1:]]


def _columns(spec: str, first_line: str, sep: str) -> int:
    spec = spec.strip()
    if re.fullmatch(r"\d+", spec):
        return int(spec)
    if spec:
        return sum(int(m.group(1)) if m.group(1) else 1
                   for m in re.finditer(r"(?:(\d+)\*)?[^,;]+", spec))
    return max(1, len(re.split(r"(?<!\\)" + re.escape(sep), first_line.strip())) - (sep == "|"))


def _closing(lines: list[str], i: int, delimiter: str) -> int:
    """The line closing the block opened at line i (the same delimiter); the last line when
    none does."""
    return next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == delimiter),
                len(lines))


def _admonition_head(style: str, title: str) -> list[str]:
    kind = style.capitalize()
    return [f"**{kind}: {title}**" if title else f"**{kind}:**"]


def _titled(title: str) -> list[str]:
    return [f"**{title}**"] if title else []


def _fence(body: list[str]) -> str:
    longest = max((len(m) for b in body for m in re.findall(r"`{3,}", b)), default=2)
    return "`" * max(3, longest + 1)


def _dedent(body: list[str]) -> list[str]:
    cut = min(len(b) - len(b.lstrip()) for b in body if b.strip())
    return [b[cut:] for b in body]


def _substituted(text: str, names: dict[str, str]) -> str:
    """`{name}` references replaced by their values (twice, for a value that refers to
    another); unknown ones kept; `\\{name}` shows the reference itself."""
    for _ in range(2):
        text = re.sub(r"(?<!\\)\{([\w][\w-]*)\}", lambda m: names.get(m.group(1), m.group(0)), text)
    return text.replace("\\{", "{")


_INLINE_RULES: list[tuple[re.Pattern[str], object]] = [
    (re.compile(r"footnote:[\w-]*\[([^\]]*)\]"), lambda m: f" ({m.group(1)})" if m.group(1) else ""),
    (re.compile(r"\bxref:([^\[\s]*)\[([^\]]*)\]"),
     lambda m: m.group(2).strip() or re.sub(r"^.*[:/]|\.adoc|#.*$", "", m.group(1))
     or m.group(1)),
    (re.compile(r"<<([^,>]+),\s*([^>]+)>>"), lambda m: m.group(2).strip()),
    (re.compile(r"<<([^>]+)>>"), lambda m: m.group(1).strip()),
    (re.compile(r"\b(?:link:|(?=https?://|mailto:))([^\s\[]+)\[([^\]]*)\]"),
     lambda m: f"[{m.group(2).rstrip('^').split(',')[0].strip() or m.group(1)}]({m.group(1)})"),
    # a link whose address is an attribute this page does not define (an Antora site's)
    (re.compile(r"\{[\w-]+\}[^\s\[]*\[([^\]]*)\]"), lambda m: m.group(1).rstrip("^").split(",")[0]),
    (re.compile(r"\bimage:([^\s\[:][^\s\[]*)\[([^\]]*)\]"),
     lambda m: m.group(2).split(",")[0].strip('"')),
    (re.compile(r"\b(?:kbd|btn):\[([^\]]*)\]"), lambda m: m.group(1)),
    (re.compile(r"\bmenu:([^\[\s]+)\[([^\]]*)\]"),
     lambda m: " > ".join(x for x in (m.group(1), m.group(2).strip()) if x)),
    (re.compile(r"\bpass:[a-z,]*\[([^\]]*)\]"), lambda m: m.group(1)),
    (re.compile(r"\[[.#%][^\]\n]*\](?=[_*`#])"), lambda m: ""),  # a role: `[.term]_word_`
    (re.compile(r"(?<![\w#&])#(\S(?:[^#\n]*\S)?)#(?![\w#])"), lambda m: m.group(1)),  # highlighted
]


def _inline(text: str, names: dict[str, str]) -> str:
    """Inline markup read (module doc); inline code kept as written (`+literal+` marks inside
    it taken off)."""
    return _macros(re.sub(r"`\+(.+?)\+`", r"`\1`", text), names)


def _macros(text: str, names: dict[str, str] | None = None) -> str:
    """`_INLINE_RULES` (after `names`' values stand in for their references) outside inline
    code. Run on each line, then once more on the page's text, for a link or cross reference
    whose text wraps a line."""
    masked = Masked(text)
    out = _substituted(masked.text, names) if names is not None else masked.text
    for pattern, repl in _INLINE_RULES:
        out = pattern.sub(repl, out)  # type: ignore[arg-type]
    return masked.restore(out)
