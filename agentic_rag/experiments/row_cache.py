"""Finished sweep rows, stored under what made them: a rerun reads them instead of recomputing.

A row (one config × query × repeat) is keyed by a sha256 of everything that can change it:

- the config's `RAGConfig.config_hash` (of its canonical JSON) with `home` at its default
  (where the index lives, not a setting: the index content is fixed by the corpus,
  chunking, embedding, lexical and store settings, which are all in the key) and
  `llm.max_concurrency` at its default (how many calls are in flight does not change a row:
  tested in tests/test_concurrency.py);
- the dataset fingerprint and the query's own text, answers, metadata, qrels and gold spans;
- the repeat index;
- the sweep's evaluation settings a row depends on: `k`, the metric groups, the ragas
  metrics, whether the query is in the LLM sample, `replay`, the judge's evidence view;
- the identity of the embedding model and of the LLM (digests of the local weight files,
  or the model name and endpoint for a remote API, which cannot be inspected);
- the Python and package versions, and the code version: a digest of the `agentic_rag`
  sources, so any code change invalidates every row.

Rows with an `error` are never stored, so a rerun retries them. A cached row keeps the
latency columns recorded by the run that computed it. A run's summary is stored too, under
a digest of its rows (their JSON lines, in order), the baseline and the code version: the
bootstrap CIs of an identical set of rows are read back, not resampled.

Storage: one SQLite file in WAL mode; several threads and processes may read and write it
at once (a row written twice is the same row). File digests are remembered by
(path, size, mtime), as git's index does, so a 1 GB model is hashed once, not per rerun.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.config import EmbeddingConfig, RAGConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.packages import file_sha256
from agentic_rag.store.sqlite_kv import SQLiteFile

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def source_digest(root: Path) -> str:
    """sha256 over every `.py` file under `root` (relative path and bytes, in path order)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def code_version() -> str:
    """The digest of the installed `agentic_rag` sources, computed once per process."""
    return source_digest(PACKAGE_ROOT)


def _digest(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def row_config_hash(cfg: RAGConfig) -> str:
    """The config's part of a row key: `RAGConfig.config_hash` (full length) with `home` and
    `llm.max_concurrency` at their defaults, since neither changes a row (see the module
    doc)."""
    same = cfg.model_copy(update={
        "home": RAGConfig.model_fields["home"].default,
        "llm": cfg.llm.model_copy(update={
            "max_concurrency": LLMConfig.model_fields["max_concurrency"].default})})
    return same.config_hash(length=64)


class RowCache:
    """Rows by key, in one SQLite file (WAL). Opened on first use."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = SQLiteFile(self.path, [
            "rows (key TEXT PRIMARY KEY, row TEXT NOT NULL)",
            "files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, sha256 TEXT)",
            "summaries (key TEXT PRIMARY KEY, frame BLOB)"], wal=True, timeout_s=60)

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """The stored rows among `keys` (missing keys are absent from the answer)."""
        out: dict[str, dict[str, Any]] = {}
        with self._file.connect() as db:
            for s in range(0, len(keys), 500):
                chunk = keys[s:s + 500]
                marks = ",".join("?" * len(chunk))
                for key, row in db.execute(f"SELECT key, row FROM rows WHERE key IN ({marks})",
                                           chunk):
                    out[key] = json.loads(row)
        return out

    def put(self, key: str, line: str) -> None:
        """Store one row, given as its JSON line (as written to rows.jsonl)."""
        with self._file.connect() as db:
            db.execute("INSERT OR REPLACE INTO rows VALUES (?, ?)", (key, line))

    def get_summary(self, key: str) -> pd.DataFrame | None:
        with self._file.connect() as db:
            got = db.execute("SELECT frame FROM summaries WHERE key=?", (key,)).fetchone()
        return pd.read_parquet(io.BytesIO(got[0])) if got else None

    def put_summary(self, key: str, summary: pd.DataFrame) -> None:
        """Store a summary as Parquet, only if it reads back identical (values and dtypes)."""
        if summary.empty:
            return
        buf = io.BytesIO()
        summary.to_parquet(buf, index=False)
        back = pd.read_parquet(io.BytesIO(buf.getvalue()))
        if not (back.equals(summary) and list(back.columns) == list(summary.columns)
                and list(back.dtypes) == list(summary.dtypes)):
            return
        with self._file.connect() as db:
            db.execute("INSERT OR REPLACE INTO summaries VALUES (?, ?)", (key, buf.getvalue()))

    def file_digest(self, path: Path) -> str:
        """sha256 of a file's bytes, remembered by (path, size, mtime_ns)."""
        path = path.resolve()
        st = path.stat()
        with self._file.connect() as db:
            got = db.execute("SELECT sha256 FROM files WHERE path=? AND size=? AND mtime_ns=?",
                             (str(path), st.st_size, st.st_mtime_ns)).fetchone()
            if got:
                return got[0]
        digest = file_sha256(path)
        with self._file.connect() as db:
            db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)",
                       (str(path), st.st_size, st.st_mtime_ns, digest))
        return digest

    def close(self) -> None:
        self._file.close()


def embedding_identity(config: EmbeddingConfig, cache: RowCache) -> str:
    """The embedding model as files: the digests of every file of a local model folder (without
    loading it); a remote model is its name and endpoint."""
    if config.kind != "sentence-transformers":
        return f"{config.kind}:{config.model}@{config.base_url}"
    from agentic_rag.ingest.embeddings import _resolve_model_dir

    try:
        folder = _resolve_model_dir(config.model)
    except RuntimeError:
        return f"missing:{config.model}"
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return _digest({p.relative_to(folder).as_posix(): cache.file_digest(p) for p in files})


def llm_identity(config: LLMConfig, cache: RowCache) -> str:
    """The model behind the LLM calls, as the reply cache keys it (`llm.model_identity`); a
    .gguf path is hashed through this cache's file digests."""
    from agentic_rag.llm.cache import model_identity

    return model_identity(config, digest=cache.file_digest)


class RowKeys:
    """The cache key of every (config, query, repeat) of one sweep; the config and query parts
    are hashed once each, then combined per row."""

    def __init__(self, configs: list[RAGConfig], ds: Any, evaluation: dict[str, Any],
                 llm_ids: frozenset[str], environment: dict[str, Any], cache: RowCache) -> None:
        env = {"code": code_version(), "python": platform.python_version(), **environment}
        models: dict[str, str] = {}  # configs mostly share their models: identified once
        self._configs = []
        for cfg in configs:
            emb, llm = cfg.embedding.model_dump_json(), cfg.llm.model_dump_json()
            if emb not in models:
                models[emb] = embedding_identity(cfg.embedding, cache)
            if llm not in models:
                models[llm] = llm_identity(cfg.llm, cache)
            self._configs.append(_digest({
                "config": row_config_hash(cfg), "env": env, "evaluation": evaluation,
                "embedding": models[emb], "llm": models[llm]}))
        self.dataset_fingerprint = fp = ds.fingerprint()
        self._queries = {q.id: _digest({
            "dataset": fp, "query": q.model_dump(mode="json"), "qrels": ds.qrels.get(q.id, {}),
            "spans": [s.model_dump(mode="json") for s in ds.spans.get(q.id, [])]})
            for q in ds.queries}
        self._llm_ids = llm_ids

    def key(self, i: int, query_id: str, repeat: int) -> str:
        parts = [self._configs[i], self._queries[query_id], str(repeat),
                 "llm" if query_id in self._llm_ids else "-"]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()
