"""Answer containment: is the reference answer in what was served? One metric, two cutoffs.

- `answer_in_context`: over the whole context the model was given (the formatted text);
- `answer_at_k`: over the first k served chunks, each read as its heading line (source and
  heading path) followed by its body, so an answer that sits only in a heading counts.

Both compare SQuAD-normalised text (lower case, no punctuation or articles, one space) and
match whole tokens: "10" is found in "fee is 10 dollars", not in "fee is 100 dollars". With
several references, any one found counts. It needs no LLM, so it runs on every query of
every config; where LLM answers exist it is checked against their token F1.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentic_rag.documents import Hit
from agentic_rag.evaluation.answers import normalize_answer


def contains_answer(text: str, references: Sequence[str]) -> float:
    """1.0 when some non-empty normalised reference occurs in normalised `text` on token
    boundaries, else 0.0; NaN when there is no usable reference (nothing to look for)."""
    refs = [r for r in (normalize_answer(x) for x in references) if r]
    if not refs:
        return float("nan")
    hay = f" {normalize_answer(text)} "
    return float(any(f" {r} " in hay for r in refs))


def chunk_view(hit: Hit) -> str:
    """A served chunk as a reader sees it: its heading line, then its text."""
    c = hit.chunk
    head = " — ".join(p for p in (c.source or c.doc_id, c.heading_path) if p)
    return f"{head}\n{c.text}"


def answer_in_context(context_text: str, references: Sequence[str]) -> float:
    """The reference answer occurs in the whole served context (see `contains_answer`)."""
    return contains_answer(context_text, references)


def answer_at_k(hits: Sequence[Hit], references: Sequence[str], k: int) -> float:
    """The reference answer occurs in one of the first `k` hits, heading line included.
    Per chunk, so an answer split across two chunks' boundary does not count."""
    if k < 1:
        raise ValueError(f"answer_at_k: k must be >= 1, got {k}")
    if not any(normalize_answer(r) for r in references):
        return float("nan")
    return float(any(contains_answer(chunk_view(h), references) == 1.0 for h in hits[:k]))
