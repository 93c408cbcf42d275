"""The generated test set (issue 21): stratified sampling, each filter with its recorded
reason, gold spans that point at the answer, the same set at any concurrency, and
`load_local` reading it back. The generator is a scripted chat model here; the real model
runs in `make`-level checks and the notebook."""

from __future__ import annotations

import json
import re
import zlib

import pytest

from agentic_rag.datasets.base import DatasetError
from agentic_rag.datasets.qa import load_local
from agentic_rag.datasets.testset import GeneratedQuestion, generate_testset
from agentic_rag.datasets.testset_filters import REASONS, check_reply, longest_common_run, pronoun_subject
from agentic_rag.datasets.testset_sampling import sample_chunks, stratum
from agentic_rag.documents import Chunk, Document
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.llm.types import ChatReply, LLMError

DOCS = {
    "fees.md": "# Fees\n\nThe Harbor account has a monthly fee of 7 dollars unless the balance "
               "stays above 900 dollars for the whole statement period.\n\n"
               "| item | fee |\n|---|---|\n| wire transfer | 12 dollars |\n| paper statement | "
               "2 dollars |\n",
    "setup.md": "# Setup\n\nTo open a Harbor account:\n\n1. Fill in the green intake form at "
                "any branch.\n2. Show a photo identity document.\n3. Deposit at least 25 "
                "dollars.\n\n```python\nclient = harbor.connect(token='abc', timeout=30)\n"
                "client.accounts.list(active_only=True)\n```\n",
    "limits.md": "# Limits\n\nDaily cash withdrawals are capped at 600 dollars per card, at "
                 "Harbor machines and at partner machines alike, reset at midnight.\n",
    "hours.md": "# Hours\n\nBranches open at nine in the morning on weekdays and close at five, "
                "except on public holidays, when every branch stays closed all day.\n",
    "cards.md": "# Cards\n\nA lost card is blocked within four minutes of the call; the "
                "replacement card arrives by post after six working days, free of charge, "
                "the first time each calendar year.\n",
}


def _docs() -> list[Document]:
    return [Document(id=f"docs/{k}", text=v, title=k.removesuffix(".md")) for k, v in DOCS.items()]


def _chunker(doc: Document) -> list[Chunk]:
    return AgenticChunker().chunk(doc)


def _generate(chat=None, **kw):  # noqa: ANN001, ANN003
    """Every chunk of the small corpus drawn (n above what it can give), short ones too."""
    args = {"n": 10, "seed": 0, "unanswerable": 0.2, "chunker": _chunker, "max_draws": 40,
            "min_tokens": 5, "mode": "free", "max_knowable_share": None, **kw}
    return generate_testset(_docs(), chat or ScriptedGenerator(), **args)


