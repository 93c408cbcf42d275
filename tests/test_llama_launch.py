"""The launcher that loads ggml's CPU backend before llama_cpp.server runs (`llm.launch`):
a no-op on a build with the backend linked in, the best run-time variant on a
GGML_BACKEND_DL build; the real server started through it answers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("llama_cpp")

from agentic_rag.config_llm import LLMConfig, ServerConfig  # noqa: E402
from agentic_rag.llm.client import OpenAIChatModel  # noqa: E402
from agentic_rag.llm.launch import VARIANT_ENV, _ggml, load_backends, registered_backends, variant_files
from agentic_rag.llm.server import LAUNCHER, LlamaServer, llama_build_info  # noqa: E402

from .fakes import free_port  # noqa: E402


def test_load_backends_registers_the_cpu_backend_once():
    lib, lib_dir = _ggml()
    before = lib.ggml_backend_reg_count()
    names = load_backends()
    assert "CPU" in names and names == registered_backends()
    if not variant_files(lib_dir):  # linked-in build: nothing loaded, nothing changed
        assert before == lib.ggml_backend_reg_count() == len(names)
    assert load_backends() == names  # a second call loads nothing more


def test_build_info_names_the_cpu_backend_this_machine_loads():
    info = llama_build_info()
    assert info["llama_cpp_python"] and info["ggml_version"] and info["cpu_backend"]
    assert info["cpu_features"] and info["system_info"].startswith("CPU")
    if info["backend_dl"]:
        assert info["cpu_variant"] in info["cpu_variants"]
        assert info["cpu_backend"] == f"libggml-cpu-{info['cpu_variant']}.so"
    else:
        assert info["cpu_variant"] is None and info["cpu_backend"].startswith("libggml-cpu.so")


def test_an_unknown_forced_variant_is_a_clear_error():
    env = {**os.environ, VARIANT_ENV: "no-such-cpu"}
    out = subprocess.run([sys.executable, "-m", LAUNCHER, "--info"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert f"{VARIANT_ENV}='no-such-cpu'" in out.stderr


@pytest.mark.slow
@pytest.mark.llm
def test_the_server_runs_through_the_launcher_and_decodes_a_batched_prompt(tmp_path, monkeypatch):
    """Its own SmolLM2 server, with llama_cpp.server's default micro-batches (the session
    fixture decodes one token at a time): a prompt of ~150 tokens is decoded in one batch by
    the CPU backend the launcher loaded (batched decoding is where a -march=native build
    crashed on our Xeons)."""
    srv = LlamaServer(ServerConfig(model="smollm2-135m", port=free_port(), n_ctx=2048, binary=None),
                      home=tmp_path)
    monkeypatch.delenv("N_UBATCH", raising=False)
    monkeypatch.delenv("N_BATCH", raising=False)
    with srv:
        assert srv.command(srv.log_path)[1:3] == ["-m", LAUNCHER]
        log = srv.log_path.read_text(errors="replace")
        assert "agentic_rag.llm.launch: backends ['CPU']" in log
        text = " ".join(f"Item {i} costs {i * 3} dollars." for i in range(20))
        reply = OpenAIChatModel(LLMConfig(max_tokens=8, cache=False),
                                base_url=srv.base_url).chat(
            [{"role": "user", "content": f"{text}\nWhat does item 4 cost?"}])
        assert reply.prompt_tokens > 100 and reply.content and reply.completion_tokens > 0
        assert srv.proc.poll() is None  # still alive after the batched decode
    assert srv.proc is None
