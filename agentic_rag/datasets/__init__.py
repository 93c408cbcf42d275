"""Real public corpora and datasets, read from registry packages (no hub downloads)."""

from .base import Dataset, DatasetError, DatasetMissing, GoldSpan, Query
from .corpora import CORPORA, banking_documents, load_corpus, python_docs
from .qa import (
    DATASETS,
    banking_tasks,
    halueval_qa,
    load_dataset,
    load_local,
    python_faq,
    python_library_qa,
    with_questions,
)

__all__ = ["CORPORA", "DATASETS", "Dataset", "DatasetError", "DatasetMissing", "GoldSpan", "Query",
           "banking_documents", "banking_tasks", "halueval_qa", "load_corpus", "load_dataset",
           "load_local", "python_docs", "python_faq", "python_library_qa", "with_questions"]
