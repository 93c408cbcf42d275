"""agentic-rag: a workbench for agentic retrieval-augmented generation."""

from agentic_rag.config import RAGConfig
from agentic_rag.config_base import ConfigError
from agentic_rag.documents import Chunk, Document, DocumentError, Hit
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.ingest.readers import read_document

__all__ = ["AgenticChunker", "Chunk", "ConfigError", "Document", "DocumentError", "Hit",
           "RAGConfig", "read_document"]
__version__ = "0.1.0"
