"""Loaders against the real registry packages: counts match the published ones."""

from __future__ import annotations

import json

import pytest

from agentic_rag.datasets.qa import banking_tasks, halueval_qa, load_local, python_faq, split_knowledge


@pytest.fixture(scope="module")
def halu():
    return halueval_qa()


def test_halueval_counts_and_structure(halu):
    assert len(halu.queries) == 10_000  # HaluEval's published QA count
    assert halu.queries[0].text.startswith("Which magazine was started first Arthur's Magazine")
    assert 16_500 <= len(halu.corpus) <= 17_000  # de-duplicated supporting paragraphs
    sizes = [len(v) for v in halu.qrels.values()]
    assert set(sizes) <= {1, 2} and sizes.count(2) > 7_000
    docs = {d.id: d.text for d in halu.corpus}
    for q in halu.queries[:200]:
        for did in halu.qrels[q.id]:
            assert docs[did] in q.metadata["knowledge"]  # gold paragraphs come from its row
        assert q.metadata["hallucinated_answer"] and q.answers


def test_knowledge_split_at_the_join():
    rows = [{"knowledge": "Arthur's Magazine (1844–1846) was an American literary periodical."
                          "First for Women is a woman's magazine published by Bauer Media Group."},
            {"knowledge": "The U.S. Army is the land service branch of the United States armed forces."}]
    assert split_knowledge(rows) == [
        ["Arthur's Magazine (1844–1846) was an American literary periodical.",
         "First for Women is a woman's magazine published by Bauer Media Group."],
        [rows[1]["knowledge"]]]


def test_splits_and_sampling_deterministic(halu):
    dev, test = halu.split("dev"), halu.split("test")
    assert len(dev.queries) + len(test.queries) == 10_000
    assert not {q.id for q in dev.queries} & {q.id for q in test.queries}
    a, b = dev.sample(50, seed=7, corpus_size=500), dev.sample(50, seed=7, corpus_size=500)
    assert [q.id for q in a.queries] == [q.id for q in b.queries]
    assert a.fingerprint() == b.fingerprint() and len(a.corpus) == 500
    gold = {d for v in a.qrels.values() for d in v}
    assert gold <= {d.id for d in a.corpus}
    assert dev.sample(50, seed=8).fingerprint() != a.fingerprint()


def test_banking_tasks_and_python_faq():
    bank = banking_tasks()
    assert len(bank.corpus) == 698 and len(bank.queries) == 97
    assert 9 <= sum(len(v) for v in bank.qrels.values()) / 97 <= 10.5  # ≈ 9.8 per task
    faq = python_faq()
    assert 170 <= len(faq.queries) <= 176 and all(q.text.endswith("?") for q in faq.queries)
    doc = {d.id: d for d in faq.corpus}
    q = next(q for q in faq.queries if q.text == "Why are Python strings immutable?")
    span = faq.spans[q.id][0]
    assert "performance" in doc[span.doc_id].text[span.start:span.end]


def test_load_local_jsonl_csv_and_errors(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha")
    (docs / "b.md").write_text("# B\n\nbeta")
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"id": "1", "question": "alpha?", "answer": "alpha",
                              "doc_ids": ["docs/a.md"]}) + "\n")
    ds = load_local(docs, qs)
    assert ds.qrels == {"1": {"docs/a.md": 1}} and ds.queries[0].answers == ["alpha"]
    csv = tmp_path / "q.csv"
    csv.write_text("question,doc_ids\nbeta?,docs/b.md|docs/a.md\n")
    assert load_local(docs, csv).qrels == {"q1": {"docs/b.md": 1, "docs/a.md": 1}}
    csv.write_text("question,doc_ids\nbeta?,docs/zzz.md\n")
    with pytest.raises(ValueError, match="zzz.md"):
        load_local(docs, csv)
    qs.write_text("{not json\n")
    with pytest.raises(ValueError, match=r"q.jsonl:1"):
        load_local(docs, qs)


