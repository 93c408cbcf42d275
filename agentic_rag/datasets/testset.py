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
   lexical shortcut); near-duplicates of an accepted question are dropped.
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
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agentic_rag.datasets.spans import Span, candidate_spans, pick_span
from agentic_rag.datasets.testset_filters import CorpusText, check_reply, clean_name
from agentic_rag.documents import Chunk, Document
from agentic_rag.evaluation.answers import token_f1
from agentic_rag.llm.calls import map_calls
from agentic_rag.llm.types import ChatModel, LLMError

PROMPT_VERSION = "testset-v4"  # the free mode's prompts; the filters are versioned by the code
SPAN_PROMPT_VERSION = "testset-span-v1"  # the span-first prompt (issue 38)
STRATA = ("prose", "code", "table", "list")
INTENT_OF = {"prose": "fact", "code": "code", "table": "data", "list": "procedure"}

_KIND_HINT = {
    "fact": "a factual question (what, which, who, when, why) that the passage answers",
    "code": "a question asking how to write or call something in code, answered by the passage",
    "data": "a question asking for a specific value, number, limit or table entry in the passage",
    "procedure": "a question asking how to do something, answered by the passage's steps",
}
_SYSTEM = (
    "You write test questions for a documentation search engine. Given one passage: first copy "
    "a short answer from it, exactly as written (a name, number, value, option, command or "
    "phrase of 1 to 8 words); then write {kind}, whose answer is that text. Phrase the question "
    "the way a user who has NOT read the passage would ask it: in your own words, not copying "
    "phrases from the passage, and specific enough to have one answer (name the product, module "
    "or function it is about). Reply with JSON {{\"answer\": ..., \"question\": ...}}.")
_SYSTEM_UNANSWERABLE = (
    "You write test questions for a documentation search engine; this one must have NO answer "
    "in the documents. Read the passage, then make up a new name for something of the same "
    "kind as what it describes (another product, plan, function, option, person or place) "
    "that the passage does not mention, and ask one specific question about it. The question "
    "must contain the made-up name exactly. Examples:\n"
    "passage on the Blue Account's fees -> {\"answer\": \"Purple Saver Account\", "
    "\"question\": \"What is the monthly fee of the Purple Saver Account?\"}\n"
    "passage on json.loads -> {\"answer\": \"json.loads_strict\", \"question\": \"What does "
    "json.loads_strict raise on a duplicate key?\"}\n"
    "Reply with JSON {\"answer\": the made-up name, \"question\": ...}.")
# span mode (issue 38): the answer is chosen by rule; the model only writes its question
_SYSTEM_SPAN = (
    "You write test questions for a documentation search engine. You are given a passage and "
    "an ANSWER copied from it. Write one question whose answer is exactly the ANSWER, as a "
    "user who has NOT read the passage would ask it: in your own words, not copying phrases "
    "from the passage, never containing the ANSWER itself, and specific enough to have one "
    "answer (name the product, module, function, person or place it is about). Ask only "
    "about what the passage says. Reply with JSON {\"question\": ...}.")
_SPAN_SCHEMA = {"type": "object", "required": ["question"],
                "properties": {"question": {"type": "string", "maxLength": 300}}}
# the unanswerable check: the model, given the passages BM25 finds for the question, answers
# or says it cannot (the words `evaluation.answers.is_abstention` reads as an abstention)
CORPUS_CHECK_K = 5
_FROM_PASSAGES = ("Answer the question from the passages below only, in a few words. If they "
                  "do not answer it, reply exactly: I don't know.")
_CLOSED_BOOK = ("Answer the question in a few words, from what you know. If you do not know, "
                "say \"I don't know\".")
# the answer first (a grammar-constrained reply follows the properties' order): the model
# picks a short quote, then asks for it, rather than asking and then summarising the passage
_SCHEMA = {"type": "object", "required": ["answer", "question"],
           "properties": {"answer": {"type": "string", "maxLength": 80},
                          "question": {"type": "string", "maxLength": 300}}}


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


def _passage(chunk: Chunk, doc: Document) -> str:
    head = " > ".join(x for x in (doc.title, chunk.heading_path) if x)
    return (f"[{head}]\n" if head else "") + chunk.text


