"""Retrieval strategies vs the current default, one sweep per dataset (issue 22).

Every strategy is a config switch, so the comparison is an ordinary sweep: the variants
below on one dataset split, the default first (the baseline of the paired CIs), each asked
for the same number of hits (`k` 10: equal budget), with context tokens beside quality.
The pipeline's own components (dense, BM25, the title field alone, static) are in the
sweep too, for the rule that chose today's defaults.

    res = run_strategies("python-library-qa", "dev")        # a SweepResult
    strategy_table(res.summary)                             # the figures, one row each
    choose({name: strategy_table(r.summary) for name, r in dev.items()})

`experiments/strategies-<dataset>.yaml` are the same specs for `agentic-rag sweep`.

The LLM strategies (`LLM_STRATEGIES`: multi-query, HyDE, LLM rerank) are a sweep of their
own, `strategy_spec(dataset, names=LLM_NAMES)`, written as
`experiments/strategies-llm-<dataset>.yaml`: they call the chat model per query (the sweep
starts the embedded server, or calls `llm.base_url` when the base sets one), their replies
are cached under the model's identity and committed in `REPLY_PACK`, and their rows carry
`strategy_llm_*` cost columns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.config import RAGConfig
from agentic_rag.experiments.spec import DatasetSpec, SweepSpec
from agentic_rag.experiments.summary import without_failures

TITLE = ["dense", "bm25", "title"]
S2B = {"chunking.max_tokens": 128, "fusion.small_to_big": "section", "fusion.parent_tokens": 256}

# name → overrides of the default config; "default" first: the baseline
# the third round ran before fusion.named_question_words: its lists for a query of any length
ANY_LENGTH = {"fusion.named_question_words": 0}
STRATEGIES: dict[str, dict[str, Any]] = {
    "default": {},
    "title 0.3": {"fusion.retrievers": TITLE,
                  "fusion.weights": {"dense": 1.0, "bm25": 0.3, "title": 0.3}},
    "title 0.5": {"fusion.retrievers": TITLE,
                  "fusion.weights": {"dense": 1.0, "bm25": 0.3, "title": 0.5}},
    "title 1.0": {"fusion.retrievers": TITLE,
                  "fusion.weights": {"dense": 1.0, "bm25": 0.3, "title": 1.0}},
    # issue 40: the title retriever scored by name coverage, not a bag of words
    "title coverage 0.5": {"fusion.retrievers": TITLE, "fusion.title_score": "coverage",
                           "fusion.weights": {"dense": 1.0, "bm25": 0.3, "title": 0.5}},
    "title coverage 1.0": {"fusion.retrievers": TITLE, "fusion.title_score": "coverage",
                           "fusion.weights": {"dense": 1.0, "bm25": 0.3, "title": 1.0}},
    "title coverage 2.0": {"fusion.retrievers": TITLE, "fusion.title_score": "coverage",
                           "fusion.weights": {"dense": 1.0, "bm25": 0.3, "title": 2.0}},
    # issue 40: search only the documents the question names, or boost them; at most 2
    # hits per document so the top 5 spans a product's pages
    "named within": {"fusion.named_scope": "within"},
    "named boost": {"fusion.named_scope": "boost"},
    "named within, 2 per doc": {"fusion.named_scope": "within", "fusion.max_per_doc": 2},
    "2 per doc": {"fusion.max_per_doc": 2},
    "named boost, 2 per doc": {"fusion.named_scope": "boost", "fusion.max_per_doc": 2},
    "named scope auto": {"fusion.named_scope": "auto"},  # today's default (issue 40)
    "named scope off": {"fusion.named_scope": "off"},  # the default before it
    "named boost 1.5, 2 per doc": {"fusion.named_scope": "boost", "fusion.max_per_doc": 2,
                                   "fusion.weights": {"dense": 1.0, "bm25": 0.3, "named": 1.5}},
    "named boost 2.0, 2 per doc": {"fusion.named_scope": "boost", "fusion.max_per_doc": 2,
                                   "fusion.weights": {"dense": 1.0, "bm25": 0.3, "named": 2.0}},
    "coverage 1.0 + named boost, 2 per doc": {
        "fusion.retrievers": TITLE, "fusion.title_score": "coverage",
        "fusion.weights": {"dense": 1.0, "bm25": 0.3, "title": 1.0},
        "fusion.named_scope": "boost", "fusion.max_per_doc": 2},
    "coverage 1.0 + named within": {"fusion.retrievers": TITLE, "fusion.title_score": "coverage",
                                    "fusion.weights": {"dense": 1.0, "bm25": 0.3, "title": 1.0},
                                    "fusion.named_scope": "within"},
    "coverage 1.0 + named within, 2 per doc": {
        "fusion.retrievers": TITLE, "fusion.title_score": "coverage",
        "fusion.weights": {"dense": 1.0, "bm25": 0.3, "title": 1.0},
        "fusion.named_scope": "within", "fusion.max_per_doc": 2},
    # issue 40, third round: a BM25 list restricted to the named documents beside (or instead
    # of) the dense one, on today's default (auto: named boost, 2 per doc where names are shared)
    "named lexical 0.3": {"fusion.named_retrievers": ["dense", "bm25"], **ANY_LENGTH,
                          "fusion.weights": {"dense": 1.0, "bm25": 0.3, "named_bm25": 0.3}},
    "named lexical 0.5": {"fusion.named_retrievers": ["dense", "bm25"], **ANY_LENGTH,
                          "fusion.weights": {"dense": 1.0, "bm25": 0.3, "named_bm25": 0.5}},
    "named lexical 1.0": {"fusion.named_retrievers": ["dense", "bm25"], **ANY_LENGTH,
                          "fusion.weights": {"dense": 1.0, "bm25": 0.3, "named_bm25": 1.0}},
    "named lexical only": {"fusion.named_retrievers": ["bm25"], **ANY_LENGTH,
                           "fusion.weights": {"dense": 1.0, "bm25": 0.3, "named_bm25": 1.0}},
    # the fourth round (CHOICE-RULE-QUESTION.md): the same BM25 named list, for questions only
    # (fusion.named_question_words, default 64: a longer message keeps the dense named list)
    "question lexical 0.3": {"fusion.named_retrievers": ["dense", "bm25"],
                             "fusion.weights": {"dense": 1.0, "bm25": 0.3, "named_bm25": 0.3}},
    "question lexical 0.5": {"fusion.named_retrievers": ["dense", "bm25"],
                             "fusion.weights": {"dense": 1.0, "bm25": 0.3, "named_bm25": 0.5}},
    "question lexical 1.0": {"fusion.named_retrievers": ["dense", "bm25"],
                             "fusion.weights": {"dense": 1.0, "bm25": 0.3, "named_bm25": 1.0}},
    # the fifth round (CHOICE-RULE-LONGEST.md): a name whose name words in the question are a
    # strict subset of another's is not what it names ("Lime Green" over "Green Account")
    "longest name": {"fusion.named_match": "longest"},  # today's default (on BEFORE_LONGEST)
    "chunks 128": {"chunking.max_tokens": 128},  # small chunks served as they are
    "small-to-big 128→256": dict(S2B),
    "small-to-big + title 0.5": {**S2B, "fusion.retrievers": TITLE,
                                 "fusion.weights": {"dense": 1.0, "bm25": 0.3, "title": 0.5}},
    # the default chunks grown to their section's neighbours: serves more text per hit
    "small-to-big 256→512": {"fusion.small_to_big": "section", "fusion.parent_tokens": 512},
    "dense": {"fusion.retrievers": ["dense"], "gate.mode": "static"},
    "bm25": {"fusion.retrievers": ["bm25"], "gate.mode": "static"},
    "title alone": {"fusion.retrievers": ["title"], "gate.mode": "static"},
    "title coverage alone": {"fusion.retrievers": ["title"], "fusion.title_score": "coverage",
                             "gate.mode": "static"},
}
# issue 40's sweep: the coverage-scored title retriever beside today's and the components
COVERAGE_NAMES = ("default", "title 0.5", "title coverage 0.5", "title coverage 1.0",
                  "title coverage 2.0",
                  "dense", "bm25", "title alone", "title coverage alone")
# issue 40's second sweep: scoping to the named documents, capping hits per document; run on
# the default before `named_scope: auto` (NAMED_BASE), so "default" is that default
# the default before issue 40's fourth round: the dense named list alone (rounds 1-3 replay on it)
# the default before issue 40's fifth round: names matched by coverage alone
BEFORE_LONGEST = {"fusion.named_match": "coverage"}
DENSE_NAMED = {"fusion.named_retrievers": ["dense"], **BEFORE_LONGEST}
NAMED_BASE = {"fusion.named_scope": "off", **DENSE_NAMED}
NAMED_NAMES = ("default", "title coverage 1.0", "named within", "named boost",
               "named within, 2 per doc", "2 per doc", "coverage 1.0 + named within",
               "coverage 1.0 + named within, 2 per doc", "named boost, 2 per doc",
               "named boost 1.5, 2 per doc", "named boost 2.0, 2 per doc",
               "coverage 1.0 + named boost, 2 per doc", "named scope auto")
# issue 40's third and fourth sweeps (CHOICE-RULE-LEXICAL.md, CHOICE-RULE-QUESTION.md): the
# named lists with BM25, on DENSE_NAMED (the default then: named_scope auto, the dense named
# list alone), the old default beside it
LEXICAL_NAMES = ("default", "named scope off", "named lexical 0.3", "named lexical 0.5",
                 "named lexical 1.0", "named lexical only")
QUESTION_NAMES = ("default", "named scope off", "question lexical 0.3", "question lexical 0.5",
                  "question lexical 1.0")
# the fifth (CHOICE-RULE-LONGEST.md), on the default then (BEFORE_LONGEST)
LONGEST_NAMES = ("default", "longest name")
COMPONENTS = ("dense", "bm25", "title alone")

# LLM strategies (expansion.py, rerank.py): rerank depth 10 = the sweep's k, equal budget
LLM_STRATEGIES: dict[str, dict[str, Any]] = {
    "multi-query 3": {"query.expansion": "multi_query", "query.expansion_n": 3},
    "hyde": {"query.expansion": "hyde"},
    "rerank pointwise 10": {"rerank.kind": "llm", "rerank.mode": "pointwise", "rerank.depth": 10},
    "rerank listwise 10": {"rerank.kind": "llm", "rerank.mode": "listwise", "rerank.depth": 10},
    "multi-query 3 + pointwise 10": {"query.expansion": "multi_query", "query.expansion_n": 3,
                                     "rerank.kind": "llm", "rerank.mode": "pointwise",
                                     "rerank.depth": 10},
    # the reranker reads the served parents (small-to-big expands inside the retriever)
    "small-to-big + pointwise 10": {**S2B, "rerank.kind": "llm", "rerank.mode": "pointwise",
                                    "rerank.depth": 10},
}
# the LLM strategies' sweep on every dataset (the specs `save_specs` writes): those on the
# default chunks (a strategy stacked on small-to-big is swept beside it, below)
LLM_NAMES = ("default", *(n for n, o in LLM_STRATEGIES.items() if "fusion.small_to_big" not in o))
# pointwise rerank on top of small-to-big, each alone beside it: the two strategies that
# lift answer@5 on python-library-qa dev, stacked (measured on that set, dev and test)
S2B_LLM_NAMES = ("default", "small-to-big 128→256", "rerank pointwise 10",
                 "small-to-big + pointwise 10")
# Every LLM reply of the LLM strategy sweeps, committed (`SweepSpec.reply_pack`): the dev
# comparison takes hours, and a rerun on a fresh machine with the same model and build reads
# them instead of asking again
REPLY_PACK = "experiments/strategies-llm-replies.jsonl"


# dataset → (dev n, test n, corpus_size): HaluEval on 2,000 paragraphs as its other sweeps
SAMPLES: dict[str, tuple[int | None, int | None, int | None]] = {
    "halueval-qa": (100, 200, 2000),
    "python-library-qa": (None, None, None),
    "python-faq": (None, None, None),
    "tau2-banking": (None, None, None),
}

COLUMNS = ["ndcg@10", "answer@5", "answer_in_context", "span_recall@5"]


_UNSET: Any = object()


def strategy_spec(dataset: str, split: str = "dev", names: tuple[str, ...] | None = None,
                  n: int | None = _UNSET, corpus_size: int | None = _UNSET,
                  base: RAGConfig | None = None) -> SweepSpec:
    """The sweep of `names` (default: every strategy of `STRATEGIES`; `LLM_NAMES` for the
    LLM ones) on `dataset`'s split; `n` and `corpus_size` override the sample of `SAMPLES`
    (a notebook's CI size); `base` the default config (e.g. with the llama-server overlay)."""
    dev_n, test_n, size = SAMPLES[dataset]
    n = (dev_n if split == "dev" else test_n) if n is _UNSET else n
    corpus_size = size if corpus_size is _UNSET else corpus_size
    names = names or tuple(STRATEGIES)
    if names[0] != "default":
        raise ValueError(f"strategies: the first variant is the baseline, 'default' (got {names})")
    every = {**STRATEGIES, **LLM_STRATEGIES}
    llm = any(x in LLM_STRATEGIES for x in names)
    return SweepSpec(name=f"strategies{'-llm' if llm else ''}-{dataset}-{split}",
                     dataset=DatasetSpec(name=dataset, split=split, n=n, seed=0,
                                         corpus_size=corpus_size),
                     base=base or RAGConfig(),
                     variants=[every[n] for n in names], metrics=["retrieval"], k=10,
                     reply_pack=REPLY_PACK if llm else None)


def run_strategies(dataset: str, split: str = "dev", names: tuple[str, ...] | None = None,
                   n: int | None = _UNSET, corpus_size: int | None = _UNSET,
                   base: RAGConfig | None = None, **kw: Any):  # noqa: ANN201 - a SweepResult
    """Run (or read back from the row cache) the strategies sweep; `kw` go to `run_sweep`."""
    from agentic_rag.experiments.runner import run_sweep

    return run_sweep(strategy_spec(dataset, split, names, n, corpus_size, base), **kw)


def strategy_table(summary: pd.DataFrame, results: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per strategy: each quality metric with its paired difference vs the default
    and that difference's 95 % CI, context tokens, hits expanded by small-to-big, latency.
    A metric the summary has no mean of (span_recall@5 is only paired there) is averaged
    from `results` (per query first) when they are given. Failed rows (a strategy, answer
    or judge call that failed) are in no mean or Δ: `failures` counts them beside the arm,
    `llm_failures` the strategy calls among them."""
    by_label = {_label(o): n for n, o in {**STRATEGIES, **LLM_STRATEGIES}.items()}
    rows = []
    for _, s in summary.iterrows():
        row: dict[str, Any] = {"strategy": by_label.get(s["config"], s["config"]),
                               "n_queries": s["n_queries"]}
        mine = results[results.config_id == s["config_id"]] if results is not None else None
        for m in COLUMNS:
            mean = s[m] if m in s else float("nan")
            if pd.isna(mean) and mine is not None and m in mine:
                mean = without_failures(mine).groupby("query_id")[m].mean().mean()
            if pd.notna(mean):
                row[m] = mean
                d = f"{m}_diff_vs_base"
                if d in s and pd.notna(s[d]):
                    row[f"{m} Δ"] = s[d]
                    row[f"{m} Δ CI"] = (s[f"{d}_ci_low"], s[f"{d}_ci_high"])
        if mine is not None and "expanded_hits" in mine:
            row["expanded_hits"] = mine["expanded_hits"].mean()
        if mine is not None and "strategy_llm_calls" in mine:  # LLM strategies' cost per query
            for c in ("strategy_llm_calls", "strategy_llm_prompt_tokens",
                      "strategy_llm_completion_tokens", "strategy_llm_s"):
                row[c.replace("strategy_", "")] = mine[c].mean()
            row["llm_failures"] = int(mine["strategy_error"].notna().sum())
        # failed rows (strategy, answer or judge call) are not in the means or the Δ above
        row["failures"] = int(s["failures"]) if "failures" in s else 0
        row["context_tokens"] = s["context_tokens_mean"]
        row["iterations"] = s["iterations_mean"]
        row["latency_p50_ms"] = s["latency_p50_ms"]
        rows.append(row)
    return pd.DataFrame(rows)


def _label(overrides: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in overrides.items()) or "base"


def choose(tables: dict[str, pd.DataFrame],
           metrics: tuple[str, ...] = ("ndcg@10", "answer@5", "answer_in_context"),
           candidates: tuple[str, ...] | None = None,
           gain_on: tuple[str, ...] = ("ndcg@10", "answer_in_context")) -> pd.DataFrame:
    """The rule of today's defaults, per candidate strategy, over the dev tables: its worst
    margin over the best of the pipeline's components (dense, BM25, title alone) across
    datasets and metrics, and its worst difference vs the default. A strategy may replace the
    default only if it loses on no dataset and metric to the default or to a component
    (`no_loss`) and wins somewhere on a metric of `gain_on` (`gain`): nDCG, or the answer in
    the whole context at its fixed token budget — not answer@5 alone, which a strategy
    serving longer hits wins by serving more text. The best worst-case margin goes first."""
    cands = candidates or tuple(n for n in STRATEGIES if n not in COMPONENTS)
    out = []
    for name in cands:
        worst_comp = worst_default = float("inf")
        gain = False
        for t in tables.values():
            t = t.set_index("strategy")
            if name not in t.index:
                continue
            for m in metrics:
                if m not in t.columns or pd.isna(t.loc[name, m]):
                    continue
                comps = [t.loc[c, m] for c in COMPONENTS if c in t.index and pd.notna(t.loc[c, m])]
                if comps:
                    worst_comp = min(worst_comp, t.loc[name, m] - max(comps))
                diff = t.loc[name, m] - t.loc["default", m]
                worst_default = min(worst_default, diff)
                gain = gain or (diff > 0 and m in gain_on)
        out.append({"strategy": name, "worst_margin_vs_components": worst_comp,
                    "worst_diff_vs_default": worst_default, "gain": gain,
                    "no_loss": worst_comp >= 0 and worst_default >= 0})
    return pd.DataFrame(out).sort_values(["no_loss", "worst_margin_vs_components"],
                                         ascending=False).reset_index(drop=True)


def save_specs(folder: str | Path = "experiments") -> list[Path]:
    """Write the dev specs as `strategies-<dataset>.yaml` and the LLM strategies' as
    `strategies-llm-<dataset>.yaml` (for `agentic-rag sweep`)."""
    import yaml

    paths = []
    for name in SAMPLES:
        p = Path(folder) / f"strategies-{name}.yaml"
        spec = strategy_spec(name, "dev").model_dump(
            mode="json", include={"name", "dataset", "variants", "metrics", "k"})
        head = (f"# Retrieval strategies vs the default (the first variant) on {name} dev, "
                "equal budget (k 10).\n# Written by agentic_rag.studies.strategies."
                "save_specs(); the base is the shipped default config.\n")
        p.write_text(head + yaml.safe_dump(spec, sort_keys=False))
        paths.append(p)
        p = Path(folder) / f"strategies-llm-{name}.yaml"
        spec = strategy_spec(name, "dev", LLM_NAMES).model_dump(
            mode="json", include={"name", "dataset", "variants", "metrics", "k", "reply_pack"})
        head = (f"# LLM strategies (multi-query, HyDE, LLM rerank) vs the default on {name} dev, "
                "equal budget (k 10, rerank depth 10).\n# Written by agentic_rag.experiments."
                "strategies.save_specs(); the base is the shipped default config: the sweep "
                "starts\n# the embedded LLM server; its replies go to `reply_pack` (committed).\n")
        p.write_text(head + yaml.safe_dump(spec, sort_keys=False))
        paths.append(p)
    return paths
