"""BM25 over the same chunks as the vector store (bm25s, persistable).

Chunk ids are kept in the order of the BM25 matrix, so a lexical hit maps to the
same id as its dense twin. bm25s cannot add documents incrementally: the index
is rebuilt from the chunk list after a change (~0.5 s for 10k chunks).

`Hit.score` for BM25 is the raw score divided by the best raw score of that query
(so the top hit is 1.0); `Hit.raw_score` keeps the BM25 value.

Field matching (the `title` retriever): `field_text(chunk)` is a chunk's title field — its
document's name (from its id or file name) and title, its heading path and, in
reStructuredText, the API objects it describes (`.. function:: reduce(function, ...)`, or
the signature line a folder's .rst page is read as). A
`LexicalIndex` built over those texts (`name="title"`) ranks chunks by page, product and
API names alone. It is a bag of words: "Blue Account" also matches "Light Blue Account"
(docs/design.md, "Retrieval strategies", has the measured effect).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from agentic_rag.config import LexicalConfig
from agentic_rag.documents import Chunk, Hit
from agentic_rag.ingest.readers import DOC_SUFFIXES
from agentic_rag.store.base import matches_meta, top_k_stable

# an API object a chunk describes: a description directive as written, or the signature line
# `ingest.rst` reads it as (``json.dumps(obj, ...)``, class ``json.JSONEncoder(...)``)
_API_LINE = re.compile(r"^\s*(?:\.\. (?:py:)?(?:function|method|class|exception|data|attribute|"
                       r"decorator|decoratormethod|classmethod|staticmethod|module|"
                       r"describe|option|envvar)::\s*(.+)|(?:(?:class|exception|classmethod|"
                       r"staticmethod|abstractmethod|property|coroutine|awaitable)[ \t]+)?"
                       r"``([@/-]*[A-Za-z_][^`\n]*)``[ \t]*)$", re.M)  # `@cache`, `-b name`


def api_objects(text: str) -> list[str]:
    """The API objects a chunk's text describes, one a signature (`_API_LINE`)."""
    return [(m.group(1) or m.group(2)).strip() for m in _API_LINE.finditer(text)]


_NAME_SPLIT = re.compile(r"[_\-./\\]+")
_DOC_SUFFIX = re.compile("(?:" + "|".join(map(re.escape, DOC_SUFFIXES)) + ")$", re.I)
_LANDING = {"index", "_index", "readme"}
# folders that hold a site's pages, not a subject (the first part of an id is the indexed
# folder's own name, never used)
_CONTAINERS = {"docs", "doc", "documentation", "pages", "content", "src", "source", "modules",
               "root", "site", "en"}


def doc_name(doc_id: str) -> str:
    """A document's name as words: its id's last path part without the extension, split at
    `_ - .` (`doc_checking_accounts_blue_account_003` → `checking accounts blue account`,
    `pydocs/library/functools.rst` → `functools`); a site's landing page (`index`, `_index`,
    `README`) is named by its folder, past folders that only hold pages (`guides/index.md`,
    Antora's `modules/api/pages/index.adoc` → `guides`, `api`; a site's own index keeps
    `index`); ids that are hashes give no word."""
    parts = doc_id.replace("\\", "/").split("/")
    last = _DOC_SUFFIX.sub("", _DOC_SUFFIX.sub("", parts[-1]))  # also `x.rst.txt`
    if last.lower() in _LANDING:
        last = next((p for p in reversed(parts[1:-1]) if p.lower() not in _CONTAINERS), last)
    words = [w for w in _NAME_SPLIT.split(last) if w and not w.isdigit()]
    if words and words[0] == "doc":
        words = words[1:]
    if len(words) == 1 and re.fullmatch(r"[a-z]?[0-9a-f]{10,}", words[0]):
        return ""  # a content hash (HaluEval's paragraph ids)
    return " ".join(words)


def field_text(chunk: Chunk) -> str:
    """The title field of a chunk: its document's name (`doc_name`) and title, its heading
    path and the API objects it describes (reStructuredText description directives), one per
    line. Empty when the chunk has none of them: the field retriever then never ranks it.
    (HaluEval paragraphs have no headings; their loader's title is the paragraph's first 60
    characters.)"""
    title = str(chunk.metadata.get("title", "") or "")
    parts = [doc_name(chunk.doc_id)]
    parts += [title] if title and not chunk.heading_path.startswith(title) else []
    parts.append(chunk.heading_path)
    parts += api_objects(chunk.text)
    return "\n".join(p for p in parts if p)


