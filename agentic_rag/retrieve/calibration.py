"""A calibrated retrieval confidence: P(a relevant document is in the top k | evidence).

The raw rules read one fused score list whose scale depends on the retriever mix
(cosines, BM25 divided by its own maximum, normalised RRF), so one threshold means
three different things. A `Calibrator` maps features of the evidence — every
retriever's own candidate list, not only the fused one — to a probability fitted on
dev qrels, so `gate.min_confidence` means the same on dense, BM25 and hybrid.

    cal = fit_calibrator(examples)          # [(Evidence, relevant doc ids), ...]
    cal.save("calibration.json")            # gate.calibration + gate.calibration_sha256
    reliability_table(cal.predict_many(evs), labels)   # the reliability diagram's data

The model is scikit-learn's `LogisticRegression` on standardised features; prediction is
a few lines of numpy, so the gate does not import scikit-learn.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from agentic_rag.retrieve.evidence import Evidence

DEFAULT_PATH = Path(__file__).with_name("calibration_default.json")
FEATURES = ("dense_top1", "dense_margin", "dense_spread", "bm25_top1", "bm25_ratio",
            "agreement", "top1_agree", "has_dense", "has_bm25", "filtered", "fill")


def _top(hits: Sequence, raw: bool = False) -> list[float]:
    return [float(h.raw_score if raw and h.raw_score is not None else h.score) for h in hits]


def evidence_features(ev: Evidence) -> dict[str, float]:
    """Features of one search's evidence, each finite, 0 when its retriever did not run."""
    dense = ev.runs.get("dense") or ev.runs.get("search") or []
    bm25 = ev.runs.get("bm25") or []
    d = _top(dense[:5])
    b = _top(bm25[:5], raw=True)
    f: dict[str, float] = dict.fromkeys(FEATURES, 0.0)
    if d:
        f["has_dense"] = 1.0
        f["dense_top1"] = d[0]
        f["dense_margin"] = d[0] - (d[1] if len(d) > 1 else 0.0)
        f["dense_spread"] = d[0] - d[-1]
    if b:
        f["has_bm25"] = 1.0
        f["bm25_top1"] = math.log1p(max(0.0, b[0]))
        f["bm25_ratio"] = (b[1] / b[0]) if len(b) > 1 and b[0] > 0 else 0.0
    if d and b:
        dt = {h.chunk.doc_id for h in dense[:5]}
        bt = {h.chunk.doc_id for h in bm25[:5]}
        f["agreement"] = len(dt & bt) / 5.0
        f["top1_agree"] = float(dense[0].chunk.doc_id == bm25[0].chunk.doc_id)
    f["filtered"] = float(ev.filtered)
    f["fill"] = min(1.0, len(ev.hits) / max(1, ev.k))
    return f


def evidence_label(ev: Evidence, relevant: set[str], k: int = 5) -> int:
    """1 when a relevant document is among the first k fused hits."""
    return int(any(h.chunk.doc_id in relevant for h in ev.hits[:k]))


@dataclass
class Calibrator:
    features: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    k: int = 5
    fitted_on: dict[str, Any] = field(default_factory=dict)

    def predict_features(self, feats: dict[str, float]) -> float:
        x = (np.array([feats.get(n, 0.0) for n in self.features]) - self.mean) / self.scale
        z = float(x @ np.asarray(self.coef) + self.intercept)
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def predict_evidence(self, ev: Evidence) -> float:
        return self.predict_features(evidence_features(ev))

    def predict_many(self, evs: Iterable[Evidence]) -> np.ndarray:
        return np.array([self.predict_evidence(e) for e in evs])

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    def save(self, path: str | Path) -> str:
        """Write the calibrator; returns its sha256 (put it in gate.calibration_sha256)."""
        text = self.to_json()
        Path(path).write_text(text, encoding="utf-8")
        return hashlib.sha256(text.encode()).hexdigest()


def fit_calibrator(examples: Sequence[tuple[Evidence, set[str]]], k: int = 5,
                   c: float = 1.0, fitted_on: dict[str, Any] | None = None,
                   weights: Sequence[float] | None = None) -> Calibrator:
    """Logistic regression of `evidence_label` on `evidence_features` (scikit-learn)."""
    from sklearn.linear_model import LogisticRegression

    from agentic_rag.evaluation.detection import auroc

    if not examples:
        raise ValueError("fit_calibrator: no examples")
    x = np.array([[evidence_features(ev)[n] for n in FEATURES] for ev, _ in examples])
    y = np.array([evidence_label(ev, rel, k) for ev, rel in examples])
    if len(set(y.tolist())) < 2:
        raise ValueError(f"fit_calibrator: all {len(y)} labels are {y[0]}; need both classes")
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    lr = LogisticRegression(C=c, max_iter=1000)
    lr.fit((x - mean) / scale, y, sample_weight=None if weights is None else np.asarray(weights))
    cal = Calibrator(features=list(FEATURES), mean=mean.round(8).tolist(),
                     scale=scale.round(8).tolist(), coef=lr.coef_[0].round(8).tolist(),
                     intercept=round(float(lr.intercept_[0]), 8), k=k,
                     fitted_on=dict(fitted_on or {}))
    p = np.array([cal.predict_features(dict(zip(FEATURES, row))) for row in x])
    cal.fitted_on.update({"n": int(len(y)), "positive_rate": round(float(y.mean()), 4),
                          "brier": round(float(((p - y) ** 2).mean()), 4),
                          "auroc": round(auroc(y, p), 4)})
    return cal


def reliability_table(p: Sequence[float], y: Sequence[int], bins: int = 10):  # noqa: ANN201
    """Per probability bin: n, mean predicted, observed rate (the reliability diagram)."""
    import pandas as pd

    p, y = np.asarray(p, float), np.asarray(y, float)
    edges = np.linspace(0, 1, bins + 1)
    idx = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    rows = [{"bin_low": edges[b], "bin_high": edges[b + 1], "n": int((idx == b).sum()),
             "predicted": float(p[idx == b].mean()) if (idx == b).any() else float("nan"),
             "observed": float(y[idx == b].mean()) if (idx == b).any() else float("nan")}
            for b in range(bins)]
    return pd.DataFrame(rows)


@lru_cache(maxsize=8)
def _load(path: str, sha: str | None) -> Calibrator:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"gate.calibration: calibrator file {p} not found") from None
    digest = hashlib.sha256(text.encode()).hexdigest()
    if sha and digest != sha:
        raise ValueError(f"gate.calibration: {p} has sha256 {digest[:12]}…, "
                         f"gate.calibration_sha256 says {sha[:12]}…")
    data = json.loads(text)
    missing = {"features", "mean", "scale", "coef", "intercept"} - set(data)
    if missing:
        raise ValueError(f"gate.calibration: {p} lacks fields {sorted(missing)}")
    return Calibrator(**data)


def load_calibrator(path: str | None = None, sha256: str | None = None) -> Calibrator:
    return _load(str(path or DEFAULT_PATH), sha256)