class ScriptedGenerator:
    """Writes a question and a quoted answer from the passage, with a defect chosen by the
    passage's content so that every filter has something to reject; closed-book, it
    "knows" the answer to questions about cards. Its "unanswerable" question from the hours
    page asks for the wire fee, which the fees page answers: the corpus check, given the
    passages, answers it (and says "I don't know" to the others)."""

    model_id = "scripted"

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls = 0
        self.fail_on = fail_on
        self.spans: dict[str, str] = {}  # span mode: question → the span it was written for

    def chat(self, messages, *, json_schema=None, max_tokens=None, **kw) -> ChatReply:  # noqa: ANN001
        self.calls += 1
        system, user = messages[0]["content"], messages[-1]["content"]
        if system.startswith("Answer the question from the passage below"):  # the round trip
            return ChatReply(content=self.spans.get(user.rsplit("Question: ", 1)[-1], "?"))
        reply = self._reply(system, user, json_schema)
        if "ANSWER: " in user and json_schema is not None:  # span mode: the span it was given
            question = json.loads(reply.content).get("question", "") \
                if reply.content.startswith("{") else ""
            self.spans[question] = user.rsplit("ANSWER: ", 1)[1]
        return reply

    def _reply(self, system: str, user: str, json_schema) -> ChatReply:  # noqa: ANN001
        if system.startswith("Answer the question from the passages"):  # the corpus check
            if self.fail_on and self.fail_on in user:
                raise LLMError("timed out after 3 attempts", "timeout", 3)
            question = user.rsplit("Question: ", 1)[-1]
            if "wire" in question and "12 dollars" in user:
                return ChatReply(content="A wire transfer costs 12 dollars.")
            return ChatReply(content="I don't know.")
        if json_schema is None:  # the closed-book check
            return ChatReply(content="four minutes" if "card" in user.lower() else "no idea")
        if self.fail_on and self.fail_on in user:
            raise LLMError("timed out after 3 attempts", "timeout", 3)
        if "cash withdrawals" in user:  # as an answerable or an unanswerable draw
            return ChatReply(content=json.dumps({"question": "What is the cap stated in this "
                                                 "paragraph?", "answer": "600 dollars"}))
        if "must have NO answer" in system and "public holidays" in user:
            return ChatReply(content=json.dumps({"question": "What does Harbor Express charge "
                                                 "to send a wire?", "answer": "Harbor Express"}))
        if "must have NO answer" in system:
            return ChatReply(content=json.dumps({"question": f"Is there an age limit for the "
                                                 f"Gold Kids account? "
                                                 f"({zlib.crc32(user.encode()) % 997})",
                                                 "answer": "Gold Kids account"}))
        if "monthly fee" in user:  # copies the passage word for word
            return ChatReply(content=json.dumps({"question": "is there no fee unless the balance "
                                                 "stays above 900 dollars for the whole statement "
                                                 "period?",
                                                 "answer": "7 dollars"}))
        if "wire transfer" in user or "paper statement" in user:  # the same question twice
            return ChatReply(content=json.dumps({"question": "How much is a wire to another "
                                                 "bank?", "answer": "12 dollars"}))
        if "client" in user:  # the page's heading: in the document, not in the passage
            return ChatReply(content=json.dumps({"question": "How do I connect?",
                                                 "answer": "Setup"}))
        if "public holidays" in user:
            return ChatReply(content=json.dumps({"question": "Do branches open on holidays?",
                                                 "answer": "No"}))
        if "intake form" in user:
            return ChatReply(content="not json at all")
        if "lost card" in user:
            return ChatReply(content=json.dumps({"question": "How fast is a missing card stopped?",
                                                 "answer": "within four minutes"}))
        return ChatReply(content=json.dumps({"question": "How much does opening cost?",
                                             "answer": "7 dollars"}))


def test_sampling_is_stratified_by_chunk_type_then_document_and_seeded():
    chunks = [Chunk(id=f"{t}-{d}-{i}", doc_id=f"d{d}", text="x " * 40, chunk_type=t,
                    start_char=0, end_char=80, token_count=40)
              for t in ("prose", "code", "table_row", "list") for d in range(3) for i in range(4)]
    order = list(sample_chunks(chunks, seed=1))
    assert len(order) == len(chunks)
    first = order[:8]  # the strata take turns: each twice in the first 8 draws
    assert sorted(stratum(c) for c in first) == sorted(["prose", "code", "table", "list"] * 2)
    prose = [c for c in order if c.chunk_type == "prose"][:3]  # documents take turns
    assert len({c.doc_id for c in prose}) == 3
    assert [c.id for c in sample_chunks(chunks, seed=1)] == [c.id for c in order]
    assert [c.id for c in sample_chunks(chunks, seed=2)] != [c.id for c in order]
    short = Chunk(id="h", doc_id="d0", text="Fees", chunk_type="heading", start_char=0,
                  end_char=4, token_count=1)
    assert short not in list(sample_chunks([short], seed=0))


def test_longest_common_run_counts_consecutive_words():
    assert longest_common_run("what is the fee of a wire", "the fee of a wire is 12") == 5
    assert longest_common_run("Fee?", "no overlap here") == 0


