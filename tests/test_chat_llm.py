"""`agentic-rag chat --script` with the REAL local model (Qwen2.5-Coder-1.5B on the default
server, started here on a free loopback port) over a slice of the default corpus: the Python
tutorial and the first 20 τ²-banking documents, the index notebook `11-conversations` builds
with its CI parameters and caches in `experiments/cache/` (built here if absent). Two turns:
a question, then a follow-up that only makes sense with it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentic_rag.cli.main import app
from agentic_rag.config import RAGConfig
from agentic_rag.config_llm import ServerConfig
from agentic_rag.datasets.base import Dataset
from agentic_rag.datasets.corpora import banking_documents, python_docs
from agentic_rag.experiments.plan import open_index
from agentic_rag.llm.server import LlamaServer

from .fakes import free_port

pytestmark = [pytest.mark.slow, pytest.mark.llm]


@pytest.fixture(scope="module")
def default_home():
    bank = sorted(banking_documents(), key=lambda d: d.id)[:20]
    corpus = Dataset(name="default-corpus", corpus=python_docs(("tutorial",)) + bank, queries=[],
                     qrels={})
    cfg, _ = open_index(RAGConfig(), corpus, "experiments/cache")
    return cfg.home


def test_chat_script_follows_up_on_the_real_model(tmp_path, default_home):
    script = tmp_path / "turns.txt"
    script.write_text("How do I create a virtual environment?\nHow do I activate it on Windows?\n")
    with LlamaServer(ServerConfig(port=free_port(), n_ctx=4096), home=tmp_path) as srv:
        config = tmp_path / "chat.yaml"  # no reply cache: the model answers both turns
        RAGConfig().with_overrides({"llm.server.port": srv.config.port, "llm.cache": False}
                                   ).save(config)
        res = CliRunner().invoke(app, ["chat", "--script", str(script), "--json", "-c",
                                       str(config), "--home", default_home])
    assert res.exit_code == 0, res.output
    first, second = [json.loads(line) for line in res.output.splitlines() if line.startswith("{")]
    assert first["query"] == "How do I create a virtual environment?" and not first["follow_up"]
    assert second["follow_up"] and "virtual environment" in second["query"]
    assert second["history_turns"] == 1 and not second["clarifying"]
    for turn in (first, second):
        served = {p["chunk_id"] for p in turn["passages"]}
        assert turn["queries"] and served and turn["answer"], turn
        assert set(turn["cited"]) <= served, turn  # an answer may still mistype an id
    assert any("activate" in p["text"] for p in second["passages"])
    assert second["prompt_tokens"] > 0
