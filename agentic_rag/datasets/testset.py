"""A test set generated from a folder of documents by the configured LLM (issue 21).

    res = generate_testset(docs, chat, n=200, seed=0)      # docs: list[Document]
    res.write("questions.jsonl")        # + questions.rejected.jsonl, questions.summary.json
    ds = load_local("my-docs", "questions.jsonl")           # spans, splits, intents read back

1. **Sampling** (`sample_chunks`): the documents are chunked as the index chunks them, and
   chunks are drawn stratified over chunk type (prose, code, table, list: equal shares as
   far as each has chunks) and, within a type, round-robin over documents in a seeded order,
   so no long page takes the set over.
2. **Generation:** one schema-constrained call per chunk writes a question a user would ask,
   in their words, and a short answer copied from the passage. The question kind follows the
   chunk: code → code, table → data, list → procedure, prose → fact. A share of the draws
   (`unanswerable`) instead asks for a question about a thing of the passage's kind that it
   does not mention, with the thing's invented name (a sibling function, a neighbouring
   product): the name must be in the question and nowhere in the corpus. Those have no gold
   and measure abstention. (The v2 prompt asked for "a detail the passage does not
   mention": on the Python docs all 33 such questions that passed the other filters were
   answered from the corpus.)
3. **Filters**, each rejection recorded with its reason (`REASONS`): the reply must parse;
   the answer must be short, not generic ("yes", "no", a single character) and occur in the
   passage itself (its character span in the document is the gold; a heading of the
   chunk's path or the same words elsewhere in the document do not count); the question
   must not contain its answer, nor point at "the passage" (meaningless to someone
   searching the whole corpus), nor ask for the name of a subject it does not name ("What
   is the name of the town?"), nor have a pronoun or a bare demonstrative as its subject
   ("When was it built?"), nor copy a run of `max_copied_words` words of the passage (a
   lexical shortcut); near-duplicates of an accepted question are dropped. Where the
   documents share names (a product's pages, `coverage.shared_name_share` ≥ 0.25), an
   answerable question must also say which one it is about (`testset_filters.SubjectCheck`:
   "names another subject", "ambiguous subject"), before the round trip's call.
   With `check_unanswerable` (off by default: the made-up name's absence is the check), an
   unanswerable question is also checked against the whole corpus:
   BM25 over the same chunks retrieves its top `CORPUS_CHECK_K`, and the model answers from
   them or says it does not know (`evaluation.answers.is_abstention`, the agent's own detector); a
   question it answers is rejected ("answerable from the corpus", with its answer and the
   chunk ids). One call per unanswerable question that passed the other filters.
4. **Knowable:** the model answers each accepted question without context; token F1 against
   the reference ≥ `knowable_f1` marks it `knowable` (kept, selectable:
   `load_local(..., knowable=False)`).

Every call goes through the chat model's reply cache, keyed by the model's identity, so a
rerun (or a cached packaged corpus) costs nothing; a failed call is retried by the client,
then recorded as a rejection (`llm error`), never turned into a question.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agentic_rag.datasets.spans import Span
from agentic_rag.datasets.testset_cost import ROUND_TRIP_PASS
from agentic_rag.datasets.testset_filters import CorpusText, SubjectCheck, check_reply, chunks_bm25
from agentic_rag.datasets.testset_prompts import (
    CORPUS_CHECK_K,
    PROMPT_VERSION,
    SPAN_PROMPT_VERSION,
    answer_from_corpus,
    ask,
    closed_book,
    round_trip,
)
from agentic_rag.datasets.testset_sampling import (
    INTENT_OF,
    chunk_span,
    sample_chunks,
    split_of,
    stratum,
)
from agentic_rag.documents import Chunk, Document
from agentic_rag.llm.calls import map_calls
from agentic_rag.llm.types import ChatModel


class GeneratedQuestion(BaseModel):
    """One generated question, in the format `load_local` reads."""

    model_config = ConfigDict(frozen=True)

    id: str
    question: str
    answer: str = ""
    doc_ids: list[str]
    spans: list[dict[str, Any]]  # [{"doc_id", "start", "end"}]: the answer in the document
    chunk_id: str
    chunk_type: str
    intent: str
    answerable: bool = True
    knowable: bool | None = None  # answered without context (None: not checked)
    closed_book_f1: float | None = None
    span_kind: str | None = None  # span mode: the rule that chose the answer (spans.KINDS)
    split: Literal["dev", "test"]
    generator: str
    prompt_version: str = PROMPT_VERSION


@dataclass
class TestsetResult:
    records: list[GeneratedQuestion]
    rejected: list[dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)

    def write(self, out: str | Path) -> dict[str, Path]:
        """`out` (the set), `<stem>.rejected.jsonl` and `<stem>.summary.json` beside it."""
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        paths = {"questions": out, "rejected": out.with_name(f"{out.stem}.rejected.jsonl"),
                 "summary": out.with_name(f"{out.stem}.summary.json")}
        paths["questions"].write_text("".join(r.model_dump_json() + "\n" for r in self.records),
                                      encoding="utf-8")
        paths["rejected"].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                             for r in self.rejected), encoding="utf-8")
        paths["summary"].write_text(json.dumps(self.summary, indent=2), encoding="utf-8")
        return paths


@dataclass
class _Run:
    """One generation's settings and state: what `generate_testset`'s helpers share."""

    chat: ChatModel
    chunks: list[Chunk]
    by_id: dict[str, Document]
    mode: str
    quota: dict[bool, int]
    every: int
    seed: int
    max_draws: int
    min_tokens: int
    records: list[GeneratedQuestion] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    done: dict[bool, int] = field(default_factory=lambda: {True: 0, False: 0})
    draws: int = 0
    no_span: int = 0
    corpus_checks: int = 0
    lexical: Any = None
    subjects: Any = None  # testset_filters.SubjectCheck, where documents share names
    exclude: frozenset[str] = frozenset()  # chunk ids never drawn (`exclude_chunks`)

    def bm25(self) -> Any:
        """BM25 over the chunks as the index reads them (under their heading paths), built
        once: the corpus check's retriever and the subject check's vocabulary."""
        if self.lexical is None:
            self.lexical = chunks_bm25(self.chunks)
        return self.lexical

    def full(self) -> bool:
        return all(self.done[k] >= self.quota[k] for k in self.quota)

    def plan(self) -> Iterator[tuple[Chunk, bool, Span | None]]:
        """Draw i is an unanswerable one when i % every == every - 1: fixed by i alone, so the
        set is the same at any concurrency (a draw whose kind is full is skipped below). In
        span mode an answerable draw from a chunk with no candidate span costs no call: it
        is recorded ("no answer span") and the next chunk is drawn."""
        order = (c for c in sample_chunks(self.chunks, self.seed, self.min_tokens)
                 if c.id not in self.exclude)
        for i, chunk in enumerate(order):
            if i >= self.max_draws or self.full():
                return
            answerable = not (self.every and i % self.every == self.every - 1)
            if self.done[answerable] >= self.quota[answerable]:
                continue
            span = None
            if answerable and self.mode == "span":
                span = chunk_span(chunk, self.by_id[chunk.doc_id])
                if span is None:
                    self.no_span += 1
                    continue
            yield chunk, answerable, span


def generate_testset(docs: Sequence[Document], chat: ChatModel, n: int = 200, seed: int = 0,
                     unanswerable: float = 0.1, chunker: Callable[[Document], list[Chunk]]
                     | None = None, chunks: Sequence[Chunk] | None = None,
                     max_copied_words: int = 6, max_answer_words: int = 12,
                     duplicate_jaccard: float = 0.8, knowable_f1: float = 0.5,
                     check_knowable: bool = True, check_unanswerable: bool = False,
                     max_draws: int | None = None,
                     max_concurrency: int = 1, min_tokens: int = 25,
                     progress: Any = None, mode: Literal["span", "free"] = "span",
                     max_knowable_share: float | None = 0.25,
                     dev_share: float = 0.2, round_trip: bool | None = None,
                     exclude_chunks: Iterable[str] = ()) -> TestsetResult:
    """`n` accepted questions (about `unanswerable` of them without an answer in the corpus)
    from `docs`, drawing chunks in `sample_chunks` order until `n` pass the filters or the
    first `max_draws` chunks of that order (default 3 × n; with the round trip
    3 × n / `ROUND_TRIP_PASS`, since it passes about half) are used up. `mode`: "span"
    (default, issue 38) picks the answer by rule (`spans.candidate_spans`) and asks the
    model only for its question; "free" (the v4 generator) lets the model pick a quote.
    `chunks`: the documents' chunks, when the caller has them already; else `chunker` makes
    them (default `AgenticChunker()` with the default config). `max_concurrency`: generation
    calls in flight; the set is the same at any value (draws are judged in order).
    `progress`: an object whose `advance()` is called per accepted question.
    `min_tokens`: shorter chunks are not drawn. `check_unanswerable`: each unanswerable
    question is also answered from the `CORPUS_CHECK_K` chunks BM25 ranks first for it, and
    rejected when the model answers (off by default: its made-up name is in no document
    already, and a small model "answers" such questions from similar passages).
    `max_knowable_share`: questions the model answers without context (`knowable`) are kept
    up to this share of the set, the later ones beyond it rejected ("knowable beyond its
    share"); None keeps them all. `dev_share`: the questions' share in the dev split.
    `round_trip` (default: on in span mode): each answerable question that passed the filters
    is answered by the model from its own passage and rejected when that answer is not its
    reference (`testset_prompts.round_trip`: one call per such question).
    `exclude_chunks`: chunk ids never drawn (another set's `chunk_id`s: a set made with
    another seed alone shares many questions with it, since the same chunk gives the same
    span and, under greedy decoding, the same question), matched within their folder."""
    _check_args(n, unanswerable, docs, mode, max_knowable_share, dev_share)
    checks_round_trip = mode == "span" if round_trip is None else round_trip
    if max_draws is None:  # the round trip passes about half: as many more draws
        max_draws = math.ceil(3 * n / (ROUND_TRIP_PASS if checks_round_trip else 1.0))
    by_id = {d.id: d for d in docs}
    chunks = _chunks_of(docs, by_id, chunker, chunks)
    quota = {False: round(n * unanswerable)}
    quota[True] = n - quota[False]
    counting = _CountingChat(chat)
    run = _Run(counting, chunks, by_id, mode, quota,
               max(2, round(1 / unanswerable)) if quota[False] else 0, seed,
               max_draws, min_tokens,
               exclude=frozenset(excluded_here(exclude_chunks, [c.id for c in chunks])))
    gen = getattr(chat, "model_id", type(chat).__name__)
    settings = {"max_copied_words": max_copied_words, "max_answer_words": max_answer_words,
                "duplicate_jaccard": duplicate_jaccard, "check_unanswerable": check_unanswerable,
                "dev_share": dev_share, "gen": gen,
                "round_trip": checks_round_trip}
    corpus = CorpusText(docs) if quota[False] else None  # where a made-up name must not occur
    run.subjects = SubjectCheck(run.bm25(), docs) if SubjectCheck.applies(list(by_id)) else None
    drawn: list[tuple[Chunk, bool, Span | None]] = []

    def one(item: tuple[Chunk, bool, Span | None]) -> Any:
        chunk, answerable, span = item
        return ask(counting, chunk, by_id[chunk.doc_id], answerable, span)

    for _, reply in map_calls(one, _tee(run.plan(), drawn), max_concurrency):
        chunk, answerable, span = drawn.pop(0)
        if run.done[answerable] >= run.quota[answerable]:
            continue  # drawn ahead by a concurrent run after its kind filled: not used
        if _judge(run, reply, chunk, answerable, span, corpus, settings) and progress is not None:
            progress.advance()
    records = run.records
    if check_knowable:
        checked = dict(map_calls(lambda r: _knowable(counting, r, knowable_f1),
                                 records, max_concurrency))
        records = [checked[i] for i in range(len(records))]
    records = _bound_knowable(records, run.rejected, max_knowable_share)
    summary = _summary(records, run.rejected, n, run.draws, seed, gen, unanswerable,
                       max_copied_words, duplicate_jaccard, knowable_f1, len(chunks))
    _run_summary(summary, run, len(records), counting.calls)
    summary["settings"].update({"corpus_check_k": CORPUS_CHECK_K if check_unanswerable else None,
                                "max_knowable_share": max_knowable_share,
                                "dev_share": dev_share, "round_trip": checks_round_trip})
    return TestsetResult(records, run.rejected, summary)


def _within_folder(chunk_id: str) -> str:
    """A chunk id without its folder's name: ids are `<folder>/<path in it>#<kind>@<range>`
    (`ingest.readers.iter_document_paths`), so the same file chunked from a copied or renamed
    folder has the same id here."""
    doc, _, rest = chunk_id.partition("#")
    return f"{doc.split('/', 1)[1]}#{rest}" if "/" in doc else chunk_id


def excluded_here(exclude: Iterable[str], chunk_ids: Sequence[str]) -> set[str]:
    """The chunk ids of these documents that `exclude` (another set's `chunk_id`s) names:
    the same id, or the same file and range under another folder name (a set made from
    `bank-products/` excludes the chunks of the same files copied to `green-docs/`)."""
    wanted = set(exclude)
    moved = {_within_folder(x) for x in wanted}
    return {c for c in chunk_ids if c in wanted or _within_folder(c) in moved}


def _run_summary(summary: dict[str, Any], run: _Run, kept: int, calls: int) -> None:
    """What the draw loop adds to `_summary`: mode, prompt version, draws, calls, checks."""
    summary.update({"mode": run.mode, "prompt_version": SPAN_PROMPT_VERSION if run.mode == "span"
                    else PROMPT_VERSION, "no_answer_span": run.no_span, "llm_calls": calls,
                    "calls_per_kept": round(calls / kept, 2) if kept else None,
                    "accepted_share_of_draws": round(kept / run.draws, 3) if run.draws else None,
                    "unanswerable_checked": run.corpus_checks})
    summary["settings"].update({"subject_check": run.subjects is not None,
                                "excluded_chunks": len(run.exclude)})


def _check_args(n: int, unanswerable: float, docs: Sequence[Document], mode: str,
                max_knowable_share: float | None, dev_share: float) -> None:
    if n < 1:
        raise ValueError(f"n: {n} is not >= 1")
    if not 0.0 <= unanswerable < 1.0:
        raise ValueError(f"unanswerable: {unanswerable} is not a share in [0, 1)")
    if mode not in ("span", "free"):
        raise ValueError(f"mode: {mode!r} is not 'span' or 'free'")
    if max_knowable_share is not None and not 0.0 <= max_knowable_share <= 1.0:
        raise ValueError(f"max_knowable_share: {max_knowable_share} is not a share in [0, 1]")
    if not 0.0 < dev_share < 1.0:
        raise ValueError(f"dev_share: {dev_share} is not a share in (0, 1)")
    if not docs:
        raise ValueError("no documents to generate questions from")


def _chunks_of(docs: Sequence[Document], by_id: dict[str, Document],
               chunker: Callable[[Document], list[Chunk]] | None,
               chunks: Sequence[Chunk] | None) -> list[Chunk]:
    if chunks is not None:
        if chunker is not None:
            raise ValueError("pass chunks or a chunker, not both")
        if stray := next((c for c in chunks if c.doc_id not in by_id), None):
            raise ValueError(f"chunk {stray.id!r}: its document {stray.doc_id!r} is not in docs")
        return list(chunks)
    if chunker is None:
        from agentic_rag.ingest.chunking import AgenticChunker

        chunker = AgenticChunker().chunk
    return [c for d in docs for c in chunker(d)]


def _judge(run: _Run, reply: Any, chunk: Chunk, answerable: bool, span: Span | None,
           corpus: CorpusText | None, st: dict[str, Any]) -> bool:
    """Filter one draw's reply: a question appended to `run.records` (True), or a rejection
    appended to `run.rejected` with its reason (False)."""
    run.draws += 1
    s = stratum(chunk)
    intent = INTENT_OF[s] if answerable else "fact"
    base = {"chunk_id": chunk.id, "doc_id": chunk.doc_id, "chunk_type": s, "intent": intent,
            "answerable": answerable, **({"span_kind": span.kind} if span else {})}
    doc = run.by_id[chunk.doc_id]
    outcome = check_reply(reply, chunk, doc, answerable, run.records, st["max_copied_words"],
                          st["max_answer_words"], st["duplicate_jaccard"], corpus=corpus)
    if isinstance(outcome, dict):
        run.rejected.append({**base, **outcome})
        return False
    question, answer, at = outcome
    if answerable and run.subjects is not None and (
            vague := run.subjects.check(question, answer, doc.id)):
        run.rejected.append({**base, **vague, "question": question, "answer": answer})
        return False
    if span is not None:  # the chosen span itself, not an earlier copy of its words
        at = (chunk.start_char + span.start, chunk.start_char + span.end)
    if answerable and st["round_trip"]:
        if (wrong := round_trip(run.chat, question, answer, chunk, doc)) is not None:
            run.rejected.append({**base, **wrong, "question": question, "answer": answer})
            return False
    if not answerable and st["check_unanswerable"]:
        run.corpus_checks += 1
        answered = answer_from_corpus(run.chat, question, run.bm25(), run.by_id)
        if answered is not None:
            run.rejected.append({**base, **answered, "question": question, "answer": ""})
            return False
    qid = f"g{len(run.records) + 1:04d}-{hashlib.sha1(chunk.id.encode()).hexdigest()[:8]}"
    run.records.append(GeneratedQuestion(
        id=qid, question=question, answer=answer,
        doc_ids=[chunk.doc_id] if answerable else [],
        spans=[{"doc_id": chunk.doc_id, "start": at[0], "end": at[1]}] if at else [],
        chunk_id=chunk.id, chunk_type=s, intent=intent, answerable=answerable,
        span_kind=span.kind if span else None,
        split=split_of(qid, run.seed, st["dev_share"]), generator=st["gen"],
        prompt_version=SPAN_PROMPT_VERSION if run.mode == "span" else PROMPT_VERSION))
    run.done[answerable] += 1
    return True


def _knowable(chat: ChatModel, r: GeneratedQuestion, threshold: float) -> GeneratedQuestion:
    """`r` with its knowable check (`closed_book`); an unanswerable question is not checked."""
    found = closed_book(chat, r.question, r.answer, threshold) if r.answerable else None
    return r.model_copy(update=found) if found else r


def _bound_knowable(records: list[GeneratedQuestion], rejected: list[dict[str, Any]],
                    share: float | None) -> list[GeneratedQuestion]:
    """The knowable questions kept up to `share` of the set (the first ones, in draw order);
    each one beyond it moved to `rejected` ("knowable beyond its share")."""
    if share is None:
        return records
    knowable = [r for r in records if r.knowable]
    # k knowable of a kept set of size m: k <= share * m, where m = unknowable + k
    rest = len(records) - len(knowable)
    keep = len(knowable) if share >= 1 else min(len(knowable), int(share * rest / (1 - share)))
    drop = {r.id for r in knowable[keep:]}
    for r in records:
        if r.id in drop:
            rejected.append({"chunk_id": r.chunk_id, "doc_id": r.doc_ids[0] if r.doc_ids else "",
                             "chunk_type": r.chunk_type, "intent": r.intent, "answerable": True,
                             "reason": "knowable beyond its share",
                             "detail": f"answered without context (F1 {r.closed_book_f1}); "
                                       f"{keep} knowable kept, at most {share:.0%} of the set",
                             "question": r.question, "answer": r.answer})
    return [r for r in records if r.id not in drop]


class _CountingChat:
    """The chat model, counting the calls made through it (cached replies included)."""

    def __init__(self, chat: ChatModel) -> None:
        self._chat = chat
        self.calls = 0
        self.model_id = getattr(chat, "model_id", type(chat).__name__)

    def chat(self, messages: list[dict[str, Any]], **kw: Any) -> Any:
        self.calls += 1
        return self._chat.chat(messages, **kw)


def _tee(items: Iterator[Any], seen: list[Any]) -> Iterator[Any]:
    """`items`, each also appended to `seen` as it is drawn (the consumer pops them in order)."""
    for item in items:
        seen.append(item)
        yield item


def _summary(records: list[GeneratedQuestion], rejected: list[dict], n: int, draws: int, seed: int,
             gen: str, unanswerable: float, max_copied: int, dup: float, knowable_f1: float,
             n_chunks: int) -> dict[str, Any]:
    return {
        "requested": n, "accepted": len(records), "drawn": draws, "chunks": n_chunks,
        "rejected": dict(Counter(r["reason"] for r in rejected)),
        "by_chunk_type": dict(Counter(r.chunk_type for r in records)),
        "by_intent": dict(Counter(r.intent for r in records)),
        "by_split": dict(Counter(r.split for r in records)),
        "documents": len({r.doc_ids[0] for r in records if r.doc_ids}),
        "unanswerable": sum(not r.answerable for r in records),
        "knowable": sum(bool(r.knowable) for r in records),
        "knowable_unchecked": sum(r.answerable and r.knowable is None for r in records),
        "settings": {"seed": seed, "unanswerable": unanswerable, "max_copied_words": max_copied,
                     "duplicate_jaccard": dup, "knowable_f1": knowable_f1},
        "generator": gen, "prompt_version": PROMPT_VERSION,
    }
