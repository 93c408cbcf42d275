"""An HTML documentation page as Markdown, so the Markdown chunker keeps its code, tables and
lists whole (`readers.read_document` calls this for .html / .htm and .docx files).

Only the page's main content is kept: the first of `[role=main]`, `<main>`, `<article>`,
Sphinx's `div.body` or `#content`, else `<body>`. Inside it, navigation bars, footers, forms,
scripts, copy buttons and heading anchors ("¶", "#") are dropped (`DROP_SELECTORS`); the
title is the first `<h1>` there, else `<title>`. Headings become ATX
(`## Title`), `<pre>` a fenced block tagged with the language its classes name
(`language-js`, Sphinx's `highlight-python`), tables pipe tables (a table without `<th>` takes
its first row as the header), lists `-` / `1.` items;
links and images keep their text only. The result is deterministic for one library version,
so chunk offsets (and test-set gold spans) point into the converted text, not the HTML.

Word documents (.docx) take the same path: mammoth turns their paragraph styles into semantic
HTML (Heading 1 → `<h1>`, list styles → `<ol>`/`<ul>`, tables), which is converted as above.
"""

from __future__ import annotations

import functools
import re

# the page's main content, most specific first (Node.js, MkDocs, Docusaurus, Sphinx, Jekyll)
MAIN_SELECTORS = ("[role=main]", "main", "article", "div.body", "#content")
# never content, wherever they sit inside it: scripts, forms, navigation bars (Sphinx's
# sidebar and related links, DocBook's navheader/navfooter and table.nav, gtk-doc's
# table.navigation, texinfo's div.header), permalinks. Not <aside>: docutils writes footnotes,
# sidebars and topics as <aside>.
DROP_SELECTORS = ("script", "style", "noscript", "template", "nav", "footer", "form", "button",
                  "input", "select", "textarea", "svg", "iframe", "[role=navigation]",
                  ".headerlink", ".copy-button", ".sphinxsidebar", ".related", ".breadcrumbs",
                  ".navheader", ".navfooter", "table.nav", "table.navigation", "div.header")
_ANCHOR_TEXT = {"#", "¶", "§", "🔗", ""}
_LANGUAGE = re.compile(r"(?:language|lang|highlight-source|highlight)-([\w+#.-]+)$")
_BLANK_RUNS = re.compile(r"\n{3,}")
# text that Markdown would read as a heading, a fence or a setext underline at a line start
_MARKUP_AT_LINE_START = re.compile(r"(^|\n)([ \t]*)(#|```|~~~|[-=]{2,}[ \t]*(?=\n|$))")


def code_language(pre) -> str:
    """The language a `<pre>` block's classes (or its `<code>`'s, or its two wrappers': Sphinx's
    `div.highlight-python > div.highlight > pre`) name."""
    parent = pre.parent
    for node in (pre, pre.find("code"), parent, parent.parent if parent is not None else None):
        for cls in (node.get("class") or []) if node is not None else []:
            m = _LANGUAGE.match(cls)
            if m and m.group(1) not in ("default", "none", "text", "plaintext"):
                return m.group(1)
    return ""


# a <dl> of API entries (Sphinx's `dl.py.function`, `dl.describe`, ...): each <dt> is a signature
_OBJECT_CLASSES = {"py", "c", "cpp", "js", "rst", "std", "describe", "function", "class", "method",
                   "attribute", "data", "exception", "option", "cmdoption", "envvar", "property"}


def is_signature(dt) -> bool:
    """A <dt> that names an API entry (a signature), not a glossary term."""
    dl = dt.find_parent("dl")
    return ("sig" in (dt.get("class") or [])
            or bool(_OBJECT_CLASSES & set((dl.get("class") or []) if dl is not None else [])))


@functools.cache
def _converter():
    """markdownify's converter, with definition lists flattened: an API entry's signature
    becomes a heading one level below the sections (`####`, deeper when nested), so its
    description, code and tables are chunked under it; a glossary term a bold line. Their
    bodies are not indented (an indented fence would not read as a code block). Text that
    would read as a heading or a fence at a line start is escaped (`\\#`)."""
    from markdownify import MarkdownConverter

    class PageConverter(MarkdownConverter):
        def escape(self, text, parent_tags):
            return _MARKUP_AT_LINE_START.sub(r"\1\2\\\3", super().escape(text, parent_tags))

        def convert_td(self, el, text, parent_tags):  # a "|" in a cell is no column break
            return super().convert_td(el, text.replace("|", "\\|"), parent_tags)

        def convert_th(self, el, text, parent_tags):
            return super().convert_th(el, text.replace("|", "\\|"), parent_tags)

        def convert_dt(self, el, text, parent_tags):
            text = " ".join((text or "").split())
            if "_inline" in parent_tags or not text:
                return f" {text} " if text else "\n"
            if is_signature(el):  # as printed: "os.getenv(key, default=None)", no emphasis
                text = " ".join(el.get_text("").split())
                depth = sum(1 for dl in el.find_parents("dl") if is_signature(dl.find("dt") or el))
                return f"\n\n{'#' * min(6, 3 + depth)} {text}\n\n"
            return f"\n\n**{text}**\n\n"

        def convert_dd(self, el, text, parent_tags):
            text = (text or "").strip()
            if "_inline" in parent_tags:
                return f" {text} "
            return f"\n\n{text}\n\n" if text else "\n"

    return PageConverter


