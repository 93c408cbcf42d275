"""Markdown as documentation sites write it, read as plain Markdown: front matter (Jekyll,
Hugo, Docusaurus, Starlight, MkDocs), admonitions (`:::tip[Title]`, `!!! note "Title"`),
heading ids (`## Install {#install}`) and MDX (`.mdx`: ESM `import`/`export` blocks, JSX
comments, React components).

    text, fields = site_markdown(raw_text, mdx=True)
    fields["title"], fields.get("last_updated"), fields.get("description")

What a reader sees is kept, what only the site builder reads is dropped:
- front matter is taken off the text; its `title` becomes the document's title, and a
  `# title` line heads the text when the page has no H1 of its own (the site shows the title
  as the page's heading, so chunks carry it in their heading path as they do for a page that
  writes its H1); its `description` is the paragraph under the H1; `description`, `tags` and
  the last update (`last_update`, `lastUpdated`, `lastmod`, `last_modified_at`, `updated`,
  else a blog post's `date`) go to the metadata;
- an admonition becomes a bold line ("**Tip: See it in action**") over its text, which an
  MkDocs admonition (or content tab) has indented: it is dedented;
- Hugo shortcodes read as their text (`_shortcodes`);
- MDX: ESM blocks (a paragraph starting `import ` or `export `) and `{/* comments */}` go;
  a component's tags go and its children stay; a component's `label`, `title` and
  `description` attributes stay as text (`<TabItem label="pnpm">` → "**pnpm**", `<LinkCard
  title="Themes" description="Pick one" />` → "**Themes** — Pick one"), with an `Aside`'s
  `type` as an admonition's kind.
Code blocks (`code_segments`) and inline code are not rewritten, but for what the site itself
prints differently: a shown Hugo shortcode unescaped, an MDX component child's block dedented.
Pure functions of the text: tested without files.
"""

from __future__ import annotations

import re
import tomllib
from datetime import date, datetime
from typing import Any

import yaml

_FRONT = re.compile(r"\A(---|\+\+\+)[ \t]*\r?\n(.*?)(?:\r?\n)?^\1[ \t\r]*(?:\n|\Z)", re.S | re.M)
_KEY = re.compile(r"^[\w-]+$")
# keys that make a `---` block front matter even when capitalised (else: all keys lower case)
_FRONT_KEYS = {"title", "description", "date", "tags", "categories", "slug", "id", "layout",
               "weight", "draft", "lastmod", "keywords", "aliases", "authors", "author",
               "summary", "sidebar_position", "sidebar_label", "lastUpdated", "last_update"}
