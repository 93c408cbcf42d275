"""The records that flow through the pipeline: `Document` in, `Chunk` out, `Hit` back.

Also reading documents from disk, with a clear error for binary / non-UTF-8 files.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ChunkType = Literal["code", "table", "table_row", "list", "prose", "heading"]
Format = Literal["markdown", "rst"]


def detect_format(name: str) -> Format:
    """The markup of a file, by its name: reStructuredText or (anything else) Markdown."""
    lower = name.lower()
    return "rst" if lower.endswith((".rst", ".rst.txt", ".rest")) else "markdown"


class GoldSpan(BaseModel):
    """Where a reference answer sits in a document: characters `start`..`end` of `doc_id`."""
    model_config = ConfigDict(frozen=True)

    doc_id: str
    start: int
    end: int
CHUNK_TYPES: tuple[str, ...] = ("code", "table", "table_row", "list", "prose", "heading")
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".html", ".htm", ".pdf", ".docx")
HTML_SUFFIXES = (".html", ".htm")


class DocumentError(ValueError):
    """A document cannot be read or chunked; the message names the file."""


_SURROGATE = re.compile("[\ud800-\udfff]")
_PAGE_HEADING = re.compile(r"^## Page \d+$")


def clean_text(text: str) -> str:
    """Lone UTF-16 surrogates (e.g. from a JSON "\\ud800" escape) cannot be encoded as UTF-8,
    hashed, tokenized or stored: each becomes U+FFFD, one character for one, so offsets hold."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


class Document(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    title: str = ""
    source: str = ""
    format: Format = "markdown"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("text", "title", mode="after")
    @classmethod
    def _clean(cls, value: str) -> str:
        return clean_text(value)

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]


