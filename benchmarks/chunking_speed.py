"""Chunking throughput and linearity: time AgenticChunker on 1, 2.5, 5 and 10 MB documents.

    .venv/bin/python benchmarks/chunking_speed.py

Two inputs: a realistic mix (prose, pipe table, fenced code, numbered steps) and a
pathological one (lines full of pipes with no delimiter row: catastrophic for a
backtracking table regex). Linear time shows as a roughly constant s/MB column.
"""

from __future__ import annotations

import time

from agentic_rag import AgenticChunker, Document

UNIT = ("Some prose words about retrieval and agents. " * 30 + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
        "\n```python\nx = 1\n```\n\n1. step one\n2. step two\n\n")
PATHOLOGICAL = "| a " * 2000 + "\n"


def main() -> None:
    chunker = AgenticChunker()
    chunker.counter.count("warm up")
    print(f"{'input':<14}{'MB':>6}{'seconds':>10}{'s/MB':>8}{'chunks':>9}")
    for name, unit in (("mixed", UNIT), ("pathological", PATHOLOGICAL)):
        for mb in (1, 2.5, 5, 10):
            text = unit * int(mb * 1e6 / len(unit))
            t0 = time.perf_counter()
            chunks = chunker.chunk(Document(id=name, text=text))
            dt = time.perf_counter() - t0
            print(f"{name:<14}{len(text) / 1e6:>6.1f}{dt:>10.2f}{dt / (len(text) / 1e6):>8.2f}"
                  f"{len(chunks):>9}")


if __name__ == "__main__":
    main()