OPENER = re.compile(r"^([ \t]*)(`{3,}|~{3,})")  # a fence line: (indentation, fence)
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`).{1,2000}?(?<!`)\1(?!`)")  # a run from its start
_JSX_COMMENT = re.compile(r"\{/\*.{0,5000}?\*/\}", re.S)
_ESM = re.compile(r"^(?:import|export)[\s{*]")
_TAG_START = re.compile(r"<(/?)([A-Z][\w.]*)(?=[\s/>])|<>|</>")
_TAG_MAX = 20_000  # characters: a "tag" longer than this is not one (left as it is)
_ATTR_VALUE = re.compile(r"([\w:.-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_HEADING_ID = re.compile(r"^(#{1,6}[ \t].*?)[ \t]*\{#[\w.:-]+\}[ \t\r]*$", re.M)
_ADMONITION_KINDS = {"note", "tip", "info", "caution", "danger", "warning", "important",
                     "success", "question", "example", "quote", "abstract", "bug", "failure",
                     "hint", "attention", "error", "seealso", "details", "check", "todo"}
# Docusaurus / VitePress / Pandoc: `:::tip[Title]`, `::: warning Title`, `::: {.note}`, `:::`
_DOCUSAURUS = re.compile(r"^([ \t]*):{3,}[ \t]*(?:\{\.?([A-Za-z]+)[^}\n]*\}|([A-Za-z]+))?"
                         r"(?:\[(.*?)\]|[ \t]+(.*?))?[ \t]*"
                         r"(?:\{(?:[^\n]*?\btitle=[\"']([^\"'\n]*)[\"'])?[^\n]*\})?[ \t\r]*$")
# MkDocs (Material): `!!! kind [inline end] "Title"`, `??? kind` (collapsible), `=== "Tab"`
_MKDOCS = re.compile(r"^(?:(?:!!!|\?\?\?\+?)[ \t]+([\w-]+)(?:[ \t]+[a-z]+)*(?:[ \t]+\"(.*)\")?"
                     r"|===\+?[ \t]+\"(.*)\")[ \t\r]*$")
# Hugo: {{< name args >}} / {{% name args %}}, {{< /name >}}; {{</* x */>}} shows a shortcode
_SHORTCODE = re.compile(r"\{\{([<%])\s*(/?)\s*([\w./-]+)((?:[^{}]|\}(?!\})|\{(?!\{)){0,1000}?)"
                        r"\s*[>%]\}\}")
_SHOWN_SHORTCODE = re.compile(r"\{\{([<%])/\*(.{0,1000}?)\*/([>%])\}\}", re.S)
_SHORTCODE_ARG = re.compile(r"([\w-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|(\S+))|\"([^\"]*)\"|(\S+)")
_SHORTCODE_ARGS_ONLY = {"ref", "relref", "param"}  # shown as their argument (a path, a name)
# shortcodes whose content is code (the fence's language: `lang=`, highlight's first argument)
_SHORTCODE_CODE = {"code-toggle": "toml", "highlight": "", "code": ""}
_SHORTCODE_DROPPED = {"include", "readfile", "code_sample", "codenew", "remote-file"}
_UPDATED = ("last_update", "lastUpdated", "last_updated", "lastmod", "last_modified_at",
            "last_modified", "updated", "modified", "date")


def site_markdown(text: str, mdx: bool = False) -> tuple[str, dict[str, Any]]:
    """(Markdown, fields) of a page's text: the module doc's conversions; `fields` holds
    `title` (or "") and, where the front matter gives them, `description`, `tags` and
    `last_updated` (an ISO date). A deeply nested page raises RecursionError."""
    meta, body = front_matter(text)
    fields = _fields(meta)
    out = []
    closed = {m.group(1) for m in re.finditer(r"\{\{[<%]\s*/\s*([\w./-]+)", body)}
    for code, seg in code_segments(_mkdocs(body), any_indent=mdx):
        if code:  # as the site prints it: a shown shortcode unescaped, a child's code dedented
            seg = _SHOWN_SHORTCODE.sub(_shown, seg) if "{{" in seg else seg
            out.append(_dedented(seg) if mdx else seg)
            continue
        if mdx:
            seg = _mdx(seg)
        seg = _admonitions(_HEADING_ID.sub(r"\1", _shortcodes(seg, closed)))
        out.append(seg)
    body = "".join(out).lstrip("\n") if len(body) < len(text) else "".join(out)
    return headed(body, fields), fields


def headed(body: str, fields: dict[str, Any]) -> str:
    """`body` with the front matter's title as its H1 when it has none, and its description
    (the author's summary of the page; a site prints it under the title, often the page's
    only sentence on a reference page) as the paragraph under the H1."""
    end = _h1_end(body)
    summary = f"\n{fields['description']}\n" if "description" in fields else ""
    if end is None and fields["title"]:
        return f"# {fields['title']}\n{summary}\n{body}"
    if end is not None and summary:
        rest = body[end:]
        return body[:end] + summary + ("" if rest.startswith(("\n", "\r\n")) else "\n") + rest
    return body


def front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(fields, the text without them): YAML between `---` lines or TOML between `+++`
    lines at the very start, a mapping with no capitalised key, or with a usual
    front matter key (`title`, `date`, ...), or an empty block (comments only: ({}, the
    rest)). Anything else (a thematic break over a "Warning: ..." line, YAML that does not
    parse) is no front matter: ({}, text)."""
    m = _FRONT.match(text)
    if not m:
        return {}, text
    raw = m.group(2)
    try:
        data = yaml.safe_load(raw) if m.group(1) == "---" else tomllib.loads(raw)
    except Exception:  # noqa: BLE001 - any YAML/TOML failure (a bad tag, deep nesting): text
        return {}, text
    if data is None:  # `---` over `---`, or comments only: Jekyll's and Hugo's empty block
        return {}, text[m.end():]
    if not isinstance(data, dict) or not all(isinstance(k, str) and _KEY.match(k) for k in data):
        return {}, text
    if not (_FRONT_KEYS & set(data) or not any(k[0].isupper() for k in data)):
        return {}, text
    return data, text[m.end():]


def _fields(meta: dict[str, Any]) -> dict[str, Any]:
    title = meta.get("title")
    fields: dict[str, Any] = {"title": " ".join(title.split()) if isinstance(title, str) else ""}
    if isinstance(meta.get("description"), str) and meta["description"].strip():
        fields["description"] = " ".join(meta["description"].split())
    tags = meta.get("tags")
    if isinstance(tags, list) and all(isinstance(t, str | int) for t in tags) and tags:
        fields["tags"] = ", ".join(str(t) for t in tags)
    for key in _UPDATED:
        when = _iso_date(meta.get(key))
        if when:
            fields["last_updated"] = when
            break
    return fields


def _iso_date(value: Any) -> str | None:
    """An ISO date of a front matter value: a date, a datetime, an ISO string, or
    Docusaurus's `{date: ...}`; None for anything else (`lastUpdated: true`)."""
    if isinstance(value, dict):
        value = value.get("date")
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).isoformat()
        except ValueError:
            return None
    return None


def code_segments(text: str, any_indent: bool = False) -> list[tuple[bool, str]]:
    """`text` cut into (is_code, piece) pieces, code being fenced blocks (their fence lines
    included); the pieces join back to `text`. A fence at up to 3 spaces of indentation opens
    as the chunker's parser reads it (`ingest.markup`: closed by any line of its fence
    characters); a deeper one (in a list item) only where a closing line at its own
    indentation follows, else it is text; `any_indent` (MDX, whose components indent their
    children with tabs): at any indentation, as a shallow one."""
    lines = text.splitlines(keepends=True)
    out: list[tuple[bool, str]] = []
    buf: list[str] = []
    fence: str | None = None
    for n, line in enumerate(lines):
        m = OPENER.match(line)
        if fence is None and m and (any_indent or shallow(m.group(1))
                                    or closed_at(lines, n, m.group(1), m.group(2))):
            if buf:
                out.append((False, "".join(buf)))
            buf, fence = [line], m.group(2)
        elif fence is not None:
            buf.append(line)
            if closes_fence(line, fence):
                out.append((True, "".join(buf)))
                buf, fence = [], None
        else:
            buf.append(line)
    if buf:
        out.append((fence is not None, "".join(buf)))
    return out


def closes_fence(line: str, fence: str) -> bool:
    """Whether `line` closes a block opened by `fence` (as the chunker's parser reads it: a
    line of the fence's character, at least as long, at any indentation)."""
    s = line.strip()
    return bool(s) and set(s) == {fence[0]} and len(s) >= len(fence)


def fenced(text: str, lang: str) -> str:
    """`text` in a fenced block whose fence is longer than any backtick run inside it (a
    notebook cell or AsciiDoc listing holding a ```json example stays one block)."""
    longest = max((len(r) for r in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def shallow(indent: str) -> bool:
    return "\t" not in indent and len(indent) <= 3


def closed_at(lines: list[str], n: int, indent: str, fence: str) -> bool:
    """Whether a line of `fence` characters at `indent` closes the fence opened on line `n`
    (looked for over the next 2,000 lines)."""
    return any(line.startswith(indent) and not line[len(indent):len(indent) + 1].isspace()
               and closes_fence(line, fence) for line in lines[n + 1:n + 2001])


def _dedented(block: str) -> str:
    """A fenced block indented past what the chunker opens (a component's child, `\t\t```sh`)
    with that indentation taken off each of its lines, so it chunks as code."""
    m = OPENER.match(block)
    if m is None or shallow(m.group(1)):
        return block
    indent = m.group(1)
    return "".join(ln[len(indent):] if ln.startswith(indent) else ln.lstrip(" \t")
                   for ln in block.splitlines(keepends=True))


def _h1_end(body: str) -> int | None:
    """Where the line(s) of the page's own H1 end (ATX `# X` or setext `X` over `===`,
    outside code), or None."""
    pos = 0
    for code, seg in code_segments(body):
        m = None if code else re.search(r"^ {0,3}#[ \t]+\S.*$|^ {0,3}\S[^\n]*\n {0,3}=+[ \t\r]*$",
                                         seg, re.M)
        if m:
            return pos + m.end() + (1 if seg[m.end():m.end() + 1] == "\n" else 0)
        pos += len(seg)
    return None


class Masked:
    """`text`: a piece of Markdown with its inline code (and whatever else is `hide`n) replaced
    by placeholders, so no rule rewrites it; `restore` puts it back. The placeholders and
    `mark` (a separator a rule may leave) use private-use characters the piece does not hold."""

    def __init__(self, seg: str) -> None:
        free = (chr(c) for c in range(0xE000, 0xF900) if chr(c) not in seg)
        self.open, self.close, self.mark = next(free), next(free), next(free)
        self.kept: list[str] = []
        self.text = _INLINE_CODE.sub(lambda m: self.hide(m.group(0)), seg)

    def hide(self, piece: str) -> str:
        self.kept.append(piece)
        return f"{self.open}{len(self.kept) - 1}{self.close}"

    def restore(self, seg: str) -> str:
        return re.sub(f"{self.open}(\\d+){self.close}", lambda m: self.kept[int(m.group(1))], seg)


def _mdx(seg: str) -> str:
    """ESM blocks, JSX comments and component tags out of a piece of MDX that holds no
    fenced code (inline code kept as it is)."""
    kept, dropping, depth, blank_before = [], False, 0, True
    for line in seg.splitlines(keepends=True):
        if not line.strip() and depth <= 0:
            dropping, blank_before = False, True
            kept.append(line)
            continue
        if blank_before and _ESM.match(line):
            dropping, depth = True, 0
        blank_before = False
        if dropping:  # an `export const x = {` ... `};` block may hold blank lines
            depth += sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
        else:
            kept.append(line)
    masked = Masked("".join(kept))
    seg = _components(_JSX_COMMENT.sub("", masked.text), masked.mark)
    # JSX indents a component's children with tabs (Markdown would read them as code); a
    # nested list item keeps its indentation
    seg = "\n".join(ln if re.match(r"\t+([-*+]|\d+[.)])[ \t]", ln) else ln.lstrip("\t")
                    for ln in seg.split("\n"))
    seg = re.sub(f"{masked.mark}[ \t]*(?=\n|$)", "", seg).replace(masked.mark, ": ")
    return masked.restore(re.sub(r"\n{3,}", "\n\n", seg))


def _components(seg: str, mark: str) -> str:
    """Every component tag of `seg` replaced by `_tag_text` of it (`mark` after a label, for
    "**npm**: text"). A tag ends at the first `>` outside quotes and braces: attribute values
    may hold nested `{...}` and `=>`. Where no end is found (within `_TAG_MAX` characters),
    the text is left as it is up to where the search stopped (linear time on any input)."""
    out, pos, skip = [], 0, 0
    for m in _TAG_START.finditer(seg):
        if m.start() < max(pos, skip):
            continue
        if not m.group(2):  # a fragment <> or </>: the match is the whole tag
            out.append(seg[pos:m.start()])
            pos = m.end()
            continue
        end, stopped = _tag_end(seg, m.end())
        if end < 0:
            skip = stopped
            continue
        out.append(seg[pos:m.start()])
        out.append("" if m.group(1) else _tag_text(seg[m.end():end - 1], mark))
        pos = end
    return "".join(out) + seg[pos:]


def _tag_end(s: str, i: int) -> tuple[int, int]:
    """(the index after the `>` ending the tag whose attributes start at `i`, or -1; where
    the search stopped)."""
    depth, quote = 0, ""
    for j in range(i, min(len(s), i + _TAG_MAX)):
        c = s[j]
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'`":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        elif c == ">" and depth == 0:
            return j + 1, j + 1
        elif c == "<" and depth == 0 and j > i:
            return -1, j  # another tag starts: this one never closed
    return -1, min(len(s), i + _TAG_MAX)


def _tag_text(attributes: str, mark: str) -> str:
    """What a reader sees of a component's tag: its label, title or text, its description,
    an `Aside`'s kind; "" for the rest. Attributes inside `{...}` are not read."""
    flat, depth = [], 0
    for c in attributes:
        depth += c == "{"
        flat.append(c if depth == 0 else " ")
        depth -= c == "}" and depth > 0
    attrs = {a.group(1): a.group(2) if a.group(2) is not None else a.group(3)
             for a in _ATTR_VALUE.finditer("".join(flat))}
    label = (attrs.get("title") or attrs.get("label") or attrs.get("text") or "").strip()
    kind = (attrs.get("type") or "").strip().lower()
    if kind in _ADMONITION_KINDS:
        label = f"{kind.capitalize()}: {label}" if label else kind.capitalize()
    desc = (attrs.get("description") or "").strip()
    if not label:
        return desc
    closes = attributes.rstrip().endswith("/")  # self-closing: no children follow it
    return f"**{label}**" + (f" — {desc}" if desc else "") + ("" if closes else mark)


