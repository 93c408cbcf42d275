"""Metrics: retrieval (ir-measures, document and span level), answers, hallucination, and
how well a score detects a label (AUROC)."""

from .answers import exact_match, normalize_answer, token_f1
from .detection import auroc
from .retrieval import (
    RETRIEVAL_MEASURES,
    doc_run,
    ir_metrics,
    per_type_hits,
    span_metrics,
    span_overlap,
)

__all__ = ["RETRIEVAL_MEASURES", "auroc", "doc_run", "exact_match", "ir_metrics",
           "normalize_answer", "per_type_hits", "span_metrics", "span_overlap", "token_f1"]
