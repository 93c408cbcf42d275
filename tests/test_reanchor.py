"""A generated set's gold spans moved to today's reading of its documents (`datasets.reanchor`,
`agentic-rag testset DOCS --reanchor SET`), with no LLM call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.cli.main import app
from agentic_rag.config import RAGConfig
from agentic_rag.datasets.qa import DatasetError, load_local
from agentic_rag.datasets.reanchor import reanchor
from agentic_rag.documents import Document
from agentic_rag.ingest.chunking import AgenticChunker

OLD = "Timeouts\n========\n\nThe client waits 30 seconds.\n\nIt retries twice.\n"
NEW = "Timeouts\n========\n\nThe client waits 30 seconds.\n\n**Note**\n\nIt retries twice.\n"


def _row(qid: str, answer: str, start: int, end: int, **extra) -> dict:
    return {"id": qid, "question": "?", "answer": answer, "doc_ids": ["t.rst"],
            "spans": [{"doc_id": "t.rst", "start": start, "end": end}],
            "chunk_id": f"t.rst#prose@0-{len(OLD)}", "chunk_type": "prose",
            "generator": "model@x", **extra}


def test_stale_spans_move_to_their_answer_and_the_rest_is_reported() -> None:
    doc = Document(id="t.rst", text=NEW, format="rst")
    chunks = AgenticChunker(RAGConfig().chunking).chunk(doc)
    at, old = OLD.index("retries twice"), OLD.index("30 seconds")
    rows = [_row("moved", "retries twice", at, at + 13),
            _row("holds", "30 seconds", old, old + 10),
            _row("gone", "45 seconds", old, old + 10),
            {"id": "unanswerable", "question": "?", "answer": "", "spans": [],
             "generator": "model@x"},
            {"id": "hand-made", "question": "?", "answer": "x",
             "spans": [{"doc_id": "t.rst", "start": 0, "end": 1}]}]
    out, report = reanchor(rows, [doc], chunks)
    assert [r["id"] for r in out] == ["moved", "holds", "unanswerable", "hand-made"]
    # "holds" reads its answer where it was, but its chunk is gone: the span stays, the id is
    # renewed (`--exclude` matches ids); the unanswerable and the hand-made rows as they were
    assert report.kept == 2 and report.moved == ["moved"] and report.rechunked == ["holds"]
    assert report.dropped == {"gone": "'45 seconds' does not occur in t.rst"}
    span = out[0]["spans"][0]
    assert NEW[span["start"]:span["end"]] == "retries twice" and out[0]["reanchored"] is True
    holder = next(c for c in chunks if c.id == out[0]["chunk_id"])
    assert holder.start_char <= span["start"] and span["end"] <= holder.end_char
    assert out[1]["spans"] == rows[1]["spans"] and "reanchored" not in out[1]
    assert out[1]["chunk_id"] in {c.id for c in chunks} and out[1]["chunk_id"] != rows[1]["chunk_id"]
    assert out[2] is rows[3] and out[3] is rows[4]  # untouched rows are the same objects


def test_the_occurrence_nearest_the_old_span_wins_case_and_wrapping_aside() -> None:
    text = "Set 30 seconds here.\n\n" + "x " * 50 + "\n\nAnd 30\nSeconds there."
    doc = Document(id="t.rst", text=text, format="rst")
    old = text.rindex("30") - 3  # the second one, shifted by a removed prefix
    out, _ = reanchor([_row("q", "30 seconds", old, old + 10)], [doc], [])
    s = out[0]["spans"][0]
    assert text[s["start"]:s["end"]] == "30\nSeconds"


def test_the_command_reanchors_a_set_made_from_the_raw_reading(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    raw = "Retry\n=====\n\nSee :func:`retry` and :pep:`8`: it waits 30 seconds.\n"
    (docs / "retry.rst").write_text(raw)
    at = raw.index("30 seconds")
    stale = tmp_path / "set.jsonl"
    stale.write_text(json.dumps({**_row("q1", "30 seconds", at, at + 10), "doc_ids": ["docs/retry.rst"],
                                 "spans": [{"doc_id": "docs/retry.rst", "start": at,
                                            "end": at + 10}]}) + "\n")
    runner = CliRunner()
    same = runner.invoke(app, ["testset", str(docs), "--reanchor", str(stale), "--out", str(stale),
                               "--home", str(tmp_path / "home")])
    assert same.exit_code != 0 and "is the set being re-anchored" in same.output
    (tmp_path / "link.jsonl").hardlink_to(stale)  # the same file under another name
    linked = runner.invoke(app, ["testset", str(docs), "--reanchor", str(stale), "--out",
                                 str(tmp_path / "link.jsonl"), "--home", str(tmp_path / "home")])
    assert linked.exit_code != 0 and "is the set being re-anchored" in linked.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**_row("q9", "x", 0, 1), "spans": [{"doc_id": "docs/retry.rst",
                                                                    "start": None, "end": 1}]}))
    res = runner.invoke(app, ["testset", str(docs), "--reanchor", str(bad), "--out",
                              str(tmp_path / "b2.jsonl"), "--home", str(tmp_path / "home")])
    assert res.exit_code != 0 and "q9: span" in res.output and "whole numbers" in res.output
    new = tmp_path / "new.jsonl"
    res = runner.invoke(app, ["testset", str(docs), "--reanchor", str(stale), "--out", str(new),
                              "--home", str(tmp_path / "home")])
    assert res.exit_code == 0, res.output
    assert "0 rows hold as they are, 1 re-anchored" in res.output
    with pytest.raises(DatasetError, match="--reanchor SET --out NEW.jsonl"):
        load_local(docs, stale)
    ds = load_local(docs, new)  # the loader refuses the stale set and takes this one
    span = ds.spans["q1"][0]
    assert ds.corpus[0].text[span.start:span.end] == "30 seconds"


def test_an_answer_found_once_tells_where_a_repeated_one_moved() -> None:
    body = "Retries: 3 attempts.\n\n" + "filler words here. " * 20 + "\n\nTimeout: 3 attempts.\n"
    old = "x" * 300 + body  # the old reading had 300 characters of markup before the text
    new = body + "\n\nLater: 3 attempts again.\n"
    doc = Document(id="t.rst", text=new, format="rst")
    second = old.rindex("3 attempts")  # "3 attempts" is repeated; "Timeout" occurs once
    rows = [_row("unique", "Timeout", old.index("Timeout"), old.index("Timeout") + 7),
            _row("repeated", "3 attempts", second, second + 10)]
    alone, _ = reanchor(rows[1:], [doc], [])
    anchored, report = reanchor(rows, [doc], [])
    assert report.moved == ["unique", "repeated"]
    assert alone[0]["spans"][0]["start"] == new.rindex("3 attempts")  # the nearest: wrong
    assert anchored[1]["spans"][0]["start"] == new.index("Timeout: 3 attempts") + 9


def test_the_question_s_words_break_a_near_tie() -> None:
    text = ("Set the timeout to 30 seconds.\n\n" + "filler words here. " * 25
            + "\n\nThe retry loop waits 30 seconds.\n")
    doc = Document(id="t.rst", text=text, format="rst")
    first, second = text.index("30 seconds"), text.rindex("30 seconds")
    mid = (first + second) // 2  # the old place: as far from both copies
    row = {**_row("q", "30 seconds", mid, mid + 10), "question": "How long does the retry loop wait?"}
    out, _ = reanchor([row], [doc], [])
    assert out[0]["spans"][0]["start"] == second
    row["question"] = "What is the timeout set to?"
    out, _ = reanchor([row], [doc], [])
    assert out[0]["spans"][0]["start"] == first
