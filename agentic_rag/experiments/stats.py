"""Statistics for sweeps, as pure functions: bootstrap CIs, paired bootstrap against a
baseline on per-query values, the Pareto frontier of quality vs costs, and
prediction-powered inference (`ppi_mean`, `ppi_paired_difference`) for a rate measured by an
imperfect detector with labels on a subset."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pandas as pd

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile


@lru_cache(maxsize=8)
def resample_index(n: int, n_boot: int, seed: int) -> np.ndarray:
    """The bootstrap's draws: `n_boot` resamples of `n` positions from a fresh generator
    seeded `seed` (read-only; the same for every call with the same arguments, so a summary
    of many metrics over the same queries draws them once)."""
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    idx.setflags(write=False)
    return idx


def bootstrap_ci(values: Sequence[float], n_boot: int = 2000, seed: int = 0,
                 alpha: float = 0.05) -> tuple[float, float]:
    v = np.asarray([x for x in values if x == x], dtype=float)  # NaN = failure, counted apart
    if len(v) == 0:
        return float("nan"), float("nan")
    means = v[resample_index(len(v), n_boot, seed)].mean(axis=1)
    return float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2))


def paired_bootstrap(a: Sequence[float], b: Sequence[float], n_boot: int = 2000, seed: int = 0,
                     alpha: float = 0.05) -> dict[str, float]:
    """Mean of a − b over paired queries, its CI, and the share of resamples where a ≤ b."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired_bootstrap: {x.shape} vs {y.shape} values")
    keep = ~(np.isnan(x) | np.isnan(y))
    d = x[keep] - y[keep]
    if len(d) == 0:
        return {"diff": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"),
                "p_le_0": float("nan"), "n": 0}
    means = d[resample_index(len(d), n_boot, seed)].mean(axis=1)
    return {"diff": float(d.mean()), "ci_low": float(np.quantile(means, alpha / 2)),
            "ci_high": float(np.quantile(means, 1 - alpha / 2)),
            "p_le_0": float((means <= 0).mean()), "n": int(len(d))}


def paired_effect(a: Sequence[float], b: Sequence[float], col: str) -> dict[str, float]:
    """THE arm-vs-baseline comparison: treatment values `a` vs baseline values `b` (paired,
    same order; a pair with a NaN is dropped) as summary columns, in this order:
    `{col}_diff_vs_base` (mean of a − b, `paired_bootstrap`) with `_ci_low` / `_ci_high`,
    then `{col}_rel_vs_base` (the same three divided by the baseline mean; NaN when that
    mean is 0) with `_ci_low` / `_ci_high`. Sweeps, cold start and claims all use it."""
    pb = paired_bootstrap(a, b)
    ref = float(pd.Series(b, dtype=float).mean())
    diff = {"": pb["diff"], "_ci_low": pb["ci_low"], "_ci_high": pb["ci_high"]}
    out = {f"{col}_diff_vs_base{suffix}": v for suffix, v in diff.items()}
    out.update({f"{col}_rel_vs_base{suffix}": v / ref if ref else float("nan")
                for suffix, v in diff.items()})
    return out


