"""agentic-rag: a workbench for agentic retrieval-augmented generation."""

from .chunking import AgenticChunker
from .config import ConfigError, RAGConfig
from .documents import Chunk, Document, DocumentError, Hit, read_document

__all__ = ["AgenticChunker", "Chunk", "ConfigError", "Document", "DocumentError", "Hit",
           "RAGConfig", "read_document"]
__version__ = "0.1.0"
