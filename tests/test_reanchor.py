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

OLD = "Timeouts\n========\n\nThe client waits 30 seconds, then retries twice.\n"
NEW = "Timeouts\n========\n\n**Note**\n\nThe client waits 30 seconds, then retries twice.\n"


def _row(qid: str, answer: str, start: int, end: int, **extra) -> dict:
    return {"id": qid, "question": "?", "answer": answer, "doc_ids": ["t.rst"],
            "spans": [{"doc_id": "t.rst", "start": start, "end": end}],
            "chunk_id": f"t.rst#prose@0-{len(OLD)}", "chunk_type": "prose",
            "generator": "model@x", **extra}


def test_stale_spans_move_to_their_answer_and_the_rest_is_reported() -> None:
    doc = Document(id="t.rst", text=NEW, format="rst")
    chunks = AgenticChunker(RAGConfig().chunking).chunk(doc)
    at = OLD.index("30 seconds")
    rows = [_row("moved", "30 seconds", at, at + 10),
            _row("holds", "Timeouts", 0, 8),
            _row("gone", "45 seconds", at, at + 10),
            {"id": "unanswerable", "question": "?", "answer": "", "spans": [],
             "generator": "model@x"},
            {"id": "hand-made", "question": "?", "answer": "x",
             "spans": [{"doc_id": "t.rst", "start": 0, "end": 1}]}]
    out, report = reanchor(rows, [doc], chunks)
    assert [r["id"] for r in out] == ["moved", "holds", "unanswerable", "hand-made"]
    assert report.kept == 3 and report.moved == ["moved"]
    assert report.dropped == {"gone": "'45 seconds' does not occur in t.rst"}
    span = out[0]["spans"][0]
    assert NEW[span["start"]:span["end"]] == "30 seconds" and out[0]["reanchored"] is True
    holder = next(c for c in chunks if c.id == out[0]["chunk_id"])
    assert holder.start_char <= span["start"] and span["end"] <= holder.end_char
    assert out[1] is rows[1]  # untouched rows are the same objects, no "reanchored" mark


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
