"""The session figures of the claims' pooled c-boundaries run (boundaries on = the default
config) as the markdown table of experiments/conversations/README.md: abstention on
UNANSWERABLE vs ANSWERABLE final turns, the clarifying rate on UNDERSPECIFIED ones, searches,
passages served again and context tokens per turn (`evaluation.sessions.session_figures`,
CIs bootstrap sessions). Run folders are not committed: this reads the newest
`experiments/runs/*-claim-c-boundaries-mtrag` unless given one.

    python experiments/claims/sessions-run/figures.py [experiments/runs/<run>]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from agentic_rag.evaluation.sessions import session_figures

RUNS = Path("experiments/runs")


def newest() -> Path:
    runs = sorted(RUNS.glob("*-claim-c-boundaries-mtrag"))
    if not runs:
        raise SystemExit(f"no *-claim-c-boundaries-mtrag run in {RUNS}: run "
                         "experiments/claims/sessions-run/run.sh first")
    return runs[-1]


def _ci(r: pd.Series, name: str) -> str:
    return f"{r[name]:.2f} [{r[f'{name}_ci_low']:.2f}, {r[f'{name}_ci_high']:.2f}]"


def table(run: Path) -> str:
    f = session_figures(pd.read_parquet(run / "results.parquet"))
    on = f[f["config"].str.contains("context.boundaries=True", regex=False)]
    if len(on) != 1:
        raise SystemExit(f"{run}: expected one config with context.boundaries=True, "
                         f"found {len(on)}")
    r = on.iloc[0]
    n = int(r["sessions"])
    abstained = round(r["n_unanswerable"] * r["recall"]
                      + r["n_answerable"] * r["abstained_on_answerable"])  # precision's n
    lines = [f"Run `{run.name}`, {n} sessions, boundaries on (the default):", "",
             "| figure | value [95 % CI] | n | target (issue 61) |", "|---|---|---|---|",
             f"| abstention recall on UNANSWERABLE turns | {_ci(r, 'recall')} | "
             f"{int(r['n_unanswerable'])} | ≥ 0.7 |",
             f"| abstained on ANSWERABLE turns | **{_ci(r, 'abstained_on_answerable')}** | "
             f"{int(r['n_answerable'])} | ≤ 0.15: "
             f"{'met' if r['abstained_on_answerable'] <= 0.15 else '**missed**'} |",
             f"| abstention precision | {_ci(r, 'precision')} | {abstained} | |",
             f"| clarifying question on UNDERSPECIFIED turns | "
             f"{_ci(r, 'clarifying_on_underspecified')} | {int(r['n_underspecified'])} | |",
             f"| searches per turn; passages served again | {r['session_searches_mean']:.2f}; "
             f"{r['session_served_again_mean']:.2f} | {n} | |",
             f"| context tokens per turn (mean) | {r['session_context_tokens_mean']:.0f} | {n} | |"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, nargs="?", help="a claim-c-boundaries-mtrag run folder")
    print(table(ap.parse_args().run or newest()))


if __name__ == "__main__":
    main()
