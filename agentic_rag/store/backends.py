"""The vector store backends by name (`store.kind`): `make_store` opens the configured one."""

from __future__ import annotations

from pathlib import Path

from agentic_rag.config import StoreConfig
from agentic_rag.store.base import VectorStore
from agentic_rag.store.chroma import ChromaStore
from agentic_rag.store.qdrant import QdrantStore

STORES = ("chroma", "qdrant")


def make_store(config: StoreConfig, home: str | Path) -> VectorStore:
    path = Path(config.path) if config.path else Path(home) / f"store-{config.kind}"
    if config.kind == "qdrant":
        return QdrantStore(config, path)
    return ChromaStore(config, path)
