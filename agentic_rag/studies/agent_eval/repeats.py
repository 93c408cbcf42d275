"""The agent evaluation's repeat-run tables (`agent-eval --repeats K`): per question the success
count, pass@k and pass^k (`passk`), the spread of every summary figure across the repeats and
how far the greedy run sits from them (`spread`), the questions that flip (`flips`), and the
README section (`markdown`). Rows come from `summary.judged_rows`: `repeat` ≥ 0 is a sampled
repeat, −1 the greedy run of the same questions (which `--repeats` makes first)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from agentic_rag.evaluation.trajectory import pass_at_k, pass_hat_k
from agentic_rag.experiments.stats import bootstrap_ci, paired_effect

GROUP = ["dataset", "split", "cell"]
# what counts as a success for pass^k: the judge's verdict; banking-products also its own
# figure score (no LLM)
SUCCESS = ("correct", "figure_correct")


def passk(df: pd.DataFrame, successes: Sequence[str] = SUCCESS) -> pd.DataFrame:
    """One row per question × success metric: trials n (the repeats with a verdict), successes
    c, pass@j and pass^j for j = 1..n, the greedy run's verdict, and `flips` (0 < c < n)."""
    sampled = df[df["repeat"] >= 0]
    greedy = df[df["repeat"] < 0].set_index([*GROUP, "qid"])
    out = []
    for m in successes:
        if m not in sampled or sampled[m].isna().all():
            continue
        for key, g in sampled.groupby([*GROUP, "qid"]):
            v = g[m].dropna().astype(float)
            n, c = len(v), int((v > 0.5).sum())
            if n == 0:  # not measured for this dataset (figure_correct off banking-products)
                continue
            r = {**dict(zip([*GROUP, "qid"], key)), "success": m, "n": n, "c": c,
                 "flips": bool(0 < c < n),
                 "greedy": float(greedy.loc[key, m]) if key in greedy.index else np.nan}
            for j in range(1, n + 1):
                r[f"pass@{j}"], r[f"pass^{j}"] = pass_at_k(n, c, j), pass_hat_k(n, c, j)
            out.append(r)
    return pd.DataFrame(out)


def passk_table(per_question: pd.DataFrame) -> pd.DataFrame:
    """Per dataset × cell × success metric: questions, pass@j and pass^j averaged over the
    questions with their bootstrap CI over questions (only questions with all K trials), the
    questions that flip."""
    out = []
    if per_question.empty:
        return pd.DataFrame()
    for key, g in per_question.groupby([*GROUP, "success"]):
        k = int(g["n"].max())
        full = g[g["n"] == k]
        r = {**dict(zip([*GROUP, "success"], key)), "k": k, "questions": len(full),
             "incomplete": int(len(g) - len(full)), "flips": int(full["flips"].sum())}
        for j in range(1, k + 1):
            for kind in ("pass@", "pass^"):
                col = f"{kind}{j}"
                lo, hi = bootstrap_ci(full[col].tolist())
                r[col], r[f"{col}_ci"] = float(full[col].mean()), f"[{lo:.2f}, {hi:.2f}]"
        greedy = full["greedy"].dropna()
        r["greedy"], r["greedy_n"] = (float(greedy.mean()) if len(greedy) else np.nan), len(greedy)
        out.append(r)
    return pd.DataFrame(out)


