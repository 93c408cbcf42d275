"""Statistics of detector validation, pure functions on scores: AUROC with a bootstrap CI
that resamples whole questions, the paired AUROC difference of two detectors on the same
answers, the per-detector table, and Cohen's κ between two labelling passes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from agentic_rag.evaluation.detection import auroc
from agentic_rag.evaluation.support import SUPPORT_DETECTORS
from agentic_rag.experiments.stats import resample_index

DETECTORS = SUPPORT_DETECTORS  # the table's rows, where their scores are present


def _group_draws(groups: np.ndarray, n_boot: int, seed: int):
    """Bootstrap draws of row positions that resample whole groups (questions)."""
    uniq, inv = np.unique(groups, return_inverse=True)
    members = [np.flatnonzero(inv == g) for g in range(len(uniq))]
    for draw in resample_index(len(uniq), n_boot, seed):
        yield np.concatenate([members[g] for g in draw])


def auroc_ci(labels: np.ndarray, scores: np.ndarray, groups: np.ndarray, n_boot: int = 2000,
             seed: int = 0) -> tuple[float, float, float]:
    """AUROC and its 95 % CI, resampling whole groups (questions)."""
    point = auroc(labels, scores)
    boots = [a for idx in _group_draws(groups, n_boot, seed)
             if (a := auroc(labels[idx], scores[idx])) == a]
    lo, hi = (np.quantile(boots, [0.025, 0.975]) if boots else (float("nan"),) * 2)
    return point, float(lo), float(hi)


def auroc_diff_ci(labels: np.ndarray, a: np.ndarray, b: np.ndarray, groups: np.ndarray,
                  n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """AUROC(a) − AUROC(b) on the same answers and its 95 % CI: paired, both detectors
    scored on each resample of whole groups (questions)."""
    point = auroc(labels, a) - auroc(labels, b)
    boots = [d for idx in _group_draws(groups, n_boot, seed)
             if (d := auroc(labels[idx], a[idx]) - auroc(labels[idx], b[idx])) == d]
    lo, hi = (np.quantile(boots, [0.025, 0.975]) if boots else (float("nan"),) * 2)
    return point, float(lo), float(hi)


# Each question-aware detector against its question-blind twin.
PAIRED = (("graded_judge_q", "graded_judge"), ("mean_numbers_q", "mean_numbers"))


def paired_table(rows: pd.DataFrame, pairs: Sequence[tuple[str, str]] = PAIRED) -> pd.DataFrame:
    """Per (detector, baseline) pair with both scores present: AUROC difference on the
    answers both scored, with its paired CI."""
    out = []
    for det, base in pairs:
        if det not in rows or base not in rows:
            continue
        ok = rows[rows[det].notna() & rows[base].notna()]
        y = ok["label"].to_numpy(int)
        d, lo, hi = auroc_diff_ci(y, 1.0 - ok[det].to_numpy(float),
                                  1.0 - ok[base].to_numpy(float), ok["qid"].to_numpy())
        out.append({"detector": det, "baseline": base, "n": len(ok), "auroc_diff": d,
                    "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(out)


def detector_table(rows: pd.DataFrame, threshold: float = 0.5,
                   detectors: Sequence[str] = DETECTORS) -> pd.DataFrame:
    """Per detector: n answers scored, failures, answers it may not score (`undefined`: no
    checkable words, no question-aware part), AUROC of the hallucination score (1 − support)
    on the scored ones with its CI, and accuracy there when "hallucinated" means support <
    `threshold`."""
    out = []
    for det in detectors:
        if det not in rows:
            continue
        ok = rows[rows[det].notna()]
        y = ok["label"].to_numpy(int)
        s = 1.0 - ok[det].to_numpy(float)
        a, lo, hi = auroc_ci(y, s, ok["qid"].to_numpy())
        # NaN on an answer without checkable words is undefined by design, not a failure
        short = ~rows["checkable"].astype(bool) if "checkable" in rows else \
            pd.Series(False, index=rows.index)
        out.append({"detector": det, "n": len(ok),
                    "failures": int((rows[det].isna() & ~short).sum()),
                    "undefined": int((rows[det].isna() & short).sum()),
                    "auroc": a, "auroc_ci_low": lo, "auroc_ci_high": hi,
                    "accuracy": float(((s > 1 - threshold).astype(int) == y).mean()),
                    "threshold": threshold})
    return pd.DataFrame(out)


def cohens_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Cohen's κ of two labellings of the same items (sklearn)."""
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(list(a), list(b)))