def test_every_filter_records_its_reason_and_spans_point_at_the_answer():
    res = _generate(unanswerable=0.0)  # every chunk an answerable draw: every defect is met
    by_id = {d.id: d for d in _docs()}
    reasons = {r["reason"] for r in res.rejected}
    assert {"copies the source", "answer not in source", "malformed reply",
            "refers to the passage", "answer too generic"} <= reasons
    assert all(r["detail"] and r["chunk_id"] and r["reason"] in REASONS for r in res.rejected)
    answerable = [r for r in res.records if r.answerable]
    assert answerable and all(r.spans and r.doc_ids for r in answerable)
    for r in answerable:
        span = r.spans[0]
        found = by_id[span["doc_id"]].text[span["start"]:span["end"]]
        assert " ".join(found.split()) == r.answer
    unanswerable = [r for r in _generate(unanswerable=0.2).records if not r.answerable]
    assert unanswerable and all(not r.doc_ids and not r.spans and r.answer == "" for r in
                                unanswerable)  # the model's text in `answer` is not a reference
    # the wire question comes from the table and from its row: kept once
    assert sum("wire" in r.question for r in res.records) == 1
    s = res.summary
    assert s["accepted"] == len(res.records) < s["requested"]
    assert s["rejected"] == {k: sum(r["reason"] == k for r in res.rejected) for k in reasons}
    assert s["generator"] == "scripted" and s["prompt_version"] == res.records[0].prompt_version


def test_knowable_questions_are_flagged_not_dropped():
    res = _generate(unanswerable=0.0)
    cards = [r for r in res.records if "card" in r.question]
    wire = [r for r in res.records if "wire" in r.question]
    assert cards and cards[0].knowable is True and cards[0].closed_book_f1 == 0.8  # 'four minutes'
    assert wire and wire[0].knowable is False
    assert res.summary["knowable"] == 1
    assert all(r.knowable is None for r in _generate(check_knowable=False).records)


def test_a_failed_call_is_a_recorded_rejection_not_a_question():
    res = _generate(ScriptedGenerator(fail_on="lost card"))
    failed = [r for r in res.rejected if r["reason"] == "llm error"]
    assert failed and "timeout" in failed[0]["detail"]
    assert not any("card" in r.question for r in res.records)


def test_the_set_is_the_same_at_any_concurrency():
    for n in (2, 10):  # stopping early and running the corpus out
        one = _generate(n=n, seed=3, max_concurrency=1)
        four = _generate(n=n, seed=3, max_concurrency=4)
        assert [r.model_dump() for r in one.records] == [r.model_dump() for r in four.records]
        # the calls are the cost, which concurrency may raise (draws made ahead, not used)
        cost = ("llm_calls", "calls_per_kept")
        assert one.rejected == four.rejected
        assert {k: v for k, v in one.summary.items() if k not in cost} == \
            {k: v for k, v in four.summary.items() if k not in cost}
        assert one.summary["llm_calls"] <= four.summary["llm_calls"]


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match="unanswerable"):
        generate_testset(_docs(), ScriptedGenerator(), n=2, unanswerable=1.5)
    with pytest.raises(ValueError, match="no documents"):
        generate_testset([], ScriptedGenerator(), n=2)