def spread(df: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Per dataset × cell × metric: each repeat's mean, their min / max / sd, the mean over
    repeats (each question's repeats averaged first) with its bootstrap CI over questions,
    and the greedy run's mean on the same questions with the paired difference greedy −
    repeated (per question) and its paired-bootstrap CI. Only questions that have every
    repeat (a run cut short leaves the last one partial)."""
    sampled, greedy = df[df["repeat"] >= 0], df[df["repeat"] < 0]
    out = []
    for key, g in sampled.groupby(GROUP):
        k = g["repeat"].nunique()
        g = g[g.groupby("qid")["repeat"].transform("nunique") == k]
        gg = greedy
        for col, v in zip(GROUP, key):
            gg = gg[gg[col] == v]
        gq = gg.set_index("qid")
        for m in metrics:
            if m not in g or g[m].isna().all():
                continue
            per_repeat = g.groupby("repeat")[m].mean()
            per_q = g.groupby("qid")[m].mean()
            lo, hi = bootstrap_ci(per_q.tolist())
            r = {**dict(zip(GROUP, key)), "metric": m, "k": len(per_repeat),
                 "questions": len(per_q),
                 "repeat_means": " ".join(f"{x:.2f}" for x in per_repeat),
                 "min": float(per_repeat.min()), "max": float(per_repeat.max()),
                 "sd": float(per_repeat.std(ddof=1)) if len(per_repeat) > 1 else np.nan,
                 "mean": float(per_q.mean()), "ci": f"[{lo:.2f}, {hi:.2f}]"}
            shared = per_q.index.intersection(gq.index) if m in gq else []
            if len(shared):
                r["greedy"] = float(gq.loc[shared, m].mean())
                r["greedy_minus_repeated"] = paired(gq.loc[shared, m].tolist(),
                                                    per_q.loc[shared].tolist())
            out.append(r)
    return pd.DataFrame(out)


def flips(per_question: pd.DataFrame) -> pd.DataFrame:
    """The questions whose verdict differs between repeats (0 < c < n)."""
    if per_question.empty:
        return per_question
    return per_question[per_question["flips"]][[*GROUP, "qid", "success", "c", "n", "greedy"]]


def markdown(table: pd.DataFrame, spread_df: pd.DataFrame, flipped: pd.DataFrame,
             metrics: Sequence[str] = ("correct", "figure_correct", "searches", "llm_turns",
                                       "first_search_gold", "served_doc_recall")) -> str:
    """The README section: the pass^k table, the spread of the main figures and the flips."""
    if table.empty:
        return ""
    k = int(table["k"].max())
    lines = ["## Repeats: pass@k and pass^k", "",
             "| dataset | cell | success | questions | " + " | ".join(
                 f"pass^{j} [95% CI]" for j in range(1, k + 1)) + f" | pass@{k} | flips | "
             "greedy run |", "|---|---|---|---|" + "---|" * (k + 3)]
    for _, r in table.iterrows():
        lines.append(f"| {r.dataset} | {r.cell} | {r.success} | {r.questions} | " + " | ".join(
            f"{r[f'pass^{j}']:.2f} {r[f'pass^{j}_ci']}" if f"pass^{j}" in r and r[f"pass^{j}"]
            == r[f"pass^{j}"] else "–" for j in range(1, k + 1))
            + f" | {r.get(f'pass@{k}', float('nan')):.2f} | {r.flips} | "
            + (f"{r.greedy:.2f} (n={r.greedy_n})" if r.greedy == r.greedy else "–") + " |")
    if not spread_df.empty:
        lines += ["", "Spread across repeats (each repeat's mean; mean over repeats with its "
                  "CI over questions; the greedy run on the same questions, paired):", "",
                  "| dataset | cell | metric | repeats | min | max | sd | mean [95% CI] | "
                  "greedy | greedy − repeated [95% CI] |", "|---|---|---|---|---|---|---|---|---|---|"]
        for _, r in spread_df[spread_df["metric"].isin(metrics)].iterrows():
            g = r.get("greedy")
            lines.append(f"| {r.dataset} | {r.cell} | {r.metric} | {r.repeat_means} | "
                         f"{r['min']:.2f} | {r['max']:.2f} | {r.sd:.2f} | {r['mean']:.2f} {r.ci} | "
                         + (f"{g:.2f} | {r.greedy_minus_repeated}" if g == g and g is not None
                            else "– | –") + " |")
    lines += ["", f"Questions that flip ({len(flipped)}): " + (", ".join(
        f"{r.dataset}/{r.qid} ({r.success} {r.c}/{r.n})" for _, r in flipped.iterrows())
        or "none"), ""]
    return "\n".join(lines)


def paired(a: Sequence[float], b: Sequence[float]) -> str:
    """`diff [ci_low, ci_high] (n=…)`: a − b over the questions where both have a value, with
    its paired-bootstrap CI (`stats.paired_effect`); `– (n=0)` when none has both."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = int((~(np.isnan(x) | np.isnan(y))).sum())
    if n == 0:
        return "– (n=0)"
    e = paired_effect(x, y, "m")
    return (f"{e['m_diff_vs_base']:+.2f} [{e['m_diff_vs_base_ci_low']:+.2f}, "
            f"{e['m_diff_vs_base_ci_high']:+.2f}] (n={n})")