def _mkdocs(text: str) -> str:
    """MkDocs `!!! kind "Title"`, `??? kind` and content tabs `=== "Tab"` as a bold line over
    their indented body, which is dedented (a fenced block inside it too; nested ones read the
    same way). Only where an indented body follows; top-level fenced code is left alone."""
    out: list[str] = []
    lines = text.split("\n")
    i, fence = 0, None
    while i < len(lines):
        line = lines[i]
        f = OPENER.match(line)
        if fence is None and f and shallow(f.group(1)):
            fence = f.group(2)
        elif fence is not None and closes_fence(line, fence):
            fence = None
        m = _MKDOCS.match(line) if fence is None else None
        if not m or not _indented_next(lines, i):
            out.append(line)
            i += 1
            continue
        out.append(bold(m.group(1), m.group(2) or m.group(3)))
        body, i = [], i + 1
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith(("    ", "\t"))):
            body.append(lines[i][4:] if lines[i].startswith("    ") else lines[i][1:])
            i += 1
        out.append(_mkdocs("\n".join(body)))
    return "\n".join(out)


def _indented_next(lines: list[str], i: int) -> bool:
    """Whether the first non-blank line after line `i` is indented (a block's body)."""
    for ln in lines[i + 1:i + 200]:
        if ln.strip():
            return ln.startswith(("    ", "\t"))
    return False


