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

from agentic_rag.datasets.testset_filters import CorpusText, check_reply, clean_name
from agentic_rag.documents import Chunk, Document
from agentic_rag.evaluation.answers import token_f1
from agentic_rag.llm.calls import map_calls
from agentic_rag.llm.types import ChatModel, LLMError

PROMPT_VERSION = "testset-v4"  # the prompts; the filters are versioned by the code
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


def _split(qid: str, seed: int) -> Literal["dev", "test"]:
    """20 % dev, seeded, by the question's id (the packaged datasets' share)."""
    return "dev" if random.Random(f"{seed}:{qid}").random() < 0.2 else "test"


def generate_testset(docs: Sequence[Document], chat: ChatModel, n: int = 200, seed: int = 0,
                     unanswerable: float = 0.1, chunker: Callable[[Document], list[Chunk]]
                     | None = None, chunks: Sequence[Chunk] | None = None,
                     max_copied_words: int = 6, max_answer_words: int = 12,
                     duplicate_jaccard: float = 0.8, knowable_f1: float = 0.5,
                     check_knowable: bool = True, check_unanswerable: bool = False,
                     max_draws: int | None = None,
                     max_concurrency: int = 1, min_tokens: int = 25,
                     progress: Any = None) -> TestsetResult:
    """`n` accepted questions (about `unanswerable` of them without an answer in the corpus)
    from `docs`, drawing chunks in `sample_chunks` order until `n` pass the filters or the
    first `max_draws` chunks of that order (default 3 × n) are used up. `chunks`: the
    documents' chunks, when the caller has them already (the CLI chunks once, for its
    estimate and for this); else `chunker` makes them (the index's chunker; default
    `AgenticChunker()` with the default config). `max_concurrency`: generation calls in
    flight; the set is the same at any value (draws are judged in order). `progress`: an
    object whose `advance()` is called per accepted question (`llm_cost.Progress`).
    `min_tokens`: shorter chunks are not drawn (a heading line or a one-line stub has no
    question in it). `check_unanswerable`: each unanswerable question is also answered from
    the `CORPUS_CHECK_K` chunks BM25 ranks first for it, and rejected when the model answers.
    Off by default: its made-up name is in no document already, and a small model "answers"
    such questions from similar passages (6 of 7 on the banking sample: a fee for the
    "Secure Transfer Vault"), which is the failure abstention measures, not an answer."""
    if n < 1:
        raise ValueError(f"n: {n} is not >= 1")
    if not 0.0 <= unanswerable < 1.0:
        raise ValueError(f"unanswerable: {unanswerable} is not a share in [0, 1)")
    if not docs:
        raise ValueError("no documents to generate questions from")
    by_id = {d.id: d for d in docs}
    if chunks is not None:
        if chunker is not None:
            raise ValueError("pass chunks or a chunker, not both")
        if stray := next((c for c in chunks if c.doc_id not in by_id), None):
            raise ValueError(f"chunk {stray.id!r}: its document {stray.doc_id!r} is not in docs")
    else:
        if chunker is None:
            from agentic_rag.ingest.chunking import AgenticChunker

            chunker = AgenticChunker().chunk
        chunks = [c for d in docs for c in chunker(d)]
    quota = {False: round(n * unanswerable)}
    quota[True] = n - quota[False]
    every = max(2, round(1 / unanswerable)) if quota[False] else 0
    max_draws = max_draws if max_draws is not None else 3 * n
    gen = getattr(chat, "model_id", type(chat).__name__)
    records: list[GeneratedQuestion] = []
    rejected: list[dict[str, Any]] = []
    done = {True: 0, False: 0}

    def plan() -> Iterator[tuple[Chunk, bool]]:
        """Draw i is an unanswerable one when i % every == every - 1: fixed by i alone, so the
        set is the same at any concurrency (a draw whose kind is full is skipped below)."""
        for i, chunk in enumerate(sample_chunks(chunks, seed, min_tokens)):
            if i >= max_draws or all(done[k] >= quota[k] for k in quota):
                return
            answerable = not (every and i % every == every - 1)
            if done[answerable] < quota[answerable]:
                yield chunk, answerable

    def ask(item: tuple[Chunk, bool]) -> Any:
        chunk, answerable = item
        return _ask(chat, chunk, by_id[chunk.doc_id], answerable)

    draws, corpus_checks = 0, 0
    drawn = []
    lexical = None  # BM25 over `chunks`, built for the first unanswerable question
    corpus = CorpusText(docs) if quota[False] else None  # where a made-up name must not occur
    for _, reply in map_calls(ask, _tee(plan(), drawn), max_concurrency):
        chunk, answerable = drawn.pop(0)
        if done[answerable] >= quota[answerable]:
            continue  # drawn ahead by a concurrent run after its kind filled: not used
        draws += 1
        s = stratum(chunk)
        intent = INTENT_OF[s] if answerable else "fact"
        base = {"chunk_id": chunk.id, "doc_id": chunk.doc_id, "chunk_type": s, "intent": intent,
                "answerable": answerable}
        outcome = check_reply(reply, chunk, by_id[chunk.doc_id], answerable, records,
                              max_copied_words, max_answer_words, duplicate_jaccard,
                              corpus=corpus)
        if isinstance(outcome, dict):
            rejected.append({**base, **outcome})
            continue
        question, answer, span = outcome
        if not answerable and check_unanswerable:
            if lexical is None:
                from agentic_rag.store.lexical import LexicalIndex

                # what the index's BM25 reads: the chunk under its heading path
                lexical = LexicalIndex().build(list(chunks), [c.index_text() for c in chunks])
            corpus_checks += 1
            answered = _answer_from_corpus(chat, question, lexical, by_id)
            if answered is not None:
                rejected.append({**base, **answered, "question": question, "answer": ""})
                continue
        qid = f"g{len(records) + 1:04d}-{hashlib.sha1(chunk.id.encode()).hexdigest()[:8]}"
        records.append(GeneratedQuestion(
            id=qid, question=question, answer=answer,
            doc_ids=[chunk.doc_id] if answerable else [],
            spans=[{"doc_id": chunk.doc_id, "start": span[0], "end": span[1]}] if span else [],
            chunk_id=chunk.id, chunk_type=s, intent=intent, answerable=answerable,
            split=_split(qid, seed), generator=gen))
        done[answerable] += 1
        if progress is not None:
            progress.advance()
    if check_knowable:
        checked = dict(map_calls(lambda r: _knowable(chat, r, knowable_f1) if r.answerable
                                 else r, records, max_concurrency))
        records = [checked[i] for i in range(len(records))]
    summary = _summary(records, rejected, n, draws, seed, gen, unanswerable, max_copied_words,
                       duplicate_jaccard, knowable_f1, len(chunks))
    summary["unanswerable_checked"] = corpus_checks
    summary["settings"]["corpus_check_k"] = CORPUS_CHECK_K if check_unanswerable else None
    return TestsetResult(records, rejected, summary)