def _split(qid: str, seed: int, dev_share: float = 0.2) -> Literal["dev", "test"]:
    """`dev_share` of the questions dev (the packaged datasets' 20 % by default), seeded, by
    the question's id."""
    return "dev" if random.Random(f"{seed}:{qid}").random() < dev_share else "test"


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

    def full(self) -> bool:
        return all(self.done[k] >= self.quota[k] for k in self.quota)

    def plan(self) -> Iterator[tuple[Chunk, bool, Span | None]]:
        """Draw i is an unanswerable one when i % every == every - 1: fixed by i alone, so the
        set is the same at any concurrency (a draw whose kind is full is skipped below). In
        span mode an answerable draw from a chunk with no candidate span costs no call: it
        is recorded ("no answer span") and the next chunk is drawn."""
        for i, chunk in enumerate(sample_chunks(self.chunks, self.seed, self.min_tokens)):
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


def chunk_span(chunk: Chunk, doc: Document) -> Span | None:
    """The answer span the span-first generator asks about for `chunk` (`spans.pick_span`
    over its `candidate_spans`, seeded by the chunk id), offsets into the passage."""
    passage = doc.text[chunk.start_char:chunk.end_char]
    heading = " ".join(x for x in (doc.title, chunk.heading_path) if x)
    return pick_span(candidate_spans(passage, chunk.chunk_type, heading), chunk.id)


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
                     dev_share: float = 0.2) -> TestsetResult:
    """`n` accepted questions (about `unanswerable` of them without an answer in the corpus)
    from `docs`, drawing chunks in `sample_chunks` order until `n` pass the filters or the
    first `max_draws` chunks of that order (default 3 × n) are used up. `mode`: "span"
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
    share"); None keeps them all. `dev_share`: the questions' share in the dev split."""
    _check_args(n, unanswerable, docs, mode, max_knowable_share, dev_share)
    by_id = {d.id: d for d in docs}
    chunks = _chunks_of(docs, by_id, chunker, chunks)
    quota = {False: round(n * unanswerable)}
    quota[True] = n - quota[False]
    counting = _CountingChat(chat)
    run = _Run(counting, chunks, by_id, mode, quota,
               max(2, round(1 / unanswerable)) if quota[False] else 0, seed,
               max_draws if max_draws is not None else 3 * n, min_tokens)
    gen = getattr(chat, "model_id", type(chat).__name__)
    settings = {"max_copied_words": max_copied_words, "max_answer_words": max_answer_words,
                "duplicate_jaccard": duplicate_jaccard, "check_unanswerable": check_unanswerable,
                "dev_share": dev_share, "gen": gen}
    corpus = CorpusText(docs) if quota[False] else None  # where a made-up name must not occur
    drawn: list[tuple[Chunk, bool, Span | None]] = []

    def ask(item: tuple[Chunk, bool, Span | None]) -> Any:
        chunk, answerable, span = item
        return _ask(counting, chunk, by_id[chunk.doc_id], answerable, span)

    for _, reply in map_calls(ask, _tee(run.plan(), drawn), max_concurrency):
        chunk, answerable, span = drawn.pop(0)
        if run.done[answerable] >= run.quota[answerable]:
            continue  # drawn ahead by a concurrent run after its kind filled: not used
        if _judge(run, reply, chunk, answerable, span, corpus, settings) and progress is not None:
            progress.advance()
    records = run.records
    if check_knowable:
        checked = dict(map_calls(lambda r: _knowable(counting, r, knowable_f1) if r.answerable
                                 else r, records, max_concurrency))
        records = [checked[i] for i in range(len(records))]
    records = _bound_knowable(records, run.rejected, max_knowable_share)
    summary = _summary(records, run.rejected, n, run.draws, seed, gen, unanswerable,
                       max_copied_words, duplicate_jaccard, knowable_f1, len(chunks))
    summary.update({"mode": mode, "prompt_version": SPAN_PROMPT_VERSION if mode == "span"
                    else PROMPT_VERSION, "no_answer_span": run.no_span, "llm_calls": counting.calls,
                    "calls_per_kept": round(counting.calls / len(records), 2) if records else None,
                    "accepted_share_of_draws": round(len(records) / run.draws, 3)
                    if run.draws else None, "unanswerable_checked": run.corpus_checks})
    summary["settings"].update({"corpus_check_k": CORPUS_CHECK_K if check_unanswerable else None,
                                "max_knowable_share": max_knowable_share,
                                "dev_share": dev_share})
    return TestsetResult(records, run.rejected, summary)


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
    if span is not None:  # the chosen span itself, not an earlier copy of its words
        at = (chunk.start_char + span.start, chunk.start_char + span.end)
    if not answerable and st["check_unanswerable"]:
        if run.lexical is None:
            from agentic_rag.store.lexical import LexicalIndex

            # what the index's BM25 reads: the chunk under its heading path
            run.lexical = LexicalIndex().build(run.chunks, [c.index_text() for c in run.chunks])
        run.corpus_checks += 1
        answered = _answer_from_corpus(run.chat, question, run.lexical, run.by_id)
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
        split=_split(qid, run.seed, st["dev_share"]), generator=st["gen"],
        prompt_version=SPAN_PROMPT_VERSION if run.mode == "span" else PROMPT_VERSION))
    run.done[answerable] += 1
    return True


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


