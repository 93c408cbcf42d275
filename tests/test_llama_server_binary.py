"""`llm.server.binary`: llama.cpp's C++ llama-server instead of llama-cpp-python's. Its build
and CPU variant are read from the binary, its slots need it, and both enter the reply cache's
identity. The real build (`make llama-server`) is exercised when present."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentic_rag.config_llm import LLAMA_SERVER_BUILD, LLMConfig, ServerConfig
from agentic_rag.llm.binary import (
    ServerError,
    listener_pid,
    mapped_cpu_variant,
    served_repack,
    server_binary_info,
)
from agentic_rag.llm.cache import model_identity
from agentic_rag.llm.server import LlamaServer, server_settings

from .fakes import free_port

REAL = LLAMA_SERVER_BUILD


@pytest.fixture(autouse=True)
def _quick_variant_probe(monkeypatch):
    """The stand-in binaries below sleep when asked to serve: ggml's pick counts as running
    after 2 s instead of the real probe's 120 s (tests/test_llama_server_default.py tests
    the probe)."""
    monkeypatch.setattr("agentic_rag.llm.binary.PROBE_TIMEOUT_S", 2.0)


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
        ServerConfig(binary=None, slots=2)
    assert ServerConfig(binary="/x/llama-server", slots=2).slots == 2


def test_command_passes_the_settings_that_change_outputs(tmp_path):
    cfg = ServerConfig(binary=fake_binary(tmp_path), slots=2, n_ctx=4096, port=9111)
    cmd = LlamaServer(cfg).command(Path("/m/model.gguf"))
    args = dict(zip(cmd[1::2], cmd[2::2], strict=False))
    assert cmd[0] == cfg.binary and args["--model"] == "/m/model.gguf"
    assert args["--ctx-size"] == "8192" and args["--parallel"] == "2"  # n_ctx per slot
    assert args["--batch-size"] == args["--ubatch-size"] == "512" and args["--flash-attn"] == "off"
    assert "--no-repack" in cmd and "--repack" not in cmd  # zen4: plain kernels read faster
    forced = LlamaServer(cfg.model_copy(update={"repack": True})).command(Path("/m/model.gguf"))
    assert "--repack" in forced and "--no-repack" not in forced  # explicit: not the environment's
    (tmp_path / "avx2").mkdir()
    haswell = ServerConfig(binary=fake_binary(tmp_path / "avx2", variant="haswell"))
    assert "--repack" in LlamaServer(haswell).command(Path("/m/model.gguf"))
    assert server_settings(haswell)["repack"] is True
    s = server_settings(cfg)
    assert s["repack"] is False
    assert s["server"] == "llama-server" and s["slots"] == 2 and "logits_all" not in s
    assert server_settings(ServerConfig(binary=None))["logits_all"] is True  # llama-cpp-python's


def test_identity_carries_the_binary_build_and_slots(tmp_path):
    one = LLMConfig(server=ServerConfig(binary=fake_binary(tmp_path)))
    two = LLMConfig(server=ServerConfig(binary=one.server.binary, slots=2))
    a, b = model_identity(one), model_identity(two)
    assert "|build=llama-server 0.5.0-dev (build 1, commit 0c1e570)/zen4+no-repack|" in a
    assert a.endswith("|slots=1")
    # the weights repacked (the packs made before 2026-12-06): the old identity, theirs
    repacked = LLMConfig(server=ServerConfig(binary=one.server.binary, repack=True))
    assert "|build=llama-server 0.5.0-dev (build 1, commit 0c1e570)/zen4|" in model_identity(repacked)
    assert a != b and b.endswith("|slots=2")
    portable = LLMConfig(server=ServerConfig(binary=None))
    assert model_identity(portable) != a  # llama-cpp-python's server: another identity


@pytest.mark.slow
@pytest.mark.llm
@pytest.mark.skipif(not os.access(REAL, os.X_OK), reason="no llama-server build: make llama-server")
def test_the_real_llama_server_answers_with_logprobs(tmp_path):
    from agentic_rag.evaluation.support import graded_support
    from agentic_rag.llm.client import OpenAIChatModel
    from agentic_rag.llm.server import build_info

    # held to AVX2, which every machine we use runs (ggml's own pick, AMX on our Intel VMs,
    # dies of SIGILL there: test_a_variant_this_machine_refuses_names_the_setting)
    cfg = ServerConfig(model="smollm2-135m", binary=str(REAL), port=free_port(),
                       cpu_variant="haswell")
    with LlamaServer(cfg, home=tmp_path) as srv:
        chat = OpenAIChatModel(LLMConfig(cache=False, server=cfg), base_url=srv.base_url)
        p, reply = graded_support(chat, "Paris is the capital of France.", "Paris")
        assert 0.0 <= p <= 1.0 and reply.top_logprobs  # log-probabilities without logits_all
        assert mapped_cpu_variant(listener_pid(cfg.port)) == "haswell"
        # the same port asked for with another CPU variant: not reused (its replies would be
        # cached under the wrong build). x64 (SSE2) loads on every x86-64 processor: a variant
        # this one lacks (zen4 on an AVX2-only one) fails earlier, for another reason
        other = cfg.model_copy(update={"cpu_variant": "x64"})
        with pytest.raises(ServerError, match=r"running the 'haswell' CPU variant .*"
                                              r"this config runs 'x64'"):
            LlamaServer(other, home=tmp_path).start()
        # ... nor with the weights laid out otherwise (haswell repacks them by default)
        plain = cfg.model_copy(update={"repack": False})
        with pytest.raises(ServerError, match=r"repacks its weights .* does not"):
            LlamaServer(plain, home=tmp_path).start()
        assert LlamaServer(cfg, home=tmp_path).start().proc is None  # the same one is reused
    # llama.cpp takes the flag (a misspelt one would stop every default start on zen4 / icelake)
    plain = cfg.model_copy(update={"repack": False, "port": free_port()})
    with LlamaServer(plain, home=tmp_path / "plain") as srv:
        assert served_repack(listener_pid(plain.port)) is False
        chat = OpenAIChatModel(LLMConfig(cache=False, server=plain), base_url=srv.base_url)
        assert graded_support(chat, "Paris is the capital of France.", "Paris")[1].top_logprobs
    assert build_info(cfg)["cpu_variant"] == "haswell"
    assert server_binary_info(str(REAL))["version"] != "unknown"


def test_the_process_on_a_port_and_its_loaded_cpu_variant_are_read_from_proc(tmp_path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        assert listener_pid(port) is None  # bound, not listening
        sock.listen()
        assert listener_pid(port) == os.getpid()
    assert listener_pid(port) is None
    assert mapped_cpu_variant(os.getpid()) is None  # pytest maps no ggml CPU library
    assert mapped_cpu_variant(2 ** 22 + 1) is None  # no such process


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


def variant_build(tmp_path: Path, variants=("haswell", "zen4", "sapphirerapids"),
                  faults: str | None = None) -> str:
    """A stand-in GGML_BACKEND_DL build: `libggml-cpu-<v>.so` beside the binary, which (as
    ggml) loads the best of them it finds in its own folder or the working directory
    (`variants` is worst to best) and, serving on `faults`, dies of SIGILL."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    for name in [f"libggml-cpu-{v}.so" for v in variants] + ["libggml-base.so", "libllama.so"]:
        (bin_dir / name).write_text(name)
    exe = bin_dir / "llama-server"
    exe.write_text(f"""#!/bin/sh
here=$(dirname "$0")
best=""
for v in {' '.join(variants)}; do
  [ -e "$here/libggml-cpu-$v.so" ] || [ -e "$PWD/libggml-cpu-$v.so" ] && best=$v; done
if [ "$1" = "--version" ]; then echo "version: 0.5.0-dev (build 1, commit 0c1e570)" >&2;
elif [ "$1 $2" = "-v --list-devices" ]; then
  echo "I load_backend: loaded CPU backend from $here/libggml-cpu-$best.so" >&2;
else [ "$best" = "{faults}" ] && kill -ILL $$; exec sleep 30; fi
""")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_a_pinned_cpu_variant_is_the_only_one_the_server_can_load(tmp_path):
    from agentic_rag.llm.binary import served_binary
    from agentic_rag.llm.server import build_info

    binary = variant_build(tmp_path)
    auto, pinned = ServerConfig(binary=binary), ServerConfig(binary=binary, cpu_variant="zen4")
    assert build_info(auto)["cpu_variant"] == "sapphirerapids"  # ggml's best here
    assert build_info(pinned)["cpu_variant"] == "zen4"
    held = Path(served_binary(pinned))
    assert held.parent == Path(binary).parent / "variants" / "zen4"
    assert held.samefile(binary)  # a hard link: the same build
    assert sorted(p.name for p in held.parent.iterdir()) == [
        "libggml-base.so", "libggml-cpu-zen4.so", "libllama.so", "llama-server"]
    assert LlamaServer(pinned).command(Path("m.gguf"))[0] == str(held.absolute())
    # the identity names the variant that runs: a machine whose best is zen4 shares its replies
    zen4_best = variant_build(tmp_path / "amd", variants=("haswell", "zen4"))
    ident = model_identity(LLMConfig(server=pinned))
    assert "/zen4+no-repack|" in ident and ident != model_identity(LLMConfig(server=auto))
    assert "/sapphirerapids|" in model_identity(LLMConfig(server=auto))  # AMX: repacked
    assert ident == model_identity(LLMConfig(server=ServerConfig(binary=zen4_best)))


