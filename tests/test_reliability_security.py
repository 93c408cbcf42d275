"""Reliability: privacy and supply chain. Nothing leaves the machine (any non-loopback
connection attempt is recorded and refused) during index, search, the agent loop and a sweep
with LLM answers and ragas' non-LLM metrics (Chroma and ragas telemetry off); model weights are
used only after their sha256 matches."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest

from agentic_rag.llm import models
from agentic_rag.llm.models import ModelMissing, resolve_model

from .test_reliability_crash import ROOT

pytestmark = pytest.mark.reliability

GUARD = r"""
import json, os, socket, sys
sys.path.insert(0, {root!r})
ATTEMPTS = []

def _loopback(addr):
    if not isinstance(addr, tuple):
        return True  # AF_UNIX path
    host = str(addr[0])
    return host.startswith("127.") or host in ("::1", "localhost", "0.0.0.0", "")

def _guard(name, orig):
    def wrapped(self, addr, *a, **k):
        if self.family != socket.AF_UNIX and not _loopback(addr):
            ATTEMPTS.append([name, repr(addr)])
            raise OSError("non-loopback connection refused by the test guard")
        return orig(self, addr, *a, **k)
    return wrapped

socket.socket.connect = _guard("connect", socket.socket.connect)
socket.socket.connect_ex = _guard("connect_ex", socket.socket.connect_ex)
_sendto = socket.socket.sendto
def sendto(self, data, *args):
    addr = args[-1]
    if self.family != socket.AF_UNIX and not _loopback(addr):
        ATTEMPTS.append(["sendto", repr(addr)])
        raise OSError("non-loopback datagram refused by the test guard")
    return _sendto(self, data, *args)
socket.socket.sendto = sendto
_create = socket.create_connection
def create_connection(address, *a, **k):
    if not _loopback(address):
        ATTEMPTS.append(["create_connection", repr(address)])
        raise OSError("non-loopback connection refused by the test guard")
    return _create(address, *a, **k)
socket.create_connection = create_connection
_gai = socket.getaddrinfo
def getaddrinfo(host, *a, **k):
    if host is not None and not _loopback((host if isinstance(host, str) else host.decode(),)):
        ATTEMPTS.append(["getaddrinfo", str(host)])
        raise socket.gaierror("name resolution refused by the test guard")
    return _gai(host, *a, **k)
socket.getaddrinfo = getaddrinfo

steps = {{}}
home, docs_dir, questions, base_url = sys.argv[1:5]
from agentic_rag.config import RAGConfig
from agentic_rag.ingest.readers import iter_document_paths, read_document
from agentic_rag.store.index import AgenticIndex
from agentic_rag.retrieve.pipeline import Pipeline
cfg = RAGConfig(home=home).with_overrides({{"llm.base_url": base_url, "llm.max_tokens": 16,
                                           "context.max_tokens": 150}})
idx = AgenticIndex(cfg)
docs = [read_document(f, i) for f, i in iter_document_paths([docs_dir])]
steps["index"] = idx.add_documents(docs).added_chunks
steps["search"] = len(idx.search("monthly fee", k=3))
steps["bm25"] = len(idx.search_lexical("monthly fee", k=3))
pipe = Pipeline(cfg, index=idx)
steps["pipeline"] = len(pipe.retrieve("What is the monthly fee?")[1].hits)

from agentic_rag.agent.loop import run_agent
from agentic_rag.agent.tool import AgenticRAGTool
res = run_agent("What is the monthly maintenance fee?", pipe.chat_model, AgenticRAGTool(pipe),
                max_steps=1, mode="json")  # SmolLM2's template has no native tool calls
steps["agent"] = [res.stop_reason, res.prompt_tokens, res.error]

from agentic_rag.experiments.runner import run_sweep
from agentic_rag.experiments.spec import SweepSpec
spec = SweepSpec.model_validate({{
    "name": "offline", "dataset": {{"name": "local", "docs": docs_dir, "questions": questions,
                                    "split": "all", "n": None}},
    "base": {{"llm": {{"base_url": base_url, "max_tokens": 8}}, "context": {{"max_tokens": 100}}}},
    "metrics": ["retrieval", "answers", "ragas_nonllm"], "llm_sample": 1}})
sw = run_sweep(spec, os.path.join(home, "runs"), os.path.join(home, "cache"), progress=False,
               log=lambda *_: None)
steps["sweep"] = [len(sw.results), int(sw.summary.iloc[0]["failures"]),
                  "ragas_nonllm_context_recall" in sw.results]
