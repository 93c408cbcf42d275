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
    dropped: dict[str, str] = field(default_factory=dict)  # id -> why

    def line(self) -> str:
        out = f"{self.kept} rows hold as they are, {len(self.moved)} re-anchored"
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
    whose answer is gone left out (the module doc)."""
    docs = {d.id: d for d in documents}
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    out, report = [], ReanchorReport()
    for row in rows:
        spans, answer, rid = row.get("spans") or [], row.get("answer"), str(row.get("id", ""))
        if not spans or not answer or not row.get("generator"):
            out.append(row)
            report.kept += 1
            continue
        new, why = [], ""
        for s in spans:
            doc = docs.get(s.get("doc_id"))
            if doc is None:
                why = f"document {s.get('doc_id')!r} is not among the documents"
                break
            start, end = int(s.get("start", 0)), int(s.get("end", 0))
            if 0 <= start < end <= len(doc.text) and _holds(doc.text[start:end], str(answer)):
                new.append(s)
                continue
            pattern = _pattern(str(answer))
            found = list(pattern.finditer(doc.text)) if pattern else []
            if not found:
                why = f"{answer!r} does not occur in {doc.id}"
                break
            m = min(found, key=lambda m: abs(m.start() - start))
            new.append({**s, "start": m.start(), "end": m.end()})
        if why:
            report.dropped[rid] = why
            continue
        if new == spans:
            out.append(row)
            report.kept += 1
            continue
        row = {**row, "spans": new, "reanchored": True}
        holder = _holding_chunk(by_doc.get(new[0]["doc_id"], []), new[0]["start"], new[0]["end"])
        if holder is not None and "chunk_id" in row:
            row["chunk_id"], row["chunk_type"] = holder.id, holder.chunk_type
        out.append(row)
        report.moved.append(rid)
    return out, report


def _holding_chunk(chunks: list[Chunk], start: int, end: int) -> Chunk | None:
    """The smallest chunk whose range holds [start, end) (a table row before its table)."""
    holding = [c for c in chunks if c.start_char <= start and end <= c.end_char]
    return min(holding, key=lambda c: c.end_char - c.start_char, default=None)
