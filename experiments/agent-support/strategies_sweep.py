"""The strategies sweep of issue 40 on one dataset, dev, retrieval only (no LLM): the
coverage-scored title retriever beside today's and the components (`COVERAGE_NAMES`); the
table is written as `strategies-<dataset>-dev.csv` beside this file.

    PYTHONPATH=. python experiments/agent-support/strategies_sweep.py tau2-banking
    PYTHONPATH=. python experiments/agent-support/strategies_sweep.py tau2-banking named
      # the second sweep: scoping to the named documents (`NAMED_NAMES`)
      # -> strategies-named-<dataset>-dev.csv
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

from agentic_rag.config import RAGConfig
from agentic_rag.studies.strategies import COVERAGE_NAMES, NAMED_BASE, NAMED_NAMES, run_strategies, strategy_table

if __name__ == "__main__":
    ds = sys.argv[1]
    named = sys.argv[2:] == ["named"]
    t = time.time()
    base = RAGConfig().with_overrides(NAMED_BASE)  # both sweeps: on the default before auto
    res = run_strategies(ds, "dev", NAMED_NAMES if named else COVERAGE_NAMES, base=base,
                         progress=False)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    tab = strategy_table(res.summary, res.results)
    print(tab.to_string())
    tab.to_csv(Path(__file__).parent / f"strategies{'-named' if named else ''}-{ds}-dev.csv", index=False)
    print("seconds", round(time.time() - t, 1))
