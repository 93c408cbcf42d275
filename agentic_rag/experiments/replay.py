"""Replay gate and fusion settings over cached candidate lists: the interactive tuner.

Everything the gate and fusion can do to one query comes from a finite set of searches
({query, keyword rewrite} × {intent filter, none} × {dense, BM25}, at depth
`fusion.candidates`). `Tuner` runs each once per query and chunk size (`prefill`), keeps
them in a `CandidateMemo`, and then `score(**settings)` recomputes fusion, gate decisions
and metrics from the stored lists with the same code a live search runs — no new
search, milliseconds per query. `widget()` puts sliders on it for Jupyter; the plain
call is what tests and scripts use. `notebook_frontend()` tells the two apart, so a
notebook shows the sliders when opened in JupyterLab and stays plain under nbmake.

    tuner = Tuner("halueval-qa", n=100, chunk_sizes=(64, 256))
    tuner.score(min_confidence=0.6, rrf_k=20, weights=(1.0, 0.5), mode="gated")

LLM strategies (`query.expansion`, `rerank.kind`) are refused: they make LLM calls per query,
which a replay of stored lists cannot promise to avoid. Sweep them (`experiments/strategies.py`,
`LLM_STRATEGIES`): a sweep's replay memo covers them (expansion.py, rerank.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.base import Dataset
from agentic_rag.datasets.qa import load_dataset
from agentic_rag.evaluation.retrieval import doc_run, ir_metrics
from agentic_rag.experiments.plan import open_index
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.retrieve.retrievers import CandidateMemo

SETTINGS = {  # tuner argument → config path
    "mode": "gate.mode", "min_confidence": "gate.min_confidence", "merge": "gate.merge",
    "confidence": "gate.confidence", "method": "fusion.method", "rrf_k": "fusion.rrf_k",
    "weights": "fusion.weights", "retrievers": "fusion.retrievers",
    "filter_mode": "query.filter_mode", "normalise": "fusion.normalise",
    "small_to_big": "fusion.small_to_big", "parent_tokens": "fusion.parent_tokens",
}


def notebook_frontend() -> bool:
    """True in a kernel that a notebook frontend is attached to and can draw widgets:
    one a Jupyter server started for an open notebook (JupyterLab, Notebook 7: the server
    sets JPY_SESSION_NAME in the kernel's environment) or VS Code (`__vsc_ipynb_file__`).
    False in plain Python and under nbclient, which nbmake and papermill run headless."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    return bool(os.environ.get("JPY_SESSION_NAME")) or "__vsc_ipynb_file__" in shell.user_ns


class Tuner:
    def __init__(self, dataset: str | Dataset = "halueval-qa", n: int = 100, split: str = "dev",
                 chunk_sizes: Sequence[int] = (256,), base: RAGConfig | None = None,
                 cache_dir: str | Path = "experiments/cache", corpus_size: int | None = None,
                 seed: int = 0, prefill: bool = True, log=print) -> None:  # noqa: ANN001
        ds = load_dataset(dataset) if isinstance(dataset, str) else dataset
        if corpus_size is None and ds.name == "halueval-qa":
            corpus_size = 2000
        self.ds = ds.split(split).sample(n, seed, corpus_size)
        self.base = base or RAGConfig()
        if self.base.query.expansion != "none" or self.base.rerank.kind != "none":
            raise ValueError(
                f"Tuner: query.expansion={self.base.query.expansion!r} / rerank.kind="
                f"{self.base.rerank.kind!r} call the LLM per query; the tuner replays stored "
                "candidate lists with no new call: sweep them instead (experiments/strategies.py "
                "LLM_STRATEGIES)")
        self.pipes: dict[int, Pipeline] = {}
        for size in chunk_sizes:
            cfg, index = open_index(self.base.with_overrides({"chunking.max_tokens": size}),
                                    self.ds, cache_dir, log=log)
            pipe = Pipeline(cfg, index=index)
            pipe.candidates = CandidateMemo()
            self.pipes[size] = pipe
        self.qrels = {q.id: self.ds.qrels[q.id] for q in self.ds.queries if q.id in self.ds.qrels}
        if prefill:  # else lists are searched on first use (the first score() is slower)
            self.prefill()

    def prefill(self) -> int:
        """Run every search the gate can reach, once; returns the number of searches."""
        for size in self.pipes:
            for fm in ("hard", "soft", "off"):
                for rs in (["dense"], ["bm25"], ["dense", "bm25"]):
                    self._run(size, {"mode": "always_expand", "filter_mode": fm,
                                     "retrievers": rs})
        return sum(p.candidates.searches for p in self.pipes.values())

    def _pipe(self, size: int, settings: dict[str, Any]) -> Pipeline:
        base = self.pipes[size]
        over = {SETTINGS[k]: (list(v) if isinstance(v, tuple) else v)
                for k, v in settings.items() if k in SETTINGS}
        retrievers = over.get("fusion.retrievers", base.config.fusion.retrievers)
        if over.get("fusion.weights") is not None and len(over["fusion.weights"]) != len(retrievers):
            over["fusion.weights"] = None  # weights for another retriever mix: equal weights
        pipe = Pipeline(base.config.with_overrides(over), index=base.index)
        pipe.candidates = base.candidates
        pipe._types = base._types
        return pipe

    def _run(self, size: int, settings: dict[str, Any], k: int = 10) -> tuple[dict, dict]:
        pipe = self._pipe(size, settings)
        run, stats = {}, {"iterations": 0, "hits": 0}
        for q in self.ds.queries:
            _, res = pipe.retrieve(q.text, k=k)
            run[q.id] = doc_run(res.hits[:k])
            stats["iterations"] += res.iterations
            stats["hits"] += len(res.hits[:k])
        return run, stats

    def score(self, chunk_size: int | None = None, k: int = 10, **settings: Any) -> dict[str, Any]:
        """Metrics of one setting over the sample, replayed from the stored lists."""
        size = chunk_size or next(iter(self.pipes))
        before = sum(p.candidates.searches for p in self.pipes.values())
        t0 = time.perf_counter()
        run, stats = self._run(size, settings, k)
        per_q = ir_metrics(self.qrels, run)
        df = pd.DataFrame.from_dict(per_q, orient="index")
        out = {"chunk_size": size, "k": k, **settings, **df.mean().round(4).to_dict(),
               "iterations_mean": stats["iterations"] / len(self.ds.queries),
               "new_searches": sum(p.candidates.searches for p in self.pipes.values()) - before,
               "seconds": round(time.perf_counter() - t0, 3)}
        return out

    def sweep(self, grid: dict[str, Sequence[Any]]) -> pd.DataFrame:
        """Every combination of `grid` (tuner argument → values), as a tidy table."""
        import itertools

        keys = list(grid)
        return pd.DataFrame([self.score(**dict(zip(keys, vals)))
                             for vals in itertools.product(*grid.values())])

    def widget(self):  # noqa: ANN201 - an ipywidgets box
        import ipywidgets as w
        from IPython.display import display

        sizes = list(self.pipes)
        controls = {
            "chunk_size": w.Dropdown(options=sizes, value=sizes[0], description="chunk"),
            "mode": w.Dropdown(options=["static", "gated", "always_expand"], value="gated",
                               description="gate"),
            "min_confidence": w.FloatSlider(value=0.5, min=0.0, max=1.0, step=0.05,
                                            description="threshold"),
            "filter_mode": w.Dropdown(options=["off", "soft", "hard"], value="soft",
                                      description="filter"),
            "method": w.Dropdown(options=["rrf", "score"], value="rrf", description="fusion"),
            "rrf_k": w.IntSlider(value=60, min=0, max=200, step=5, description="RRF k"),
            "w_dense": w.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.1,
                                     description="dense w"),
            "w_bm25": w.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.1, description="BM25 w"),
            "k": w.IntSlider(value=10, min=1, max=20, description="cutoff k"),
        }
        out = w.Output()

        def update(_=None) -> None:  # noqa: ANN001
            v = {name: c.value for name, c in controls.items()}
            res = self.score(chunk_size=v["chunk_size"], k=v["k"], mode=v["mode"],
                             min_confidence=v["min_confidence"], filter_mode=v["filter_mode"],
                             method=v["method"], rrf_k=float(v["rrf_k"]),
                             weights=(v["w_dense"], v["w_bm25"]),
                             retrievers=("dense", "bm25"))
            with out:
                out.clear_output(wait=True)
                display(pd.Series(res).to_frame("value"))

        for c in controls.values():
            c.observe(update, names="value")
        update()
        return w.VBox([w.HBox(list(controls.values())[:5]), w.HBox(list(controls.values())[5:]),
                       out])
