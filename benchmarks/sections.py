"""Sections of benchmarks/RESULTS.md written by their own scripts, between
`<!-- NAME:begin -->` / `<!-- NAME:end -->` markers (`llm_throughput.py`, `serve_latency.py`).
`bench.py` renders the rest of the file and keeps these sections as they are."""

from __future__ import annotations

import re
from pathlib import Path

_SECTION = re.compile(r"<!-- ([\w-]+):begin -->.*?<!-- \1:end -->\n?", re.S)


def write_section(md: Path, section: str) -> None:
    """Replace the marked section `section` carries in `md` (or append it)."""
    begin = re.match(r"<!-- ([\w-]+):begin -->", section)
    if begin is None:
        raise ValueError("a section starts with its <!-- NAME:begin --> marker")
    name = begin.group(1)
    start, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = md.read_text() if md.exists() else ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + section.rstrip("\n") + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    md.write_text(text)


def kept_sections(md: Path) -> str:
    """The marked sections of `md`, in order, to append after a re-render."""
    text = md.read_text() if md.exists() else ""
    return "".join(m.group(0).rstrip("\n") + "\n\n" for m in _SECTION.finditer(text)).rstrip("\n")
