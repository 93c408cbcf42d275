"""Cold start: wall time from process start to the first answered query, with and without tiers.

    .venv/bin/python benchmarks/cold_start.py [--repeats 3]

Setup (once, not timed): the default corpus is indexed two ways, under
benchmarks/.cold_start/:
- flat: every document in one warm index (Chroma + BM25);
- tiered: the banking documents warm, the Python docs archived in the cold tier
  (compressed JSONL, loaded lazily only when a query's confidence is low).
Each measurement is a fresh `python -c` process that imports the library, opens the
index, embeds the query and answers it; the query is a banking question that the warm
tier answers confidently, so the tiered run never loads the cold archive.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent / ".cold_start"
QUERY = "monthly maintenance fee of the Blue checking account"

FLAT = f"""
from agentic_rag.config import RAGConfig
from agentic_rag.index import AgenticIndex
idx = AgenticIndex(RAGConfig(home={str(ROOT / 'flat')!r}))
print(idx.search({QUERY!r}, 3)[0].chunk.doc_id)
"""
TIERED = f"""
from agentic_rag.config import RAGConfig
from agentic_rag.index import AgenticIndex
from agentic_rag.tiers import TieredIndex
cfg = RAGConfig(home={str(ROOT / 'tiered')!r})
t = TieredIndex(cfg.tiers, AgenticIndex(cfg))
r = t.search({QUERY!r}, 3)
print(r.hits[0].chunk.doc_id, r.tiers, "cold_loaded=%s" % r.cold_loaded)
"""


def setup() -> None:
    from agentic_rag.config import RAGConfig
    from agentic_rag.datasets import banking_documents, python_docs
    from agentic_rag.index import AgenticIndex
    from agentic_rag.tiers import TieredIndex

    cache = {"embedding.cache": True}
    flat = AgenticIndex(RAGConfig(home=str(ROOT / "flat")).with_overrides(cache))
    if flat.count() == 0:
        flat.add_documents(python_docs() + banking_documents(), progress=True)
        _ = flat.lexical
    cfg = RAGConfig(home=str(ROOT / "tiered"))
    tiered = TieredIndex(cfg.tiers, AgenticIndex(cfg))
    if tiered.warm.count() == 0:
        tiered.add(banking_documents())
        old = [d.model_copy(update={"metadata": {**d.metadata, "last_updated": "2022-10-24"}})
               for d in python_docs()]  # Python 3.11.0 release: archived → cold
        tiered.add(old)


def measure(code: str, repeats: int) -> tuple[list[float], str]:
    times, out = [], ""
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - t0)
        out = res.stdout.strip()
    return times, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    setup()
    for name, code in (("flat (one warm index)", FLAT), ("tiered (warm + lazy cold)", TIERED)):
        times, out = measure(code, args.repeats)
        print(f"{name:<28} median {statistics.median(times):.2f}s  "
              f"runs {[round(t, 2) for t in times]}  -> {out}")


if __name__ == "__main__":
    main()
