"""A generated set's gold spans moved to today's reading of its documents, with no LLM call.

A generated question's gold span is a character range of its document as the reader of the
day read it; a later reader (a markup read as the built page reads, a role shown as its text)
moves the text, and the loader then refuses the set (`qa.with_questions`) rather than score
against other text. The questions and answers themselves, the costly part, still stand:

    rows, report = reanchor(rows, documents, chunks)      # `agentic-rag testset DOCS --reanchor SET`

A span that still reads its answer is kept. Otherwise the answer is looked for in the same
document as it reads today (case and line wrapping aside, as the loader compares): the
occurrence nearest the old start is the new span, and the row's `chunk_id` / `chunk_type`
become those of the chunk that holds it, so `--exclude` still skips it. A row whose answer
no longer occurs in its document (the reading changed the answer's own text: a role in it,
a link's markup) is left out and named in the report; a row with no spans (an unanswerable
question) or no generator (a hand-made set) is kept as it is. Pure: tested without files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

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


def _holds(text: str, answer: str) -> bool:
    return " ".join(answer.split()).lower() in " ".join(text.split()).lower()


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
    today = _Today(docs, by_doc, {c.id for c in chunks})
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

    def span(self, s: dict, row: dict, answers: list[str]) -> tuple[dict | None, str]:
        """(the span today, "") or (None, why it cannot be placed)."""
        doc = self.docs.get(s.get("doc_id"))
        if doc is None:
            return None, f"document {s.get('doc_id')!r} is not among the documents"
        start, end = s["start"], s["end"]
        if 0 <= start < end <= len(doc.text) \
                and any(_holds(doc.text[start:end], a) for a in answers) \
                and self.still_there(row.get("chunk_id"), start, end):
            return s, ""
        for answer in answers:
            pattern = _pattern(answer)
            found = list(pattern.finditer(doc.text)) if pattern else []
            if found:
                m = _likeliest(found, start, str(row.get("question", "")), answer,
                               self.chunks.get(doc.id, []))
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
_WORTH = 1000  # characters further from the old start that one more shared word outweighs


def _likeliest(found: list[re.Match[str]], start: int, question: str, answer: str,
               chunks: list[Chunk]) -> re.Match[str]:
    """The occurrence of the answer the question was most likely written from: each scores the
    question's words (the answer's own aside) its surroundings share (`_NEAR` characters either
    side, and its chunk's heading path), less one per `_WORTH` characters from the old start.
    A reading that drops markup moves later text back by hundreds of characters: on 187 answers
    of 40 Python library pages moved from their .rst as written to today's reading, with
    questions made of 8 words from around each answer (a proxy: generated questions paraphrase
    their passage), the nearest occurrence alone is another copy for 41 %, this for 22 %; the
    12 moved rows of a real set (Pyodide's) land where the nearest puts them, as they should."""
    words = set(_WORD.findall(question.lower())) - set(_WORD.findall(answer.lower()))

    def shared(m: re.Match[str]) -> int:
        if not words:
            return 0
        holder = _holding_chunk(chunks, m.start(), m.end())
        near = m.string[max(0, m.start() - _NEAR):m.end() + _NEAR]
        return len(words & set(_WORD.findall(f"{holder.heading_path if holder else ''} {near}"
                                             .lower())))

    return min(found, key=lambda m: (abs(m.start() - start) / _WORTH - shared(m),
                                      abs(m.start() - start)))


def _holding_chunk(chunks: list[Chunk], start: int, end: int) -> Chunk | None:
    """The smallest chunk whose range holds [start, end) (a table row before its table)."""
    holding = [c for c in chunks if c.start_char <= start and end <= c.end_char]
    return min(holding, key=lambda c: c.end_char - c.start_char, default=None)
