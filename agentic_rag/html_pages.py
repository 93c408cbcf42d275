"""An HTML documentation page as Markdown, so the Markdown chunker keeps its code, tables and
lists whole (`read_document` calls this for .html / .htm files).

Only the page's main content is kept: the first of `[role=main]`, `<main>`, `<article>`,
Sphinx's `div.body` or `#content`, else `<body>`. Inside it, navigation, sidebars, footers,
forms, scripts, copy buttons and heading anchors ("¶", "#") are dropped. Headings become ATX
(`## Title`), `<pre>` a fenced block tagged with the language its classes name
(`language-js`, Sphinx's `highlight-python`), tables pipe tables, lists `-` / `1.` items;
links and images keep their text only. The result is deterministic for one library version,
so chunk offsets (and test-set gold spans) point into the converted text, not the HTML.
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
    from markdownify import MarkdownConverter

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
    converter = MarkdownConverter(heading_style="ATX", bullets="-", strip=["a", "img"],
                                  code_language_callback=code_language,
                                  escape_underscores=False, escape_asterisks=False,
                                  escape_misc=False)
    text = converter.convert_soup(root)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return _BLANK_RUNS.sub("\n\n", text).strip() + "\n" if text.strip() else ""
