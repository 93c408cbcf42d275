"""Split Markdown / reStructuredText into semantic blocks, in one linear pass.

A block is a span of the original text (`start`, `end` character offsets) with a
kind: code, table, list, paragraph or heading. The parser is line based and uses
no backtracking regular expressions, so a 10 MB document parses in linear time
(the seed's table regex could backtrack catastrophically).

Markdown: ATX and setext headings, ``` and ~~~ fences with a language tag, pipe
tables, bulleted and numbered lists (items keep their continuation lines).
reStructuredText (the cheap, common subset): underlined / overlined headings,
`::` literal blocks, `code-block`/`code`/`sourcecode`/`doctest`/`testcode`
directives, `>>>` doctest blocks, grid and simple tables, bulleted and
enumerated (`1.`, `#.`, `(a)`) lists. Labels, comments and index directives are
skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from agentic_rag.documents import Format

BlockKind = Literal["code", "table", "list", "paragraph", "heading"]

RST_ADORNMENT = set("=-~^\"'`#*+<>:._!$%&,/;?@[]\\{}|")
_CODE_DIRECTIVES = ("code-block", "code", "sourcecode", "doctest", "testcode", "testsetup")
_SKIP_DIRECTIVES = ("index", "toctree", "highlight", "module", "currentmodule", "sectionauthor",
                    "moduleauthor", "only", "include", "image", "figure", "raw", "contents")


@dataclass
class Item:
    """One list item / table row: span and, for ordered lists, its number."""

    start: int
    end: int
    number: int | None = None


@dataclass
class Block:
    kind: BlockKind
    start: int
    end: int
    heading_path: tuple[str, ...] = ()
    language: str | None = None  # code
    level: int = 0  # heading
    title: str = ""  # heading
    ordered: bool = False  # list
    items: list[Item] = field(default_factory=list)  # list items / table body rows
    header: tuple[int, int] | None = None  # table header span (incl. delimiter row)


@dataclass(slots=True)
class _Line:
    start: int  # offset of first char
    end: int  # offset after last char, excluding the newline
    text: str

    @property
    def blank(self) -> bool:
        return not self.text.strip()

    @property
    def indent(self) -> int:
        return len(self.text) - len(self.text.lstrip(" \t"))


def _lines(text: str) -> list[_Line]:
    out, pos = [], 0
    append = out.append
    for raw in text.splitlines(keepends=True):
        body = raw.rstrip("\r\n")
        append(_Line(pos, pos + len(body), body))
        pos += len(raw)
    return out


def list_marker(s: str, rst: bool) -> tuple[int, int | None] | None:
    """Return (marker width incl. following space, number or None) if `s` starts a list item."""
    t = s.lstrip(" ")
    lead = len(s) - len(t)
    if lead > (8 if rst else 3) or not t:
        return None
    if t[0] in "-*+" and (len(t) == 1 or t[1] in " \t"):
        return lead + 2, None
    if rst and t.startswith("#.") and (len(t) == 2 or t[2] == " "):
        return lead + 3, None
    i = 0
    paren = rst and t[0] == "("
    if paren:
        i = 1
    j = i
    while j < len(t) and j - i < 9 and t[j].isdigit():
        j += 1
    if j == i and rst and j < len(t) and t[j].isalpha() and j + 1 < len(t) and t[j + 1] in ".)":
        j += 1  # (a) / a.
        if j < len(t) and (len(t) == j + 1 or t[j + 1] == " "):
            return lead + j + 2, None
        return None
    if j == i or j >= len(t):
        return None
    closer = t[j]
    if (paren and closer != ")") or closer not in ".)":
        return None
    if j + 1 < len(t) and t[j + 1] not in " \t":
        return None
    return lead + j + 2, int(t[i:j])


def marker_style(s: str) -> str:
    """What a list item's marker is, apart from its number: the bullet ("-", "*", "+"), or an
    enumerator's form ("1.", "1)", "(1)", "a.", "#." read as "1."). A marker of another style
    starts a new list (CommonMark, docutils): a procedure's steps end where a bullet list
    of notes begins."""
    t = s.lstrip(" ")
    if t[:1] in ("-", "*", "+"):
        return t[0]
    if t.startswith("#."):
        return "1."
    paren = t.startswith("(")
    closer = next((c for c in t[paren:] if not c.isalnum()), "")
    return ("(" if paren else "") + ("a" if t[paren:paren + 1].isalpha() else "1") + closer


def _is_md_table_delim(s: str) -> bool:
    t = s.strip()
    return bool(t) and "-" in t and "|" in t and all(c in "|:- \t" for c in t)


def is_rst_adornment(s: str) -> bool:
    """A reStructuredText title's underline or overline: 3 or more of one punctuation
    character, from the line's start."""
    t = s.rstrip()
    return len(t) >= 3 and t[0] in RST_ADORNMENT and t == t[0] * len(t)


