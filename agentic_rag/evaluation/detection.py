"""How well a score detects a binary label — the support judge on right vs hallucinated
answers, ragas faithfulness on the same, the gate's calibrated confidence on "a relevant
document is in the top 5": the area under the ROC curve, from scikit-learn."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def auroc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve of `scores` for `labels` (1 = positive; ties count half),
    `sklearn.metrics.roc_auc_score`. NaN when the labels hold one class only (or none): the
    area is undefined, and the callers report it as not measured rather than fail."""
    from sklearn.metrics import roc_auc_score

    y = np.asarray(labels)
    if len(y) != len(scores):
        raise ValueError(f"auroc: {len(y)} labels vs {len(scores)} scores")
    if len(np.unique(y)) < 2:
        return float("nan")
    return float(roc_auc_score(y, np.asarray(scores, dtype=float)))
