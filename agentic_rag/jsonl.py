"""JSON lines: the one reader and writer of `.jsonl` (and `.jsonl.gz`) files in the package.

Two kinds of file, two behaviours:

- **Appended** files a run resumes from (sweep rows, detector scores, own answers, agent-eval
  rows and judgements, the cold archive, reply packs). A process killed mid-write (kill -9,
  power loss) leaves a torn last line: no newline, or not JSON. `read_rows` returns the
  complete rows before it. The writer that resumes the file (`repair=True`, the default) cuts
  the torn line off, so that the rows it appends next stay readable; a reader of a file
  another process is still appending to (`repair=False`) skips it and leaves the file alone.
  `append_rows` writes whole lines and fsyncs them. `read_appended` is for an appended file a
  person may also edit or commit (a reply pack): a torn last line without its newline is
  skipped, but a complete line that is not a JSON object is an error naming file and line.
- **Person-written** files (question sets, committed rows): `read_records` and
  `iter_records` raise `JsonlError` naming the file and the line of the first line that is
  not valid JSON or not a JSON object; blank lines are allowed.

A gzip file (by its first bytes; a new file by its name ending in `.gz`) is read as its
decompressed lines and appended one gzip member per call."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

GZIP_MAGIC = b"\x1f\x8b"


class JsonlError(ValueError):
    """A JSONL file that does not parse; the message names the file and the line
    (`path:line: reason`), also kept as `path`, `line` (None: the whole file) and `reason`."""

    path: Path | None = None
    line: int | None = None
    reason: str = ""


def _error(path: Path, line: int | None, reason: str) -> JsonlError:
    exc = JsonlError(f"{path}:{line}: {reason}" if line is not None else f"{path}: {reason}")
    exc.path, exc.line, exc.reason = path, line, reason
    return exc


def _is_gz(path: Path) -> bool:
    """Gzip: a file that starts with gzip's magic bytes (no JSON line does), or a new or empty
    one named `.gz`."""
    try:
        with path.open("rb") as f:
            head = f.read(2)
    except FileNotFoundError:
        head = b""
    return head == GZIP_MAGIC if head else path.suffix == ".gz"


def _gunzip_prefix(raw: bytes) -> tuple[bytes, bool]:
    """The decompressed bytes of every gzip member that can be read, and whether the whole
    file was (False for a member cut short or corrupt: its readable part is kept)."""
    out: list[bytes] = []
    step = 1 << 16  # fed in steps, so a corrupt step loses only its own part
    while raw:
        d, end = zlib.decompressobj(wbits=31), 0
        try:
            while end < len(raw) and not d.eof:
                out.append(d.decompress(raw[end:end + step]))
                end += step
        except zlib.error:
            return b"".join(out), False
        if not d.eof:
            out.append(d.flush())
            return b"".join(out), False
        raw = d.unused_data + raw[end:]  # the next member
    return b"".join(out), True


def _content(path: Path) -> tuple[bytes, bool]:
    """The file's (decompressed) bytes and whether they are all of it."""
    raw = path.read_bytes()
    return _gunzip_prefix(raw) if raw[:2] == GZIP_MAGIC else (raw, True)


def _cut(path: Path, data: bytes, good: int) -> None:
    """Keep the first `good` bytes of the (decompressed) content `data`."""
    if not _is_gz(path):
        with path.open("r+b") as f:
            f.truncate(good)
        return
    tmp = path.with_name(path.name + ".repair")
    tmp.write_bytes(gzip.compress(data[:good], mtime=0))
    os.replace(tmp, path)


def read_lines(path: str | Path, *, repair: bool = True) -> list[tuple[dict[str, Any], str]]:
    """Each complete row with its JSON line (without the newline), in file order."""
    path = Path(path)
    if not path.exists():
        return []
    raw, whole = _content(path)
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
    if repair and (good != len(raw) or not whole):
        _cut(path, raw, good)
    return out


def read_rows(path: str | Path, *, repair: bool = True) -> list[dict[str, Any]]:
    """The complete rows of a JSONL file (none when it does not exist); see the module doc."""
    return [row for row, _ in read_lines(path, repair=repair)]


def append_rows(path: str | Path, rows: Iterable[dict[str, Any]],
                default: Callable[[Any], Any] | None = None, *,
                ensure_ascii: bool = True) -> None:
    """Append whole lines, flushed and fsync'd before returning (to a gzip file: one gzip
    member per call)."""
    text = "".join(json.dumps(r, default=default, ensure_ascii=ensure_ascii) + "\n"
                   for r in rows)
    if not text:
        return
    path = Path(path)
    compress = _is_gz(path)
    with path.open("ab") as f:
        if compress:
            with gzip.GzipFile(fileobj=f, mode="ab") as gz:
                gz.write(text.encode("utf-8"))
        else:
            f.write(text.encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def read_appended(path: str | Path, *,
                  repair: bool = True) -> list[tuple[int, dict[str, Any]]]:
    """(line number, row) of each row of an appended file a person may also edit (a reply
    pack): a torn last line (no newline) is skipped, and cut off with `repair`; a complete
    line that is not a JSON object raises `JsonlError` naming the file and the line. Blank
    lines are allowed."""
    path = Path(path)
    if not path.exists():
        return []
    raw, whole = _content(path)
    lines = raw.splitlines(keepends=True)
    torn = bool(lines) and not lines[-1].endswith(b"\n")
    rows = list(_records(path, lines[:-1] if torn else lines))
    if repair and (torn or not whole):
        _cut(path, raw, len(raw) - (len(lines[-1]) if torn else 0))
    return rows


def _records(path: Path, lines: Iterable[bytes | str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _error(path, n, f"not valid JSON ({exc.msg})") from None
        except UnicodeDecodeError as exc:
            raise _error(path, n, f"not valid UTF-8 (offset {exc.start})") from None
        if not isinstance(row, dict):
            raise _error(path, n, f"expected a JSON object, got {type(row).__name__}")
        yield n, row


def iter_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row) of each non-blank line of a person-written JSONL file (a byte-order
    mark is allowed); see the module doc for the errors."""
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == GZIP_MAGIC:
        raw, whole = _gunzip_prefix(raw)
        if not whole:
            raise _error(path, None, "not a whole gzip file (cut short or corrupt)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _error(path, None, f"not valid UTF-8 (offset {exc.start})") from None
    yield from _records(path, text.split("\n"))  # not splitlines: U+2028 may sit in a string


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a person-written JSONL file; see `iter_records`."""
    return [row for _, row in iter_records(path)]