def _is_simple_table_border(s: str) -> bool:
    t = s.rstrip()
    return (t.startswith("=") and " " in t and set(t) <= {"=", " "}
            and len([p for p in t.split(" ") if p]) >= 2)


class _Parser:
    def __init__(self, text: str, fmt: Format) -> None:
        self.text = text
        self.rst = fmt == "rst"
        self.lines = _lines(text)
        self.blocks: list[Block] = []
        self.path: list[tuple[int, str]] = []  # (level, title)
        self._path_titles: tuple[str, ...] = ()  # titles of `path`, rebuilt per heading
        self.rst_styles: list[tuple[str, bool]] = []  # order of appearance = level

    # -- helpers ---------------------------------------------------------------------
    def _heading_path(self) -> tuple[str, ...]:
        return self._path_titles

    def _emit(self, kind: BlockKind, first: int, last: int, **kw) -> Block:
        b = Block(kind, self.lines[first].start, self.lines[last].end, self._heading_path(), **kw)
        self.blocks.append(b)
        return b

    def _push_heading(self, level: int, title: str, first: int, last: int) -> None:
        while self.path and self.path[-1][0] >= level:
            self.path.pop()
        self.path.append((level, title))
        self._path_titles = tuple(t for _, t in self.path)
        self._emit("heading", first, last, level=level, title=title)

    def _rst_level(self, char: str, overline: bool) -> int:
        style = (char, overline)
        if style not in self.rst_styles:
            self.rst_styles.append(style)
        return self.rst_styles.index(style) + 1

    def _indented_block(self, i: int, base_indent: int) -> int:
        """Last line index of the block indented deeper than `base_indent` starting at/after i."""
        n, last = len(self.lines), i - 1
        while i < n:
            ln = self.lines[i]
            if ln.blank:
                i += 1
                continue
            if ln.indent <= base_indent:
                break
            last = i
            i += 1
        return last

    # -- main loop -------------------------------------------------------------------
    def parse(self) -> list[Block]:
        i, n = 0, len(self.lines)
        while i < n:
            ln = self.lines[i]
            if ln.blank:
                i += 1
                continue
            i = self._step(i) + 1
        return self.blocks

    def _step(self, i: int) -> int:  # noqa: C901 - a dispatcher over block starts
        # Over 80 lines on purpose: the parser's state machine, one branch per kind of block
        # start (fence, heading, table, list, directive, ...) in the order they must be
        # tried; split up, the order would hide across functions that share `i` and `lines`.
        lines, n = self.lines, len(self.lines)
        ln = lines[i]
        s = ln.text
        t = s.strip()
        nxt = lines[i + 1].text if i + 1 < n else ""

        # fenced code (markdown only: in rst a "~~~~" line is a heading underline)
        stripped = s.lstrip(" ")
        if not self.rst and len(s) - len(stripped) <= 3 and stripped[:3] in ("```", "~~~"):
            ch = stripped[0]
            width = len(stripped) - len(stripped.lstrip(ch))
            lang = stripped[width:].strip().split(" ")[0] or None
            j = i + 1
            while j < n:
                c = lines[j].text.strip()
                if c.startswith(ch * width) and set(c) == {ch}:
                    break
                j += 1
            last = min(j, n - 1)
            while j >= n and last > i and lines[last].blank:
                last -= 1  # unclosed: to its last line of text, not the blank lines after it
            self._emit("code", i, last, language=lang)
            return last

        if not self.rst:
            # ATX heading
            if stripped.startswith("#") and len(s) - len(stripped) <= 3:
                hashes = len(stripped) - len(stripped.lstrip("#"))
                rest = stripped[hashes:]
                if hashes <= 6 and (not rest or rest[0] in " \t"):
                    self._push_heading(hashes, rest.strip().rstrip("#").strip(), i, i)
                    return i
            # setext heading
            if nxt.strip() and ln.indent <= 3 and set(nxt.strip()) <= {"="} | {"-"} \
                    and len(set(nxt.strip())) == 1 and not list_marker(s, False) \
                    and not (nxt.strip()[0] == "-" and len(nxt.strip()) < 2):
                self._push_heading(1 if nxt.strip()[0] == "=" else 2, t, i, i + 1)
                return i + 1
            # pipe table
            if "|" in s and _is_md_table_delim(nxt):
                j = i + 2
                while j < n and not lines[j].blank and "|" in lines[j].text:
                    j += 1
                b = self._emit("table", i, j - 1)
                b.header = (lines[i].start, lines[i + 1].end)
                b.items = [Item(lines[k].start, lines[k].end) for k in range(i + 2, j)]
                return j - 1
        else:
            # rst heading with overline
            if is_rst_adornment(s) and i + 2 < n and lines[i + 2].text.rstrip() == s.rstrip() \
                    and nxt.strip():
                self._push_heading(self._rst_level(t[0], True), nxt.strip(), i, i + 2)
                return i + 2
            # rst heading, underline only
            if nxt and is_rst_adornment(nxt) and ln.indent == 0 \
                    and len(nxt.rstrip()) >= len(s.rstrip()) and not is_rst_adornment(s):
                self._push_heading(self._rst_level(nxt.strip()[0], False), t, i, i + 1)
                return i + 1
            # directives and comments
            if t.startswith(".. "):
                return self._rst_directive(i, t)
            if t == "..":
                return self._indented_block(i + 1, ln.indent)
            # grid table
            if t.startswith("+-") or t.startswith("+="):
                return self._grid_table(i)
            if _is_simple_table_border(s):
                return self._simple_table(i)
            # doctest block
            if t.startswith(">>>"):
                j = i
                while j + 1 < n and not lines[j + 1].blank:
                    j += 1
                self._emit("code", i, j, language="pycon")
                return j

        marker = list_marker(s, self.rst)
        if marker is not None:
            return self._list(i, marker)

        # paragraph: runs until a blank line or the start of another block
        j = i
        while j + 1 < n:
            nl = lines[j + 1]
            if nl.blank or self._starts_block(j + 1):
                break
            j += 1
        last_text = lines[j].text.rstrip()
        self._emit("paragraph", i, j)
        if self.rst and last_text.endswith("::"):
            # literal block follows (after a blank line), indented deeper than the paragraph
            k = j + 1
            while k < n and lines[k].blank:
                k += 1
            if k < n and lines[k].indent > ln.indent:
                end = self._indented_block(k, ln.indent)
                self._emit("code", k, end, language=None)
                return end
        return j

    def _starts_block(self, i: int) -> bool:
        s = self.lines[i].text
        st = s.lstrip(" ")
        if not self.rst and st[:3] in ("```", "~~~"):
            return True
        if list_marker(s, self.rst) is not None:
            return True
        if self.rst:
            t = s.strip()
            return t.startswith(".. ") or t.startswith(">>>") or t.startswith("+-") \
                or (i + 1 < len(self.lines) and is_rst_adornment(self.lines[i + 1].text)
                    and not is_rst_adornment(s))
        nxt = self.lines[i + 1].text if i + 1 < len(self.lines) else ""
        return st.startswith("#") or ("|" in s and _is_md_table_delim(nxt))

    def _list(self, i: int, marker: tuple[int, int | None]) -> int:
        lines, n = self.lines, len(self.lines)
        base = lines[i].indent
        ordered = marker[1] is not None or lines[i].text.lstrip().startswith(("#.", "("))
        style = marker_style(lines[i].text)
        items: list[Item] = []
        cur_start, cur_num, last = i, marker[1], i
        j = i + 1
        while j < n:
            ln = lines[j]
            if ln.blank:
                j += 1
                continue
            m = list_marker(ln.text, self.rst)
            if m is not None and ln.indent == base and marker_style(ln.text) != style:
                break  # another list begins
            if m is not None and ln.indent == base:
                items.append(Item(lines[cur_start].start, lines[last].end, cur_num))
                cur_start, cur_num, last = j, m[1], j
                j += 1
                continue
            if ln.indent > base:  # continuation / nested content
                last = j
                j += 1
                continue
            if not lines[j - 1].blank and ln.indent == base and m is None and not self.rst \
                    and not self._starts_block(j):
                last = j  # lazy continuation line (markdown)
                j += 1
                continue
            break
        items.append(Item(lines[cur_start].start, lines[last].end, cur_num))
        if all(it.number is None for it in items) and ordered:
            for k, it in enumerate(items, 1):
                it.number = k  # rst auto-numbered "#." lists
        self._emit("list", i, last, ordered=ordered, items=items)
        return last

    def _rst_directive(self, i: int, t: str) -> int:
        ln = self.lines[i]
        head = t[3:]
        name, sep, arg = head.partition("::")
        name = name.strip()
        end = self._indented_block(i + 1, ln.indent)
        if not sep or head.startswith("_") or head.startswith("["):
            return max(end, i)  # comment, label or footnote target
        if name in _CODE_DIRECTIVES:
            # content starts after the option lines (":linenos:" ...) and a blank line
            k = i + 1
            while k <= end and (self.lines[k].blank or self.lines[k].text.strip().startswith(":")):
                k += 1
            if k <= end:
                lang = arg.strip() or ("pycon" if name == "doctest" else None)
                self._emit("code", k, end, language=lang)
            return max(end, i)
        name = name.rsplit(":", 1)[-1]  # drop a domain prefix: py:function -> function
        if name in _SKIP_DIRECTIVES:
            return max(end, i)
        if arg.strip():
            # API descriptions (function, class ...) and titled admonitions: the directive
            # line is a paragraph; the indented body is parsed as normal text by the main loop
            self._emit("paragraph", i, i)
        return i

    def _grid_table(self, i: int) -> int:
        lines, n = self.lines, len(self.lines)
        j = i
        while j + 1 < n and lines[j + 1].text.strip()[:1] in ("+", "|"):
            j += 1
        b = self._emit("table", i, j)
        # rows are separated by +---+ lines; the header by +===+
        borders = [k for k in range(i, j + 1) if lines[k].text.strip().startswith("+")]
        header_end = next((k for k in borders if "=" in lines[k].text), None)
        if header_end is not None:
            b.header = (lines[i].start, lines[header_end].end)
        row_start = header_end if header_end is not None else i
        for a, z in zip(borders, borders[1:]):
            if a >= row_start and z > a + 1:
                b.items.append(Item(lines[a + 1].start, lines[z - 1].end))
        return j

    def _simple_table(self, i: int) -> int:
        lines, n = self.lines, len(self.lines)
        borders = [i]
        j = i + 1
        while j < n:
            s = lines[j].text
            if _is_simple_table_border(s):
                borders.append(j)
                if j + 1 >= n or lines[j + 1].blank:
                    break
            elif lines[j].blank and len(borders) >= 2:
                j -= 1
                break
            j += 1
        j = min(j, n - 1)
        b = self._emit("table", i, j)
        body_from = i + 1
        if len(borders) >= 3:
            b.header = (lines[i].start, lines[borders[1]].end)
            body_from = borders[1] + 1
        for k in range(body_from, j + 1):
            ln = lines[k]
            if ln.blank or _is_simple_table_border(ln.text):
                continue
            if ln.text[:1] == " " and b.items:  # continuation row (empty first column)
                b.items[-1].end = ln.end
            else:
                b.items.append(Item(ln.start, ln.end))
        return j


def parse_blocks(text: str, fmt: Format = "markdown") -> list[Block]:
    """Semantic blocks of `text`, in document order, with heading paths."""
    return _Parser(text, fmt).parse()
