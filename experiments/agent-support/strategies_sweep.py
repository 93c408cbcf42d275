"""The strategies sweep of issue 40 on one dataset, dev, retrieval only (no LLM): the
coverage-scored title retriever beside today's and the components (`COVERAGE_NAMES`); the
table is written as `strategies-<dataset>-dev.csv` beside this file.

    PYTHONPATH=. python experiments/agent-support/strategies_sweep.py tau2-banking
    PYTHONPATH=. python experiments/agent-support/strategies_sweep.py tau2-banking named
      # the second sweep: scoping to the named documents (`NAMED_NAMES`)
      # -> strategies-named-<dataset>-dev.csv
    PYTHONPATH=. python experiments/agent-support/strategies_sweep.py tau2-banking lexical
      # the third: a BM25 list restricted to the named documents (`LEXICAL_NAMES`), on
      # today's default -> strategies-lexical-<dataset>-dev.csv
    PYTHONPATH=. python experiments/agent-support/strategies_sweep.py tau2-banking longest [test]
      # the fifth: names matched longest first (`LONGEST_NAMES`), dev or the test tickets
      # -> strategies-longest-<dataset>-<split>.csv
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer

from agentic_rag.config import RAGConfig
from agentic_rag.studies.strategies import (
    BEFORE_LONGEST,
    COVERAGE_NAMES,
    DENSE_NAMED,
    LEXICAL_NAMES,
    LONGEST_NAMES,
    NAMED_BASE,
    NAMED_NAMES,
    QUESTION_NAMES,
    run_strategies,
    strategy_table,
)


def main(ds: str, which: Annotated[str, typer.Argument(
        help="named | lexical | question | longest (none: the coverage sweep)")] = "",
         split: Annotated[str, typer.Argument(help="dev, or test: the tickets not chosen on")] = "dev",
         ) -> None:
    names = {"named": NAMED_NAMES, "lexical": LEXICAL_NAMES,
             "question": QUESTION_NAMES, "longest": LONGEST_NAMES}.get(which, COVERAGE_NAMES)
    t = time.time()
    # the first two sweeps: on the default before auto; the third and fourth on the dense
    # named list alone (the default then); the fifth on names matched by coverage (then)
    base = RAGConfig().with_overrides(BEFORE_LONGEST if which == "longest" else DENSE_NAMED
                                      if which in ("lexical", "question") else NAMED_BASE)
    res = run_strategies(ds, split, names, base=base, progress=False)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    tab = strategy_table(res.summary, res.results)
    print(tab.to_string())
    tab.to_csv(Path(__file__).parent / f"strategies{'-' + which if which else ''}-{ds}-{split}.csv",
               index=False)
    print("seconds", round(time.time() - t, 1))


if __name__ == "__main__":
    typer.run(main)