def estimate(n: int, chunks: Sequence[Chunk], check_knowable: bool = True,
             unanswerable: float = 0.0, check_unanswerable: bool = False) -> dict[str, int]:
    """The calls and tokens `generate_testset` should take for `n` questions: 1.5 draws per
    accepted question (an assumption until a run measures its rejection rate; the summary
    reports it), each the prompt (~180 tokens) + a passage of the chunks' mean size, ~40
    tokens out; a second call for each unanswerable draw (`_ask_about`, a ceiling: 13 of 18
    needed one on the banking sample) ~80 in, ~25 out; the closed-book check ~60 in, ~15
    out; with `check_unanswerable`, the corpus check of each unanswerable question
    (`corpus_checks`: `unanswerable` × n) ~60 + `CORPUS_CHECK_K` passages in, ~20 out."""
    mean = sum(c.token_count for c in chunks) / len(chunks) if chunks else 0
    draws = round(1.5 * n)
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


def _ask(chat: ChatModel, chunk: Chunk, doc: Document, answerable: bool) -> Any:
    """The generation call's reply, or the LLMError it ended with (recorded, not raised).
    An unanswerable draw whose question does not contain its made-up name gets a second
    call that is given the name (`_ask_about`)."""
    system = _SYSTEM.format(kind=_KIND_HINT[INTENT_OF[stratum(chunk)]]) if answerable \
        else _SYSTEM_UNANSWERABLE
    try:
        reply = chat.chat([{"role": "system", "content": system},
                           {"role": "user", "content": _passage(chunk, doc)}],
                          json_schema=_SCHEMA, max_tokens=120)
        return reply if answerable else _ask_about(chat, reply)
    except LLMError as exc:
        return exc


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
