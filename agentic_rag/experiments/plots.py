"""Matplotlib helpers for notebooks: quality vs cost, and a metric against one parameter.
Configs are named by their settings (`summary.short_label`: "256 tok · gated · hybrid")."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from agentic_rag.experiments.summary import short_label


def _plt():
    import matplotlib

    matplotlib.use("Agg") if not _in_notebook() else None
    import matplotlib.pyplot as plt

    return plt


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython

        return get_ipython() is not None and "IPKernelApp" in get_ipython().config
    except Exception:  # noqa: BLE001 - IPython absent or not a kernel
        return False


def plot_tradeoff(summary: pd.DataFrame, x: str = "latency_p50_ms", y: str = "ndcg@10",
                  path: str | Path | None = None):  # noqa: ANN201 - matplotlib Figure
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5) if len(summary) <= 6 else (10, 6.5))
    front = summary.get("pareto", pd.Series(False, index=summary.index))
    ax.scatter(summary[x], summary[y], c=["tab:red" if p else "tab:blue" for p in front])
    if f"{y}_ci_low" in summary:
        ax.errorbar(summary[x], summary[y], yerr=[summary[y] - summary[f"{y}_ci_low"],
                                                  summary[f"{y}_ci_high"] - summary[y]],
                    fmt="none", ecolor="gray", alpha=0.5)
    # labels point inwards (right half: text to the left) and alternate above / below in
    # the order of y, so neighbouring points' labels overlap less
    mid = (summary[x].min() + summary[x].max()) / 2
    for rank, (_, r) in enumerate(summary.sort_values(y).iterrows()):
        left = r[x] > mid
        ax.annotate(short_label(r["config"]), (r[x], r[y]), fontsize=7,
                    xytext=(-4 if left else 4, 4 if rank % 2 else -10),
                    textcoords="offset points", ha="right" if left else "left")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"{y} vs {x}\n(red: Pareto frontier on latency and context tokens; bars: 95% CI)",
                 fontsize=10)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig


def plot_metric(summary: pd.DataFrame, param: str, metric: str = "ndcg@10",
                path: str | Path | None = None):  # noqa: ANN201
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, max(4.5, 0.3 * len(summary))))  # a readable row each
    labels = summary["config"].map(short_label)
    ax.barh(labels, summary[metric], xerr=[summary[metric] - summary[f"{metric}_ci_low"],
                                            summary[f"{metric}_ci_high"] - summary[metric]]
            if f"{metric}_ci_low" in summary else None, color="tab:blue", alpha=0.8)
    ax.set_xlabel(metric)
    ax.set_title(f"{metric} by config ({param})")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig


def plot_lines(df: pd.DataFrame, x: str, y: str, group: str | None = None, ax=None,  # noqa: ANN001
               title: str | None = None, path: str | Path | None = None):  # noqa: ANN201
    """One line per `group` value of `y` against `x` (a sweep curve), markers on the points."""
    plt = _plt()
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6.5, 4))
    groups = list(df.groupby(group, sort=False)) if group else [(y, df)]
    for i, (name, g) in enumerate(groups):  # shrinking markers: coinciding points stay visible
        g = g.sort_values(x)
        ax.plot(g[x], g[y], marker="osD^v<>"[i % 7], markersize=max(3, 10 - 2 * i), alpha=0.85,
                label=str(name))
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if group:
        ax.legend(title=group, fontsize=8)
    ax.set_title(title or f"{y} vs {x}", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig


def plot_bars(df: pd.DataFrame, x: str, y: str, group: str | None = None,
              title: str | None = None, path: str | Path | None = None):  # noqa: ANN201
    """Grouped bars of `y`: one cluster per `x` value, one bar per `group` value; 95% CI
    whiskers when `{y}_ci_low` / `{y}_ci_high` columns are present."""
    plt = _plt()
    table = df.pivot_table(index=x, columns=group, values=y, sort=False) if group \
        else df.set_index(x)[[y]]
    lo = hi = None
    if f"{y}_ci_low" in df and f"{y}_ci_high" in df:
        lo = df.pivot_table(index=x, columns=group, values=f"{y}_ci_low", sort=False) if group \
            else df.set_index(x)[[f"{y}_ci_low"]].set_axis([y], axis=1)
        hi = df.pivot_table(index=x, columns=group, values=f"{y}_ci_high", sort=False) if group \
            else df.set_index(x)[[f"{y}_ci_high"]].set_axis([y], axis=1)
    fig, ax = plt.subplots(figsize=(max(6.5, 0.9 * len(table) * max(1, table.shape[1]) / 2), 4))
    width = 0.8 / table.shape[1]
    for j, col in enumerate(table.columns):
        pos = [i + j * width - 0.4 + width / 2 for i in range(len(table))]
        err = None
        if lo is not None and hi is not None:
            err = [(table[col] - lo[col]).clip(lower=0), (hi[col] - table[col]).clip(lower=0)]
        ax.bar(pos, table[col], width, yerr=err, capsize=2, label=str(col))
    ax.set_xticks(range(len(table)))
    ax.set_xticklabels([str(i) for i in table.index], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(y)
    if group:
        ax.legend(title=group, fontsize=8)
    ax.set_title(title or f"{y} by {x}", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig


def plot_gate_curves(summary: pd.DataFrame, quality: str = "ndcg@10",
                     costs: tuple[str, ...] = ("iterations_mean", "context_tokens_mean"),
                     group: str = "gate.mode", path: str | Path | None = None):  # noqa: ANN201
    """Quality against each cost, one panel per cost, one line per gate mode (the points of
    a line are the thresholds swept; static and always_expand do not depend on it)."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(costs), figsize=(5.5 * len(costs), 4), squeeze=False)
    for ax, cost in zip(axes[0], costs):
        plot_lines(summary, cost, quality, group, ax=ax, title=f"{quality} vs {cost}")
        if "gate.min_confidence" in summary:
            for _, r in summary[summary[group] == "gated"].iterrows():
                ax.annotate(f"{r['gate.min_confidence']:g}", (r[cost], r[quality]), fontsize=7,
                            xytext=(3, -8), textcoords="offset points")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig


def plot_reliability(table: pd.DataFrame, title: str = "gate confidence reliability",
                     path: str | Path | None = None):  # noqa: ANN201
    """Reliability diagram from `calibration.reliability_table`: observed rate against mean
    predicted probability per bin (marker size ∝ n), the diagonal for perfect calibration."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.8, 4.5))
    t = table[table["n"] > 0]
    ax.plot([0, 1], [0, 1], ls="--", color="gray", lw=1)
    ax.scatter(t["predicted"], t["observed"], s=20 + 200 * t["n"] / max(1, t["n"].max()),
               alpha=0.8)
    ax.plot(t["predicted"], t["observed"], alpha=0.5)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted P(relevant in top 5)")
    ax.set_ylabel("observed rate")
    ax.set_title(f"{title} (n={int(t['n'].sum())})", fontsize=10)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig
