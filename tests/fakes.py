"""Deterministic fakes for unit tests only (never the default path)."""

from __future__ import annotations

import hashlib
import re

import numpy as np


class HashingEmbedder:
    """Bag of words hashed into `dim` buckets, L2-normalised: same words → similar vectors."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.model_id = f"fake-hashing-{dim}"
        self.calls = 0
        self.texts_embedded = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)