class Chunk(BaseModel):
    """A retrievable piece of a document.

    `text` is what gets embedded and shown; for every type but `table_row` it equals
    `document.text[start_char:end_char]`. A table row's text is the table header plus
    that row, while its offsets point at the row itself.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    doc_id: str
    text: str
    chunk_type: ChunkType
    heading_path: str = ""
    source: str = ""
    start_char: int
    end_char: int
    token_count: int
    metadata: dict[str, Any] = Field(default_factory=dict)

    def index_text(self, contextual_headers: bool = True) -> str:
        """Text handed to the embedder and BM25: the heading path gives the chunk context."""
        if contextual_headers and self.heading_path:
            return f"{self.heading_path}\n{self.text}"
        return self.text

    def store_metadata(self) -> dict[str, str | int | float | bool]:
        """Flat, scalar-only metadata, as vector stores accept it (no None values)."""
        flat: dict[str, str | int | float | bool] = {
            "doc_id": self.doc_id,
            "chunk_type": self.chunk_type,
            "heading_path": self.heading_path,
            "source": self.source,
            "start_char": self.start_char,
            "end_char": self.end_char,
            "token_count": self.token_count,
        }
        for key, value in self.metadata.items():
            if isinstance(value, (str, int, float, bool)):
                flat[key] = value
        return flat

    @classmethod
    def from_store(cls, chunk_id: str, text: str, meta: dict[str, Any]) -> Chunk:
        core = {"doc_id", "chunk_type", "heading_path", "source", "start_char", "end_char",
                "token_count"}
        return cls(
            id=chunk_id,
            text=text,
            doc_id=str(meta["doc_id"]),
            chunk_type=meta["chunk_type"],
            heading_path=str(meta.get("heading_path", "")),
            source=str(meta.get("source", "")),
            start_char=int(meta["start_char"]),
            end_char=int(meta["end_char"]),
            token_count=int(meta["token_count"]),
            metadata={k: v for k, v in meta.items() if k not in core},
        )


class Hit(BaseModel):
    """A retrieved chunk with a similarity `score` in [0, 1] (higher is better)."""

    model_config = ConfigDict(frozen=True)

    chunk: Chunk
    score: float
    rank: int
    retriever: str = "dense"
    raw_score: float | None = None
    warning: str | None = None  # e.g. stale content (tiered index)


def read_document(path: str | Path, doc_id: str | None = None) -> Document:
    """Read one .md / .rst / .txt file, or an .html / .htm page or a .docx (`html_pages`) or a
    PDF's text (`pdf_pages`) as Markdown; binary, non-UTF-8 or unreadable content raises
    `DocumentError`."""

    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read file: {exc.strerror}") from None
    name, metadata, title = path.name.lower(), {}, ""
    if name.endswith((".pdf", ".docx", *HTML_SUFFIXES)):
        text, title = _converted(path, raw)
        metadata = {"converted_from": "html" if name.endswith(HTML_SUFFIXES)
                    else name.rsplit(".", 1)[1]}
    elif b"\x00" in raw[:8192]:
        raise DocumentError(f"{path}: looks like a binary file (NUL bytes); expected UTF-8 text")
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DocumentError(
                f"{path}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                "convert it to UTF-8 first"
            ) from None
    return Document(id=doc_id or path.as_posix(), text=text, title=title or first_line(text),
                    source=path.as_posix(), format=detect_format(path.name), metadata=metadata)


def first_line(text: str) -> str:
    """A document's title by default: its first line that is not an underline, nor a PDF's
    "## Page 1"."""
    for line in text.splitlines():
        if (line.strip() and not set(line.strip()) <= set("=-*#~^")
                and not _PAGE_HEADING.match(line)):
            return line.strip().lstrip("#").strip()
    return ""


def _converted(path: Path, raw: bytes) -> tuple[str, str]:
    """(Markdown, title) of a PDF (`pdf_pages`), an HTML page or a .docx (`html_pages`); the
    title "" where the first line of the text is to be used. An HTML page decodes as its own
    <meta charset> says; one with no text in its main content (a redirect stub) reads as an
    empty document, as an empty .md does."""
    from agentic_rag.html_pages import DocxError, convert_page, docx_to_markdown
    from agentic_rag.pdf_pages import PdfError, pdf_to_markdown

    try:
        if path.name.lower().endswith(".pdf"):
            return pdf_to_markdown(raw), ""
        if path.name.lower().endswith(".docx"):
            return docx_to_markdown(raw)
        return convert_page(raw)
    except (PdfError, DocxError) as exc:
        raise DocumentError(f"{path}: {exc}") from None
    except RecursionError:
        raise DocumentError(f"{path}: nested too deeply to convert") from None


# folders a documentation folder holds that are not its documents: hidden ones (.git, .venv),
# dependencies, and a built Sphinx site's copies of its sources, assets and highlighted code
SKIPPED_FOLDERS = {"node_modules", "__pycache__", "site-packages", "_sources", "_static",
                   "_images", "_downloads", "_modules"}
# a built Sphinx site's generated pages (index, module index, search): no content of their own
SPHINX_GENERATED = re.compile(r"(genindex(-\w+)?|py-modindex|search)\.html?")


def skipped_in_folder(rel: Path, folder: Path) -> bool:
    """Whether a folder walk leaves out `rel` (a path inside `folder`): under a hidden or
    `SKIPPED_FOLDERS` folder, or a Sphinx site's generated page (where `searchindex.js`
    stands beside it)."""
    if any(part.startswith(".") or part in SKIPPED_FOLDERS for part in rel.parts[:-1]):
        return True
    return bool(SPHINX_GENERATED.fullmatch(rel.name.lower())
                and (folder / rel).with_name("searchindex.js").exists())


def iter_document_paths(paths: Iterable[str | Path]) -> Iterator[tuple[Path, str]]:
    """Expand files and folders into (file, doc_id); ids are paths relative to the folder's parent.
    A folder's documents are its files with a `DOC_SUFFIXES` suffix, recursively, but not those
    `skipped_in_folder`; a file given by itself must be a document too."""
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if (f.is_file() and f.name.lower().endswith(DOC_SUFFIXES)
                        and not skipped_in_folder(f.relative_to(p), p)):
                    yield f, (Path(p.resolve().name) / f.relative_to(p)).as_posix()
        elif p.is_file():
            if not p.name.lower().endswith(DOC_SUFFIXES):  # as a folder's files are chosen
                hint = ("; a question set given after `testset --exclude a.jsonl` is read as a "
                        "document: repeat --exclude before each file"
                        if p.suffix.lower() in (".jsonl", ".json") else "")
                raise DocumentError(f"{p}: not a document ({', '.join(DOC_SUFFIXES)}){hint}")
            yield p, p.name
        else:
            raise DocumentError(f"{p}: no such file or folder")
