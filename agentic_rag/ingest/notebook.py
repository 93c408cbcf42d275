"""Jupyter notebooks (.ipynb, nbformat 4) read as Markdown: markdown cells as they are, code
cells as fenced blocks in the kernel's language, and their short text outputs (a printed
value, a result's repr) as a `text` block after the cell, so the chunker keeps each cell whole
and a question about what a call prints finds it. Images, HTML and error tracebacks are left
out; an output over `OUTPUT_LINES` lines is cut, saying so.

    text, title = notebook_to_markdown(path.read_bytes())

Title: the first heading of a markdown cell ("" when there is none: the reader then takes the
first line). A file that is not a notebook raises `NotebookError` saying what is wrong.
"""

from __future__ import annotations

import json
import re
from typing import Any

OUTPUT_LINES = 20
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


class NotebookError(ValueError):
    """Not a readable Jupyter notebook (the message says why)."""


def notebook_to_markdown(raw: bytes) -> tuple[str, str]:
    """(Markdown, title) of a notebook's bytes (module doc)."""
    try:
        nb = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotebookError(f"not a Jupyter notebook (not JSON: {exc})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        version = nb.get("nbformat") if isinstance(nb, dict) else None
        raise NotebookError("not a Jupyter notebook in nbformat 4 (no 'cells' list"
                            + (f"; nbformat {version}" if version else "") + ")")
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    lang = (meta.get("language_info") or {}).get("name") or \
        (meta.get("kernelspec") or {}).get("language") or "python"
    parts, title = [], ""
    for cell in nb["cells"]:
        if not isinstance(cell, dict):
            continue
        src = _text(cell.get("source")).strip("\n")
        kind = cell.get("cell_type")
        if kind == "markdown" and src.strip():
            parts.append(src)
            if not title and (m := _HEADING.search(src)):
                title = m.group(1).strip()
        elif kind == "code" and src.strip():
            parts.append(f"```{lang}\n{src}\n```")
            out = _outputs(cell.get("outputs"))
            if out:
                parts.append(f"```text\n{out}\n```")
        elif kind == "raw" and src.strip():
            parts.append(src)
    return "\n\n".join(parts) + "\n", title


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(x) for x in value)
    return str(value) if value is not None else ""


def _outputs(outputs: Any) -> str:
    """A code cell's text outputs (streams, results' text/plain), ANSI colours removed, cut
    at `OUTPUT_LINES` lines."""
    texts = []
    for out in outputs if isinstance(outputs, list) else []:
        if not isinstance(out, dict):
            continue
        if out.get("output_type") == "stream":
            texts.append(_text(out.get("text")))
        elif out.get("output_type") in ("execute_result", "display_data"):
            data = out.get("data") if isinstance(out.get("data"), dict) else {}
            if "text/plain" in data and not any(k.startswith("image/") for k in data):
                texts.append(_text(data["text/plain"]))
    lines = _ANSI.sub("", "\n".join(t.rstrip("\n") for t in texts if t.strip())).split("\n")
    lines = [ln.replace("```", "'''") for ln in lines]  # a fence in an output would end ours
    if len(lines) > OUTPUT_LINES:
        lines = lines[:OUTPUT_LINES] + [f"... ({len(lines) - OUTPUT_LINES} more lines)"]
    return "\n".join(lines).strip("\n")