def test_an_unknown_or_orphan_cpu_variant_is_an_error_naming_it(tmp_path):
    from agentic_rag.llm.binary import served_binary

    binary = variant_build(tmp_path)
    with pytest.raises(ServerError, match=r"cpu_variant = 'skylakex'.*variants built: "
                                          r"haswell, sapphirerapids, zen4"):
        served_binary(ServerConfig(binary=binary, cpu_variant="skylakex"))
    with pytest.raises(ValidationError, match="cpu_variant = 'zen4' needs llm.server.binary"):
        ServerConfig(binary=None, cpu_variant="zen4")
    with pytest.raises(ValidationError, match="repack = False needs llm.server.binary"):
        ServerConfig(binary=None, repack=False)
    with pytest.raises(ValidationError, match="not a variant name"):
        ServerConfig(binary=binary, cpu_variant="../zen4")


def test_a_rebuilt_binary_remakes_its_variant_folder(tmp_path):
    from agentic_rag.llm.binary import variant_binary

    binary = variant_build(tmp_path)
    held = Path(variant_binary(binary, "haswell"))
    Path(binary).unlink()  # a rebuild writes a new file
    Path(binary).write_text("#!/bin/sh\necho rebuilt\n")
    assert not held.samefile(binary)
    assert Path(variant_binary(binary, "haswell")).read_text() == "#!/bin/sh\necho rebuilt\n"


