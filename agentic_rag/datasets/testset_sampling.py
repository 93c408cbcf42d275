"""Which chunks a generated test set is drawn from, and in what order.

`sample_chunks` draws chunks stratified over chunk type (prose, code, table, list: equal shares
as far as each has chunks) and, within a type, round-robin over documents in a seeded order, so
no long page takes the set over. `passage` is a chunk as the generator sees it (its heading
path, then its text); `chunk_span` the answer span that span-first generation picks in it;
`split_of` a question's seeded dev/test split.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Literal

from agentic_rag.datasets.spans import Span, candidate_spans, pick_span
from agentic_rag.documents import Chunk, Document

STRATA = ("prose", "code", "table", "list")


INTENT_OF = {"prose": "fact", "code": "code", "table": "data", "list": "procedure"}


def stratum(chunk: Chunk) -> str | None:
    """The sampling stratum of a chunk: its type, table rows as tables; headings: none."""
    t = "table" if chunk.chunk_type == "table_row" else chunk.chunk_type
    return t if t in STRATA else None


def sample_chunks(chunks: Sequence[Chunk], seed: int = 0, min_tokens: int = 25) -> Iterator[Chunk]:
    """Every usable chunk (a stratum, ≥ `min_tokens`), in a seeded order that is stratified:
    the strata take turns, and within a stratum the documents take turns (documents and
    their chunks shuffled with `seed`). Any prefix of it is a stratified sample."""
    rng = random.Random(seed)
    by_stratum: dict[str, dict[str, list[Chunk]]] = defaultdict(lambda: defaultdict(list))
    for c in chunks:
        s = stratum(c)
        if s is not None and c.token_count >= min_tokens:
            by_stratum[s][c.doc_id].append(c)
    streams = []
    for s in STRATA:
        docs = by_stratum.get(s)
        if not docs:
            continue
        queues = []
        for doc_id in sorted(docs):
            cs = sorted(docs[doc_id], key=lambda c: c.id)
            rng.shuffle(cs)
            queues.append(cs)
        rng.shuffle(queues)
        streams.append(_round_robin(queues))
    yield from _round_robin_iters(streams)


def _round_robin(queues: list[list[Chunk]]) -> Iterator[Chunk]:
    i = 0
    while any(queues):
        if queues[i % len(queues)]:
            yield queues[i % len(queues)].pop(0)
        i += 1


def _round_robin_iters(iters: list[Iterator[Chunk]]) -> Iterator[Chunk]:
    live = list(iters)
    while live:
        for it in list(live):
            try:
                yield next(it)
            except StopIteration:
                live.remove(it)


def passage(chunk: Chunk, doc: Document) -> str:
    head = " > ".join(x for x in (doc.title, chunk.heading_path) if x)
    return (f"[{head}]\n" if head else "") + chunk.text


def split_of(qid: str, seed: int, dev_share: float = 0.2) -> Literal["dev", "test"]:
    """`dev_share` of the questions dev (the packaged datasets' 20 % by default), seeded, by
    the question's id."""
    return "dev" if random.Random(f"{seed}:{qid}").random() < dev_share else "test"


def chunk_span(chunk: Chunk, doc: Document) -> Span | None:
    """The answer span the span-first generator asks about for `chunk` (`spans.pick_span`
    over its `candidate_spans`, seeded by the chunk id), offsets into the passage."""
    passage = doc.text[chunk.start_char:chunk.end_char]
    heading = " ".join(x for x in (doc.title, chunk.heading_path) if x)
    return pick_span(candidate_spans(passage, chunk.chunk_type, heading), chunk.id)
