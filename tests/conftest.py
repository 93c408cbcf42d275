from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agentic_rag.datasets.corpora import banking_documents, python_docs  # noqa: E402
from agentic_rag.documents import Document  # noqa: E402


def pytest_report_header(config):  # noqa: ARG001
    """The processor class the suite ran on (which ggml CPU variants could load: docs/tests.md
    lists the classes the suite has passed on)."""
    from agentic_rag.llm.processor import processor_class

    model = next((line.split(":", 1)[1].strip() for line in _cpuinfo().splitlines()
                  if line.startswith("model name")), "unknown")
    return f"processor: {model}, class {processor_class()}"


def _cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return f.read()
    except OSError:
        return ""


READMES = Path(__file__).parent / "data" / "readmes"


@pytest.fixture(scope="session")
def readme_docs() -> list[Document]:
    """Real Markdown READMEs (code fences, tables, lists): six packages' long descriptions as
    their wheels carry them, committed under tests/data/readmes/ (licences in its README; an
    installed package's metadata came back without a body on one CI machine)."""
    docs = []
    for dist in ("bm25s", "typer", "qdrant-client", "rank-bm25", "chromadb", "openai"):
        text = gzip.decompress((READMES / f"{dist}.md.gz").read_bytes()).decode()
        docs.append(Document(id=f"readme/{dist}", text=text, title=dist,
                             source=f"{dist}/METADATA"))
    return docs


@pytest.fixture(scope="session")
def banking() -> list[Document]:
    return banking_documents()


@pytest.fixture(scope="session")
def pydocs() -> list[Document]:
    return python_docs(("tutorial", "howto", "faq"))


# ---- shared by the reliability suite (tests/test_reliability_*.py) ---------------------
from .fakes import free_port  # noqa: E402, F401  (the fixtures below use it)


@pytest.fixture()
def stub_llm():
    """tests/faultproxy.py's canned OpenAI-compatible HTTP server, started and stopped."""
    from .faultproxy import StubChatServer

    stub = StubChatServer().start()
    yield stub
    stub.stop()


# ---- a test that loads the real embedding model carries the `slow` marker -----------------
_MODEL_LOADED_BY: set[str] = set()


@pytest.fixture(scope="session", autouse=True)
def _record_embedding_model_loads():
    """Wraps the one place the real embedding model is loaded; records the test running
    then (its set-up included, where session fixtures such as `minilm` load it)."""
    from agentic_rag.ingest.embeddings import SentenceTransformerEmbedder

    real = SentenceTransformerEmbedder._open

    def recording(self) -> None:  # noqa: ANN001
        real(self)
        _MODEL_LOADED_BY.add(os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0])

    SentenceTransformerEmbedder._open = recording
    yield
    SentenceTransformerEmbedder._open = real


@pytest.fixture(autouse=True)
def _embedding_model_tests_are_marked_slow(request):
    yield
    node = request.node
    if node.get_closest_marker("slow") is None and (
            node.nodeid in _MODEL_LOADED_BY or "minilm" in request.fixturenames):
        pytest.fail(f"{node.nodeid} loads the embedding model: mark it @pytest.mark.slow",
                    pytrace=False)


@pytest.fixture(scope="session")
def minilm():
    """The real offline embedding model (all-MiniLM-L6-v2), loaded once per session."""
    from agentic_rag.config import RAGConfig
    from agentic_rag.ingest.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(RAGConfig().embedding).open()


@pytest.fixture(scope="session")
def smol_server(tmp_path_factory):
    """The real llama.cpp server with the fast SmolLM2-135M, on a free loopback port."""
    from agentic_rag.config_llm import ServerConfig
    from agentic_rag.llm.server import LlamaServer

    home = tmp_path_factory.mktemp("smol-home")
    with pytest.MonkeyPatch.context() as mp:
        # read by llama_cpp.server's settings: one-token micro-batches. The llama-cpp-python
        # 0.3.36 build here segfaults on batched prompt decoding (n_ubatch > 1, any model);
        # SmolLM2 is fast enough either way, and the server is still the real one.
        mp.setenv("N_UBATCH", "1")
        # binary=None: llama-cpp-python's server, whose wiring, JSON and fault behaviour the
        # tests on this fixture pin; the default C++ llama-server has its own tests
        # (test_llama_server_default.py, test_llama_server_binary.py)
        srv = LlamaServer(ServerConfig(model="smollm2-135m", port=free_port(), n_ctx=2048,
                                       binary=None), home=home).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def llm_upstream_url(request):
    """Base URL (…/v1) of a real OpenAI-compatible server: llama.cpp with SmolLM2.
    RELIABILITY_LLM_UPSTREAM=stub swaps in a canned stub (tests/faultproxy.py), only for
    machines whose llama.cpp build cannot run."""
    if os.environ.get("RELIABILITY_LLM_UPSTREAM") == "stub":
        from .faultproxy import StubChatServer

        stub = StubChatServer().start()
        yield stub.base_url
        stub.stop()
    else:
        yield request.getfixturevalue("smol_server").base_url