def test_load_local_reads_the_generated_set_back(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    from agentic_rag.ingest.readers import iter_document_paths, read_document

    docs = [read_document(f, did) for f, did in iter_document_paths([folder])]
    res = generate_testset(docs, ScriptedGenerator(), n=3, seed=0, unanswerable=0.34,
                           chunker=_chunker, max_draws=40, min_tokens=5)
    paths = res.write(tmp_path / "questions.jsonl")
    n = len(res.records)
    assert n >= 2 and any(not r.answerable for r in res.records)
    assert paths["rejected"].exists() and json.loads(paths["summary"].read_text())["accepted"] == n
    ds = load_local(folder, paths["questions"])
    assert len(ds.queries) == n
    answerable = [q for q in ds.queries if q.metadata.get("answerable")]
    for q in answerable:
        (span,) = ds.spans[q.id]
        doc = next(d for d in ds.corpus if d.id == span.doc_id)
        assert re.sub(r"\s+", " ", doc.text[span.start:span.end]) == q.answers[0]
        assert q.metadata["intent"] in ("fact", "code", "data", "procedure")
    splits = {r.id: r.split for r in res.records}
    assert {q.id for q in ds.split("dev").queries} == {k for k, v in splits.items() if v == "dev"}
    assert len(load_local(folder, paths["questions"], unanswerable=False).queries) == \
        len(answerable)
    knowable = sum(bool(r.knowable) for r in res.records)
    assert len(load_local(folder, paths["questions"], knowable=False).queries) == n - knowable


def test_load_local_names_a_bad_span(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nshort text\n")
    rec = GeneratedQuestion(id="g1", question="q?", answer="short", doc_ids=["docs/a.md"],
                        spans=[{"doc_id": "docs/a.md", "start": 5, "end": 500}], chunk_id="c",
                        chunk_type="prose", intent="fact", split="dev", generator="x")
    qs = tmp_path / "q.jsonl"
    qs.write_text(rec.model_dump_json() + "\n")
    with pytest.raises(DatasetError, match=r"q.jsonl: row 1: span .* not inside document"):
        load_local(folder, qs)


def _rows(means: dict[str, float], n: int = 30, noise: float = 0.05, seed: int = 0):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"config": c, "query_id": f"q{i}", "repeat": 0, "error": None,
                          "ndcg@10": float(np.clip(m + rng.normal(0, noise), 0, 1))}
                         for c, m in means.items() for i in range(n)])


def test_rank_agreement_is_kendall_tau_b_with_a_bootstrap_ci():
    from agentic_rag.studies.testset_validation import rank_agreement

    spread = {"a": 0.2, "b": 0.4, "c": 0.6, "d": 0.8}
    same = rank_agreement(_rows(spread), _rows(spread, seed=1), n_boot=200)
    assert same["tau_b"] == 1.0 and same["same_best"] and same["best_human"] == "d"
    assert same["tau_b_ci"][0] > 0.6 and same["tau_b_ci"][1] == 1.0
    flipped = rank_agreement(_rows(spread), _rows({k: 1 - v for k, v in spread.items()}),
                             n_boot=200)
    assert flipped["tau_b"] == -1.0 and not flipped["same_best"]
    assert flipped["best_human_on_generated_rank"] == 4
    # a tie on one side: τ-b (not τ-a) keeps a perfect agreement of the untied pairs below 1
    tied = rank_agreement(_rows(spread, noise=0), _rows({"a": 0.2, "b": 0.2, "c": 0.6, "d": 0.8},
                                                        noise=0), n_boot=50)
    assert tied["tau_b"] == round(5 / (6 * 5) ** 0.5, 3)
    # the noise ceiling: halves of a set whose configs differ by far more than the noise agree
    assert same["human_split_half_tau_b"] == 1.0
    noisy = rank_agreement(_rows(dict.fromkeys("abcdef", 0.5), noise=0.2),
                           _rows(spread), n_boot=200)
    assert abs(noisy["human_split_half_tau_b"]) < 0.5  # tied configs: halves rank at random
    labels = {"x=1,r=['a', 'b']": 0.9, "x=2,r=['a', 'b']": 0.8, "x=1,r=['a']": 0.5,
              "x=2,r=['a']": 0.4}
    fx = rank_agreement(_rows(labels, noise=0), _rows({k: 1 - v if "x=1" in k else v for k, v in
                                                       labels.items()}, noise=0), n_boot=20)
    eff = fx["main_effects"]
    assert eff["r"]["human"] == {"['a', 'b']": 0.85, "['a']": 0.45} and eff["r"]["same_order"]
    assert eff["x"]["human"] == {"1": 0.7, "2": 0.6} and not eff["x"]["same_order"]
    with pytest.raises(ValueError, match=">= 3 configs"):
        rank_agreement(_rows({"a": 0.1, "b": 0.2}), _rows({"a": 0.1, "b": 0.2}))