class LexicalIndex:
    def __init__(self, config: LexicalConfig | None = None, name: str = "bm25") -> None:
        self.config = config or LexicalConfig()
        self.name = name  # `Hit.retriever` of its hits: "bm25", or "title" for the field index
        self._bm25 = None
        self._chunks: list[Chunk] = []
        self._stemmer = None  # built on first use, then reused by every query

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        import bm25s

        if self._stemmer is None and self.config.stemmer != "none":
            import Stemmer

            self._stemmer = Stemmer.Stemmer(self.config.stemmer)
        stop = None if self.config.stopwords == "none" else self.config.stopwords
        return bm25s.tokenize(texts, stopwords=stop, stemmer=self._stemmer, return_ids=False,
                              show_progress=False)

    def build(self, chunks: list[Chunk], texts: list[str] | None = None) -> LexicalIndex:
        """Index `chunks`; `texts` (same order) overrides what is indexed, e.g. with headings."""
        import bm25s

        self._chunks = list(chunks)
        self._metas = None
        self._bm25 = bm25s.BM25(k1=self.config.k1, b=self.config.b, method=self.config.method)
        if self._chunks:
            tokens = self._tokenize(texts if texts is not None else [c.text for c in chunks])
            # bm25s cannot index an all-empty corpus (an empty token list is fine otherwise):
            # an index with no indexable word matches nothing
            if any(tokens):
                self._bm25.index(tokens, show_progress=False)
            else:
                self._bm25 = None
        return self

    def __len__(self) -> int:
        return len(self._chunks)

    def scores(self, query: str) -> np.ndarray:
        """Raw BM25 score of every indexed chunk for `query` (zeros when nothing matches)."""
        if self._bm25 is None or not self._chunks:
            return np.zeros(0, dtype=np.float32)
        vocab = self._bm25.vocab_dict
        q = [t for t in self._tokenize([query])[0] if t in vocab]
        if not q:
            return np.zeros(len(self._chunks), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(q), dtype=np.float32)

    def chunks_with(self, token: str) -> np.ndarray:
        """Which chunks' indexed text contains `token` (already tokenised: stemmed, lower)."""
        if self._bm25 is None or token not in self._bm25.vocab_dict:
            return np.zeros(len(self._chunks), dtype=bool)
        return np.asarray(self._bm25.get_scores([token])) > 0

    def _mask(self, where: dict[str, Any]) -> np.ndarray:
        """Which chunks match `where`; metadata flattened once per index, not per query."""
        metas = getattr(self, "_metas", None)
        if metas is None or len(metas) != len(self._chunks):
            metas = self._metas = [c.store_metadata() for c in self._chunks]
        return np.fromiter((matches_meta(m, where) for m in metas), bool, len(metas))

    def search(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[Hit]:
        raw = self.scores(query)
        if not len(raw) or k <= 0:
            return []
        if where:
            mask = self._mask(where)
            raw = np.where(mask, raw, 0.0)
        order = [i for i in top_k_stable(raw, k) if raw[i] > 0]
        best = float(raw[order[0]]) if order else 1.0
        return [Hit(chunk=self._chunks[i], score=float(raw[i]) / best, raw_score=float(raw[i]),
                    rank=r, retriever=self.name) for r, i in enumerate(order, 1)]

    # -- persistence ------------------------------------------------------------------
    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if self._bm25 is not None and self._chunks:
            self._bm25.save(str(folder / "bm25"))
        tmp = folder / "chunks.jsonl.tmp"
        with tmp.open("w", encoding="utf-8") as f:
            for c in self._chunks:
                f.write(c.model_dump_json() + "\n")
        tmp.replace(folder / "chunks.jsonl")
        (folder / "config.json").write_text(self.config.model_dump_json())

    @classmethod
    def load(cls, folder: str | Path) -> LexicalIndex:
        import bm25s

        folder = Path(folder)
        cfg = LexicalConfig.model_validate_json((folder / "config.json").read_text())
        idx = cls(cfg)
        with (folder / "chunks.jsonl").open(encoding="utf-8") as f:
            idx._chunks = [Chunk.model_validate_json(line) for line in f if line.strip()]
        if idx._chunks and (folder / "bm25").exists():  # absent: nothing indexable was saved
            idx._bm25 = bm25s.BM25.load(str(folder / "bm25"))
        return idx

    @property
    def chunk_ids(self) -> list[str]:
        return [c.id for c in self._chunks]

    @property
    def chunks(self) -> list[Chunk]:
        """The indexed chunks, in matrix order (the whole index's chunk list)."""
        return self._chunks

    def fields(self) -> LexicalIndex:
        """A BM25 index of the same chunks over their title fields (`field_text`), with this
        index's settings; built in memory (no file), a second or two for 20k chunks."""
        return LexicalIndex(self.config, name="title").build(
            self._chunks, [field_text(c) for c in self._chunks])


def matches_where(chunk: Chunk, where: dict[str, Any]) -> bool:
    """The same flat AND-of-values filter the vector stores apply, on an in-memory chunk."""
    return matches_meta(chunk.store_metadata(), where)