def test_a_generated_set_whose_spans_no_longer_hold_their_answers_is_refused(tmp_path):
    """A generated set's gold is its answer's place in the document as read when it was made;
    a document edited since (or read by another version of the reader) moves it, and every
    span metric would score against the wrong text."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe limit is 30 seconds.\n")
    row = {"id": "g1", "question": "What is the limit?", "answer": "30 seconds",
           "doc_ids": ["docs/a.md"], "spans": [{"doc_id": "docs/a.md", "start": 18, "end": 28}],
           "generator": "qwen2.5-coder-1.5b@x"}
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps(row) + "\n")
    assert load_local(docs, qs).spans["g1"][0].start == 18
    (docs / "a.md").write_text("# A\n\nThe new limit is 30 seconds.\n")  # edited since
    with pytest.raises(ValueError, match=r"1 of 1 generated questions no longer hold.*row 1 \(g1\)"):
        load_local(docs, qs)
    row.update(answers=["thirty seconds", "30 seconds"], answer=None)  # any answer may hold
    qs.write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match="no longer hold"):  # the document still reads "new"
        load_local(docs, qs)
    (docs / "a.md").write_text("# A\n\nThe limit is 30 seconds.\n")
    assert load_local(docs, qs).queries[0].answers == ["thirty seconds", "30 seconds"]
    row.update(answers=[30.0])  # a number as JSON writes it
    qs.write_text(json.dumps(row) + "\n")
    assert load_local(docs, qs).spans["g1"][0].start == 18
    (docs / "a.md").write_text("# A\n\nThe new limit is 30 seconds.\n")
    del row["generator"]  # a set of your own: its spans may be whole passages, not checked
    qs.write_text(json.dumps(row) + "\n")
    assert load_local(docs, qs).spans["g1"][0].start == 18


def test_sample_folder_is_a_reproducible_stand_in_for_a_users_folder(tmp_path):
    from agentic_rag.datasets.corpora import banking_documents, sample_folder
    from agentic_rag.ingest.readers import iter_document_paths

    folder = sample_folder("banking", 5, 0, tmp_path / "a")
    assert folder.name == "banking-5-s0"
    ids = [did for _, did in iter_document_paths([folder])]
    again = sample_folder("banking", 5, 0, tmp_path / "b")  # elsewhere: the same doc ids
    assert [did for _, did in iter_document_paths([again])] == ids and len(ids) == 5
    assert all(did.startswith("banking-5-s0/doc_") and did.endswith(".md") for did in ids)
    other = sample_folder("banking", 5, 1, tmp_path / "a")
    assert {p.name for p in other.iterdir()} != {p.name for p in folder.iterdir()}
    by_id = {d.id: d for d in banking_documents()}
    f = sorted(folder.iterdir())[0]
    d = by_id[f.name.removesuffix(".md")]
    assert f.read_text(encoding="utf-8") == f"# {d.title}\n\n{d.text}"
    (folder / "stale.md").write_text("# not in the sample\n")
    sample_folder("banking", 5, 0, tmp_path / "a")
    assert not (folder / "stale.md").exists() and len(list(folder.iterdir())) == 5
    with pytest.raises(ValueError, match="n=999"):
        sample_folder("banking", 999, 0, tmp_path)


def test_the_committed_generated_set_loads_on_its_sample_folder(tmp_path):
    """notebooks/data/banking-20.jsonl was generated from sample_folder("banking", 40, 0):
    written anywhere, that folder gives the set's doc ids, and every gold span is its answer."""
    from pathlib import Path

    from agentic_rag.datasets.corpora import sample_folder

    qs = Path(__file__).resolve().parents[1] / "notebooks" / "data" / "banking-20.jsonl"
    ds = load_local(sample_folder("banking", 40, 0, tmp_path), qs)
    assert len(ds.queries) == 20 and ds.spans and set(ds.fixed_split.values()) == {"dev", "test"}
    docs = {d.id: d for d in ds.corpus}
    for q in ds.queries:
        for s in ds.spans.get(q.id, []):
            assert docs[s.doc_id].text[s.start:s.end].lower() == q.answers[0].lower(), q.id
