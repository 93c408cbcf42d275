"""The launcher that loads ggml's CPU backend before llama_cpp.server runs (`llama_launch`):
a no-op on a build with the backend linked in, the best run-time variant on a
GGML_BACKEND_DL build; the real server started through it answers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("llama_cpp")

from agentic_rag.config import LLMConfig  # noqa: E402
from agentic_rag.llama_launch import (  # noqa: E402
    VARIANT_ENV,
    _ggml,
    load_backends,
    registered_backends,
    variant_files,
)
from agentic_rag.llm import OpenAIChatModel  # noqa: E402
from agentic_rag.server import LAUNCHER, llama_build_info, server_settings  # noqa: E402


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
def test_the_server_runs_through_the_launcher_and_answers(smol_server):
    cmd = smol_server.command(smol_server.log_path)  # the model path is not read here
    assert cmd[1:3] == ["-m", LAUNCHER]
    log = smol_server.log_path.read_text(errors="replace")
    assert "agentic_rag.llama_launch: backends ['CPU']" in log
    reply = OpenAIChatModel(LLMConfig(max_tokens=8, cache=False),
                            base_url=smol_server.base_url).chat(
        [{"role": "user", "content": "Say hi"}])
    assert reply.content and reply.completion_tokens > 0
    assert server_settings(smol_server.config)["n_ctx"] == smol_server.config.n_ctx
