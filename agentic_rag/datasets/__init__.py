"""Real public corpora and datasets, read from registry packages (no hub downloads)."""

from .corpora import CORPORA, banking_documents, load_corpus, python_docs

__all__ = ["CORPORA", "banking_documents", "load_corpus", "python_docs"]
