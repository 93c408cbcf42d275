"""Jupyter notebooks (.ipynb, nbformat 4) read as Markdown: markdown cells as they are, code
cells as fenced blocks in the kernel's language, and their short text outputs (a printed
value, a result's repr) as a `text` block after the cell, so the chunker keeps each cell whole
and a question about what a call prints finds it; a Markdown output (`display(Markdown(...))`)
as prose after it. Images, HTML, stderr logs and error tracebacks are left out; an output over
`OUTPUT_LINES` lines is cut, saying so.

    text, title = notebook_to_markdown(path.read_bytes())

Title: the first heading of a markdown cell ("" when there is none: `read_document` then
takes the file's name). A file that is not a notebook raises `NotebookError` saying what is wrong.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentic_rag.ingest.mdx import OPENER, closes_fence, code_segments, fenced
from agentic_rag.ingest.myst import myst_markdown

OUTPUT_LINES = 20
OUTPUT_LINE_CHARS = 500
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


class NotebookError(ValueError):
    """Not a readable Jupyter notebook (the message says why)."""


def notebook_to_markdown(raw: bytes) -> tuple[str, str]:
    """(Markdown, title) of a notebook's bytes (module doc)."""
    try:
        nb = json.loads(raw.decode("utf-8-sig"))
    except ValueError as exc:  # not UTF-8, not JSON, an integer too long to read
        raise NotebookError(f"not a Jupyter notebook (not JSON: {exc})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        version = nb.get("nbformat") if isinstance(nb, dict) else None
        raise NotebookError("not a Jupyter notebook in nbformat 4 (no 'cells' list"
                            + (f"; nbformat {version}" if version else "") + ")")
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    info, kernel = meta.get("language_info"), meta.get("kernelspec")
    lang = str((info.get("name") if isinstance(info, dict) else None)
               or (kernel.get("language") if isinstance(kernel, dict) else None) or "python")
    parts, title = [], ""
    for cell in nb["cells"]:
        if not isinstance(cell, dict):
            continue
        src = _text(cell.get("source")).strip("\n")
        kind = cell.get("cell_type")
        if kind == "markdown" and src.strip():
            src = myst_markdown(src)  # Jupyter Book's directives and roles
            prose = "".join(seg for code, seg in code_segments(src) if not code)
            parts.append(_closed(src))
            if not title and (m := _HEADING.search(prose)):
                title = m.group(1).strip()
        elif kind == "code" and src.strip():
            parts.append(fenced(src, lang))
            out, shown = _outputs(cell.get("outputs"))
            if out:
                parts.append(fenced(out, "text"))
            parts += shown  # display(Markdown(...)): prose as the notebook shows it
        elif kind == "raw" and src.strip():
            parts.append(src)
    return "\n\n".join(parts) + "\n", title


def _closed(src: str) -> str:
    """A markdown cell with a fence it left open closed, so it does not swallow the cells
    after it."""
    code, last = code_segments(src)[-1]
    lines = last.strip("\n").split("\n")
    opener = OPENER.match(lines[0])
    if not code or opener is None or (len(lines) > 1 and closes_fence(lines[-1], opener.group(2))):
        return src
    return f"{src}\n{opener.group(2)}"


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(x) for x in value)
    return str(value) if value is not None else ""


def _outputs(outputs: Any) -> tuple[str, list[str]]:
    """A code cell's text outputs (streams, results' text/plain), ANSI colours removed, cut
    at `OUTPUT_LINES` lines; and its Markdown outputs (`text/markdown`), as they are."""
    texts, shown = [], []
    for out in outputs if isinstance(outputs, list) else []:
        if not isinstance(out, dict):
            continue
        if out.get("output_type") == "stream" and out.get("name") != "stderr":  # not logs
            texts.append(_text(out.get("text")))
        elif out.get("output_type") in ("execute_result", "display_data"):
            data = out.get("data") if isinstance(out.get("data"), dict) else {}
            if "text/markdown" in data and _text(data["text/markdown"]).strip():
                shown.append(_closed(_text(data["text/markdown"]).strip("\n")))
            elif "text/plain" in data and not any(k.startswith("image/") for k in data):
                texts.append(_text(data["text/plain"]))
    lines = _ANSI.sub("", "\n".join(t.rstrip("\n") for t in texts if t.strip())).split("\n")
    lines = [ln if len(ln) <= OUTPUT_LINE_CHARS else ln[:OUTPUT_LINE_CHARS] + " ..."
             for ln in lines]
    if len(lines) > OUTPUT_LINES:
        lines = lines[:OUTPUT_LINES] + [f"... ({len(lines) - OUTPUT_LINES} more lines)"]
    return "\n".join(lines).strip("\n"), shown
