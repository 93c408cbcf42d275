"""`agentic-rag chat` (cli/chat.py): scripts checked before anything runs, one JSON object per
turn, stdin turns until /quit. The LLM is the canned HTTP server of tests/faultproxy.py,
under the closed_book policy (no index, no embedding model); the whole path on the real
model and the default corpus is tests/test_local_llm_chat.py."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentic_rag.agent.session import MESSAGE_MAX_CHARS
from agentic_rag.cli.main import app
from agentic_rag.config import RAGConfig

runner = CliRunner()


def _config(tmp_path, base_url: str, policy: str = "closed_book"):  # noqa: ANN202
    path = tmp_path / "config.yaml"
    RAGConfig().with_overrides({"home": str(tmp_path / "home"), "llm.base_url": base_url,
                                "llm.max_retries": 0, "agent.policy": policy}).save(path)
    return path


def test_a_script_line_over_the_query_limit_is_refused_before_anything_runs(tmp_path):
    script = tmp_path / "turns.txt"
    script.write_text("How do I create a virtual environment?\n\n" + "x" * (MESSAGE_MAX_CHARS + 1)
                      + "\n")
    cfg = _config(tmp_path, "http://127.0.0.1:9/v1")  # nothing answers there
    res = runner.invoke(app, ["chat", "--script", str(script), "--json", "-c", str(cfg),
                              "--no-serve"])
    assert res.exit_code == 2
    assert f"{script}:3: a turn of {MESSAGE_MAX_CHARS + 1} characters is over the query limit " \
           f"of {MESSAGE_MAX_CHARS} characters" in res.output
    assert "{" not in res.output  # no turn ran, nothing half-written
    assert not (tmp_path / "home").exists()
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    res = runner.invoke(app, ["chat", "--script", str(empty), "-c", str(cfg), "--no-serve"])
    assert res.exit_code == 2 and f"{empty}: no user turn" in res.output


def test_chat_script_prints_one_json_object_per_turn(tmp_path, stub_llm):
    script = tmp_path / "turns.txt"
    script.write_text("What is a list?\nHow do I sort it?\n/quit\nnever asked\n")
    cfg = _config(tmp_path, stub_llm.base_url)
    res = runner.invoke(app, ["chat", "--script", str(script), "--json", "-c", str(cfg),
                              "--no-serve"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.output.splitlines()]
    assert [r["message"] for r in rows] == ["What is a list?", "How do I sort it?"]
    first, second = rows
    for r in rows:
        assert {"query", "queries", "answer", "abstained", "clarifying", "passages", "cited",
                "citations", "stop_reason"} <= set(r) and "result" not in r
        assert r["answer"] == "The answer is in the context." and not r["clarifying"]
    assert first["history_turns"] == 0 and second["history_turns"] == 1
    assert second["follow_up"] and second["query"].startswith("list: ")  # carried: 'it'
    assert second["queries"] == [] and second["passages"] == []  # closed_book: no search


def test_chat_reads_stdin_until_quit_and_refuses_long_turns(tmp_path, stub_llm):
    cfg = _config(tmp_path, stub_llm.base_url)
    typed = f"What is a list?\n{'y' * (MESSAGE_MAX_CHARS + 5)}\n/quit\nWhat is a dict?\n"
    res = runner.invoke(app, ["chat", "-c", str(cfg), "--no-serve"], input=typed)
    assert res.exit_code == 0, res.output
    assert res.output.count("The answer is in the context.") == 1  # the long turn was not run
    assert f"over the query limit of {MESSAGE_MAX_CHARS}" in res.output
    assert "[turn 1; answer" in res.output and "turn 2" not in res.output
    res = runner.invoke(app, ["chat", "-c", str(cfg), "--no-serve", "--query-mode", "nope"],
                        input="hi\n")
    assert res.exit_code == 2 and "query_mode" in res.output
