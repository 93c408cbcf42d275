"""The one `Dataset` model every loader returns, with deterministic sampling and splits.

A dataset is a corpus (`Document`s), queries, graded qrels (query id → doc id →
relevance) and, where known, gold text spans (doc id + character offsets) and
reference answers. Gold spans survive any chunking, so different chunk sizes are
compared on the same ground truth.

- `split("dev" | "test" | "all")`: a fixed split by a hash of the query id (20 % dev),
  the same on every machine and for every sample size; a set committed with its own
  seeded split (`fixed_split`, e.g. python-library-qa's halves) keeps that one.
- `sample(n, seed, corpus_size)`: `n` queries drawn with `seed`; with `corpus_size`, the
  corpus is cut to the sampled queries' gold documents plus seeded distractors up to
  that size (smaller and easier than the full corpus: the run records it).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentic_rag.documents import Document, GoldSpan


def documents_fingerprint(docs: Iterable[Document], *more: str) -> str:
    """The identity of a set of documents, whatever their order: ids and content hashes
    (`Dataset.corpus_fingerprint`; with a config, `RAGConfig.index_hash` names an index). The
    one corpus fingerprint: `more` lines (a dataset's queries, `Dataset.fingerprint`) are
    hashed after the documents."""
    h = hashlib.sha256()
    for d in sorted(docs, key=lambda d: d.id):
        h.update(f"{d.id}\0{d.content_hash}\n".encode())
    for line in more:
        h.update(line.encode())
    return h.hexdigest()[:16]


class DatasetMissing(RuntimeError):
    """A dataset's package is not installed; the message says what to install."""


class DatasetError(ValueError):
    """A dataset file is malformed; the message names the file, the row and the field."""


class Query(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    answers: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


def _bucket(qid: str) -> int:
    return int(hashlib.sha256(qid.encode()).hexdigest()[:8], 16) % 100


class Dataset(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    corpus: list[Document]
    queries: list[Query]
    qrels: dict[str, dict[str, int]]
    spans: dict[str, list[GoldSpan]] = Field(default_factory=dict)
    description: str = ""
    fixed_split: dict[str, Literal["dev", "test"]] = Field(
        default_factory=dict, description="query id → its split, for a set committed with its "
        "own seeded split (python-library-qa); other queries are split by hash")

    def fingerprint(self) -> str:
        """The corpus and the queries with their qrels (`documents_fingerprint`)."""
        return documents_fingerprint(self.corpus, *(
            f"{q.id}\0{q.text}\0{json.dumps(self.qrels.get(q.id, {}), sort_keys=True)}\n"
            for q in sorted(self.queries, key=lambda q: q.id)))

    def corpus_fingerprint(self) -> str:
        return documents_fingerprint(self.corpus)

    def split(self, which: Literal["dev", "test", "all"]) -> Dataset:
        if which == "all":
            return self
        keep = [q for q in self.queries
                if (self.fixed_split[q.id] == "dev" if q.id in self.fixed_split
                    else _bucket(q.id) < 20) == (which == "dev")]
        return self._with_queries(keep, f"{self.name}:{which}")

    def sample(self, n: int | None = None, seed: int = 0,
               corpus_size: int | None = None) -> Dataset:
        queries = list(self.queries)
        if n is not None and n < len(queries):
            queries = sorted(random.Random(seed).sample(queries, n), key=lambda q: q.id)
        ds = self._with_queries(queries, self.name)
        if corpus_size is None or corpus_size >= len(self.corpus):
            return ds
        gold = {d for q in queries for d in self.qrels.get(q.id, {})}
        rest = sorted(d.id for d in self.corpus if d.id not in gold)
        extra = set(random.Random(seed + 1).sample(rest, max(0, min(len(rest),
                                                                    corpus_size - len(gold)))))
        corpus = [d for d in self.corpus if d.id in gold or d.id in extra]
        return ds.model_copy(update={"corpus": corpus,
                                     "name": f"{ds.name}[corpus={len(corpus)}]"})

    def without_documents(self, prefixes: list[str] | tuple[str, ...]) -> Dataset:
        """The corpus without the documents whose id starts with one of `prefixes` (e.g. the
        Python FAQ, whose questions are its own headings); a query whose gold documents are
        all taken out goes too (it has no answer left)."""
        if not prefixes:
            return self
        out = {d.id for d in self.corpus if d.id.startswith(tuple(prefixes))}
        if not out:
            raise DatasetError(f"{self.name}: no document id starts with {list(prefixes)} "
                               f"(ids look like {[d.id for d in self.corpus[:2]]})")
        qrels = {q: {d: g for d, g in rel.items() if d not in out} for q, rel in self.qrels.items()}
        keep = [q for q in self.queries if q.id not in self.qrels or qrels[q.id]]
        ds = self._with_queries(keep, self.name)
        return ds.model_copy(update={
            "corpus": [d for d in self.corpus if d.id not in out],
            "qrels": {q: r for q, r in qrels.items() if r and q in {k.id for k in keep}},
            "spans": {q: [s for s in v if s.doc_id not in out] for q, v in ds.spans.items()},
            "name": f"{self.name}[-{'|'.join(prefixes)}]"})

    def _with_queries(self, queries: list[Query], name: str) -> Dataset:
        ids = {q.id for q in queries}
        return self.model_copy(update={
            "name": name, "queries": queries,
            "qrels": {k: v for k, v in self.qrels.items() if k in ids},
            "spans": {k: v for k, v in self.spans.items() if k in ids}})

    def stats(self) -> dict[str, int]:
        return {"documents": len(self.corpus), "queries": len(self.queries),
                "qrels": sum(len(v) for v in self.qrels.values())}
