"""`llm.server.binary`: llama.cpp's C++ llama-server instead of llama-cpp-python's. Its build
and CPU variant are read from the binary, its slots need it, and both enter the reply cache's
identity. The real build (`make llama-server`) is exercised when present."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentic_rag.config import LLMConfig, ServerConfig
from agentic_rag.llm import model_identity
from agentic_rag.server import (
    LLAMA_SERVER_BUILD,
    LlamaServer,
    ServerError,
    server_binary_info,
    server_settings,
)

from .conftest import free_port

REAL = LLAMA_SERVER_BUILD


def fake_binary(tmp_path: Path, variant: str | None = "zen4", rc: int = 0) -> str:
    """A stand-in executable printing what llama-server prints for --version / --list-devices."""
    lib = f"load_backend: loaded CPU backend from /x/libggml-cpu-{variant}.so" if variant else ""
    exe = tmp_path / "llama-server"
    exe.write_text(f"""#!/bin/sh
if [ "$1" = "--version" ]; then echo "version: 0.5.0-dev (build 1, commit 0c1e570)" >&2;
  echo "built with GNU 12.2.0 for Linux x86_64" >&2;
elif [ "$1 $2" = "-v --list-devices" ]; then echo "0.00.022 I {lib}" >&2; echo "Available devices:";
fi
exit {rc}
""")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_binary_info_reads_version_and_the_loaded_cpu_variant(tmp_path):
    info = server_binary_info(fake_binary(tmp_path))
    assert info["version"] == "0.5.0-dev (build 1, commit 0c1e570)"
    assert info["built_with"] == "GNU 12.2.0 for Linux x86_64"
    assert info["backend_dl"] and info["cpu_variant"] == "zen4"
    linked = tmp_path / "linked"
    linked.mkdir()
    assert server_binary_info(fake_binary(linked, variant=None))["cpu_variant"] is None


def test_a_missing_or_failing_binary_is_an_error_naming_it(tmp_path):
    with pytest.raises(ServerError, match="no executable file there"):
        server_binary_info(str(tmp_path / "nope"))
    bad = fake_binary(tmp_path, rc=3)
    with pytest.raises(ServerError, match=r"--version exited with 3"):
        server_binary_info(bad)


def test_slots_need_the_binary():
    with pytest.raises(ValidationError, match="slots = 2 needs llm.server.binary"):
        ServerConfig(slots=2)
    assert ServerConfig(binary="/x/llama-server", slots=2).slots == 2


def test_command_passes_the_settings_that_change_outputs(tmp_path):
    cfg = ServerConfig(binary=fake_binary(tmp_path), slots=2, n_ctx=4096, port=9111)
    cmd = LlamaServer(cfg).command(Path("/m/model.gguf"))
    args = dict(zip(cmd[1::2], cmd[2::2], strict=False))
    assert cmd[0] == cfg.binary and args["--model"] == "/m/model.gguf"
    assert args["--ctx-size"] == "8192" and args["--parallel"] == "2"  # n_ctx per slot
    assert args["--batch-size"] == args["--ubatch-size"] == "512" and args["--flash-attn"] == "off"
    s = server_settings(cfg)
    assert s["server"] == "llama-server" and s["slots"] == 2 and "logits_all" not in s
    assert server_settings(ServerConfig())["logits_all"] is True  # llama-cpp-python's


def test_identity_carries_the_binary_build_and_slots(tmp_path):
    one = LLMConfig(server=ServerConfig(binary=fake_binary(tmp_path)))
    two = LLMConfig(server=ServerConfig(binary=one.server.binary, slots=2))
    a, b = model_identity(one), model_identity(two)
    assert "|build=llama-server 0.5.0-dev (build 1, commit 0c1e570)/zen4|" in a
    assert a.endswith("|slots=1")
    assert a != b and b.endswith("|slots=2")
    assert model_identity(LLMConfig()) != a  # llama-cpp-python's server: another identity


@pytest.mark.slow
@pytest.mark.llm
@pytest.mark.skipif(not os.access(REAL, os.X_OK), reason="no llama-server build: make llama-server")
def test_the_real_llama_server_answers_with_logprobs(tmp_path):
    from agentic_rag.evaluation.support import graded_support
    from agentic_rag.llm import OpenAIChatModel

    cfg = ServerConfig(model="smollm2-135m", binary=str(REAL), port=free_port())
    with LlamaServer(cfg, home=tmp_path) as srv:
        chat = OpenAIChatModel(LLMConfig(cache=False, server=cfg), base_url=srv.base_url)
        p, reply = graded_support(chat, "Paris is the capital of France.", "Paris")
        assert 0.0 <= p <= 1.0 and reply.top_logprobs  # log-probabilities without logits_all
    assert server_binary_info(str(REAL))["version"] != "unknown"


@pytest.mark.parametrize(("owned_by", "binary", "theirs"), [
    ("llamacpp", None, "llama-server"),          # a C++ server on the port, config: the default
    ("me", "/x/llama-server", "llama_cpp.server"),  # llama-cpp-python's, config: a binary
])
def test_a_running_server_of_the_other_kind_is_not_reused(owned_by, binary, theirs):
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Models(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps({"object": "list", "data": [
                {"id": "local", "object": "model", "owned_by": owned_by}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        cfg = ServerConfig(port=httpd.server_address[1], binary=binary, startup_timeout_s=5)
        with pytest.raises(ServerError, match=f"already serves 'local' from a {theirs}"):
            LlamaServer(cfg).start()
        same = "me" if owned_by == "llamacpp" else "llamacpp"  # the matching kind is reused
        owned_by = same
        assert LlamaServer(cfg).start().proc is None
    finally:
        httpd.shutdown()
