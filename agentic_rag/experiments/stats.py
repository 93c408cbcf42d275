"""Statistics for sweeps, as pure functions: bootstrap CIs, paired bootstrap against a
baseline on per-query values, and the Pareto frontier of quality vs costs."""

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
