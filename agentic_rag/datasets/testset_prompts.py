"""The LLM calls a generated test set makes: its prompts, reply schemas and versions.

`ask` writes a question for a drawn chunk (free mode: the model copies a short answer from the
passage, then asks for it; span mode: it is given the answer and writes the question; an
unanswerable draw asks about a made-up sibling of what the passage describes, with a second call
`ask_about` when the question leaves the name out). `answer_from_corpus` is the optional
unanswerable check against the whole corpus; `closed_book` the knowable check. Every call goes
through the chat model's reply cache; a failed call comes back as its `LLMError`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentic_rag.datasets.spans import Span
from agentic_rag.datasets.testset_filters import clean_name
from agentic_rag.datasets.testset_sampling import INTENT_OF, passage, stratum
from agentic_rag.documents import Chunk, Document
from agentic_rag.evaluation.answers import token_f1
from agentic_rag.llm.types import ChatModel, LLMError

PROMPT_VERSION = "testset-v4"  # the free mode's prompts; the filters are versioned by the code


SPAN_PROMPT_VERSION = "testset-span-v1"  # the span-first prompt (issue 38)


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


# the reply of a call that writes only a question (span mode, `ask_about`)
_QUESTION_SCHEMA = {"type": "object", "required": ["question"],
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


def ask(chat: ChatModel, chunk: Chunk, doc: Document, answerable: bool,
         span: Span | None = None) -> Any:
    """The generation call's reply, or the LLMError it ended with (recorded, not raised).
    With a `span` (span mode) the model is given the answer and writes the question; the
    reply is rewritten as {"answer": span, "question": ...} for the filters. An
    unanswerable draw whose question does not contain its made-up name gets a second call
    that is given the name (`ask_about`)."""
    try:
        if span is not None:
            return _ask_for_span(chat, chunk, doc, span)
        system = _SYSTEM.format(kind=_KIND_HINT[INTENT_OF[stratum(chunk)]]) if answerable \
            else _SYSTEM_UNANSWERABLE
        reply = chat.chat([{"role": "system", "content": system},
                           {"role": "user", "content": passage(chunk, doc)}],
                          json_schema=_SCHEMA, max_tokens=120)
        return reply if answerable else ask_about(chat, reply)
    except LLMError as exc:
        return exc


def _ask_for_span(chat: ChatModel, chunk: Chunk, doc: Document, span: Span) -> Any:
    reply = chat.chat([{"role": "system", "content": _SYSTEM_SPAN},
                       {"role": "user", "content": f"{passage(chunk, doc)}\n\n"
                                                   f"ANSWER: {span.text}"}],
                      json_schema=_QUESTION_SCHEMA, max_tokens=100)
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


def ask_about(chat: ChatModel, reply: Any) -> Any:
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
                       json_schema=_QUESTION_SCHEMA, max_tokens=80)
    try:
        question = second.json().get("question", "")
    except (ValueError, TypeError, AttributeError):
        return second  # malformed: rejected as such
    return second.model_copy(update={"content": json.dumps({"answer": name,
                                                            "question": question})})


def answer_from_corpus(chat: ChatModel, question: str, lexical: Any,
                        docs: dict[str, Document]) -> dict[str, Any] | None:
    """None when the model, given the top `CORPUS_CHECK_K` BM25 chunks for `question`, says it
    does not know (or BM25 finds no chunk); else the rejection: "answerable from the corpus" with the answer it gave
    and the chunk ids (an LLM failure is an "llm error" rejection: the question is unchecked)."""
    from agentic_rag.evaluation.answers import is_abstention

    hits = lexical.search(question, CORPUS_CHECK_K)
    if not hits:
        return None  # no chunk shares a word with it: nothing to answer from, no call
    passages = "\n\n".join(f"Passage {i}:\n{passage(h.chunk, docs[h.chunk.doc_id])}"
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


_FROM_PASSAGE = ("Answer the question from the passage below only, with the shortest exact "
                 "words of the passage that answer it. If the passage does not answer it, "
                 "reply exactly: I don't know.")


def round_trip(chat: ChatModel, question: str, answer: str, chunk: Chunk, doc: Document,
               threshold: float = 0.5) -> dict[str, Any] | None:
    """The round-trip check (Alberti et al., ACL 2019): the model answers `question` from its
    own passage; None when that answer is the reference `answer` (token F1 >= `threshold`, or
    the reference contained in a reply of at most 2 × its words + 3, as normalised words or
    as its own characters, or the same identifier qualified or bare: `same_identifier`),
    else the rejection "answer does not round-trip" with what it answered. It catches a
    question whose answer is not the span it was written for (the span-first generator's
    commonest defect: 6 of 30 questions an LLM read). An LLM failure is an "llm error"
    rejection: the question is unchecked."""
    from agentic_rag.evaluation.containment import contains_answer

    try:
        reply = chat.chat([{"role": "system", "content": _FROM_PASSAGE},
                           {"role": "user", "content": f"{passage(chunk, doc)}\n\n"
                                                       f"Question: {question}"}],
                          max_tokens=40)
    except LLMError as exc:
        return {"reason": "llm error", "detail": f"round-trip check: {exc.kind}: {str(exc)[:200]}"}
    said = " ".join(reply.content.split())
    f1 = token_f1(said, [answer])
    # contained: only in a short reply (a long one contains any short or common span), as
    # words (`contains_answer`), or as the span's own characters (normalising strips the dot
    # of `os.path`)
    short = len(said.split()) <= 2 * len(answer.split()) + 3
    contained = short and (contains_answer(said, [answer]) == 1.0
                           or answer.strip().lower() in said.lower())
    if f1 >= threshold or contained or same_identifier(said, answer):
        return None
    return {"reason": "answer does not round-trip", "detail": f"from its passage the model "
            f"answered {said[:120]!r} (token F1 {f1:.2f} against {answer!r})",
            "round_trip_answer": said[:200]}


# an identifier, maybe dotted, as a reply or a span writes it: `os.path.join`, join(),
# ~Counter.update (an RST role's target), "pprint."
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _identifier(text: str) -> str | None:
    t = text.strip().strip("`'\"").rstrip(".").strip("`'\"").lstrip("~!")
    t = t.removesuffix("()")
    return t if _IDENTIFIER.fullmatch(t) else None


def same_identifier(said: str, answer: str) -> bool:
    """`said` and `answer` are both identifiers (dotted or not, in backticks or quotes, with
    or without "()"), one the other or its dotted tail: "pprint" answers "pprint.pprint", and
    "os.path.join" answers "join" (but "str.join" does not answer "bytes.join"). 19 of the
    128 failed round trips on the Python library reference were such pairs (issue 38)."""
    a, b = _identifier(said), _identifier(answer)
    if a is None or b is None:
        return False
    # one the other's dotted tail: "os.path.join" ~ "path.join" ~ "join", never "shlex.join"
    return a == b or a.endswith("." + b) or b.endswith("." + a)


def closed_book(chat: ChatModel, question: str, answer: str, threshold: float
                ) -> dict[str, Any] | None:
    """The knowable check: the model's closed-book answer to `question` scored against the
    reference `answer` by token F1, as `{"knowable": f1 >= threshold, "closed_book_f1": f1}`;
    None on an LLM failure (not checked, never "not knowable")."""
    try:
        reply = chat.chat([{"role": "system", "content": _CLOSED_BOOK},
                           {"role": "user", "content": question}], max_tokens=40)
    except LLMError:
        return None
    f1 = round(token_f1(reply.content, [answer]), 3)
    return {"knowable": f1 >= threshold, "closed_book_f1": f1}
