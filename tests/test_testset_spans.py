"""Span-first generation (issue 38): answer spans chosen by rule, the model only asks; the new
filters (answer made of the question's words, fragment answers, a premise the passage does
not state, knowable questions kept at a bounded share), each with its reason."""

from __future__ import annotations

import json

import pytest

from agentic_rag.datasets.spans import KINDS, candidate_spans, pick_span
from agentic_rag.datasets.testset import generate_testset
from agentic_rag.datasets.testset_filters import (
    REASONS,
    answer_in_question_words,
    fragment_answer,
    premise_not_in_passage,
)
from agentic_rag.documents import Document
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.llm.types import ChatReply

PASSAGE = ("The Harbor account has a monthly fee of 7 dollars unless the balance stays above "
           "900 dollars. Call `harbor.connect` with the `timeout=30` option. Since Python 3.9 "
           "the module was rewritten by Guido van Rossum in 2008.\n"
           "- Fill in the green form.\n- Show a photo identity document.\n"
           "A **context manager** is an object. Such a thing is called Blue Saver.")


def test_candidate_spans_are_verbatim_short_and_ordered_by_kind():
    spans = candidate_spans(PASSAGE, "prose", heading="Harbor fees")
    texts = {s.text: s.kind for s in spans}
    assert texts["harbor.connect"] == "code" and texts["timeout=30"] == "code"
    assert texts["7 dollars"] == "number" and texts["2008"] == "number"
    assert texts["context manager"] == "term" and texts["Blue Saver"] == "term"
    assert texts["Show a photo identity document"] == "item"
    assert "Guido van Rossum" in texts
    for s in spans:
        assert PASSAGE[s.start:s.end] == s.text and len(s.text.split()) <= 8
    assert [KINDS.index(s.kind) for s in spans] == sorted(KINDS.index(s.kind) for s in spans)
    # nothing of the heading, no bare one-digit number
    assert "Harbor" not in texts and "7" not in texts


def test_table_cells_and_code_identifiers_are_candidates():
    table = "| item | fee |\n|---|---|\n| wire transfer | 12 dollars |\n"
    found = {s.text: s.kind for s in candidate_spans(table, "table")}
    # a cell that is a number with its unit is a number first (each text once)
    assert found == {"wire transfer": "cell", "12 dollars": "number"}
    code = "client = harbor.connect(token='abc', retries=3)\nclient.accounts.list(active_only=True)"
    found = {s.text for s in candidate_spans(code, "code")}
    assert {"harbor.connect", "client.accounts.list", "active_only", "retries"} <= found


def test_pieces_of_longer_tokens_and_one_letter_answers_are_not_candidates():
    text = "Write to `py-dev` at python-dev@googlegroups.com; the `%S` directive gives seconds."
    found = {s.text for s in candidate_spans(text, "code")}
    assert "googlegroups.com" not in found and "%S" not in found and "py-dev" in found


def test_the_span_picked_for_a_chunk_is_seeded_by_its_id_and_of_the_first_kind():
    spans = candidate_spans(PASSAGE, "prose")
    a, b = pick_span(spans, "chunk-1"), pick_span(spans, "chunk-1")
    assert a == b and a.kind == "code"
    assert pick_span([], "x") is None


@pytest.mark.parametrize("question,answer,restates", [
    ("What are the last 48 bits of a UUID?", "48 bits of the UUID", True),
    ("What is the underlying object of a memory view?", "The underlying object of the memoryview",
     True),
    ("How many bits does a UUID's node field hold?", "48 bits", False),
    ("Which function parses a JSON string?", "json.loads", False),
])
def test_an_answer_made_of_the_questions_words_is_caught(question, answer, restates):
    assert answer_in_question_words(question, answer) is restates


@pytest.mark.parametrize("answer,why", [
    ("the asyncio TaskGroup of", "ends on 'of'"), ("create_task(", "ends in '('"),
    ("see **", "ends in '*'"), ("`json.loads", "unclosed `"), ("f(x, y", "unbalanced ()"),
    ("json.loads", None), ("48 bits", None), ("asyncio.TaskGroup", None),
])
def test_a_fragment_answer_is_caught(answer, why):
    got = fragment_answer(answer)
    assert (got is None) == (why is None) and (why is None or got.startswith(why.split(" ")[0]))


def test_a_premise_the_passage_does_not_state_is_caught():
    passage = "typing: support for type hints. New in version 3.5. See `typing.Any`."
    assert premise_not_in_passage("In which version was the typing module deprecated?",
                                  passage) is not None
    assert "3.9" in premise_not_in_passage("What changed in typing in 3.9?", passage)
    assert premise_not_in_passage("Which version added the typing module?", passage) is None
    assert premise_not_in_passage("What does `typing.Any` stand for?", passage) is None


