"""Resumable JSONL rows: the one reader of the append-only files a run resumes from (sweep
rows, detector scores, own answers, agent-eval rows and judgements).

A process killed mid-write (kill -9, power loss) leaves a torn last line: no newline, or not
JSON. `read_rows` returns the complete rows before it. The writer that resumes the file
(`repair=True`, the default) cuts the torn line off, so that the rows it appends next stay
readable; a reader of a file another process is still appending to (`repair=False`) skips it
and leaves the file alone. `append_rows` writes whole lines and fsyncs them."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def read_lines(path: str | Path, *, repair: bool = True) -> list[tuple[dict[str, Any], str]]:
    """Each complete row with its JSON line (without the newline), in file order."""
    path = Path(path)
    if not path.exists():
        return []
    raw = path.read_bytes()
    good, out = 0, []
    for line in raw.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            break
        out.append((row, line.decode("utf-8").rstrip("\n")))
        good += len(line)
    if repair and good != len(raw):
        with path.open("r+b") as f:
            f.truncate(good)
    return out


def read_rows(path: str | Path, *, repair: bool = True) -> list[dict[str, Any]]:
    """The complete rows of a JSONL file (none when it does not exist); see the module doc."""
    return [row for row, _ in read_lines(path, repair=repair)]


def append_rows(path: str | Path, rows: Iterable[dict[str, Any]],
                default: Callable[[Any], Any] | None = None) -> None:
    """Append whole lines, flushed and fsync'd before returning."""
    text = "".join(json.dumps(r, default=default) + "\n" for r in rows)
    if not text:
        return
    with Path(path).open("a", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