def test_a_packaged_corpus_takes_other_questions_and_drops_excluded_documents(tmp_path):
    from agentic_rag.datasets.base import Dataset, Query
    from agentic_rag.datasets.qa import with_questions

    docs = [Document(id=f"pydocs/{p}", text=f"text of {p} " * 5) for p in
            ("faq/a.rst", "library/b.rst", "library/c.rst")]
    ds = Dataset(name="x", corpus=docs, queries=[Query(id="h1", text="faq?"),
                                                 Query(id="h2", text="lib?")],
                 qrels={"h1": {"pydocs/faq/a.rst": 1}, "h2": {"pydocs/library/b.rst": 1}})
    cut = ds.without_documents(["pydocs/faq/"])
    assert [d.id for d in cut.corpus] == ["pydocs/library/b.rst", "pydocs/library/c.rst"]
    assert [q.id for q in cut.queries] == ["h2"] and cut.qrels == {"h2": {"pydocs/library/b.rst": 1}}
    with pytest.raises(DatasetError, match="no document id starts with"):
        ds.without_documents(["nope/"])
    qs = tmp_path / "gen.jsonl"
    qs.write_text(json.dumps({"id": "g1", "question": "what is in c?", "answer": "text of",
                              "doc_ids": ["pydocs/library/c.rst"],
                              "spans": [{"doc_id": "pydocs/library/c.rst", "start": 0,
                                         "end": 7}]}) + "\n")
    gen = with_questions(cut, qs)
    assert [d.id for d in gen.corpus] == [d.id for d in cut.corpus]
    assert [q.id for q in gen.queries] == ["g1"] and gen.spans["g1"][0].end == 7
    qs.write_text(json.dumps({"question": "faq?", "doc_ids": ["pydocs/faq/a.rst"]}) + "\n")
    with pytest.raises(DatasetError, match=r"doc_ids \['pydocs/faq/a.rst'\] not in"):
        with_questions(cut, qs)


@pytest.mark.parametrize("question, unnamed", [
    ("What is the name of the town?", True),
    ("What is the title of the documentary?", True),
    ("What is the name of the actress, singer and producer?", True),
    ("What is the name of the fee for the Blue Account?", False),   # the subject is named
    ("What was the name of the band credited for the film 'Tenebrae'?", False),
    ("How do I sort a list in place?", False),
])
def test_a_question_for_the_name_of_an_unnamed_subject_is_rejected(question, unnamed):

    chunk = _chunker(_docs()[0])[0]
    reply = ChatReply(content=json.dumps({"question": question, "answer": "7 dollars"}))
    out = check_reply(reply, chunk, _docs()[0], True, [], 6, 12, 0.8)
    assert (isinstance(out, dict) and out["reason"] == "names no subject") == unnamed