print("RESULT " + json.dumps({{"attempts": ATTEMPTS, "steps": steps}}), flush=True)
"""


@pytest.mark.slow
@pytest.mark.llm
def test_nothing_leaves_the_machine(tmp_path, llm_upstream_url, record_property):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "fees.md").write_text("# Fees\n\n| Fee | Amount |\n|---|---|\n"
                                  "| Monthly maintenance fee | $20.00 |\n| Wire | $45 |\n")
    (docs / "cards.md").write_text("# Cards\n\n1. Open the app\n2. Tap Card settings\n"
                                   "3. Choose Unlock\n")
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "a", "question": "What is the monthly maintenance fee?",
                             "answer": "$20.00", "doc_ids": ["docs/fees.md"]}) + "\n"
                 + json.dumps({"id": "b", "question": "How do I unlock my card?",
                               "doc_ids": ["docs/cards.md"]}) + "\n")
    # a clean environment: no offline switches set by the test runner (our code sets them)
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "RAGAS_DO_NOT_TRACK",
                        "ANONYMIZED_TELEMETRY")}
    res = subprocess.run([sys.executable, "-c", GUARD.format(root=str(ROOT)),
                          str(tmp_path / "home"), str(docs), str(q), llm_upstream_url],
                         capture_output=True, text=True, timeout=400, env=env, cwd=tmp_path)
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert res.returncode == 0 and line, res.stderr[-3000:]
    out = json.loads(line.removeprefix("RESULT "))
    assert out["attempts"] == [], out["attempts"]
    steps = out["steps"]
    assert steps["index"] > 0 and steps["search"] > 0 and steps["bm25"] > 0
    assert steps["agent"][1] > 0, steps["agent"]  # the loop reached the model (answer not judged)
    assert steps["sweep"] == [2, 0, True]  # ragas imported and scored under the guard too
    record_property("non_loopback_connections", len(out["attempts"]))


# ---- weights are checked before use ---------------------------------------------------------
def _gguf(arch: str, pad: int) -> bytes:
    def s(x: str) -> bytes:
        return struct.pack("<Q", len(x)) + x.encode()

    head = b"GGUF" + struct.pack("<I", 3) + struct.pack("<Q", 0) + struct.pack("<Q", 1)
    return head + s("general.architecture") + struct.pack("<I", 8) + s(arch) + b"\0" * pad


@pytest.fixture
def split_model(tmp_path, monkeypatch):
    """A two-part model spec over files in tmp_path, the way Qwen is split over 22 wheels."""
    import hashlib

    blob = _gguf("llama", 4096)
    parts = [tmp_path / "p1.bin", tmp_path / "p2.bin"]
    parts[0].write_bytes(blob[:2000])
    parts[1].write_bytes(blob[2000:])
    spec = models.ModelSpec(name="tiny.gguf", description="tiny test model",
                            packages=("pkg1", "pkg2"), files=("p1.bin", "p2.bin"),
                            sha256=hashlib.sha256(blob).hexdigest(), architecture="llama",
                            install="pip install tiny")
    monkeypatch.setitem(models.MODELS, "tiny", spec)
    monkeypatch.setattr(models, "package_file",
                        lambda pkg, rel, install, err: tmp_path / rel)
    return tmp_path / "joined"


def test_tampered_joined_model_is_refused_even_with_same_size_and_mtime(split_model,
                                                                         record_property):
    target = resolve_model("tiny", cache_dir=split_model)
    assert target.exists()
    st = target.stat()
    data = bytearray(target.read_bytes())
    data[-1] ^= 0xFF
    target.write_bytes(bytes(data))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
    with pytest.raises(ModelMissing, match="sha256 .* does not match"):
        resolve_model("tiny", cache_dir=split_model)
    record_property("tampered_weights_refused", 1)


def test_tampered_single_file_model_never_reaches_the_server(tmp_path, monkeypatch,
                                                             record_property):
    import shutil

    from agentic_rag.config_llm import ServerConfig
    from agentic_rag.llm.server import LlamaServer

    real = resolve_model("smollm2-135m")
    fake_dir = tmp_path / "pkg"
    fake_dir.mkdir()
    copy = fake_dir / real.name
    shutil.copyfile(real, copy)
    with copy.open("r+b") as f:
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 0xFF]))
    monkeypatch.setattr(models, "package_file", lambda pkg, rel, install, err: copy)

    def no_popen(*a, **k):  # noqa: ANN002, ANN003
        raise AssertionError("the server was started with unchecked weights")

    monkeypatch.setattr("agentic_rag.llm.server.subprocess.Popen", no_popen)
    from .fakes import free_port

    srv = LlamaServer(ServerConfig(model="smollm2-135m", port=free_port()), home=tmp_path)
    with pytest.raises(ModelMissing, match="does not match"):
        srv.start()
    record_property("tampered_weights_refused", 1)


def test_tampered_embedding_weights_are_refused_before_loading(tmp_path, monkeypatch,
                                                               record_property):
    import sentence_transformers

    from agentic_rag.config import EmbeddingConfig
    from agentic_rag.ingest import embeddings

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"not the real weights")
    monkeypatch.setattr(embeddings, "_resolve_model_dir", lambda model: folder)

    def no_load(*a, **k):  # noqa: ANN002, ANN003
        raise AssertionError("weights were loaded before their hash was checked")

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", no_load)
    with pytest.raises(RuntimeError, match="is not all-MiniLM-L6-v2's"):
        embeddings.SentenceTransformerEmbedder(EmbeddingConfig()).open()
    record_property("tampered_weights_refused", 1)