DOCS = [Document(id=f"docs/{t}.md", title=t, text=f"# {t}\n\nThe {t} service waits {20 + i} "
                 f"seconds before a retry, and the `{t}_limit` option caps uploads at "
                 f"{100 + i} files per day for every {t} account holder.\n")
        for i, t in enumerate(["harbor", "meadow", "copper", "lantern", "orchid", "falcon", "willow",
                               "granite", "cedar", "pebble"])]


class SpanAsker:
    """Writes a question for the answer it is given; a defect chosen by the document, so that
    each new filter meets one; closed-book it "knows" the harbor and meadow answers."""

    model_id = "scripted-span"

    def __init__(self) -> None:
        self.calls = self.round_trips = 0
        self.answers: dict[str, str] = {}  # question → the answer it was written for

    def chat(self, messages, *, json_schema=None, max_tokens=None, **kw):  # noqa: ANN001, ANN003, ANN201
        self.calls += 1
        user = messages[-1]["content"]
        if messages[0]["content"].startswith("Answer the question from the passage below"):
            # the round-trip check: the answer it wrote the question for, but for pebble's
            q = user.rsplit("Question: ", 1)[1]
            self.round_trips += 1
            return ChatReply(content="I don't know." if "pebble" in q else
                             f"It is {self.answers[q]}.")
        if json_schema is None:  # the closed-book check: the reference answer, for two docs
            known = {"harbor", "meadow", "copper"}
            return ChatReply(content=self.answers[user] if any(k in user.lower() for k in known)
                             else "no idea")
        assert "ANSWER: " in user and json_schema["required"] == ["question"]
        answer = user.rsplit("ANSWER: ", 1)[1]
        topic = user.split("]")[0].strip("[").split(" ")[0]
        q = {"orchid": f"What is the {answer} setting of the orchid service?",  # repeats it
             "falcon": "In which version was the falcon service deprecated?",  # false premise
             }.get(topic, f"Which {topic} setting caps {topic}-account uploads?")
        self.answers[q] = answer
        return ChatReply(content=json.dumps({"question": q}))


def _gen(chat, **kw):  # noqa: ANN001, ANN003, ANN202
    return generate_testset(DOCS, chat, n=10, seed=0, unanswerable=0.0, min_tokens=5,
                            chunker=AgenticChunker().chunk, **kw)


def test_span_mode_keeps_verbatim_spans_and_records_each_new_reason():
    chat = SpanAsker()
    res = _gen(chat, max_knowable_share=None)
    for r in res.records:
        d = next(x for x in DOCS if x.id == r.doc_ids[0])
        sp = r.spans[0]
        assert d.text[sp["start"]:sp["end"]] == r.answer and r.span_kind == "code"
        assert r.prompt_version == "testset-span-v1"
    reasons = {r["reason"] for r in res.rejected}
    assert {"question repeats the answer", "premise not in the passage"} <= reasons
    assert reasons <= set(REASONS)
    s = res.summary
    assert s["mode"] == "span" and s["drawn"] == len(res.records) + len(res.rejected)
    assert s["llm_calls"] == chat.calls and s["accepted_share_of_draws"] == round(
        len(res.records) / s["drawn"], 3)


def test_knowable_questions_are_kept_at_a_bounded_share():
    free = _gen(SpanAsker(), max_knowable_share=None)
    assert sum(bool(r.knowable) for r in free.records) == 3  # harbor, meadow, copper
    bounded = _gen(SpanAsker(), max_knowable_share=0.25)
    k = sum(bool(r.knowable) for r in bounded.records)
    assert len(bounded.records) == 5 and k == 1 and k <= 0.25 * len(bounded.records)
    dropped = [r for r in bounded.rejected if r["reason"] == "knowable beyond its share"]
    assert len(dropped) == 2 and all("F1" in r["detail"] for r in dropped)
    assert len(bounded.records) == len(free.records) - 2


def test_a_question_whose_passage_answers_something_else_does_not_round_trip():
    """Span mode answers each question that passed the filters from its own passage: "It is
    <span>." is the span (contained); pebble's "I don't know." is not, and that question is
    rejected with what the model said. Off, pebble's question is kept; the check costs one
    call per question it reads."""
    on, off = SpanAsker(), SpanAsker()
    checked, unchecked = _gen(on, max_knowable_share=None), _gen(off, max_knowable_share=None,
                                                                  round_trip=False)
    (rej,) = [r for r in checked.rejected if r["reason"] == "answer does not round-trip"]
    assert rej["doc_id"] == "docs/pebble.md" and rej["answer"] == "pebble_limit"
    assert "I don't know" in rej["detail"] and rej["round_trip_answer"] == "I don't know."
    assert "docs/pebble.md" in {r.doc_ids[0] for r in unchecked.records}
    assert {r.doc_ids[0] for r in checked.records} == \
        {r.doc_ids[0] for r in unchecked.records} - {"docs/pebble.md"}
    # one call per question that passed the filters: the kept ones and pebble's
    assert on.round_trips == len(checked.records) + 1 and off.round_trips == 0
    assert checked.summary["settings"]["round_trip"] is True
    assert unchecked.summary["settings"]["round_trip"] is False


