"""The retrieval sections of the configuration tree (`config.py` re-exports them): query
construction (layer 2), the confidence gate (layer 3), fusion and reranking, and the
registry of retriever names a config may use (`RETRIEVER_NAMES`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from agentic_rag.config_agent import QUESTION_WORDS
from agentic_rag.config_base import _Section

Intent = Literal["fact", "code", "procedure", "data"]


class QueryConfig(_Section):
    """Layer 2: intent classification, filters, rewriting and de-duplication."""

    classifier: Literal["heuristic", "llm"] = "heuristic"
    rewriter: Literal["none", "heuristic", "llm"] = "heuristic"
    intent_filters: dict[Intent, tuple[str, ...]] = Field(
        default_factory=lambda: {"fact": (), "code": ("code",), "procedure": ("list",),
                                 "data": ("table", "table_row")},
        description="chunk types searched for each intent; empty = no filter")
    dedup: Literal["none", "overlap", "embedding"] = "overlap"
    overlap_threshold: float = Field(0.8, ge=0.0, le=1.0, description="Jaccard of query words")
    embedding_threshold: float = Field(0.92, ge=0.0, le=1.0, description="cosine of query vectors")
    history_penalty: float = Field(0.3, ge=0.0, le=1.0,
                                   description="score × (1 − penalty) for chunks already served")
    filter_mode: Literal["hard", "soft", "off"] = Field(
        "off", description="hard: search only the intent's chunk types; soft: also rank a "
        "filtered dense list into the fusion (boosts those types, never empties the list); "
        "off: classify the intent but never filter")
    expansion: Literal["none", "multi_query", "hyde"] = Field(
        "none", description="first-pass LLM query expansion (expansion.py): multi_query: the "
        "LLM writes expansion_n paraphrases, each searched like the query and fused with it "
        "by RRF; hyde: the LLM writes a hypothetical answer passage, searched by the dense "
        "retriever beside the query and fused by RRF. A failed call serves the unexpanded "
        "list and is recorded (the row's strategy_error)")
    expansion_n: int = Field(3, ge=1, le=10, description="multi_query: paraphrases asked for")


Expansion = Literal["relax_filters", "rewrite_query", "add_retriever", "widen_k"]

# The retrievers a config may name (`fusion.retrievers`, `fusion.named_retrievers`,
# `gate.add_retrievers`, and in `fusion.weights`): name → what it searches. Their
# implementations are `retrieve/retrievers.py`'s `RETRIEVERS` (tests/test_registries.py keeps the
# two in step); `retrieve.retrievers.register_retriever` adds a retriever of your own to both.
RETRIEVER_NAMES: dict[str, str] = {
    "dense": "embeddings (the vector store)",
    "bm25": "BM25 over the chunk text (heading path prefixed)",
    "title": "field matching, BM25 over each chunk's document title, heading path and API "
             "names only (lexical.field_text), or their name coverage (title_score)",
}


def named_run(retriever: str) -> str:
    """The name (in `fusion.weights`, `Evidence.runs`) of `retriever`'s list restricted to the
    documents a query names: `named` for dense (the first such list), `named_<name>` else."""
    return "named" if retriever == "dense" else f"named_{retriever}"


def ranking_names() -> tuple[str, ...]:
    """Every ranking fusion may weigh: each retriever's list, the soft filter's dense list
    (`filtered`) and each retriever's list restricted to the named documents (`named_run`)."""
    return (*RETRIEVER_NAMES, "filtered", *(named_run(n) for n in RETRIEVER_NAMES))


