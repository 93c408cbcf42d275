"""`tune(folder)`: from a folder of documents to a tuned, servable config in one call (issue 38).

    res = tune("my-docs/", n=200, budget="quick", out="tuned/")
    res.report          # Markdown: the test-split table with paired CIs vs the default
    res.config          # the chosen RAGConfig (also tuned/best-config.yaml, with provenance)
    res.summary         # the test sweep's summary (default and chosen, paired CIs)

Steps, each cached so a rerun continues where the last one stopped:
1. **Read** the folder (an empty folder or an unreadable file is an error naming it).
2. **Questions**: `datasets.testset.generate_testset` in span mode (the answer chosen by rule,
   the LLM writes its question), half dev, half test (`DEV_SHARE`); written to
   `out/questions.jsonl`, reused when it exists with the same settings; every LLM reply is
   cached in the reply cache and in `out/llm-replies.jsonl`, so a run stopped at
   `max_llm_calls` loses nothing. A folder with fewer chunks holding an answer span than `n`
   is refused before any call, with the number it can give.
3. **Search space** (`search_space`): chosen from the documents and the budget, before
   any figure: see its docstring.
4. **Dev sweep** of the space on the dev questions (retrieval metrics, k 10: equal budget),
   then **the rule** below picks one config.
5. **Test sweep**: the default and the chosen config on the test questions, once; the
   report's paired Δ and 95 % CIs are these.
6. **Write** `best-config.yaml` (the chosen config with a provenance block: folder, set,
   runs, rule, dev and test figures), `report.md`, `tune.png`, `tune.json`.

The rule (`RULE`, the `noninferiority` rule of `tune_space.RULES`, written down before any
figure in experiments/tune/RULE-NONINFERIORITY.md; issue 63): on the dev questions, a candidate
is eligible when the lower 95 % CI bound of its paired difference vs the default is above −δ on
every metric of `RULE_METRICS` (nDCG@10 and answer@5, δ = 0.02 each: one question in 50 losing
its answer or its document; `NONINFERIORITY_MARGINS`) and, on at least one, the whole CI lies
above 0; among eligible ones the larger lower bound of answer@5's difference wins (then of
nDCG@10's, then fewer context tokens, then the earlier in the space). No candidate eligible:
the default is kept; the report gives each candidate's bounds and why it was or was not
eligible (`agentic-rag tune --explain RUN_DIR` gives the same for a finished run). The rule
before it, `sign` (mean difference ≥ 0 on both metrics, > 0 on one; the best worst case), stays
available by name (`rule="sign"`) so that the comparison is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentic_rag.config import RAGConfig
from agentic_rag.studies.tune_run import TuneRun
from agentic_rag.studies.tune_space import TuneResult


def tune(folder: str | Path, n: int = 200, budget: str = "quick", llm_strategies: bool = False,
         out: str | Path = "tuned", max_llm_calls: int | None = None, *,
         config: RAGConfig | None = None, chat: Any = None, seed: int = 0,
         log: Callable[[str], Any] = print, runs_dir: str | Path | None = None,
         cache_dir: str | Path | None = None, max_concurrency: int | None = None,
         min_tokens: int = 25, questions: str | Path | None = None,
         rule: str = "noninferiority") -> TuneResult:
    """Tune the pipeline for the documents of `folder` (the steps of the module docstring).
    `config`: the base (default: the shipped default config); `chat`: the chat model
    (default: the configured LLM, the embedded server started as needed); `max_llm_calls`:
    stop cleanly after that many new LLM calls (`llm.LLMCallCap`; a rerun continues);
    `runs_dir` / `cache_dir`: the sweeps' run folders and index cache (default `out/runs`
    and `<home>/tune-cache`: an index is built once per folder and chunking, reused by
    every later run). `questions`: a set made already from the folder (`agentic-rag testset`,
    its own dev/test split) instead of generating one: no LLM call. `rule`: the choice rule
    (`tune_space.RULES`: `noninferiority`, the default, or `sign`, the rule before it)."""
    return TuneRun(folder=Path(folder), n=n, budget=budget, llm_strategies=llm_strategies,
                   out=Path(out), max_llm_calls=max_llm_calls, config=config or RAGConfig(),
                   chat=chat, seed=seed, log=log, runs_dir=runs_dir, cache_dir=cache_dir,
                   max_concurrency=max_concurrency, min_tokens=min_tokens,
                   questions=Path(questions) if questions is not None else None,
                   rule=rule).run()