def _shortcodes(seg: str, closed: set[str]) -> str:
    """Hugo shortcodes outside inline code as their text: a closing one goes; `text="Pod"`
    (a glossary tooltip), a figure's `caption` or an image's `alt` stay as words; a `title`,
    `name`, `label` or `summary` as a bold line; an admonition (`note`, `warning`, ...) as
    "**Note**"; `ref`/`relref`/`param` as their argument (a link's path stays a path); an
    `include` (text from elsewhere) and one that wraps content (`closed`: the page closes it
    somewhere) go, the wrapped content stays; any other as its name and positional arguments
    ("new-in 0.120.0"). One whose content is code (`code-toggle`, `highlight`), alone on its
    lines, becomes a code fence. `{{</* x */>}}` (a shortcode shown, not run) reads `{{< x >}}`."""
    if "{{" not in seg:
        return seg

    def text(m: re.Match[str]) -> str:
        named, positional = {}, []
        for a in _SHORTCODE_ARG.finditer(m.group(4)):
            if a.group(1):
                named[a.group(1)] = next(g for g in a.group(2, 3, 4) if g is not None)
            else:
                positional.append(a.group(5) if a.group(5) is not None else a.group(6))
        name = m.group(3)
        if name in _SHORTCODE_CODE and _alone(m):  # its content is code: fenced
            lang = named.get("lang") or (positional[0] if name == "highlight" and positional
                                         else _SHORTCODE_CODE[name])
            return "```" if m.group(2) else f"```{lang}"
        if m.group(2):
            return ""
        words = named.get("text") or named.get("caption") or named.get("alt")
        if words:
            return words
        title = (named.get("title") or named.get("name") or named.get("label")
                 or named.get("summary"))
        if name.lower() in _ADMONITION_KINDS:
            return bold(name, title)
        if title:
            return f"**{title}**"
        if name in _SHORTCODE_ARGS_ONLY:
            return " ".join(positional)
        if name in _SHORTCODE_DROPPED or name in closed:
            return ""
        return " ".join([name, *positional])

    masked = Masked(seg)
    shown = _SHOWN_SHORTCODE.sub(lambda m: masked.hide(_shown(m)), masked.text)
    return masked.restore(_SHORTCODE.sub(text, shown))


