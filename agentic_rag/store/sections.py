"""Small-to-big: match on small chunks, serve the enclosing section.

Small chunks rank sharply (one idea each), big ones read well (the answer and its context).
`expand_hits` serves each hit as its *parent*: the matched chunk grown with its neighbours
in the same section — same document and heading path, in text order — while the total
stays within `max_tokens`, taking the next chunk after it first, then the one before, and
so on. A chunk is served once: a later hit on a chunk that an earlier parent already holds
is dropped, and a parent never takes a chunk an earlier parent holds, so the list keeps
its order and serves no text twice. Its length shrinks by the hits absorbed: callers ask
for a deep candidate list and cut at k after expanding (the fusion list does).

A parent is a `Chunk` whose text is its children's texts stitched at their offsets
(overlaps kept once; a gap between two children, which only markup the chunker skips can
leave, becomes a blank line), with `start_char`/`end_char` spanning them and the exact
character spans it serves in `metadata["spans"]` ("start-end,start-end"), which
`evaluation.retrieval.span_metrics` reads: span metrics stay exact. `metadata["child_id"]`
names the chunk that matched. Table rows (their text is the header plus a row, not a slice
of the document) and heading chunks are served as they are.

    sections = SectionMap(all_chunks)               # once per index
    served = expand_hits(fused_hits, sections, 256)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agentic_rag.documents import Chunk, Hit

_ALONE = ("table_row", "heading")  # never grown, never taken as a neighbour


class SectionMap:
    """Chunks by (document, heading path), each section in text order."""

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        sections: dict[tuple[str, str], list[Chunk]] = {}
        for c in chunks:
            if c.chunk_type not in _ALONE:
                sections.setdefault((c.doc_id, c.heading_path), []).append(c)
        self._pos: dict[str, tuple[list[Chunk], int]] = {}
        for chunks_ in sections.values():
            chunks_.sort(key=lambda c: (c.start_char, c.end_char, c.id))
            for i, c in enumerate(chunks_):
                self._pos[c.id] = (chunks_, i)

    def locate(self, chunk_id: str) -> tuple[list[Chunk], int] | None:
        """(the chunk's section, its position there), or None for a chunk served alone."""
        return self._pos.get(chunk_id)

    def __len__(self) -> int:
        return len(self._pos)


def grow(section: Sequence[Chunk], i: int, max_tokens: int, taken: set[str]) -> tuple[int, int]:
    """The window [lo, hi] around `section[i]`: neighbours are added, the next one first,
    while the summed token counts stay within `max_tokens` and the neighbour is not `taken`."""
    lo = hi = i
    tokens = section[i].token_count
    grew = True
    while grew:
        grew = False
        for j in (hi + 1, lo - 1):
            if 0 <= j < len(section) and section[j].id not in taken \
                    and tokens + section[j].token_count <= max_tokens:
                tokens += section[j].token_count
                lo, hi = min(lo, j), max(hi, j)
                grew = True
    return lo, hi


def stitch(chunks: Sequence[Chunk]) -> tuple[str, list[tuple[int, int]]]:
    """The text of consecutive chunks of one document joined at their offsets, and the
    merged character spans it covers."""
    text, end = "", -1
    spans: list[tuple[int, int]] = []
    for c in chunks:
        if not text:
            text = c.text
        elif c.start_char > end:
            text += "\n\n" + c.text
        elif c.end_char > end:  # adjacent or overlapping: the part not yet in
            text += c.text[end - c.start_char:]
        end = max(end, c.end_char)
        if spans and c.start_char <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], c.end_char))
        else:
            spans.append((c.start_char, c.end_char))
    return text, spans


def parent_chunk(child: Chunk, parts: Sequence[Chunk]) -> Chunk:
    """The chunk served for `child`: `parts` (consecutive, one section) stitched."""
    text, spans = stitch(parts)
    start, end = spans[0][0], spans[-1][1]
    return Chunk(id=f"{child.doc_id}#section@{start}-{end}", doc_id=child.doc_id, text=text,
                 chunk_type=child.chunk_type, heading_path=child.heading_path,
                 source=child.source, start_char=start, end_char=end,
                 token_count=sum(p.token_count for p in parts),
                 metadata={**child.metadata, "child_id": child.id,
                           "spans": ",".join(f"{s}-{e}" for s, e in spans)})


def expand_hits(hits: Sequence[Hit], sections: SectionMap, max_tokens: int) -> list[Hit]:
    """Each hit served as its parent (see the module doc), in the hits' order, re-ranked
    from 1; scores and retriever names are kept."""
    taken: set[str] = set()
    out: list[Hit] = []
    for h in hits:
        c = h.chunk
        if c.id in taken:
            continue
        loc = sections.locate(c.id)
        chunk = c
        if loc is None:
            taken.add(c.id)
        else:
            section, i = loc
            lo, hi = grow(section, i, max_tokens, taken)
            parts = section[lo:hi + 1]
            taken.update(p.id for p in parts)
            if len(parts) > 1:
                chunk = parent_chunk(c, parts)
        out.append(h.model_copy(update={"chunk": chunk, "rank": len(out) + 1}))
    return out


def served_spans(chunk: Chunk) -> list[tuple[int, int]]:
    """The character spans a served chunk covers: a parent's recorded spans, else its own."""
    raw = chunk.metadata.get("spans")
    if isinstance(raw, str) and raw:
        return [(int(s), int(e)) for s, e in (p.split("-") for p in raw.split(","))]
    return [(chunk.start_char, chunk.end_char)]