def test_a_variant_this_machine_refuses_names_the_setting(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    binary = variant_build(tmp_path, faults="sapphirerapids")
    cfg = ServerConfig(model=str(model), binary=binary, port=free_port(), startup_timeout_s=20,
                       cpu_variant="sapphirerapids")  # pinned: no fall-back
    with pytest.raises(ServerError, match=r"SIGILL .* variant 'sapphirerapids': set "
                                          r"llm.server.cpu_variant .*built: haswell, "
                                          r"sapphirerapids, zen4"):
        LlamaServer(cfg, home=tmp_path).start()
    pinned = cfg.model_copy(update={"cpu_variant": "zen4", "startup_timeout_s": 1.0})
    with pytest.raises(ServerError, match="did not answer within"):  # zen4 runs (and hangs)
        LlamaServer(pinned, home=tmp_path).start()
    # not pinned: ggml's pick dies in the test completion, the next variant down is served
    auto = cfg.model_copy(update={"cpu_variant": None, "startup_timeout_s": 1.0})
    with pytest.raises(ServerError, match="did not answer within"):
        LlamaServer(auto, home=tmp_path).start()
    assert Path(LlamaServer(auto).command(model)[0]).parent.name == "zen4"


def test_the_pin_holds_whatever_the_working_directory(tmp_path, monkeypatch):
    """ggml also loads CPU libraries from the working directory: run from the build folder
    (which holds the faulting variant), the pinned server must still load only its own."""
    from agentic_rag.llm.server import build_info

    binary = variant_build(tmp_path, faults="sapphirerapids")
    monkeypatch.chdir(Path(binary).parent)
    cfg = ServerConfig(binary=binary, cpu_variant="zen4")
    assert build_info(cfg)["cpu_variant"] == "zen4"
    cmd = LlamaServer(cfg).command(Path("m.gguf"))
    assert Path(cmd[0]).is_absolute() and Path(cmd[2]).is_absolute()  # valid from any cwd


def test_threads_asking_for_the_variant_folder_at_once_get_one_complete_folder(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from agentic_rag.llm.binary import variant_binary

    binary = variant_build(tmp_path)
    with ThreadPoolExecutor(8) as pool:
        held = set(pool.map(lambda _: variant_binary(binary, "haswell"), range(32)))
    assert len(held) == 1
    folder = Path(held.pop()).parent
    assert sorted(p.name for p in folder.iterdir()) == [
        "libggml-base.so", "libggml-cpu-haswell.so", "libllama.so", "llama-server"]
    assert [p.name for p in folder.parent.iterdir() if p.name != ".lock"] == ["haswell"]


def test_repacking_is_off_only_where_the_plain_kernels_were_measured_faster():
    from agentic_rag.llm.binary import PACK_SERVER, repacks

    auto = ServerConfig(binary="/x/llama-server")
    assert [v for v in ("sapphirerapids", "zen4", "icelake", "skylakex", "haswell", "x64", None)
            if not repacks(auto, v)] == ["zen4", "icelake"]
    assert repacks(auto.model_copy(update={"repack": True}), "zen4")
    assert not repacks(auto.model_copy(update={"repack": False}), "sapphirerapids")
    # the committed packs' server, as an overlay: zen4, repacked
    from agentic_rag.config import RAGConfig

    packs = RAGConfig().with_overrides({"llm.server.binary": "/x/llama-server", **PACK_SERVER})
    assert packs.llm.server.cpu_variant == "zen4" and repacks(packs.llm.server, "zen4")


def test_a_running_servers_repacking_is_read_from_its_command_line(tmp_path):
    import subprocess
    import sys

    from agentic_rag.llm.binary import served_repack

    cases = (([], {}, True), (["--no-repack"], {}, False), (["-nr"], {}, False),
             (["--repack"], {}, True), (["--no-repack", "--repack"], {}, True),  # the last wins
             (["--repack", "-nr"], {}, False),
             ([], {"LLAMA_ARG_REPACK": "0"}, False), ([], {"LLAMA_ARG_REPACK": "off"}, False),
             ([], {"LLAMA_ARG_REPACK": "1"}, True),
             (["--repack"], {"LLAMA_ARG_REPACK": "false"}, True))  # the command line wins
    for args, env, repacked in cases:
        p = subprocess.Popen([sys.executable, "-c", "import time; print(1, flush=True); "
                              "time.sleep(30)", *args], stdout=subprocess.PIPE,
                             env={**os.environ, **env})
        try:
            p.stdout.readline()  # it runs: its command line is its own, not a fork's
            assert served_repack(p.pid) is repacked, (args, env)
        finally:
            p.kill()
            p.wait()
    assert served_repack(2**22 + 12345) is None  # no such process


def test_a_server_on_the_port_that_repacks_otherwise_is_not_reused(tmp_path, monkeypatch):
    import agentic_rag.llm.server as server_mod

    cfg = ServerConfig(binary=fake_binary(tmp_path))  # zen4: plain kernels by default
    monkeypatch.setattr(server_mod, "listener_pid", lambda port: 4242)
    monkeypatch.setattr(server_mod, "mapped_cpu_variant", lambda pid: "zen4")
    entry = {"id": "local", "owned_by": "llamacpp"}
    for theirs, ours, refused in ((True, None, True), (False, None, False), (True, True, False),
                                  (False, True, True), (None, None, False)):  # None: unreadable
        monkeypatch.setattr(server_mod, "served_repack", lambda pid, v=theirs: v)
        srv = LlamaServer(cfg.model_copy(update={"repack": ours}))
        if refused:
            with pytest.raises(ServerError, match=r"round differently"):
                srv._check_kind(entry)
        else:
            srv._check_kind(entry)


def test_the_processor_class_is_read_from_its_flags():
    from agentic_rag.llm.processor import processor_class

    zen3 = "fpu sse2 ssse3 fma sse4_2 avx f16c avx2 bmi2"  # AMD EPYC family 25 model 1
    zen4 = zen3 + " avx512f avx512dq avx512bw avx512vl avx512_vnni avx512_bf16"
    spr = zen4 + " amx_bf16 amx_tile amx_int8"
    assert [processor_class(f) for f in (spr, zen4, zen3, "fpu sse2", "avx2")] == [
        "AMX", "AVX-512", "AVX2", "x86-64", "x86-64"]  # AVX2 without FMA: haswell cannot load
