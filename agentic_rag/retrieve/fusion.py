"""Rank fusion as pure functions: Reciprocal Rank Fusion and score-based fusion.

Each retriever's ranking is scored on its own (the seed ranked the concatenated
list, which double-counts position and lets one retriever's length shift the
other's ranks). Ties are broken by the best single rank, then by id, so results
are deterministic.

    rrf([["a", "b", "c"], ["b", "c", "d"]], k=60)
    -> [("b", 1/62 + 1/61), ("c", 1/63 + 1/62), ("a", 1/61), ("d", 1/63)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

Ranking = Sequence[str]


def rrf(rankings: Sequence[Ranking], k: float = 60.0,
        weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """score(d) = Σ_r w_r / (k + rank_r(d)), ranks starting at 1; absent items add nothing."""
    if k < 0:
        raise ValueError(f"rrf: k must be >= 0, got {k}")
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"rrf: {len(weights)} weights for {len(rankings)} rankings")
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for ranking, w in zip(rankings, weights):
        seen: set[str] = set()
        for rank, item in enumerate(ranking, 1):
            if item in seen:  # a retriever lists an item once; later duplicates are ignored
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


def _normalise(scores: Mapping[str, float], how: Literal["minmax", "max", "none"]) -> dict[str, float]:
    if not scores or how == "none":
        return dict(scores)
    hi, lo = max(scores.values()), min(scores.values())
    if how == "max":
        return {k: (v / hi if hi > 0 else 0.0) for k, v in scores.items()}
    span = hi - lo
    return {k: ((v - lo) / span if span > 0 else 1.0) for k, v in scores.items()}


def score_fusion(score_lists: Sequence[Mapping[str, float]],
                 weights: Sequence[float] | None = None,
                 normalise: Literal["minmax", "max", "none"] = "minmax") -> list[tuple[str, float]]:
    """Convex combination of per-retriever normalised scores (missing items count as 0)."""
    weights = list(weights) if weights is not None else [1.0 / len(score_lists)] * len(score_lists)
    if len(weights) != len(score_lists):
        raise ValueError(f"score_fusion: {len(weights)} weights for {len(score_lists)} lists")
    fused: dict[str, float] = {}
    for scores, w in zip(score_lists, weights):
        for item, s in _normalise(scores, normalise).items():
            fused[item] = fused.get(item, 0.0) + w * s
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
