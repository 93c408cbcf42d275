"""Issue 39: llama.cpp's C++ llama-server is the default local LLM server when `make install`
built it; the CPU variant served is ggml's pick only when it answers a test completion (else
the next built variant down that does); without the build, llama-cpp-python's portable server
runs and says so in one line. Stand-in binaries (shell scripts) play ggml's variant choice
and a variant dying of SIGILL; the real build is exercised when present."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest

from agentic_rag import config_llm
from agentic_rag.config_llm import LLAMA_SERVER_BUILD, LLMConfig, ServerConfig
from agentic_rag.llm import binary as llm_binary
from agentic_rag.llm import server
from agentic_rag.llm.binary import ServerError, runnable_binary, served_binary, server_binary_info
from agentic_rag.llm.cache import model_identity
from agentic_rag.llm.models import ModelMissing
from agentic_rag.llm.server import portable_fallback_reason

BEST_FIRST = ("sapphirerapids", "zen4", "icelake", "skylakex", "haswell", "x64")


def build(tmp_path: Path, built=("x64", "haswell", "skylakex", "icelake", "zen4",
                                 "sapphirerapids"),
          supported=BEST_FIRST, dies=()) -> str:
    """A stand-in GGML_BACKEND_DL llama-server: `libggml-cpu-<v>.so` beside it for each built
    variant; like ggml it loads the best one found in its own folder that this (pretend)
    processor `supported`; serving, it dies of SIGILL when that one is in `dies`, else
    exits (a probe that cannot tell counts as running). Each serve is counted in `serves`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    for name in [f"libggml-cpu-{v}.so" for v in built] + ["libggml-base.so"]:
        (bin_dir / name).write_text(name)
    exe = bin_dir / "llama-server"
    order = " ".join(v for v in BEST_FIRST if v in supported)
    exe.write_text(f"""#!/bin/sh
here=$(dirname "$0")
pick=""
for v in {order}; do [ -e "$here/libggml-cpu-$v.so" ] && {{ pick=$v; break; }}; done
if [ "$1" = "--version" ]; then echo "version: 0.5.0-dev (build 1, commit 0c1e570)" >&2; exit 0; fi
if [ "$1 $2" = "-v --list-devices" ]; then
  [ -n "$pick" ] && echo "I load_backend: loaded CPU backend from $here/libggml-cpu-$pick.so" >&2
  exit 0; fi
echo "$pick" >> {tmp_path}/serves
case " {' '.join(dies)} " in *" $pick "*) kill -ILL $$;; esac
exit 0
""")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    runnable_binary.cache_clear()
    fake_model = tmp_path / "probe.gguf"
    fake_model.write_bytes(b"GGUF")
    monkeypatch.setattr(llm_binary, "resolve_model", lambda name: fake_model)
    yield
    runnable_binary.cache_clear()


def _serves(tmp_path: Path) -> list[str]:
    f = tmp_path / "serves"
    return f.read_text().split() if f.exists() else []


def test_ggml_pick_is_served_when_its_test_completion_runs(tmp_path):
    binary = build(tmp_path, supported=("zen4", "icelake", "skylakex", "haswell", "x64"))
    assert runnable_binary(binary) == binary  # not held: ggml's own pick, zen4
    assert _serves(tmp_path) == ["zen4"]  # one test completion
    ident = model_identity(LLMConfig(server=ServerConfig(binary=binary)))
    assert "|build=llama-server 0.5.0-dev (build 1, commit 0c1e570)/zen4+no-repack|" in ident