def estimate(n: int, chunks: Sequence[Chunk], check_knowable: bool = True,
             unanswerable: float = 0.0, check_unanswerable: bool = False,
             mode: str = "span") -> dict[str, int]:
    """The calls and tokens `generate_testset` should take for `n` questions: draws per
    accepted question 1.5 in free mode, 1.3 in span mode (assumptions until a run measures
    its rejection rate; the summary reports it), each the prompt (~180 tokens) + a passage
    of the chunks' mean size, ~40 tokens out; a second call for each unanswerable draw
    (`_ask_about`, a ceiling) ~80 in, ~25 out; the closed-book check ~60 in, ~15 out; with
    `check_unanswerable`, the corpus check of each unanswerable question ~60 +
    `CORPUS_CHECK_K` passages in, ~20 out."""
    mean = sum(c.token_count for c in chunks) / len(chunks) if chunks else 0
    draws = round((1.3 if mode == "span" else 1.5) * n)
    k = n if check_knowable else 0
    second = round(draws * unanswerable)
    u = round(n * unanswerable) if check_unanswerable else 0
    return {"llm_calls": draws + second + k + u,
            "prompt_tokens_est": round(draws * (180 + mean) + second * 80 + k * 60
                                       + u * (60 + CORPUS_CHECK_K * (mean + 10))),
            "completion_tokens_est": draws * 40 + second * 25 + k * 15 + u * 20,
            "corpus_checks": u}


def _tee(items: Iterator[Any], seen: list[Any]) -> Iterator[Any]:
    """`items`, each also appended to `seen` as it is drawn (the consumer pops them in order)."""
    for item in items:
        seen.append(item)
        yield item


def _ask(chat: ChatModel, chunk: Chunk, doc: Document, answerable: bool,
         span: Span | None = None) -> Any:
    """The generation call's reply, or the LLMError it ended with (recorded, not raised).
    With a `span` (span mode) the model is given the answer and writes the question; the
    reply is rewritten as {"answer": span, "question": ...} for the filters. An
    unanswerable draw whose question does not contain its made-up name gets a second call
    that is given the name (`_ask_about`)."""
    try:
        if span is not None:
            return _ask_for_span(chat, chunk, doc, span)
        system = _SYSTEM.format(kind=_KIND_HINT[INTENT_OF[stratum(chunk)]]) if answerable \
            else _SYSTEM_UNANSWERABLE
        reply = chat.chat([{"role": "system", "content": system},
                           {"role": "user", "content": _passage(chunk, doc)}],
                          json_schema=_SCHEMA, max_tokens=120)
        return reply if answerable else _ask_about(chat, reply)
    except LLMError as exc:
        return exc


