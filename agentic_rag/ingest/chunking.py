"""Layer 1a: agent-aware chunking.

`AgenticChunker` turns a `Document` into typed `Chunk`s that respect the
structure an agent needs intact:

- code blocks stay whole; one longer than `max_tokens` is split only at blank
  lines or top-level `def` / `class` / decorator lines, and never inside a line;
- a table yields one chunk for the whole table (or header-repeating parts if it
  is too long) AND one `table_row` chunk per row, rendered with the header;
- a list / procedure is one chunk if it fits, else split between items (steps),
  never inside one; chunks carry their step numbers;
- an item or table row longer than `ITEM_CEILING` × `max_tokens` (a generated index page's
  one-row table, a whole table of contents nested in one item) is not a step: it is cut at
  its lines, then as prose, into pieces within `max_tokens` (a row's pieces each repeat the
  table's header; a piece of a step carries that step's number);
- consecutive paragraphs under one heading are packed together and split
  recursively (paragraph → line → sentence → word) by tokens with overlap.

Every chunk keeps `start_char`/`end_char` offsets into the original text, its
heading path and a deterministic id built from doc id, type and offsets.
"""

from __future__ import annotations

from agentic_rag.config import ChunkingConfig
from agentic_rag.documents import Chunk, Document
from agentic_rag.ingest.markup import Block, parse_blocks
from agentic_rag.ingest.tokens import TokenCounter, make_token_counter

_PROSE_SEPARATORS = ("\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ")
_CODE_BOUNDARY_PREFIXES = ("def ", "class ", "async def ", "@")
ITEM_CEILING = 4  # a list item or table row is kept whole up to this many times max_tokens


def chunk_id(doc_id: str, chunk_type: str, start: int, end: int) -> str:
    return f"{doc_id}#{chunk_type}@{start}-{end}"