def known_retrievers(names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` when each is a registered retriever (`RETRIEVER_NAMES`), else a ValueError that
    names the name and the choices."""
    for name in names:
        if name not in RETRIEVER_NAMES:
            raise ValueError(f"unknown retriever {name!r} (one of "
                             f"{', '.join(RETRIEVER_NAMES)}; a retriever of your own: "
                             "retrieve.retrievers.register_retriever)")
    return names


class GateConfig(_Section):
    """Layer 3: confidence-gated iterative retrieval (see `gate.py`).

    `static`: one pass; `gated`: expand while confidence < min_confidence; `always_expand`:
    every expansion regardless of confidence (the "no gating" arm at the same budget)."""

    mode: Literal["gated", "static", "always_expand"] = "gated"
    initial_k: int = Field(5, ge=1, le=1000, description="hits returned when the caller "
                           "does not ask for a number (the tool's max_results does)")
    max_k: int = Field(20, ge=1, le=5000, description="widen_k: at most this many hits")
    growth: float = Field(2.0, gt=1.0, le=10.0, description="widen_k: k multiplier (once)")
    max_iterations: int = Field(4, ge=1, le=20, description="searches, the first included")
    min_score_threshold: float = Field(0.0, ge=0.0, le=1.0, description="hits below are dropped")
    min_confidence: float = Field(0.9, ge=0.0, le=1.0, description="calibrated: expand when "
                                  "P(relevant in top 5) < this (0.9 fired on 5-73 % of dev "
                                  "queries across our three datasets)")
    confidence: Literal["calibrated", "top_mean", "margin"] = "calibrated"
    calibration: str | None = Field(
        None, description="calibrator JSON (calibration.py); None = the packaged default, "
        "fitted on the dev splits of halueval-qa, python-faq and tau2-banking")
    calibration_sha256: str | None = Field(None, description="checked at load when set")
    expansions: tuple[Expansion, ...] = ("relax_filters", "add_retriever", "rewrite_query",
                                         "widen_k")
    add_retrievers: tuple[str, ...] = Field(
        ("dense", "bm25"), description="add_retriever: these retrievers (RETRIEVER_NAMES) join "
        "the search when not running yet")
    merge: Literal["rrf", "best", "last"] = Field(
        "best", description="how the iterations' lists are combined: best = the list with "
        "the highest confidence")
    rewriter: Literal["keywords", "query"] = Field(
        "keywords", description="rewrite_query: keyword extraction, or query.rewriter (e.g. llm)")

    @field_validator("add_retrievers")
    @classmethod
    def _add_known(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return known_retrievers(v)

    @model_validator(mode="after")
    def _k_order(self) -> GateConfig:
        if self.max_k < self.initial_k:
            raise ValueError(f"max_k ({self.max_k}) must be >= initial_k ({self.initial_k})")
        if len(set(self.expansions)) != len(self.expansions):
            raise ValueError(f"expansions repeat an entry: {list(self.expansions)}")
        return self


class FusionConfig(_Section):
    """Hybrid retrieval: which retrievers run and how their rankings are fused.

    Defaults chosen on the dev splits of halueval-qa, python-faq and tau2-banking by one
    rule: the best worst-case nDCG@10 margin over the pipeline's own components (dense,
    BM25) across the three (docs/design.md, "Defaults and why")."""

    retrievers: tuple[str, ...] = Field(
        ("dense", "bm25"), description="the retrievers fused (RETRIEVER_NAMES): " + "; ".join(
            f"{name}: {what}" for name, what in RETRIEVER_NAMES.items()))
    title_score: Literal["bm25", "coverage"] = Field(
        "bm25", description="the title retriever's score: bm25, a bag of words over the title "
        "field; coverage, the IDF-weighted share of each name field (document name, title, "
        "heading path, API names) found in the query, summed (store/coverage.py): a question "
        "naming the 'Blue checking account' covers the Blue Account's name whole and World "
        "Blue's by half")
    named_scope: Literal["auto", "off", "boost", "within"] = Field(
        "auto", description="entity scope, when the query names documents' subject (a product, "
        "plan, function or command: AgenticIndex.named_documents, the name coverage of "
        "store/coverage.py): within, every retriever searches only those documents (a query "
        "naming nothing searches everything); boost, a dense list restricted to them is fused "
        "in as one more ranking ('named' in weights; the soft filter's way): a long query "
        "that mentions a product in passing still finds the general documents; auto "
        "(default), boost with at most 2 hits per document when at least a quarter of the "
        "documents share their name with another (a product's pages: chosen on the bank's "
        "dev questions, issue 40), else off")
    named_retrievers: tuple[str, ...] = Field(
        ("dense", "bm25"), min_length=1, description="the lists restricted to the named documents "
        "that boost (and auto, where it scopes) fuses in: dense ('named' in weights), bm25 "
        "('named_bm25': BM25 over those documents' chunk text, the same doc_id filter), "
        "which ranks the page stating the asked item's words; bm25 for questions only "
        "(named_question_words). Default dense + bm25 since issue 40's fourth round (chosen "
        "on the bank's dev questions: experiments/agent-support/CHOICE-RULE-QUESTION.md)")
    named_match: Literal["coverage", "longest"] = Field(
        "longest", description="which names the query names (AgenticIndex.named_documents): "
        "coverage, the names whose words it covers best (IDF-weighted share); longest "
        "(default), the same after dropping a name whose name words in the query are a strict "
        "subset of another's (maximal munch: 'Lime Green Account' names Lime Green, not the "
        "Green Account; chosen in issue 40's fifth round, held-out generated questions doc@5 "
        "0.898 -> 0.943: experiments/agent-support/CHOICE-RULE-LONGEST.md). The support "
        "gate's product check uses the same match")
    named_question_words: int = Field(
        QUESTION_WORDS, ge=0, le=100_000, description="the named lists beyond the dense one "
        "(named_retrievers) are built only for a query of at most this many words, a question; "
        "a longer message (a customer's whole ticket) that names a product in passing keeps "
        "the dense named list alone (0 = any length; issue 40's fourth round)")
    max_per_doc: int = Field(0, ge=0, le=100, description="at most this many fused hits per "
                             "document before the next document's (0 = no cap, or 2 under "
                             "named_scope auto when it scopes): the top k then spans more of "
                             "a product's documents")
    method: Literal["rrf", "score"] = "rrf"
    rrf_k: float = Field(20.0, ge=0.0, le=1000.0)
    weights: dict[str, float] | None = Field(
        default_factory=lambda: {"dense": 1.0, "bm25": 0.3},
        description="weight per ranking (missing = 1.0): a retriever's name, 'filtered' (the "
        "soft filter's list) or a named list ('named' for dense, 'named_<retriever>' for the "
        "others: named_run); a list is read in the order of `retrievers`; None = equal")
    candidates: int = Field(50, ge=1, le=5000, description="depth fetched from each retriever")
    normalise: Literal["minmax", "max", "none"] = "minmax"
    small_to_big: Literal["off", "section"] = Field(
        "off", description="section: serve each fused hit as its parent, the matched chunk "
        "grown with its neighbours in the same section (document + heading path) up to "
        "parent_tokens; the parent's spans are recorded (store/sections.py)")
    parent_tokens: int = Field(256, ge=16, le=8192, description="small_to_big: the most "
                               "tokens one parent holds (its chunks' token counts summed)")

    @field_validator("retrievers", "named_retrievers")
    @classmethod
    def _retrievers_known(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return known_retrievers(v)

    @field_validator("weights")
    @classmethod
    def _weights_known(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        names = ranking_names()
        unknown = [k for k in v or {} if k not in names]
        if unknown:
            raise ValueError(f"unknown ranking {unknown[0]!r} (one of {', '.join(names)})")
        return v

    @model_validator(mode="before")
    @classmethod
    def _weights_by_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("weights"), (list, tuple)):
            names = data.get("retrievers") or ("dense", "bm25")
            w = list(data["weights"])
            if len(w) != len(names):
                raise ValueError(f"weights {w} must have one entry per retriever {list(names)}")
            data = {**data, "weights": dict(zip(names, w))}
        return data

    @model_validator(mode="after")
    def _weights_match(self) -> FusionConfig:
        if not self.retrievers:
            raise ValueError("retrievers: at least one retriever is needed")
        if self.weights and any(w < 0 for w in self.weights.values()):
            raise ValueError(f"weights {self.weights} must be >= 0")
        return self

    def weight(self, name: str) -> float:
        return 1.0 if not self.weights else float(self.weights.get(name, 1.0))


class RerankConfig(_Section):
    """Reranking of the gate's final list (`rerank.py`); `none` keeps the fused order."""

    kind: Literal["none", "llm"] = Field(
        "none", description="llm: the configured chat model (llm section) reorders the top "
        "`depth` hits; a failed call keeps the fused order and is recorded")
    mode: Literal["pointwise", "listwise"] = Field(
        "pointwise", description="pointwise: one call per hit, scored by P(yes) to 'does the "
        "passage answer the question?' from the reply's log-probabilities; listwise: one "
        "call that returns the order of all `depth` passages")
    depth: int = Field(10, ge=1, le=100, description="hits reranked; the gate is asked for "
                       "max(k, depth) hits, the first k of the reranked list are served")
