"""A session study's arms (experiments/conversations/history, question): per arm of an agent
setting over the same MTRAG sessions, the figures its rule reads, with paired bootstrap
differences vs the default arm (`arm_figures`), and why the turns of ANSWERABLE tasks were
abstained on (`abstention_reasons`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.evaluation.sessions import NEGATIVE, POSITIVE, abstention, clarifying_rate
from agentic_rag.experiments.stats import bootstrap_ci, paired_bootstrap
from agentic_rag.jsonl import read_rows


def paired_vs(df: pd.DataFrame, arm: Any, default: Any, metric: str,  # noqa: ANN401
               answerability: str) -> dict[str, float]:
    d = df[df["answerability"] == answerability]
    wide = d.pivot_table(index="query_id", columns="arm", values=metric, aggfunc="first")
    wide = wide.dropna(subset=[arm, default])
    return paired_bootstrap(wide[arm].to_numpy(), wide[default].to_numpy())


def diff_text(p: dict[str, float]) -> str:
    """A paired difference (`paired_bootstrap`'s dict) as "+0.012 [-0.003, +0.030] (n 61)"."""
    return f"{p['diff']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}] (n {p['n']})"


def arm_figures(df: pd.DataFrame, default: Any) -> list[dict[str, Any]]:  # noqa: ANN401
    """Per arm (`df["arm"]`) of a session study, the default first: sessions, abstention
    (`abstention`), the clarifying rate, ROUGE-L on ANSWERABLE turns with its CI, the median
    prompt tokens and agent seconds, and for every other arm the paired bootstrap difference
    vs `default` (over sessions) of the abstention on ANSWERABLE and UNANSWERABLE turns and of
    ROUGE-L on ANSWERABLE ones: the figures a study's rule reads
    (experiments/conversations/history, question)."""
    out = []
    for arm, g in sorted(df.groupby("arm"), key=lambda x: (x[0] != default, str(x[0]))):
        row: dict[str, Any] = {"arm": arm, "sessions": len(g)}
        row.update(abstention(g))
        row.update(clarifying_rate(g))
        ans = g[g["answerability"] == NEGATIVE]
        row["rouge_l_answerable"] = float(ans["agent_rouge_l"].mean())
        row["rouge_l_answerable_ci"] = bootstrap_ci(ans["agent_rouge_l"].tolist())
        row["prompt_tokens_median"] = float(g["agent_prompt_tokens"].median())
        row["latency_agent_s_median"] = float(g["latency_agent_ms"].median()) / 1000
        if arm != default:
            row["abstained_on_answerable_vs_default"] = paired_vs(
                df, arm, default, "agent_abstained", NEGATIVE)
            row["recall_vs_default"] = paired_vs(df, arm, default, "agent_abstained", POSITIVE)
            row["rouge_l_answerable_vs_default"] = paired_vs(df, arm, default, "agent_rouge_l",
                                                              NEGATIVE)
        out.append(row)
    return out


def abstention_reasons(df: pd.DataFrame, qrels: dict[str, dict[str, int]]) -> dict[str, int]:
    """Session rows of ANSWERABLE turns counted by where the gold passage ranked in the turn's
    first search (`qrels`) and, for an abstention, who abstained: the support gate (its "I
    searched for ..." reply), nothing found, or the model's own "I don't know"."""
    out: dict[str, int] = {}
    for _, r in df[df["answerability"] == NEGATIVE].iterrows():
        docs = json.loads(r["retrieved_docs"])
        ranks = [docs.index(g) for g in qrels.get(r["query_id"], {}) if g in docs]
        where = "gold first" if ranks and min(ranks) == 0 else \
            "gold at 2-10" if ranks else "gold not in the top 10"
        answer = str(r["agent_answer"])
        who = "gate" if "I searched for" in answer else \
            "nothing found" if "found no passages" in answer else "model"
        key = f"{'abstained' if r['agent_abstained'] else 'answered'}, {where}" + \
            (f", {who}" if r["agent_abstained"] else "")
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def load_arms(run: Path, arm_of: Callable[[str], Any]) -> pd.DataFrame:
    """A session study's answered rows from a run folder (`results.parquet`, else a committed
    `rows.jsonl(.gz)`), failed agent rows left out and said, with `arm` = `arm_of(config)`."""
    parquet, rows = run / "results.parquet", run / "rows.jsonl"
    if parquet.exists():
        df = pd.read_parquet(parquet)
    else:  # a committed copy: rows.jsonl.gz
        df = pd.DataFrame(read_rows(rows if rows.exists() else run / "rows.jsonl.gz"))
    df = df[df["agent_abstained"].notna()].copy()
    if "agent_error" in df:
        failed = df["agent_error"].notna()
        if failed.any():
            print(f"{int(failed.sum())} agent rows failed (left out, listed in rows.jsonl)")
        df = df[~failed]
    df["arm"] = df["config"].map(arm_of)
    return df