def test_a_chunk_without_an_answer_span_costs_no_call():
    docs = [Document(id="docs/plain.md", title="plain", text="# plain\n\nthis text has no "
                     "number, no code and no names in it at all, only plain words here.\n")]
    chat = SpanAsker()
    res = generate_testset(docs, chat, n=2, unanswerable=0.0, min_tokens=5,
                           chunker=AgenticChunker().chunk)
    assert chat.calls == 0 and res.records == [] and res.summary["no_answer_span"] == 1


@pytest.mark.parametrize(("question", "deictic"), [
    ("What is the output of the code snippet provided?", True),
    ("What does the given code snippet print?", True),
    ("Which function does the example above call?", True),
    ("What is the default text encoding of `open`?", False),
    ("What does the status code 404 of `http.HTTPStatus` mean?", False),
    ("Which exception does `asyncio.wait_for` raise on timeout?", False),
    # questions kept from Node.js API pages (2026-12-05) and the banking pages
    ("What is the MAC address of the eth0 interface in the given network configuration?", True),
    ("What is the total CPU time reported by `os.cpus()` in the given JSON data?", True),
    ("What is the spend target for planting trees based on the given information?", True),
    ("What is the maximum amount withdrawn from a foreign ATM using the provided fee structure?",
     True),
    ("What version of the documentation search engine introduced `path.delimiter`?", True),
    ("What module in the documentation provides background on transaction control?", True),
    ("What does `path.join` do with the given arguments?", False),  # the call's own arguments
    ("Which Node.js version added the `timeout.hasRef()` method?", False),
    ("Where does the documentation of the Blue Account list its fees?", False),
    ("Which fee is listed in the documentation for the Blue Account?", False),  # names it
    # "context" as a library's own term (click's docs, 2026-12-06) is no passage
    ("What is the name of the dictionary that contains the context settings for a command?", False),
    ("Which method retrieves the parameter source from the context object?", False),
    ("What does an exit code of 0 indicate in the context of a shell script?", False),
    ("What is the default timeout in the given context?", True),
    ("According to the context, which option counts repetitions?", True),
    ("What does `ctx.obj` hold in the context provided?", True),
])
def test_questions_that_point_at_their_snippet_refer_to_the_passage(question, deictic):
    from agentic_rag.datasets.testset_filters import _DEICTIC

    assert bool(_DEICTIC.search(question)) is deictic


@pytest.mark.parametrize(("said", "span", "passes"), [
    ("It is os.path.", "os.path", True),  # code: the span's own characters
    ("list", "list", True),
    ("The function returns a list of every name the module defines, sorted.", "list", False),
    ("I don't know.", "pebble_limit", False),
    ("3.10 and later", "3.10", True),
])
def test_the_round_trip_counts_a_span_contained_only_in_a_short_reply(said, span, passes):
    assert round_trips(said, span) is passes


def round_trips(said: str, span: str) -> bool:
    """The round trip's verdict when the model answers `said` for a question on `span`."""
    from agentic_rag.datasets.testset_prompts import round_trip

    class Says:
        def chat(self, messages, **kw):  # noqa: ANN001, ANN003, ANN202
            return ChatReply(content=said)

    doc = DOCS[0]
    chunk = AgenticChunker().chunk(doc)[0]
    return round_trip(Says(), "Which one?", span, chunk, doc) is None


@pytest.mark.parametrize(("said", "span", "passes"), [
    ("pprint", "pprint.pprint", True),  # the bare name of a qualified span
    ("`update`", "~Counter.update", True),  # an RST role's target
    ("SIGCHLD", "~signal.SIGCHLD", True),
    ("os.path.join()", "join", True),
    ("stat", "p.lstat", False),  # another name
    ("os.path.split", "os.path.join", False),
    ("str.join", "bytes.join", False),  # two functions, the same last name
    ("shlex.join", "os.path.join", False),
    ("path.join", "os.path.join", True),  # a dotted tail
    ("It calls pprint.", "pprint.pprint", False),  # not an identifier alone
])
def test_the_round_trip_takes_a_qualified_and_a_bare_identifier_as_one_answer(said, span, passes):
    assert round_trips(said, span) is passes


def test_the_span_prompt_and_the_round_trip_prompt_are_unchanged():
    """Their text keys the cached replies of every committed pack: a change re-asks them all."""
    import hashlib

    from agentic_rag.datasets import testset_prompts as tp

    digest = {k: hashlib.sha1(getattr(tp, k).encode()).hexdigest()[:12]
              for k in ("_SYSTEM_SPAN", "_FROM_PASSAGE")}
    assert digest == {"_SYSTEM_SPAN": "b2ffab0585cd", "_FROM_PASSAGE": "fa4d0b149bb9"}