@pytest.mark.parametrize("question, pronoun", [
    ("What did he found in 1902?", "he"),
    ("When was it built?", "it"),
    ("What does this function return?", "this"),
    ("Which team did he play for from 1993 to 1999?", "he"),  # HaluEval, generated
    ("What other films did he star in besides 'The Three Musketeers'?", "he"),  # named later
    ("In what year did she retire?", "she"),
    ("What is its monthly fee?", "its"),
    ("Does it support async calls?", "it"),
    ("What is the population of this town?", "this"),
    ("He founded which company in 1902?", "He"),
    # the subject named, then a pronoun; a pronoun bound to the wh-word; the empty "it"
    ("Where was Chief Joseph born and what is his place of origin?", None),
    ("Who is best known for her work with architects Daniel Libeskind and Zaha Hadid?", None),
    ("Which country has its capital on the coast?", None),
    ("How long does it take to open a Harbor account?", None),
    ("Is it possible to pass a timeout to harbor.connect?", None),
    ("What happens to a Harbor card when it is reported lost?", None),
    ("How do I sort a list in place?", None),
    # a demonstrative with a description that names something (HotpotQA's style); a title
    ("In which year was this arms smuggler, the subject of 'The Notorious Mr. Bout', born?", None),
    ("It Takes a Family is a response to which 1996 book?", None),
])
def test_a_question_whose_subject_is_a_pronoun_is_rejected(question, pronoun):

    assert pronoun_subject(question) == pronoun
    chunk = _chunker(_docs()[0])[0]
    reply = ChatReply(content=json.dumps({"question": question, "answer": "7 dollars"}))
    out = check_reply(reply, chunk, _docs()[0], True, [], 6, 12, 0.8)
    rejected = isinstance(out, dict) and out["reason"] == "pronoun without antecedent"
    assert rejected == (pronoun is not None)
    if rejected:
        assert repr(pronoun) in out["detail"] and out["question"] == question


def test_chunks_passed_in_give_the_set_the_chunker_gives():
    """The CLI chunks once (for its estimate) and passes the chunks in."""
    chunks = [c for d in _docs() for c in _chunker(d)]
    by_chunker = _generate(n=4)
    by_chunks = _generate(n=4, chunker=None, chunks=chunks)
    assert [r.model_dump() for r in by_chunks.records] == [r.model_dump() for r in
                                                           by_chunker.records]
    assert by_chunks.rejected == by_chunker.rejected and by_chunks.summary == by_chunker.summary
    with pytest.raises(ValueError, match="not both"):
        _generate(n=4, chunks=chunks)
    with pytest.raises(ValueError, match=r"chunk '.*': its document 'docs/fees.md' is not in"):
        generate_testset(_docs()[1:], ScriptedGenerator(), n=2, chunks=chunks)


class CountingChecks(ScriptedGenerator):
    """Counts the corpus checks; `fail_checks`: each one fails as a timed-out call."""

    def __init__(self, fail_checks: bool = False) -> None:
        super().__init__()
        self.checks, self.fail_checks = 0, fail_checks

    def chat(self, messages, **kw) -> ChatReply:  # noqa: ANN001, ANN003
        if messages[0]["content"].startswith("Answer the question from the passages"):
            self.checks += 1
            if self.fail_checks:
                raise LLMError("timed out after 3 attempts", "timeout", 3)
        return super().chat(messages, **kw)


def test_an_unanswerable_question_the_corpus_answers_is_rejected():
    chat = CountingChecks()
    res = _generate(chat, unanswerable=0.2, seed=3, check_unanswerable=True)  # seed 3: the hours page's draw is one
    (rej,) = [r for r in res.rejected if r["reason"] == "answerable from the corpus"]
    assert rej["question"] == "What does Harbor Express charge to send a wire?"
    assert rej["chunk_id"] == "docs/hours.md#prose@9-143" and not rej["answerable"]
    assert "12 dollars" in rej["corpus_answer"] and "12 dollars" in rej["detail"]
    assert rej["corpus_chunks"][0] == "docs/fees.md#table_row@159-189"  # BM25's top chunk
    kept = [r for r in res.records if not r.answerable]
    assert kept and not any("wire" in r.question for r in kept)
    # one call per unanswerable question that passed the other filters: kept + rejected here
    assert chat.checks == res.summary["unanswerable_checked"] == len(kept) + 1
    assert res.summary["settings"]["corpus_check_k"] == 5
    off = _generate(unanswerable=0.2, seed=3, check_unanswerable=False)
    assert any("wire" in r.question for r in off.records if not r.answerable)
    assert off.summary["unanswerable_checked"] == 0


