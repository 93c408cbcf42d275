"""The claims ledger's verdict rule on synthetic effects, and the report built from a run."""

from __future__ import annotations

import math

import pytest

from agentic_rag.experiments.claims import verdict


@pytest.mark.parametrize("lo,hi,direction,figure,want", [
    (-0.05, 0.10, +1, None, "inconclusive"),        # CI spans 0
    (0.02, 0.10, +1, None, "confirmed"),
    (-0.30, -0.10, +1, None, "contradicted"),       # opposite side
    (-0.40, -0.20, -1, None, "confirmed"),          # a claimed reduction, measured
    (0.05, 0.20, -1, None, "contradicted"),
    (0.02, 0.10, +1, 0.25, "smaller than claimed"),  # the whole CI short of the figure
    (0.02, 0.30, +1, 0.25, "confirmed"),            # the figure inside the CI
    (-0.15, -0.05, -1, 0.40, "smaller than claimed"),
    (math.nan, math.nan, +1, None, "inconclusive"),
])
def test_verdict_rule(lo, hi, direction, figure, want):
    assert verdict(lo, hi, direction, figure) == want