def pareto_front(df: pd.DataFrame, quality: str, costs: Sequence[str]) -> pd.Series:
    """True for rows not dominated: no other row has quality ≥ and every cost ≤, one strictly."""
    q = df[quality].to_numpy(dtype=float)
    c = df[list(costs)].to_numpy(dtype=float)
    flags = []
    for i in range(len(df)):
        better_q = q >= q[i]
        better_c = (c <= c[i]).all(axis=1)
        strictly = (q > q[i]) | (c < c[i]).any(axis=1)
        flags.append(not bool((better_q & better_c & strictly).any()))
    return pd.Series(flags, index=df.index, name="pareto")


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a share k / n (95 % at the default z); (nan, nan) for n = 0.
    Unlike a bootstrap it does not collapse to a point at 0 / n or n / n."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def ppi_mean(predicted_all: Sequence[float], predicted_labelled: Sequence[float],
             labels: Sequence[float], alpha: float = 0.05,
             labelled_in_all: bool = True) -> dict[str, float]:
    """Prediction-powered inference (Angelopoulos et al., *Science* 2023) of a mean, e.g. a
    hallucination rate: a detector's predictions f on all N rows, plus true labels y on n of
    them (a random subset) with the detector's predictions there. The estimate is the
    detector's mean corrected by its mean error on the labelled rows (the rectifier),
    mean_N(f) + mean_n(y − f), with a normal 1 − alpha interval whose variance is
    var(f)/N + var(y − f)/n (+ 2 cov(f, y − f)/N when the labelled rows are among the N,
    `labelled_in_all`). Valid however good or bad the detector is: its error widens the
    interval instead of biasing it. NaN predictions or labels are dropped (a failure or an
    undefined score is not a prediction). Also returned: the naive estimate (the detector's
    mean, its CI over rows only) and the labels alone (mean_n(y), its CI) for comparison."""
    f_all = np.asarray(predicted_all, dtype=float)
    f_all = f_all[~np.isnan(f_all)]
    f_lab, y = np.asarray(predicted_labelled, dtype=float), np.asarray(labels, dtype=float)
    if f_lab.shape != y.shape:
        raise ValueError(f"ppi_mean: {f_lab.shape} predictions vs {y.shape} labels")
    ok = ~(np.isnan(f_lab) | np.isnan(y))
    f_lab, y = f_lab[ok], y[ok]
    big_n, n = len(f_all), len(y)
    if big_n < 2 or n < 2:
        raise ValueError(f"ppi_mean: need >= 2 predictions and >= 2 labels, got {big_n}, {n}")
    z = float(_norm_ppf(1 - alpha / 2))
    r = y - f_lab
    est = float(f_all.mean() + r.mean())
    var = f_all.var(ddof=1) / big_n + r.var(ddof=1) / n
    if labelled_in_all:
        var += 2 * float(np.cov(f_lab, r, ddof=1)[0, 1]) / big_n
    half = z * math.sqrt(max(var, 0.0))
    naive_half = z * math.sqrt(f_all.var(ddof=1) / big_n)
    lab_half = z * math.sqrt(y.var(ddof=1) / n)
    return {"estimate": est, "ci_low": est - half, "ci_high": est + half,
            "naive": float(f_all.mean()), "naive_ci_low": float(f_all.mean()) - naive_half,
            "naive_ci_high": float(f_all.mean()) + naive_half,
            "labels_only": float(y.mean()), "labels_only_ci_low": float(y.mean()) - lab_half,
            "labels_only_ci_high": float(y.mean()) + lab_half,
            "rectifier": float(r.mean()), "n_all": big_n, "n_labelled": n}


def ppi_paired_difference(pred_a: Sequence[float], pred_b: Sequence[float],
                          lab_pred_a: Sequence[float], lab_pred_b: Sequence[float],
                          labels_a: Sequence[float], labels_b: Sequence[float],
                          alpha: float = 0.05) -> dict[str, float]:
    """PPI of the paired difference of two arms' means (a − b, e.g. hallucination rates with
    and without a treatment) over the same questions: the detector's predictions of both
    arms on all questions (`pred_a`, `pred_b`, paired by position), and on the labelled
    questions both arms' predictions and labels. It is `ppi_mean` of the per-question
    differences, so the detector's error in either arm is carried into the interval."""
    da = np.asarray(pred_a, dtype=float) - np.asarray(pred_b, dtype=float)
    dl = np.asarray(lab_pred_a, dtype=float) - np.asarray(lab_pred_b, dtype=float)
    dy = np.asarray(labels_a, dtype=float) - np.asarray(labels_b, dtype=float)
    return ppi_mean(da, dl, dy, alpha)


def _norm_ppf(q: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(q)
