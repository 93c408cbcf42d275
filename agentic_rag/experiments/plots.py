"""Matplotlib helpers for notebooks: quality vs cost, and a metric against one parameter."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


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
    fig, ax = plt.subplots(figsize=(7, 4.5))
    front = summary.get("pareto", pd.Series(False, index=summary.index))
    ax.scatter(summary[x], summary[y], c=["tab:red" if p else "tab:blue" for p in front])
    if f"{y}_ci_low" in summary:
        ax.errorbar(summary[x], summary[y], yerr=[summary[y] - summary[f"{y}_ci_low"],
                                                  summary[f"{y}_ci_high"] - summary[y]],
                    fmt="none", ecolor="gray", alpha=0.5)
    for _, r in summary.iterrows():
        ax.annotate(r["config_id"], (r[x], r[y]), fontsize=8, xytext=(3, 3),
                    textcoords="offset points")
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
    fig, ax = plt.subplots(figsize=(7, 4.5))
    labels = summary["config"].str.slice(0, 40)
    ax.barh(labels, summary[metric], xerr=[summary[metric] - summary[f"{metric}_ci_low"],
                                            summary[f"{metric}_ci_high"] - summary[metric]]
            if f"{metric}_ci_low" in summary else None, color="tab:blue", alpha=0.8)
    ax.set_xlabel(metric)
    ax.set_title(f"{metric} by config ({param})")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig
