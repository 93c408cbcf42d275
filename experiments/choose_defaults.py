"""Choose the default fusion / gate settings on the dev splits, by one written rule.

    .venv/bin/python experiments/choose_defaults.py     # ~10 min on 2 cores (indexes cached)

For each candidate (RRF weights × RRF k × static / gated at two thresholds, filters off,
best-list merge) and each dev set (halueval-qa 100 questions on 2,000 paragraphs,
python-faq 29, tau2-banking 15), nDCG@10 is replayed from cached candidate lists
(`Tuner`). The rule: the candidate whose *worst* margin over the pipeline's own
components (dense alone, BM25 alone) across the three sets is largest. Writes
experiments/choose_defaults.csv and prints the ranking.
"""

from __future__ import annotations

import itertools
import os

import pandas as pd

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agentic_rag.experiments.replay import Tuner  # noqa: E402

DEV = (("halueval-qa", 100), ("python-faq", None), ("tau2-banking", None))
WEIGHTS = ((1.0, 1.0), (1.0, 0.7), (1.0, 0.5), (1.0, 0.3))
RRF_K = (60.0, 20.0)
GATES = (("static", None), ("gated", 0.8), ("gated", 0.9))


def main() -> None:
    rows = []
    for name, n in DEV:
        t = Tuner(name, n=n, chunk_sizes=(256,), prefill=False, log=lambda *a: None)
        comp = {rs[0]: t.score(mode="static", filter_mode="off", retrievers=rs)["ndcg@10"]
                for rs in (("dense",), ("bm25",))}
        for w, k, (mode, th) in itertools.product(WEIGHTS, RRF_K, GATES):
            kw = {"min_confidence": th} if th else {}
            r = t.score(mode=mode, filter_mode="off", retrievers=("dense", "bm25"), weights=w,
                        rrf_k=k, merge="best", **kw)
            rows.append({"dataset": name, "weights": w, "rrf_k": k, "mode": mode,
                         "min_confidence": th, "ndcg@10": r["ndcg@10"],
                         "iterations": r["iterations_mean"], "best_component": max(comp.values()),
                         "margin": r["ndcg@10"] - max(comp.values())})
    df = pd.DataFrame(rows)
    df.to_csv("experiments/choose_defaults.csv", index=False)
    worst = (df.groupby(["weights", "rrf_k", "mode", "min_confidence"], dropna=False)["margin"]
             .min().sort_values(ascending=False).rename("worst_margin"))
    pd.set_option("display.width", 200)
    print(worst.head(12).to_string())


if __name__ == "__main__":
    main()