def _ask_for_span(chat: ChatModel, chunk: Chunk, doc: Document, span: Span) -> Any:
    reply = chat.chat([{"role": "system", "content": _SYSTEM_SPAN},
                       {"role": "user", "content": f"{_passage(chunk, doc)}\n\n"
                                                   f"ANSWER: {span.text}"}],
                      json_schema=_SPAN_SCHEMA, max_tokens=100)
    try:
        question = reply.json().get("question")
    except (ValueError, TypeError, AttributeError):
        return reply  # malformed: rejected as such
    if not isinstance(question, str):
        return reply
    return reply.model_copy(update={"content": json.dumps({"answer": span.text,
                                                           "question": question})})


_SYSTEM_ABOUT = (
    "Write one short, specific question that a customer or a developer might ask about the "
    "thing named below: its fee, limit, rate, default, requirement, or how to use it. The "
    "question must contain the name exactly as given, and must not ask for the name. Reply "
    "with JSON {\"question\": ...}.")
_ABOUT_SCHEMA = {"type": "object", "required": ["question"],
                 "properties": {"question": {"type": "string", "maxLength": 300}}}


def _ask_about(chat: ChatModel, reply: Any) -> Any:
    """`reply` when its question contains its made-up name (or it has none, or is malformed:
    the filters say so); else a reply with the name and a question written for it by a
    second call. Qwen2.5-Coder 1.5B mostly makes up a good name, then leaves it out of its
    question (13 of 18 draws on the banking sample; 7 of them ask for a name: "What is the
    name of the account that ...?")."""
    try:
        data = reply.json()
    except (ValueError, TypeError):
        return reply
    name = clean_name(str(data.get("answer") or "")) if isinstance(data, dict) else ""
    if not name or name.lower() in str(data.get("question", "")).lower():
        return reply
    second = chat.chat([{"role": "system", "content": _SYSTEM_ABOUT},
                        {"role": "user", "content": f"Name: {name}"}],
                       json_schema=_ABOUT_SCHEMA, max_tokens=80)
    try:
        question = second.json().get("question", "")
    except (ValueError, TypeError, AttributeError):
        return second  # malformed: rejected as such
    return second.model_copy(update={"content": json.dumps({"answer": name,
                                                            "question": question})})


def _answer_from_corpus(chat: ChatModel, question: str, lexical: Any,
                        docs: dict[str, Document]) -> dict[str, Any] | None:
    """None when the model, given the top `CORPUS_CHECK_K` BM25 chunks for `question`, says it
    does not know (or BM25 finds no chunk); else the rejection: "answerable from the corpus" with the answer it gave
    and the chunk ids (an LLM failure is an "llm error" rejection: the question is unchecked)."""
    from agentic_rag.evaluation.answers import is_abstention

    hits = lexical.search(question, CORPUS_CHECK_K)
    if not hits:
        return None  # no chunk shares a word with it: nothing to answer from, no call
    passages = "\n\n".join(f"Passage {i}:\n{_passage(h.chunk, docs[h.chunk.doc_id])}"
                            for i, h in enumerate(hits, 1))
    ids = [h.chunk.id for h in hits]
    try:
        reply = chat.chat([{"role": "system", "content": _FROM_PASSAGES},
                           {"role": "user", "content": f"{passages}\n\nQuestion: {question}"}],
                          max_tokens=60)
    except LLMError as exc:
        return {"reason": "llm error", "detail": f"corpus check: {exc.kind}: {str(exc)[:200]}",
                "corpus_chunks": ids}
    said = " ".join(reply.content.split())
    if not said or is_abstention(said):
        return None
    return {"reason": "answerable from the corpus", "detail": f"answered {said[:200]!r} from "
            f"the top {len(ids)} BM25 chunks", "corpus_answer": said, "corpus_chunks": ids}


def _knowable(chat: ChatModel, r: GeneratedQuestion, threshold: float) -> GeneratedQuestion:
    """The model's closed-book answer scored against the reference; an LLM failure leaves
    `knowable` None (not checked), never False."""
    try:
        reply = chat.chat([{"role": "system", "content": _CLOSED_BOOK},
                           {"role": "user", "content": r.question}], max_tokens=40)
    except LLMError:
        return r
    f1 = round(token_f1(reply.content, [r.answer]), 3)
    return r.model_copy(update={"knowable": f1 >= threshold, "closed_book_f1": f1})


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
