"""`agentic-rag ask` says when its answer came from the reply cache (`llm.ChatCache`).

The LLM is a canned OpenAI-compatible HTTP server (tests/faultproxy.py's StubChatServer):
the first `ask` goes to it over HTTP, the second is read from the cache file, and only the
second says so, naming the file."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentic_rag.cli.main import app
from agentic_rag.config import RAGConfig

runner = CliRunner()


def _config(tmp_path, base_url: str):  # noqa: ANN202
    path = tmp_path / "config.yaml"
    RAGConfig().with_overrides({"home": str(tmp_path / "home"), "llm.base_url": base_url,
                                "llm.max_retries": 0}).save(path)
    return path


def test_closed_book_ask_says_when_the_reply_came_from_the_cache(tmp_path, stub_llm):
    cfg = _config(tmp_path, stub_llm.base_url)
    cache = tmp_path / "home" / "cache" / "llm.sqlite"
    args = ["ask", "What is a list?", "--config", str(cfg), "--policy", "closed_book", "--no-serve"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "The answer is in the context." in first.output  # the stub's reply, over HTTP
    assert "reply cache" not in first.output
    assert cache.exists()
    stub_llm.stop()  # nothing answers now: only the cache can
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "The answer is in the context." in second.output
    assert f"(from the reply cache, {cache}: the model was not asked)" in second.output


@pytest.mark.slow
def test_retrieve_first_ask_counts_only_llm_turns(tmp_path, stub_llm):
    """The policy's own search asks no LLM; a cached answer turn is the whole LLM work."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "lists.md").write_text("# Lists\n\nA list is a mutable sequence: `[1, 2, 3]`.\n")
    cfg = _config(tmp_path, stub_llm.base_url)
    res = runner.invoke(app, ["index", str(docs), "--config", str(cfg)])
    assert res.exit_code == 0, res.output
    args = ["ask", "What is a list?", "--config", str(cfg), "--policy", "retrieve_first",
            "--max-steps", "1", "--no-serve"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "policy search" in first.output and "reply cache" not in first.output
    stub_llm.stop()
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "(from the reply cache, " in second.output and "the model was not asked" in second.output