def test_a_failed_corpus_check_rejects_the_question_unchecked():
    res = _generate(CountingChecks(fail_checks=True), unanswerable=0.2, seed=3,
                    check_unanswerable=True)
    failed = [r for r in res.rejected if r["reason"] == "llm error" and not r["answerable"]]
    assert failed and all(r["detail"].startswith("corpus check: timeout") for r in failed)
    assert not any(not r.answerable for r in res.records)


def test_the_estimate_counts_one_corpus_check_per_unanswerable_question():
    from agentic_rag.datasets.testset_cost import estimate

    chunks = [c for d in _docs() for c in _chunker(d)]
    base = estimate(100, chunks, mode="free")
    unchecked = estimate(100, chunks, unanswerable=0.1, mode="free")  # + a second call per such draw
    checked = estimate(100, chunks, unanswerable=0.1, check_unanswerable=True, mode="free")
    assert base["corpus_checks"] == unchecked["corpus_checks"] == 0
    assert unchecked["llm_calls"] == base["llm_calls"] + 15  # 150 draws × 0.1
    assert checked["corpus_checks"] == 10
    assert checked["llm_calls"] == unchecked["llm_calls"] + 10
    assert checked["prompt_tokens_est"] > unchecked["prompt_tokens_est"] > base["prompt_tokens_est"]


def test_the_estimate_counts_the_round_trips_and_the_draws_they_cost():
    from agentic_rag.datasets.testset_cost import DRAWS_PER_KEPT, ROUND_TRIP_PASS, estimate

    chunks = [c for d in _docs() for c in _chunker(d)]
    plain, checked = estimate(100, chunks), estimate(100, chunks, round_trip=True)
    passed = round(100 / ROUND_TRIP_PASS)  # every question that passed the filters: one check
    assert plain["round_trips"] == 0 and checked["round_trips"] == passed
    assert plain["llm_calls"] == round(DRAWS_PER_KEPT["span"] * 100) + 100  # + closed-book
    assert checked["llm_calls"] == round(DRAWS_PER_KEPT["span"] * 100 / ROUND_TRIP_PASS) \
        + passed + 100
    assert checked["prompt_tokens_est"] > plain["prompt_tokens_est"]


def test_an_unanswerable_reply_must_name_an_invented_thing_absent_from_the_corpus():
    """The unanswerable prompt asks for an invented name of the passage's kind (a sibling
    product, function): it must be in the question, and in no document of the corpus."""
    from agentic_rag.datasets.testset_filters import CorpusText

    docs = _docs()
    chunk = _chunker(docs[0])[0]
    corpus = CorpusText(docs)

    def check(question: str, name: str):  # noqa: ANN202
        reply = ChatReply(content=json.dumps({"answer": name, "question": question}))
        return check_reply(reply, chunk, docs[0], False, [], 6, 8, 0.8, corpus=corpus)

    assert check("What is the monthly fee of the Harbor Gold account?", "Harbor Gold account") \
        == ("What is the monthly fee of the Harbor Gold account?", "", None)
    absent = check("What is the monthly fee?", "Harbor Gold account")
    assert absent["reason"] == "invented name not in question"
    assert absent["invented"] == "Harbor Gold account" and absent["answer"] == ""
    real = check("How much is a Paper  Statement at a branch?", "paper statement")
    assert real["reason"] == "invented name in the corpus" and real["detail"].endswith("docs/fees.md")
    assert corpus.find("HARBOR   machines") == "docs/limits.md" and corpus.find("Gold Kids") is None
    two = check("What does a Harbor machines wire transfer cost?", "Harbor machines wire transfer")
    assert two["reason"] == "invented name in the corpus"
    assert "'Harbor machines' + 'wire transfer'" in two["detail"]
    assert corpus.made_of("Harbor wire transfer") is None  # "Harbor": one word, not a name
    assert corpus.made_of("Harbor Gold account") is None
    assert not corpus.has_phrase("arb")  # whole words only
    assert {"invented name not in question", "invented name in the corpus"} <= set(REASONS)


