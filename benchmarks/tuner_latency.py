"""Time per change of the interactive tuner (`experiments.replay.Tuner`) on 100 HaluEval dev
questions: every combination of cached chunk size × gate mode × min_confidence × RRF k ×
weights × cutoff k (144 changes), each replayed from the cached candidate lists.

    taskset -c 0 env OMP_NUM_THREADS=1 AGENTIC_RAG_DATA=datasets/cache \\
        .venv/bin/python benchmarks/tuner_latency.py

Target (issue 8): under 1 s per change. Prints the time to build the tuner (searches once
per question and chunk size, or reads the cached lists), then median / p95 / max per change
and the new searches made by the changes (0 when the replay works).
"""

from __future__ import annotations

import itertools
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from agentic_rag.experiments.replay import Tuner  # noqa: E402


def main() -> None:
    t0 = time.perf_counter()
    tuner = Tuner("halueval-qa", n=100, chunk_sizes=(64, 256))
    print(f"tuner ready in {time.perf_counter() - t0:.1f} s")
    grid = itertools.product((64, 256), ("static", "gated", "always_expand"), (0.5, 0.7, 0.9),
                             (20, 60), ((1.0, 1.0), (1.0, 0.5)), (5, 10))
    times, searches = [], 0
    for cs, mode, mc, rrf_k, w, k in grid:
        t = time.perf_counter()
        res = tuner.score(chunk_size=cs, k=k, mode=mode, min_confidence=mc, rrf_k=rrf_k, weights=w)
        times.append(time.perf_counter() - t)
        searches += res["new_searches"]
    times.sort()
    print(f"{len(times)} changes: median {statistics.median(times) * 1000:.0f} ms, p95 "
          f"{times[int(0.95 * len(times))] * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms; "
          f"{sum(x < 1 for x in times)} of {len(times)} under 1 s; new searches {searches}")


if __name__ == "__main__":
    main()