def test_a_pick_that_dies_falls_back_to_the_next_built_variant_that_runs(tmp_path, caplog):
    # an Intel Xeon under a hypervisor: AMX (sapphirerapids) is ggml's pick and dies of SIGILL
    binary = build(tmp_path, dies=("sapphirerapids",))
    with caplog.at_level(logging.WARNING, logger="agentic_rag.llm.binary"):
        held = served_binary(ServerConfig(binary=binary))
    assert Path(held).parent == Path(binary).parent / "variants" / "zen4"
    assert _serves(tmp_path) == ["sapphirerapids", "zen4"]
    [line] = [r.getMessage() for r in caplog.records]
    assert "sapphirerapids does not run here (SIGILL)" in line and "running zen4" in line
    # the replies are filed under the variant that runs: the same as a machine picking zen4
    ident = model_identity(LLMConfig(server=ServerConfig(binary=binary)))
    assert "/zen4+no-repack|" in ident
    amd = tmp_path / "amd"
    amd.mkdir()
    zen4 = build(amd, supported=("zen4", "icelake", "skylakex", "haswell", "x64"))
    assert ident == model_identity(LLMConfig(server=ServerConfig(binary=zen4)))


def test_variants_this_processor_cannot_load_or_that_die_are_skipped(tmp_path):
    # zen4 and icelake die too; this processor cannot load skylakex (not in `supported`)
    binary = build(tmp_path, supported=("sapphirerapids", "zen4", "icelake", "haswell", "x64"),
                   dies=("sapphirerapids", "zen4", "icelake"))
    held = runnable_binary(binary)
    assert Path(held).parent.name == "haswell"
    assert server_binary_info(held)["cpu_variant"] == "haswell"
    assert _serves(tmp_path) == ["sapphirerapids", "zen4", "icelake", "haswell"]


def test_no_variant_that_runs_is_an_error_naming_the_way_out(tmp_path):
    binary = build(tmp_path, built=("haswell", "zen4"), dies=("haswell", "zen4"))
    with pytest.raises(ServerError, match=r"no built CPU variant answers a test completion.*"
                                          r"'zen4': SIGILL.*llm.server.binary: null"):
        runnable_binary(binary)


def test_the_test_completion_is_remembered_per_binary_and_processor(tmp_path):
    binary = build(tmp_path, dies=("sapphirerapids",))
    first = runnable_binary(binary)
    memo = json.loads((Path(binary).parent / "variants" / "probed.json").read_text())
    assert sorted(memo.values(), key=str) == [None, "SIGILL"]  # zen4 ran, sapphirerapids died
    runnable_binary.cache_clear()  # another process: no new test completion
    assert runnable_binary(binary) == first and len(_serves(tmp_path)) == 2
    Path(binary).touch()  # a rebuilt binary is tested again
    runnable_binary.cache_clear()
    runnable_binary(binary)
    assert len(_serves(tmp_path)) == 4


def test_without_the_probe_model_the_pick_is_served_untested(tmp_path, monkeypatch, caplog):
    def missing(name):
        raise ModelMissing("no smollm2-135m")
    monkeypatch.setattr(llm_binary, "resolve_model", missing)
    binary = build(tmp_path, dies=("sapphirerapids",))
    with caplog.at_level(logging.WARNING, logger="agentic_rag.llm.binary"):
        assert runnable_binary(binary) == binary
    assert "not tested (no smollm2-135m)" in caplog.text and _serves(tmp_path) == []
    assert not (Path(binary).parent / "variants" / "probed.json").exists()  # asked again


def test_a_binary_without_runtime_variants_is_served_as_it_is(tmp_path):
    exe = tmp_path / "llama-server"
    exe.write_text('#!/bin/sh\n[ "$1" = "--version" ] && echo "version: 1 (x)" >&2\nexit 0\n')
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    assert runnable_binary(str(exe)) == str(exe)


