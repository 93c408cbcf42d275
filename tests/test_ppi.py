"""Prediction-powered inference on synthetic data: a detector with a known error (it misses
half the unsupported answers and flags 10 % of the supported ones) gives a biased naive
rate; the PPI interval from its flags on every answer plus labels on a subset covers the
true rate about 95 % of the time over repeated draws, for a rate and for a paired
difference between two arms."""

from __future__ import annotations

import numpy as np
import pytest

from agentic_rag.experiments.stats import ppi_mean, ppi_paired_difference

MISS, FALSE_FLAG = 0.5, 0.1


def _detector(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(len(y))
    return np.where(y == 1, u >= MISS, u < FALSE_FLAG).astype(float)


def test_ppi_covers_the_true_rate_and_the_naive_interval_does_not():
    rng = np.random.default_rng(0)
    rate, big_n, n, draws = 0.3, 2000, 200, 400
    ppi_hits = naive_hits = 0
    for _ in range(draws):
        y = (rng.random(big_n) < rate).astype(float)
        f = _detector(y, rng)
        lab = rng.choice(big_n, n, replace=False)
        r = ppi_mean(f, f[lab], y[lab])
        ppi_hits += r["ci_low"] <= rate <= r["ci_high"]
        naive_hits += r["naive_ci_low"] <= rate <= r["naive_ci_high"]
    assert 0.92 <= ppi_hits / draws <= 0.98
    assert naive_hits / draws < 0.05  # E[f] = 0.3·0.5 + 0.7·0.1 = 0.22, far from 0.3


def test_ppi_paired_difference_covers_the_true_difference():
    rng = np.random.default_rng(1)
    rate_a, rate_b, big_n, n, draws = 0.25, 0.35, 1000, 150, 400
    hits = naive_hits = 0
    for _ in range(draws):
        # correlated arms: the same questions, the treatment fixes some unsupported answers
        yb = (rng.random(big_n) < rate_b).astype(float)
        ya = yb * (rng.random(big_n) < rate_a / rate_b)
        fa, fb = _detector(ya, rng), _detector(yb, rng)
        lab = rng.choice(big_n, n, replace=False)
        r = ppi_paired_difference(fa, fb, fa[lab], fb[lab], ya[lab], yb[lab])
        truth = rate_a - rate_b
        hits += r["ci_low"] <= truth <= r["ci_high"]
        naive_hits += r["naive_ci_low"] <= truth <= r["naive_ci_high"]
    assert 0.92 <= hits / draws <= 0.98
    assert naive_hits / draws < 0.6  # the detector shrinks the difference by half


def test_ppi_with_a_perfect_detector_is_its_mean_and_narrower_than_labels_alone():
    rng = np.random.default_rng(2)
    y = (rng.random(1000) < 0.2).astype(float)
    lab = rng.choice(1000, 100, replace=False)
    r = ppi_mean(y, y[lab], y[lab])
    assert r["estimate"] == pytest.approx(y.mean()) and r["rectifier"] == 0
    assert r["ci_high"] - r["ci_low"] < r["labels_only_ci_high"] - r["labels_only_ci_low"]


def test_ppi_drops_undefined_predictions_and_checks_shapes():
    r = ppi_mean([1, 0, np.nan, 1], [1, np.nan, 0], [1, 1, 0])
    assert r["n_all"] == 3 and r["n_labelled"] == 2
    with pytest.raises(ValueError, match="predictions vs"):
        ppi_mean([1, 0], [1, 0], [1])
    with pytest.raises(ValueError, match=">= 2 labels"):
        ppi_mean([1, 0, 1], [1], [1])
