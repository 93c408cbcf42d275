"""Metrics: retrieval (ir-measures, document and span level), answers, hallucination."""

from .answers import exact_match, normalize_answer, token_f1
from .retrieval import (
    RETRIEVAL_MEASURES,
    doc_run,
    ir_metrics,
    per_type_hits,
    span_metrics,
)

__all__ = ["RETRIEVAL_MEASURES", "doc_run", "exact_match", "ir_metrics", "normalize_answer",
           "per_type_hits", "span_metrics", "token_f1"]
