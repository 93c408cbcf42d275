from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentic_rag.cli.main import app

runner = CliRunner()


@pytest.mark.slow  # `index` embeds with the real model
def test_index_and_search_typed(tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        "# Install\n\n## Linux\n\nUse pip.\n\n```bash\npip install agentic-rag\n```\n\n"
        "| OS | Command |\n|---|---|\n| Linux | apt install x |\n| Mac | brew install x |\n")
    (docs / "notes.rst").write_text("Notes\n=====\n\nA paragraph.\n\n1. first\n2. second\n")
    home = tmp_path / "home"
    res = runner.invoke(app, ["index", str(docs), "--home", str(home)])
    assert res.exit_code == 0, res.output
    assert "indexed 2 documents" in res.output and "table_row" in res.output
    res = runner.invoke(app, ["search", "brew install on mac", "--type", "table_row", "-k", "2",
                              "--home", str(home)])
    assert res.exit_code == 0, res.output
    assert "[table_row row 2/2] Install > Linux" in res.output
    assert "docs/install.md" in res.output
    res = runner.invoke(app, ["search", "pip install", "--type", "code", "--home", str(home),
                              "--mode", "bm25"])
    assert res.exit_code == 0 and "[code]" in res.output
    # second run: nothing re-embedded
    res = runner.invoke(app, ["index", str(docs), "--home", str(home)])
    assert "2 documents unchanged" in res.output
    # a page with no text (filled in by scripts) is named, not silently left out
    (docs / "app.html").write_text("<html><body><div id='root'></div><script>x()</script></body>")
    res = runner.invoke(app, ["index", str(docs), "--home", str(home)])
    assert res.exit_code == 0 and "1 documents with no text, not indexed" in res.output
    assert "docs/app.html" in res.output


def test_bad_type_and_bad_config_are_named(tmp_path):
    res = runner.invoke(app, ["search", "x", "--type", "picture", "--home", str(tmp_path)])
    assert res.exit_code == 2 and "picture" in res.output
    cfg = tmp_path / "c.yaml"
    cfg.write_text("store:\n  kind: pinecone\n")
    res = runner.invoke(app, ["search", "x", "--config", str(cfg)])
    assert res.exit_code == 2 and "store.kind" in res.output and "pinecone" in res.output


def test_index_reports_bad_file(tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"\xff\xfe\x00\x00binary")
    res = runner.invoke(app, ["index", str(bad), "--home", str(tmp_path / "h")])
    assert res.exit_code == 2 and "bad.md" in res.output


@pytest.mark.parametrize("args, want", [
    (["--cells", "a", "b", "--n", "3"], ["--cells", "a", "--cells", "b", "--n", "3"]),
    (["--runs", "--threshold", "0.4"], ["--runs=", "--threshold", "0.4"]),
    (["--n", "3", "--runs"], ["--n", "3", "--runs="]),
    (["--cells=a", "--x", "-1"], ["--cells=a", "--x", "-1"]),
    (["--runs", "--", "--cells", "x"], ["--runs=", "--", "--cells", "x"]),
])
def test_list_options_take_several_values_after_one_flag(args, want):
    """`ManyValues` reads `--f a b` as click's `--f a --f b`, and a bare `--f` as one empty
    value, only for the command's list options."""
    from agentic_rag.cli.app import spread_values

    assert spread_values(args, {"--cells", "--runs"}) == want


def test_testset_refuses_a_question_set_among_the_documents(tmp_path):
    """`--exclude a.jsonl b.jsonl` (or `--exclude dir{,-s1}/x.jsonl` in a shell) hands b.jsonl to
    DOCS; it was read as a document (issue 40's shared-dev run: 94 of 148 draws were chunks of
    such files). It is an error naming the file, before any LLM call
    (`ingest.readers.iter_document_paths`, so `index` and `tune` refuse it too)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe fee is $5.00.\n")
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for f in (first, second):
        f.write_text('{"id": "q1", "question": "q?", "answer": "$5.00", "chunk_id": "docs/a.md#prose@0-9"}\n')
    res = runner.invoke(app, ["testset", str(docs), "--exclude", str(first), str(second),
                              "--out", str(tmp_path / "out.jsonl"), "--home", str(tmp_path / "h")])
    assert res.exit_code == 2, res.output
    assert "b.jsonl: not a document" in res.output
    assert "repeat --exclude before each file" in res.output
    # a file given by itself is chosen as a folder's files are: by suffix
    from agentic_rag.documents import DocumentError
    from agentic_rag.ingest.readers import iter_document_paths

    (tmp_path / "notes.csv").write_text("a,b\n")
    with pytest.raises(DocumentError, match=r"notes.csv: not a document \(\.md"):
        list(iter_document_paths([tmp_path / "notes.csv"]))
    assert [i for _, i in iter_document_paths([docs / "a.md"])] == ["a.md"]
