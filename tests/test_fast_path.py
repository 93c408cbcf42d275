"""Issue 64: the fastest correct path per processor class (agentic_rag/llm/fast_path.py), read at
launch: in the server's command, its settings (run folders), the reply cache's identity, and a
weight format converted once (models.converted_model). No LLM: fake executables."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from agentic_rag.config_llm import LLMConfig, ServerConfig
from agentic_rag.llm import fast_path
from agentic_rag.llm.binary import served_repacks
from agentic_rag.llm.cache import model_identity
from agentic_rag.llm.fast_path import FASTEST, TODAY, FastPath, chosen_path, served_weights
from agentic_rag.llm.models import MODELS, ModelMissing, converted_model, model_path
from agentic_rag.llm.processor import PROCESSOR_CLASSES, processor_class, processor_info
from agentic_rag.llm.server import LlamaServer, differing_args, server_settings
from agentic_rag.packages import file_sha256
from tests.test_llama_server_binary import fake_binary

QWEN = MODELS["qwen2.5-coder-1.5b"]
TODAYS_IDENTITY = (f"qwen2.5-coder-1.5b@{QWEN.sha256}|build=llama-server 0.5.0-dev (build 1, "
                   "commit 0c1e570)/zen4+no-repack|n_ctx=8192|chat_format=None|n_threads=2|slots=1")


def _same_as_today(path: FastPath) -> bool:
    return (path.weights, path.repack, path.n_batch, path.n_ubatch, path.flash_attn) == (
        TODAY.weights, TODAY.repack, TODAY.n_batch, TODAY.n_ubatch, TODAY.flash_attn)


def test_every_processor_class_has_a_path_and_the_unmeasured_ones_run_todays():
    assert {name for name, _ in PROCESSOR_CLASSES} == set(FASTEST)
    for name, path in FASTEST.items():
        # a class keeps today's default until a run on idle cores with answers checked says
        # otherwise, and says so; a measured winner names its figures
        assert _same_as_today(path) == ("today's default" in path.source), name
    # AVX-512 measured on idle cores (benchmarks/LLM_CEILING.md): today's path was the fastest
    assert _same_as_today(FASTEST["AVX-512"]) and "measured fastest" in FASTEST["AVX-512"].source
    assert "unmeasured" in FASTEST["AVX2"].source  # no AVX2-only processor at hand yet
    assert fast_path.fastest_path("no-such-class") is TODAY
    assert fast_path.fastest_path() is FASTEST.get(processor_class(), TODAY)


def test_todays_path_keeps_todays_command_and_identity(tmp_path, monkeypatch):
    monkeypatch.setattr(fast_path, "fastest_path", lambda cls=None: TODAY)
    cfg = ServerConfig(binary=fake_binary(tmp_path))
    assert served_weights(cfg)[0] is None  # the shipped file, as before
    cmd = LlamaServer(cfg).command(Path("/m/model.gguf"))
    args = dict(zip(cmd[1::2], cmd[2::2], strict=False))
    assert args["--batch-size"] == args["--ubatch-size"] == "512" and args["--flash-attn"] == "off"
    # byte for byte the identity before the table: the committed reply packs still replay
    assert model_identity(LLMConfig(server=cfg)) == TODAYS_IDENTITY
    s = server_settings(cfg)
    assert s["weights"] == "Q4_K_M" and s["processor_class"] == processor_class()
    assert s["path_source"] == "today's default"


def test_a_faster_path_is_run_recorded_and_keyed_apart(tmp_path, monkeypatch):
    converted = tmp_path / "Q8_0.gguf"
    converted.write_bytes(b"GGUF")
    record = {"format": "Q8_0", "sha256": "ab" * 32}
    monkeypatch.setattr(fast_path, "_converted", lambda model, fmt: (converted, record))
    faster = FastPath(weights="Q8_0", repack=True, n_ubatch=256, flash_attn=True, source="measured")
    monkeypatch.setattr(fast_path, "fastest_path", lambda cls=None: faster)
    cfg = ServerConfig(binary=fake_binary(tmp_path))
    srv = LlamaServer(cfg)
    cmd = srv.command(served_weights(cfg)[0])
    args = dict(zip(cmd[1::2], cmd[2::2], strict=False))
    assert args["--model"] == str(converted.absolute())
    assert args["--ubatch-size"] == "256" and args["--flash-attn"] == "on"
    assert "--repack" in cmd and served_repacks(cfg)  # the table's, on zen4 too
    ident = model_identity(LLMConfig(server=cfg))
    assert ident.startswith(f"qwen2.5-coder-1.5b:Q8_0@{'ab' * 32}|")
    assert ident.endswith("|slots=1|n_batch=512|n_ubatch=256|flash_attn=on")
    assert "/zen4|" in ident  # repacked: no +no-repack
    assert ident != TODAYS_IDENTITY
    s = server_settings(cfg)
    assert (s["weights"], s["n_ubatch"], s["flash_attn"], s["repack"]) == ("Q8_0", 256, True, True)
    assert s["path_source"] == "measured"
    from agentic_rag.experiments.llm_cost import local_server_meta  # what run folders' meta.json holds

    assert local_server_meta(cfg)["server_settings"] == s
    # the setting overrides the table; a .gguf path is served as it is, keyed by its own sha256
    assert not served_repacks(cfg.model_copy(update={"repack": False}))
    own = ServerConfig(binary=cfg.binary, model=str(converted))
    assert chosen_path(own).weights == "file" and served_weights(own)[0] is None
    assert model_identity(LLMConfig(server=own)).startswith(f"gguf:{file_sha256(converted)}|")
    # a server already running another way on the port is told apart (not reused)
    theirs = LlamaServer(ServerConfig(binary=cfg.binary)).command(Path("/m/shipped.gguf"))
    assert "--model /m/shipped.gguf != " in differing_args(theirs, cmd)
    assert differing_args(cmd, cmd) == ""


def test_a_conversion_that_cannot_run_serves_the_shipped_weights_keyed_as_such(tmp_path, monkeypatch):
    def missing(model, fmt):
        raise ModelMissing("llama-quantize: not built; `make llama-tools`")

    monkeypatch.setattr(fast_path, "_converted", missing)
    monkeypatch.setattr(fast_path, "fastest_path", lambda cls=None: FastPath(weights="Q4_0"))
    cfg = ServerConfig(binary=fake_binary(tmp_path))
    path, record = served_weights(cfg)
    assert path is None and record["format"] == "Q4_K_M" and "make llama-tools" in record["not_converted"]
    assert model_identity(LLMConfig(server=cfg)) == TODAYS_IDENTITY  # the file that runs
    assert server_settings(cfg)["weights"] == "Q4_K_M"


def test_differing_args_compares_the_path_flags_only():
    ours = ["x", "--model", "/a/m.gguf", "--batch-size", "512", "--ubatch-size", "512",
            "--flash-attn", "off", "--port", "1"]
    theirs = ["y", "--model", "/a/./m.gguf", "--batch-size", "512", "--ubatch-size", "128",
              "--port", "2"]
    assert differing_args(theirs, ours) == "--ubatch-size 128 != 512"  # path resolved, port ignored


def _fake_quantize(tmp_path: Path) -> tuple[Path, Path]:
    calls = tmp_path / "calls"
    exe = tmp_path / "llama-quantize"
    exe.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n'
                   'case "$4" in Q4_0) exit 1;; esac\ncp "$2" "$3"; echo x >> "$3"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe, calls


def test_a_weight_format_is_converted_once_keyed_by_the_source_sha256(tmp_path):
    try:
        model_path("smollm2-135m")
    except ModelMissing as exc:
        pytest.skip(f"the wiring-test model is not installed: {exc}")
    spec = MODELS["smollm2-135m"]
    exe, calls = _fake_quantize(tmp_path)
    path, record = converted_model("smollm2-135m", "Q8_0", cache_dir=tmp_path, quantize=exe)
    assert path == tmp_path / "converted" / spec.sha256 / "Q8_0.gguf"
    assert record["source_sha256"] == spec.sha256 and record["format"] == "Q8_0"
    assert record["sha256"] == file_sha256(path) != spec.sha256 and record["seconds"] >= 0
    flag, source, written, fmt = calls.read_text().split()
    assert (flag, source, fmt) == ("--allow-requantize", str(model_path("smollm2-135m")), "Q8_0")
    assert Path(written).parent == path.parent and written != str(path)  # then renamed
    again, same = converted_model("smollm2-135m", "Q8_0", cache_dir=tmp_path, quantize=exe)
    assert (again, same) == (path, record) and len(calls.read_text().splitlines()) == 1  # never twice
    # the shipped format is the shipped file; an unknown one or a failed conversion is an error
    assert converted_model("smollm2-135m", spec.weights, cache_dir=tmp_path)[0] == model_path("smollm2-135m")
    with pytest.raises(ModelMissing, match="weight format 'Q2_K'"):
        converted_model("smollm2-135m", "Q2_K", cache_dir=tmp_path, quantize=exe)
    with pytest.raises(ModelMissing, match="exited with 1"):
        converted_model("smollm2-135m", "Q4_0", cache_dir=tmp_path, quantize=exe)
    assert not list(path.parent.glob("*Q4_0*"))  # nothing half-written left behind
    with pytest.raises(ModelMissing, match="only a named model"):
        converted_model(str(path), "Q8_0", cache_dir=tmp_path, quantize=exe)


def test_processor_info_names_the_processor():
    info = processor_info()
    assert info["processor_class"] == processor_class()
    assert info["cpus"] >= 1 and isinstance(info["flags"], list)
    if Path("/proc/cpuinfo").exists():
        assert info["vendor"] and info["family"] is not None and info["flags"]
