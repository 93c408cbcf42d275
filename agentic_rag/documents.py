"""The records that flow through the pipeline: `Document` in, `Chunk` out, `Hit` back, and
`DocumentError`, which names the file. Reading files into documents is `ingest.readers`."""

from __future__ import annotations

import hashlib
import re
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


class DocumentError(ValueError):
    """A document cannot be read or chunked; the message names the file."""


_SURROGATE = re.compile("[\ud800-\udfff]")


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
