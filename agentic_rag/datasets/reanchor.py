"""A generated set's gold spans moved to today's reading of its documents, with no LLM call.

A generated question's gold span is a character range of its document as the reader of the
day read it; a later reader (a markup read as the built page reads, a role shown as its text)
moves the text, and the loader then refuses the set (`qa.with_questions`) rather than score
against other text. The questions and answers themselves, the costly part, still stand:

    rows, report = reanchor(rows, documents, chunks)      # `agentic-rag testset DOCS --reanchor SET`

The answer is looked for in the same document as it reads today (case and line wrapping
aside, as the loader compares). An answer that occurs there once is placed, and anchors the
others of its document: a repeated answer takes the occurrence nearest to where its old start
stands today (between the anchors around it, in proportion; with none, the old start itself),
the question's words breaking near-ties; a span that still reads its answer there stays. The
row's `chunk_id` / `chunk_type` become those of the chunk that holds the span, so `--exclude`
still skips it. A row whose answer
no longer occurs in its document (the reading changed the answer's own text: a role in it,
a link's markup) is left out and named in the report; a row with no spans (an unanswerable
question) or no generator (a hand-made set) is kept as it is. Pure: tested without files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from agentic_rag.datasets.qa import reads_answer
from agentic_rag.documents import Chunk, Document


@dataclass
class ReanchorReport:
    kept: int = 0  # rows whose spans still read their answers (or that have none)
    moved: list[str] = field(default_factory=list)  # ids of rows re-anchored
    rechunked: list[str] = field(default_factory=list)  # spans hold, their chunk id renewed
    dropped: dict[str, str] = field(default_factory=dict)  # id -> why

    def line(self) -> str:
        out = f"{self.kept} rows hold as they are, {len(self.moved)} re-anchored"
        if self.rechunked:
            out += f", {len(self.rechunked)} with their chunk id renewed (the span holds)"
        if self.dropped:
            first = next(iter(self.dropped.items()))
            out += (f", {len(self.dropped)} left out (their answer is not in today's reading; "
                    f"first: {first[0]}: {first[1]})")
        return out


def _pattern(answer: str) -> re.Pattern[str] | None:
    words = str(answer).split()
    return re.compile(r"\s+".join(map(re.escape, words)), re.I) if words else None


def reanchor(rows: Iterable[dict], documents: Iterable[Document], chunks: Iterable[Chunk]
             ) -> tuple[list[dict], ReanchorReport]:
    """`rows` (a generated set's JSON rows) with each stale span moved to its answer in
    `documents` (today's reading) and its chunk id to the chunk of `chunks` holding it; rows
    whose answer is gone left out (the module doc). A span that is not {doc_id, start, end}
    raises ValueError naming its row."""
    docs = {d.id: d for d in documents}
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    rows = list(rows)
    today = _Today(docs, by_doc, {c.id for c in chunks})
    today.anchor(rows)
    out, report = [], ReanchorReport()
    for n, row in enumerate(rows, 1):
        spans, rid = row.get("spans") or [], str(row.get("id") or f"row {n}")
        answers = [row["answer"]] if row.get("answer") else list(row.get("answers") or [])
        if not spans or not answers or not row.get("generator"):
            out.append(row)
            report.kept += 1
            continue
        new, why = [], ""
        for s in spans:
            if not isinstance(s, dict) or not all(isinstance(s.get(k), int) for k in ("start", "end")):
                raise ValueError(f"{rid}: span {s!r} is not {{doc_id, start, end}} (whole numbers)")
            span, why = today.span(s, row, [str(a) for a in answers])
            if span is None:
                break
            new.append(span)
        if why:
            report.dropped[rid] = why
            continue
        first = new[0]
        if new == spans and today.still_there(row.get("chunk_id"), first["start"], first["end"]):
            out.append(row)
            report.kept += 1
            continue
        moved = new != spans
        row = {**row, "spans": new, **({"reanchored": True} if moved else {})}
        holder = _holding_chunk(by_doc.get(first["doc_id"], []), first["start"], first["end"])
        if holder is not None and "chunk_id" in row:
            row["chunk_id"], row["chunk_type"] = holder.id, holder.chunk_type
        out.append(row)
        (report.moved if moved else report.rechunked).append(rid)
    return out, report


@dataclass
class _Today:
    """Today's reading: documents by id, their chunks, every chunk id."""

    docs: dict[str, Document]
    chunks: dict[str, list[Chunk]]
    chunk_ids: set[str]
    # per document, (old start, start today) of the spans whose answer occurs once today
    anchors: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def anchor(self, rows: list[dict]) -> None:
        """The anchors: an answer that occurs once in its document today is placed for sure,
        and tells how far the text around its old place moved."""
        for row in rows:
            answer = row.get("answer") or next(iter(row.get("answers") or []), None)
            pattern = _pattern(str(answer)) if answer and row.get("generator") else None
            for s in (row.get("spans") or []) if pattern else []:
                doc = self.docs.get(s.get("doc_id")) if isinstance(s, dict) else None
                if doc is not None and isinstance(s.get("start"), int):
                    found = [m for m, _ in zip(pattern.finditer(doc.text), range(2))]
                    if len(found) == 1:
                        self.anchors.setdefault(doc.id, []).append((s["start"], found[0].start()))
        for points in self.anchors.values():
            points.sort()

    def predict(self, doc_id: str, start: int) -> float:
        """Where the text at `start` of the old reading stands today: between the anchors
        around it, in proportion; past the last (or before the first), moved as it moved;
        with no anchor, where it was."""
        points = self.anchors.get(doc_id, [])
        left = [p for p in points if p[0] <= start]
        right = [p for p in points if p[0] > start]
        if left and right:
            (o1, n1), (o2, n2) = left[-1], right[0]
            return n1 + (start - o1) * (n2 - n1) / (o2 - o1)
        if left or right:
            o, moved = left[-1] if left else right[0]
            return start + moved - o
        return float(start)

    def span(self, s: dict, row: dict, answers: list[str]) -> tuple[dict | None, str]:
        """(the span today, "") or (None, why it cannot be placed)."""
        doc = self.docs.get(s.get("doc_id"))
        if doc is None:
            return None, f"document {s.get('doc_id')!r} is not among the documents"
        start, end = s["start"], s["end"]
        holds = 0 <= start < end <= len(doc.text) and reads_answer(doc.text[start:end], answers)
        for answer in answers:
            pattern = _pattern(answer)
            found = list(pattern.finditer(doc.text)) if pattern else []
            if found:
                m = _likeliest(found, self.predict(doc.id, start), str(row.get("question", "")),
                               answer, self.chunks.get(doc.id, []))
                if holds and m.start() < end and start < m.end():
                    return s, ""  # it reads that occurrence where it was: it stays
                return {**s, "start": m.start(), "end": m.end()}, ""
        return None, f"{answers[0]!r} does not occur in {doc.id}"

    def still_there(self, chunk_id: object, start: int, end: int) -> bool:
        """Whether the row's chunk is a chunk of today's reading and holds [start, end): the
        text around the span did not move (a row without a chunk id: the span alone decides)."""
        if not isinstance(chunk_id, str) or "@" not in chunk_id:
            return True
        if chunk_id not in self.chunk_ids:
            return False
        lo, _, hi = chunk_id.rpartition("@")[2].partition("-")
        return lo.isdigit() and hi.isdigit() and int(lo) <= start and end <= int(hi)


_WORD = re.compile(r"[a-z0-9_]{3,}")
_NEAR = 200  # characters either side of an occurrence that its question is compared with
_TIE = 50  # occurrences this much further than the nearest are as near (the words decide)
_COMMON = set("the and for with that this what which when how does are was were from into its "
              "can not use used using who why where there than then also you your".split())


def _likeliest(found: list[re.Match[str]], start: float, question: str, answer: str,
               chunks: list[Chunk]) -> re.Match[str]:
    """The occurrence of the answer nearest `start` (where the old start stands today, as far
    as the anchors tell); among those within `_TIE`
    characters of that distance, the one whose surroundings (`_NEAR` characters either side,
    and its chunk's heading path) share the most of the question's words (common words and
    the answer's own aside). Measured on the .rst migration with the committed Python sets'
    LLM-written questions (`experiments/tune/reanchor_eval.py`), the question's words as the
    main score picked another copy more often than the nearest did: they only break ties."""
    words = set(_WORD.findall(question.lower())) - set(_WORD.findall(answer.lower())) - _COMMON

    def shared(m: re.Match[str]) -> int:
        if not words:
            return 0
        holder = _holding_chunk(chunks, m.start(), m.end())
        near = m.string[max(0, m.start() - _NEAR):m.end() + _NEAR]
        return len(words & set(_WORD.findall(f"{holder.heading_path if holder else ''} {near}"
                                             .lower())))

    nearest = min(abs(m.start() - start) for m in found)
    tied = [m for m in found if abs(m.start() - start) <= nearest + _TIE]
    return min(tied, key=lambda m: (-shared(m), abs(m.start() - start)))


def _holding_chunk(chunks: list[Chunk], start: int, end: int) -> Chunk | None:
    """The smallest chunk whose range holds [start, end) (a table row before its table)."""
    holding = [c for c in chunks if c.start_char <= start and end <= c.end_char]
    return min(holding, key=lambda c: c.end_char - c.start_char, default=None)
