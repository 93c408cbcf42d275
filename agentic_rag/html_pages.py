"""An HTML documentation page as Markdown, so the Markdown chunker keeps its code, tables and
lists whole (`read_document` calls this for .html / .htm files).

Only the page's main content is kept: the first of `[role=main]`, `<main>`, `<article>`,
Sphinx's `div.body` or `#content`, else `<body>`. Inside it, navigation, sidebars, footers,
forms, scripts, copy buttons and heading anchors ("¶", "#") are dropped. Headings become ATX
(`## Title`), `<pre>` a fenced block tagged with the language its classes name
(`language-js`, Sphinx's `highlight-python`), tables pipe tables (a table without `<th>` takes
its first row as the header), lists `-` / `1.` items;
links and images keep their text only. The result is deterministic for one library version,
so chunk offsets (and test-set gold spans) point into the converted text, not the HTML.

Word documents (.docx) take the same path: mammoth turns their paragraph styles into semantic
HTML (Heading 1 → `<h1>`, list styles → `<ol>`/`<ul>`, tables), which is converted as above.
"""

from __future__ import annotations

import re

# the page's main content, most specific first (Node.js, MkDocs, Docusaurus, Sphinx, Jekyll)
MAIN_SELECTORS = ("[role=main]", "main", "article", "div.body", "#content")
# never content, wherever they sit inside it
DROP_SELECTORS = ("script", "style", "noscript", "template", "nav", "aside", "footer", "form",
                  "button", "input", "select", "textarea", "svg", "iframe", "a.headerlink",
                  ".copy-button", ".headerlink", ".sphinxsidebar", ".related")
_ANCHOR_TEXT = {"#", "¶", "§", "🔗", ""}
_LANGUAGE = re.compile(r"(?:language|lang|highlight-source|highlight)-([\w+#.-]+)$")
_BLANK_RUNS = re.compile(r"\n{3,}")


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


def _converter():
    """markdownify's converter, with definition lists flattened: an API entry's signature
    becomes a heading one level below the sections (`####`, deeper when nested), so its
    description, code and tables are chunked under it; a glossary term a bold line. Their
    bodies are not indented (an indented fence would not read as a code block)."""
    from markdownify import MarkdownConverter

    class PageConverter(MarkdownConverter):
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


def main_content(soup):
    """The element holding the page's content (see `MAIN_SELECTORS`)."""
    for selector in MAIN_SELECTORS:
        node = soup.select_one(selector)
        if node is not None and node.get_text(strip=True):
            return node
    return soup.body or soup


def html_to_markdown(raw: str | bytes) -> str:
    """The main content of an HTML page as Markdown ("" when it has no text). Bytes are decoded
    as the page declares (`<meta charset>`), else as UTF-8 or the likeliest encoding."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(raw, "html.parser")
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
    converter = _converter()(heading_style="ATX", bullets="-", strip=["a", "img"],
                                  code_language_callback=code_language,
                                  escape_underscores=False, escape_asterisks=False,
                                  escape_misc=False, table_infer_header=True)
    text = converter.convert_soup(root)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return _BLANK_RUNS.sub("\n\n", text).strip() + "\n" if text.strip() else ""


class DocxError(ValueError):
    """The file is not a readable Word document; the caller names the file."""


def docx_to_markdown(raw: bytes) -> str:
    """A Word document (.docx) as Markdown, through mammoth's HTML ("" when it has no text)."""
    import io
    import zipfile

    import mammoth

    try:
        html = mammoth.convert_to_html(io.BytesIO(raw)).value
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise DocxError(f"not a readable .docx (Word 2007 or later) file ({exc})") from None
    return html_to_markdown(html)