def test_a_made_up_name_missing_from_its_question_gets_a_question_written_for_it():
    """The small model makes up a good name, then asks for a name ("What is the name of
    ...?"): a second call, given the name, writes the question; a reply that already names
    it costs no second call."""
    from agentic_rag.datasets.testset_prompts import ask_about

    class Second:
        calls: list = []

        def chat(self, messages, **kw):  # noqa: ANN001, ANN003, ANN202
            self.calls.append(messages[-1]["content"])
            return ChatReply(content=json.dumps({"question": "What is the age limit of the "
                                                 "Gold Kids account?"}))

    chat = Second()
    first = ChatReply(content=json.dumps({"answer": "Gold Kids account",
                                          "question": "What is the name of the kids' account?"}))
    out = ask_about(chat, first)
    assert chat.calls == ["Name: Gold Kids account"]
    assert out.json() == {"answer": "Gold Kids account",
                          "question": "What is the age limit of the Gold Kids account?"}
    named = ChatReply(content=json.dumps({"answer": "Gold Kids account",
                                          "question": "Is there a Gold Kids account fee?"}))
    assert ask_about(chat, named) is named and len(chat.calls) == 1


def test_exclude_matches_the_same_files_under_another_folder_name():
    """Chunk ids carry their folder's name (`bank-products/doc_a.md#prose@0-10`): a set made
    from a copy of the folder under another name (`green-docs/`) must still skip them. Before
    this, issue 40's shared-dev set excluded 0 chunks and drew 4 of generated-s4's."""
    from agentic_rag.datasets.testset import excluded_here

    ids = ["green-docs/doc_a.md#prose@0-10", "green-docs/doc_a.md#table@10-20",
           "green-docs/sub/doc_b.md#prose@0-5", "single.md#prose@0-3"]
    theirs = {"bank-products/doc_a.md#prose@0-10", "bank-products/sub/doc_b.md#prose@0-5",
              "bank-products/doc_c.md#prose@0-10", "single.md#prose@0-3"}
    assert excluded_here(theirs, ids) == {ids[0], ids[2], ids[3]}
    assert excluded_here({"green-docs/doc_a.md#table@10-20"}, ids) == {ids[1]}
    assert excluded_here({"bank-products/doc_a.md#prose@0-11"}, ids) == set()  # another range
    assert excluded_here(set(), ids) == set()


def test_a_set_excluding_another_draws_none_of_its_chunks(tmp_path):
    first = _generate(n=4, seed=0)
    used = {r.chunk_id for r in first.records} | {r["chunk_id"] for r in first.rejected}
    again = _generate(n=4, seed=1)  # another seed alone draws chunks of the first set again
    assert {r.chunk_id for r in again.records} & used
    fresh = _generate(n=4, seed=1, exclude_chunks=used)
    drawn = {r.chunk_id for r in fresh.records} | {r["chunk_id"] for r in fresh.rejected}
    assert drawn and not drawn & used
    assert fresh.summary["settings"]["excluded_chunks"] == len(used)
    # an id no chunk of these documents has is not counted as excluded
    other = _generate(n=4, seed=1, exclude_chunks=used | {"docs/elsewhere.md#prose@0-9"})
    assert other.summary["settings"]["excluded_chunks"] == len(used)
    # the CLI's --exclude reads a written set's chunk ids, and names a bad file
    from agentic_rag.cli.testset import excluded_chunks
    paths = first.write(tmp_path / "first.jsonl")
    assert excluded_chunks([paths["questions"]]) == {r.chunk_id for r in first.records}
    with pytest.raises(ValueError, match="absent.jsonl: no such file"):
        excluded_chunks([tmp_path / "absent.jsonl"])
    (tmp_path / "bad.jsonl").write_text('{"id": "q1"}\n')
    with pytest.raises(ValueError, match="bad.jsonl: no row has a chunk_id"):
        excluded_chunks([tmp_path / "bad.jsonl"])
