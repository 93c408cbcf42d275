"""`Evidence`: what one search produced — the fused top list and each retriever's own
candidates. The retrievers produce it (`retrievers.py`), the gate measures its confidence
(`gate.py`), and the calibrator reads its features (`calibration.py`); none of them import
each other for it."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentic_rag.documents import Hit


@dataclass(frozen=True)
class Evidence:
    """What one search produced: the fused top list and each retriever's candidates."""

    hits: list[Hit]
    runs: dict[str, list[Hit]] = field(default_factory=dict)
    filtered: bool = False
    k: int = 5
