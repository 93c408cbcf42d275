"""A PDF's text as Markdown (`readers.read_document` calls this for .pdf files), with pypdf.

A PDF has text, not structure, so this recovers what can be recovered cheaply and says what it
cannot:
- headings from the PDF's outline (bookmarks): an outline entry's title, found as a line on its
  page, becomes a heading there (`#` per outline level, one deeper than its parent); not found,
  it heads its page. A PDF without an outline gets `## Page N` at each page, so every chunk's
  heading path names its page;
- a running header or footer (a page's first or last line repeated, digits aside, on 3 pages or
  more, or on half of a shorter PDF) is dropped; one that text extraction prints mid-page is
  kept (a line repeated inside the text may be content);
- "•" / "◦" / "▪" bullets become "- " list items; a word hyphenated across a line end is
  joined ("man-" + "agement" → "management", only before a lower-case letter);
- a line ending a sentence well short of the page's usual line width ends its paragraph.
Tables and code come out as lines of text: the chunker cannot keep them whole as it does for
Markdown, HTML or reStructuredText. A line of the PDF's text that Markdown would read as
structure ("# a comment" in an example, a fence, a line of dashes) is escaped ("\\#"). A scanned PDF (no text layer)
reads as an empty document. The PDF's metadata title is not used (generated PDFs often carry a
wrong one: "References", "Function and Data Index").
"""

from __future__ import annotations

import io
import re
from collections import Counter

_BULLET = re.compile(r"^\s*[•◦▪●‣∙]\s*")
_HYPHENATED = re.compile(r"([A-Za-z]{2,})-\n([a-z])")
_DIGITS = re.compile(r"\d+")
_UNDERLINE = re.compile(r"[-=]{2,}\s*")


class PdfError(ValueError):
    """The PDF cannot be read (encrypted, damaged); the caller names the file."""


def _outline(reader) -> list[tuple[int, str, int]]:
    """(depth, title, page index) of every outline entry, in order."""
    out: list[tuple[int, str, int]] = []

    def walk(items, depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # noqa: BLE001 - a broken destination: the entry is skipped
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            if title and page is not None and page >= 0:
                out.append((depth, title, page))

    try:
        walk(reader.outline, 0)
    except Exception:  # noqa: BLE001 - a damaged outline: no headings from it
        return []
    return out


def _running_lines(pages: list[list[str]]) -> set[str]:
    """The first two and last two lines of a page (digits ignored: page numbers) repeated there
    on 3 pages or more, or on at least half of a PDF of fewer pages. Only there: a line
    repeated inside the text is content (a table's rows), even where a header printed mid-page
    by the text's extraction order is kept (`_without_running`)."""
    seen: Counter[str] = Counter()
    for lines in pages:
        lines = [ln for ln in lines if ln.strip()]
        seen.update({_DIGITS.sub("#", ln.strip()) for ln in (lines[:2] + lines[-2:])})
    return {key for key, n in seen.items() if n >= 2 and (n >= 3 or n >= len(pages) / 2)}


def _without_running(lines: list[str], running: set[str]) -> list[str]:
    """The page without its running first and last lines: up to two at each end, the second
    only when it is another running line than the first (a header over a rule); the same text
    inside the page stays (a table row "80" is not a page number)."""
    def key(ln: str) -> str:
        return _DIGITS.sub("#", ln.strip())

    lines = [ln for ln in lines if ln.strip()]
    for end in (0, -1):
        taken: set[str] = set()
        while lines and len(taken) < 2 and key(lines[end]) in running - taken:
            taken.add(key(lines.pop(end)))
    return lines


def _escaped(line: str) -> str:
    """A line of the PDF's text that Markdown would read as structure (a heading "# ...", a
    fence, a setext underline "-----") escaped with a backslash."""
    stripped = line.lstrip()
    if stripped.startswith(("#", "```", "~~~")) or _UNDERLINE.fullmatch(stripped):
        return "\\" + stripped
    return line


def _title_at(lines: list[str], title: str, start: int = 0) -> int | None:
    """The line (at or after `start`) that prints an outline title, alone or after its number
    ("3.3 Invoking x", "Chapter 2: x", "A.1 x"), case and hyphens aside; a numbered line first
    (a figure's label may repeat a section's title above it)."""
    def key(s: str) -> str:  # "Non-regular" and "Nonregular" alike
        return " ".join(s.replace("-", "").replace("\u00ad", "").split()).casefold()

    numbered = re.compile(r"(?:(?:chapter|section|appendix|part)\s+\S+?:?|[\da-z]{1,3}(?:\.\d+)*\.?)"
                          r"\s+" + re.escape(key(title)))
    found = [i for i in range(start, len(lines)) if numbered.fullmatch(key(lines[i]))]
    found = found or [i for i in range(start, len(lines)) if key(lines[i]) == key(title)]
    return found[0] if found else None


def _paragraphs(lines: list[str]) -> list[str]:
    """Bullets as list items; a blank line after a sentence that ends well short of the
    page's usual line width."""
    widths = sorted(len(ln) for ln in lines if ln.strip())
    usual = widths[int(len(widths) * 0.75)] if widths else 0
    out: list[str] = []
    in_list = False  # a bullet's item and its wrapped lines, up to a blank line
    for ln in lines:
        bullet = _BULLET.match(ln)
        if bullet:
            if out and out[-1] and not in_list:
                out.append("")
            ln, in_list = "- " + ln[bullet.end():], True
        out.append(ln.rstrip())
        if ln.rstrip().endswith((".", ":", "!", "?")) and len(ln) < 0.75 * usual:
            out.append("")
            in_list = False
    return out


def pdf_to_markdown(raw: bytes) -> str:
    """The text of a PDF as Markdown ("" when it has no text layer); `PdfError` when pypdf
    cannot read it."""
    import logging

    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its repairs, logged without the file
    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PdfError("encrypted PDF (a password is needed); decrypt it first")
        pages = [(page.extract_text() or "").splitlines() for page in reader.pages]
        outline = _outline(reader)
    except PdfError:
        raise
    except (PyPdfError, TypeError, AttributeError, KeyError, IndexError, ValueError,
            NotImplementedError, ZeroDivisionError) as exc:  # a damaged file, in pypdf's ways
        raise PdfError(f"not a readable PDF ({type(exc).__name__}: {exc})") from None
    running = _running_lines(pages)
    depth0 = min((d for d, _, _ in outline), default=0)
    by_page: dict[int, list[tuple[int, str]]] = {}
    for depth, title, page in outline:
        by_page.setdefault(page, []).append((depth - depth0 + 1, title))
    blocks: list[str] = []
    for number, lines in enumerate(pages):
        # text starting with "#" (a comment in an example) is escaped: it is no heading
        lines = [_escaped(ln) for ln in _without_running(lines, running)]
        heads = by_page.get(number, [])
        if not outline and any(ln.strip() for ln in lines):
            blocks += [f"## Page {number + 1}", ""]
        top: list[str] = []
        after = 0  # an outline entry is printed after the one before it on the same page
        for level, title in heads:
            hashes = "#" * min(6, level)
            at = _title_at(lines, title, after)
            if at is None:  # not a line of its page: it heads the page
                top += [f"{hashes} {title}", ""]
            else:  # as printed, number included
                lines[at], after = f"\n{hashes} {' '.join(lines[at].split())}\n", at + 1
        blocks += top
        blocks += _paragraphs(lines) + [""]
    text = _HYPHENATED.sub(r"\1\2", "\n".join(blocks))
    text = "\n".join(ln.rstrip() for ln in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n" if text.strip() else ""
