from __future__ import annotations

import importlib.metadata
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agentic_rag.datasets import banking_documents, python_docs  # noqa: E402
from agentic_rag.documents import Document  # noqa: E402


@pytest.fixture(scope="session")
def readme_docs() -> list[Document]:
    """Real Markdown READMEs (code fences, tables, lists) shipped in installed packages' metadata."""
    docs = []
    for dist in ("bm25s", "typer", "qdrant-client", "rank-bm25", "chromadb", "openai"):
        meta = importlib.metadata.distribution(dist)
        body = meta.metadata.get_payload() or ""  # long description follows the headers
        ctype = meta.metadata.get("Description-Content-Type", "")
        if body.strip() and "markdown" in ctype:
            docs.append(Document(id=f"readme/{dist}", text=body, title=dist,
                                 source=f"{dist}/METADATA"))
    assert len(docs) >= 3
    return docs


@pytest.fixture(scope="session")
def banking() -> list[Document]:
    return banking_documents()


@pytest.fixture(scope="session")
def pydocs() -> list[Document]:
    return python_docs(("tutorial", "howto", "faq"))
