"""Cold start: process start → first answer, and first-query latency with the model loaded,
flat vs tiered. A thin CLI over `agentic_rag.studies.coldstart` (the layouts, the
fresh-process measurement and the columns are documented there).

    .venv/bin/python benchmarks/cold_start.py [--repeats 3] [--banking N --python N]
                                              [--runs-dir experiments/runs]

Prints the median per arm and query kind and the paired relative change; with
`--runs-dir` also writes a run folder (results.parquet, summary.csv, meta.json).
The claims ledger runs the same measurement: `agentic-rag claims --only d`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agentic_rag.studies.coldstart import DEFAULT_ROOT, measure_cold_start, paired_summary, run_cold_start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="where the homes are built")
    ap.add_argument("--banking", type=int, default=None, help="banking documents (default: all)")
    ap.add_argument("--python", type=int, default=None, help="Python docs (default: all)")
    ap.add_argument("--runs-dir", type=Path, default=None, help="also write a run folder here")
    args = ap.parse_args()
    if args.runs_dir:
        import pandas as pd

        run = run_cold_start(args.runs_dir, args.repeats, args.root, n_banking=args.banking,
                             n_python=args.python)
        df, summary = pd.read_parquet(run / "results.parquet"), pd.read_csv(run / "summary.csv")
    else:
        df = measure_cold_start(args.repeats, args.root, n_banking=args.banking,
                                n_python=args.python)
        summary = paired_summary(df)
    cols = ["process_start_to_first_answer_s", "model_load_s", "first_query_ms", "cold_loaded"]
    print(df.groupby(["query_kind", "arm"], sort=False)[cols].median().round(3).to_string())
    tiered = summary[~summary["baseline"]].iloc[0]
    for kind in df["query_kind"].unique():
        for m in ("process_start_to_first_answer_s", "first_query_ms"):
            c = f"{kind}.{m}"
            print(f"{c}: tiered vs flat {tiered[f'{c}_rel_vs_base']:+.1%} "
                  f"[{tiered[f'{c}_rel_vs_base_ci_low']:+.1%}, "
                  f"{tiered[f'{c}_rel_vs_base_ci_high']:+.1%}] over {df['repeat'].nunique()} "
                  "paired repetitions")


if __name__ == "__main__":
    main()