def test_the_default_binary_is_the_build_when_there(tmp_path, monkeypatch):
    monkeypatch.delenv(config_llm.LLAMA_SERVER_ENV, raising=False)
    built = Path(build(tmp_path))
    monkeypatch.setattr(config_llm, "LLAMA_SERVER_BUILD", built)
    assert ServerConfig().binary == str(built)
    assert ServerConfig(binary=None).binary is None  # the portable server, chosen
    monkeypatch.setattr(config_llm, "LLAMA_SERVER_BUILD", tmp_path / "none" / "llama-server")
    assert ServerConfig().binary is None  # not built: llama-cpp-python's server
    monkeypatch.setenv(config_llm.LLAMA_SERVER_ENV, "none")
    monkeypatch.setattr(config_llm, "LLAMA_SERVER_BUILD", built)
    assert ServerConfig().binary is None
    monkeypatch.setenv(config_llm.LLAMA_SERVER_ENV, "/opt/llama-server")
    assert ServerConfig().binary == "/opt/llama-server"


def test_the_portable_fallback_says_what_failed_and_what_it_costs(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv(config_llm.LLAMA_SERVER_ENV, raising=False)
    exe = tmp_path / ".venv/llama-server/build/bin/llama-server"
    monkeypatch.setattr(server, "LLAMA_SERVER_BUILD", exe)
    assert "no llama-server at" in portable_fallback_reason()
    (tmp_path / ".venv/llama-server").mkdir(parents=True)
    (tmp_path / ".venv/llama-server/FAILED").write_text(
        "llama-server build failed: cmake: command not found (log .venv/llama-server/build.log)\n")
    why = portable_fallback_reason()
    assert why.startswith("llama-server build failed: cmake: command not found")
    assert "portable server" in why and "2.5x fewer questions an hour" in why
    assert "\n" not in why  # one line
    server._WARNED.clear()
    with caplog.at_level(logging.WARNING, logger="agentic_rag.llm.server"):
        server._warn_portable_fallback()
        server._warn_portable_fallback()  # once per process
    assert [r.getMessage() for r in caplog.records] == [why]
    monkeypatch.setenv(config_llm.LLAMA_SERVER_ENV, "none")  # chosen: nothing to say
    assert portable_fallback_reason() is None


@pytest.mark.slow
@pytest.mark.llm
@pytest.mark.skipif(not os.access(LLAMA_SERVER_BUILD, os.X_OK),
                    reason="no llama-server build: make install")
def test_the_real_build_serves_a_variant_that_answers(monkeypatch):
    from agentic_rag.llm.models import resolve_model

    monkeypatch.setattr(llm_binary, "resolve_model", resolve_model)
    exe = runnable_binary(str(LLAMA_SERVER_BUILD))
    info = server_binary_info(exe)
    assert info["backend_dl"] and info["cpu_variant"] in llm_binary.VARIANT_RANK
    assert "sapphirerapids" in llm_binary.cpu_variants(str(LLAMA_SERVER_BUILD))
    if _has_amx():  # the AMX variant answers (make's AMX_TLS_PATCH): before it, SIGILL
        assert info["cpu_variant"] == "sapphirerapids"


def _has_amx() -> bool:
    """The processor and the kernel offer AMX's int8 tiles (/proc/cpuinfo's flags)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " amx_int8" in flags and " amx_tile" in flags


def test_a_lost_log_line_is_asked_again_not_read_as_a_linked_build(tmp_path):
    """llama.cpp logs from a worker thread that may exit before it writes: the variant line of
    `-v --list-devices` was missing in 5 of 20 runs on a busy machine."""
    (tmp_path / "libggml-cpu-zen4.so").write_text("lib")
    exe = tmp_path / "llama-server"
    exe.write_text(f"""#!/bin/sh
if [ "$1" = "--version" ]; then echo "version: 0.5.0-dev (build 1, commit 0c1e570)" >&2; exit 0; fi
echo x >> {tmp_path}/runs
lib="$(dirname "$0")/libggml-cpu-zen4.so"
[ $(wc -l < {tmp_path}/runs) -ge 3 ] && echo "I load_backend: loaded CPU backend from $lib" >&2
exit 0
""")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    assert server_binary_info(str(exe))["cpu_variant"] == "zen4"
    assert len((tmp_path / "runs").read_text().split()) == 3  # the line came on the third run