def _shown(m: re.Match[str]) -> str:
    """`{{</* x */>}}`, a shortcode a Hugo page shows rather than runs, as the page prints it."""
    return f"{{{{{m.group(1)} {m.group(2).strip()} {m.group(3)}}}}}"


def _alone(m: re.Match[str]) -> bool:
    """Whether the match stands alone on its line."""
    before = m.string[:m.start()].rsplit("\n", 1)[-1]
    after = m.string[m.end():].split("\n", 1)[0]
    return not before.strip() and not after.strip()


def _admonitions(seg: str) -> str:
    """Docusaurus / VitePress / Pandoc `:::kind[Title]` … `:::` as a bold line over their
    text, at the fence's indentation (inside a list item it stays in the item); a container's
    fence lines (`::: code-group`, `:::`) go, its content stays. `:::python` (codehilite's
    language line in an indented code block) is neither: left as it is."""
    out = []
    for line in seg.split("\n"):
        d = _DOCUSAURUS.match(line) if ":::" in line else None
        if d:
            kind, title = d.group(2) or d.group(3), d.group(4) or d.group(5) or d.group(6)
            if kind and kind.lower() in _ADMONITION_KINDS:
                line = d.group(1) + bold(kind, title)
            elif not (kind or title) or re.match(r"[ \t]*:{3,}[ \t]", line):
                line = ""  # a closing fence, a container (`::: code-group`, `::: {.columns}`)
        out.append(line)
    return "\n".join(out)


def bold(kind: str | None, title: str | None) -> str:
    kind = (kind or "").strip().capitalize()
    title = (title or "").strip()
    return f"**{kind}: {title}**" if kind and title else f"**{kind or title}**"