def merge_signatures(root) -> None:
    """Consecutive signatures over one description ("bytes.expandtabs" and
    "bytearray.expandtabs") become one heading, "a / b", so the description sits under both."""
    for dt in root.find_all("dt"):
        if dt.parent is None or not is_signature(dt):
            continue
        nxt = dt.find_next_sibling()
        while nxt is not None and nxt.name == "dt" and is_signature(nxt):
            dt.append(" / ")
            for child in list(nxt.children):
                dt.append(child.extract())
            nxt.decompose()
            nxt = dt.find_next_sibling()


def main_content(soup):
    """The element holding the page's content (see `MAIN_SELECTORS`)."""
    for selector in MAIN_SELECTORS:
        node = soup.select_one(selector)
        if node is not None and node.get_text(strip=True):
            return node
    return soup.body or soup


def decoded(raw: str | bytes) -> str:
    """The page's text: as its BOM or `<meta charset>` declares, else UTF-8, else Windows-1252
    (what browsers assume for an undeclared legacy page), never a statistical guess."""
    if isinstance(raw, str):
        return raw
    from bs4.dammit import EncodingDetector

    bom = "utf-16" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else None
    declared = bom or EncodingDetector.find_declared_encoding(raw, is_html=True)
    for encoding in (declared, "utf-8-sig", "windows-1252"):
        if encoding:
            try:
                return raw.decode(encoding)
            except (UnicodeDecodeError, LookupError):
                continue
    return raw.decode("windows-1252", errors="replace")


def page_title(soup, root) -> str:
    """The page's first <h1> in its main content, else its <title>, permalinks aside."""
    for node in (root.find("h1"), soup.find("title")):
        if node is not None:
            text = " ".join(node.get_text(" ").split()).rstrip("¶#§ ")
            if text:
                return text
    return ""


def convert_page(raw: str | bytes) -> tuple[str, str]:
    """(the main content of an HTML page as Markdown, its title); ("", "") when it has no
    text. Bytes are decoded by `decoded`; lxml parses it as browsers do (`<li>` and `<td>`
    without end tags)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(decoded(raw), "lxml")
    root = main_content(soup)
    for selector in DROP_SELECTORS:
        for node in root.select(selector):
            node.decompose()
    for a in root.select('a[href^="#"]'):  # a heading's permalink: "¶", "#"
        if a.get_text(strip=True) in _ANCHOR_TEXT:
            a.decompose()
    for pre in root.find_all("pre"):  # two variants in one block (CommonJS / ES module)
        codes = pre.find_all("code", recursive=False)
        for code in codes[1:]:
            code.insert_before("\n\n")
    merge_signatures(root)
    title = page_title(soup, root)
    converter = _converter()(heading_style="ATX", bullets="-", strip=["a", "img"],
                             code_language_callback=code_language,
                             escape_underscores=False, escape_asterisks=False,
                             escape_misc=False, table_infer_header=True)
    text = converter.convert_soup(root)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    if not text.strip():
        return "", ""
    return _BLANK_RUNS.sub("\n\n", text).strip() + "\n", title


def html_to_markdown(raw: str | bytes) -> str:
    """The main content of an HTML page as Markdown ("" when it has no text)."""
    return convert_page(raw)[0]


class DocxError(ValueError):
    """The file is not a readable Word document; the caller names the file."""


def docx_to_markdown(raw: bytes) -> tuple[str, str]:
    """A Word document (.docx) as (Markdown, title), through mammoth's HTML."""
    import io
    import zipfile
    from xml.parsers.expat import ExpatError

    import mammoth

    try:
        html = mammoth.convert_to_html(io.BytesIO(raw)).value
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, TypeError, AttributeError,
            ExpatError) as exc:  # not a zip, no word/document.xml, malformed XML
        raise DocxError(f"not a readable .docx (Word 2007 or later) file ({exc})") from None
    return convert_page(html)