class AgenticChunker:
    def __init__(self, config: ChunkingConfig | None = None,
                 counter: TokenCounter | None = None) -> None:
        self.config = config or ChunkingConfig()
        self.counter: TokenCounter = counter or make_token_counter(self.config.tokenizer)

    # -- public ---------------------------------------------------------------------
    def chunk(self, doc: Document) -> list[Chunk]:
        if not doc.text.strip():
            return []
        blocks = parse_blocks(doc.text, doc.format)
        out: list[Chunk] = []
        prose_run: list[Block] = []

        def flush() -> None:
            if prose_run:
                out.extend(self._prose(doc, prose_run[0], prose_run[0].start, prose_run[-1].end))
                prose_run.clear()

        for b in blocks:
            small_bullets = (b.kind == "list" and not b.ordered and self.config.merge_small_lists
                             and self.counter.count(doc.text[b.start:b.end])
                             <= self.config.max_tokens // 4)
            if b.kind == "paragraph" or small_bullets:
                if prose_run and prose_run[-1].heading_path != b.heading_path:
                    flush()
                prose_run.append(b)
                continue
            flush()
            if b.kind == "heading":
                if self.config.heading_chunks:
                    out.append(self._make(doc, b, "heading", b.start, b.end))
            elif b.kind == "code":
                out.extend(self._code(doc, b))
            elif b.kind == "table":
                out.extend(self._table(doc, b))
            elif b.kind == "list":
                out.extend(self._list(doc, b))
        flush()
        return out

    def chunk_many(self, docs: list[Document]) -> list[Chunk]:
        return [c for d in docs for c in self.chunk(d)]

    # -- construction -----------------------------------------------------------------
    def _make(self, doc: Document, b: Block, ctype: str, start: int, end: int,
              text: str | None = None, **meta) -> Chunk:
        body = doc.text[start:end] if text is None else text
        metadata = {"title": doc.title, **{k: v for k, v in meta.items() if v is not None}}
        return Chunk(
            id=chunk_id(doc.id, ctype, start, end),
            doc_id=doc.id,
            text=body,
            chunk_type=ctype,  # type: ignore[arg-type]
            heading_path=" > ".join(b.heading_path),
            source=doc.source,
            start_char=start,
            end_char=end,
            token_count=self.counter.count(body),
            metadata=metadata,
        )

    # -- prose ------------------------------------------------------------------------
    def _prose(self, doc: Document, b: Block, start: int, end: int) -> list[Chunk]:
        spans = split_prose(doc.text, start, end, self.counter.count,
                            self.config.max_tokens, self.config.overlap_tokens)
        return [self._make(doc, b, "prose", s, e) for s, e in spans]

    # -- code -------------------------------------------------------------------------
    def _code(self, doc: Document, b: Block) -> list[Chunk]:
        text, cfg = doc.text, self.config
        if self.counter.count(text[b.start:b.end]) <= cfg.max_tokens:
            return [self._make(doc, b, "code", b.start, b.end, language=b.language)]
        lines = _line_spans(text, b.start, b.end)
        first = lines[0][0]
        if text[first:lines[0][1]].lstrip()[:3] in ("```", "~~~"):
            lines = lines[1:-1] if len(lines) > 2 else lines  # fences are not code
        segments: list[list[tuple[int, int]]] = []
        for k, (s, e) in enumerate(lines):
            line = text[s:e]
            boundary = k == 0 or not text[lines[k - 1][0]:lines[k - 1][1]].strip() \
                or (line.startswith(_CODE_BOUNDARY_PREFIXES)
                    and not text[lines[k - 1][0]:lines[k - 1][1]].startswith("@"))
            if boundary or not segments:
                segments.append([])
            segments[-1].append((s, e))
        groups = _pack(
            [(seg[0][0], seg[-1][1]) for seg in segments],
            lambda s, e: self.counter.count(text[s:e]), cfg.max_tokens,
            split=lambda s, e: _line_spans(text, s, e),
        )
        parts = [(s, e) for s, e in groups if text[s:e].strip()]
        return [self._make(doc, b, "code", s, e, language=b.language, part=i + 1,
                           parts=len(parts)) for i, (s, e) in enumerate(parts)]

    # -- tables -----------------------------------------------------------------------
    def _table(self, doc: Document, b: Block) -> list[Chunk]:
        text, cfg = doc.text, self.config
        header = text[b.header[0]:b.header[1]] if b.header else ""
        out: list[Chunk] = []
        n_rows = len(b.items)
        if self.counter.count(text[b.start:b.end]) <= cfg.max_tokens or not b.items:
            out.append(self._make(doc, b, "table", b.start, b.end, rows=n_rows))
        else:  # header-repeating parts, split between rows
            groups = _pack([(it.start, it.end) for it in b.items],
                           lambda s, e: self.counter.count(f"{header}\n{text[s:e]}"),
                           cfg.max_tokens, split=self._oversize_split(text))
            for gi, (s, e) in enumerate(groups):
                start = b.start if gi == 0 else s
                body = text[start:e] if gi == 0 or not header else f"{header}\n{text[s:e]}"
                out.append(self._make(doc, b, "table", start, e, text=body, rows=n_rows,
                                      part=gi + 1, parts=len(groups)))
        if cfg.table_rows:
            split = self._oversize_split(text)
            for ri, it in enumerate(b.items, 1):
                pieces = split(it.start, it.end)
                for s, e in pieces if len(pieces) == 1 else _pack(
                        pieces, lambda s, e: self.counter.count(text[s:e]), cfg.max_tokens):
                    row = text[s:e]
                    body = f"{header}\n{row}" if header else row
                    out.append(self._make(doc, b, "table_row", s, e, text=body,
                                          row=ri, rows=n_rows))
        return out

    def _oversize_split(self, text: str):  # noqa: ANN202
        """(s, e) → [(s, e)] for an item within `ITEM_CEILING` × max_tokens, else its lines,
        a line still over max_tokens cut as prose."""
        cap, count = self.config.max_tokens, self.counter.count

        def split(s: int, e: int) -> list[tuple[int, int]]:
            if count(text[s:e]) <= ITEM_CEILING * cap:
                return [(s, e)]
            out: list[tuple[int, int]] = []
            for ls, le in _line_spans(text, s, e):
                out.extend(_trim(text, a, b) for a, b, _ in _atoms(text, ls, le, count, cap))
            return [(a, b) for a, b in out if a < b]
        return split

    # -- lists / procedures -----------------------------------------------------------
    def _list(self, doc: Document, b: Block) -> list[Chunk]:
        text = doc.text
        if self.counter.count(text[b.start:b.end]) <= self.config.max_tokens:
            return [self._make(doc, b, "list", b.start, b.end, ordered=b.ordered,
                               **_step_meta(b.items))]
        groups = _pack([(it.start, it.end) for it in b.items],
                       lambda s, e: self.counter.count(text[s:e]), self.config.max_tokens,
                       split=self._oversize_split(text))
        out = []
        for s, e in groups:  # unions of whole items, in order (pieces of an oversize one aside)
            items = [it for it in b.items if it.start < e and s < it.end]  # a piece: its step
            out.append(self._make(doc, b, "list", s, e, ordered=b.ordered, **_step_meta(items)))
        return out


def _step_meta(items: list) -> dict:
    nums = [it.number for it in items if it.number is not None]
    if not nums:
        return {"items": len(items)}
    return {"items": len(items), "step": nums[0], "step_end": nums[-1]}


def _line_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans, pos = [], start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl == -1 else nl
        spans.append((pos, stop))
        pos = stop + 1
    return spans


def _pack(spans, count, max_tokens, split=None) -> list[tuple[int, int]]:
    """Greedily merge adjacent spans while the merged span fits (counted exactly, since
    token counts are not additive across joins); oversize spans are split with `split`
    (when given, e.g. into lines) or kept whole."""
    out: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    for s, e in spans:
        if split is not None and count(s, e) > max_tokens:
            sub = split(s, e)
            if len(sub) > 1:
                if cur is not None:
                    out.append(cur)
                    cur = None
                out.extend(_pack(sub, count, max_tokens))
                continue
        if cur is not None and count(cur[0], e) <= max_tokens:
            cur = (cur[0], e)
        else:
            if cur is not None:
                out.append(cur)
            cur = (s, e)
    if cur is not None:
        out.append(cur)
    return out


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def _atoms(text: str, s: int, e: int, count, max_tokens: int, level: int = 0):
    """Pieces of text[s:e], each within max_tokens, cut at the coarsest separator possible."""
    c = count(text[s:e])
    if c <= max_tokens:
        return [(s, e, c)]
    if level >= len(_PROSE_SEPARATORS):
        # a single "word" longer than the budget: cut by characters (rare: URLs, blobs)
        size = max(1, (e - s) * max_tokens // (c + 1))
        return [(a, min(a + size, e), count(text[a:min(a + size, e)]))
                for a in range(s, e, size)]
    sep = _PROSE_SEPARATORS[level]
    out, pos = [], s
    while pos < e:
        k = text.find(sep, pos, e)
        stop = e if k == -1 else k + len(sep)
        if stop > pos:
            out.extend(_atoms(text, pos, stop, count, max_tokens, level + 1))
        pos = stop
    return out


def split_prose(text: str, start: int, end: int, count, max_tokens: int,
                overlap_tokens: int) -> list[tuple[int, int]]:
    """Recursive token-budgeted split of text[start:end] with overlap; returns trimmed spans."""
    start, end = _trim(text, start, end)
    if start >= end:
        return []
    atoms = _atoms(text, start, end, count, max_tokens)
    spans: list[tuple[int, int]] = []
    window: list[tuple[int, int, int]] = []
    total = 0
    for atom in atoms:
        if window and total + atom[2] > max_tokens:
            spans.append((window[0][0], window[-1][1]))
            keep: list[tuple[int, int, int]] = []
            kept = 0
            for prev in reversed(window):  # overlap: trailing atoms of the previous chunk
                if kept + prev[2] > overlap_tokens or kept + prev[2] + atom[2] > max_tokens:
                    break
                keep.insert(0, prev)
                kept += prev[2]
            window, total = keep, kept
        window.append(atom)
        total += atom[2]
    if window:
        spans.append((window[0][0], window[-1][1]))
    out: list[tuple[int, int]] = []
    for s, e in spans:
        s, e = _trim(text, s, e)
        if s >= e or (out and out[-1][0] <= s and e <= out[-1][1]):
            continue  # its new atoms were blank ("\n \n"): the chunk before's overlap again
        if out and s <= out[-1][0] and out[-1][1] <= e:
            out.pop()  # all of the chunk before is this one's overlap (blank atoms before it)
        out.append((s, e))
    return out
