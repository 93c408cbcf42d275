"""`Pipeline`: the whole retrieval stack rebuilt from one `RAGConfig`.

    pipe = Pipeline.from_config("pipeline.yaml")
    intent, result = pipe.retrieve("how much is a wire transfer?")
    print(pipe.format(result.hits, intent).text)

Components are created lazily; each gets only its own sub-config. Intent filters on
chunk types the index does not contain are dropped before the search and recorded in
`intent.dropped_filters` (a prose-only corpus never empties a "data" question's list).

LLM strategies (`query.expansion`, `rerank.kind`) run around the gate: the expansion's extra
queries join every search it makes (`expansion.py`), the reranker reorders its final list
(`rerank.py`); their cost and any failure are in `RetrievalResult.strategy`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentic_rag import tracing
from agentic_rag.config import RAGConfig
from agentic_rag.documents import Hit
from agentic_rag.llm.chat import make_chat_model
from agentic_rag.llm.types import ChatModel
from agentic_rag.retrieve.context import AgenticContextFormatter, FormattedContext
from agentic_rag.retrieve.expansion import ExpandedSearch, LLMCost, expand
from agentic_rag.retrieve.gate import DynamicRetriever, RetrievalResult, evidence_confidence
from agentic_rag.retrieve.query import AgentQueryBuilder, RetrievalIntent, apply_history_penalty, rewrite_keywords
from agentic_rag.retrieve.rerank import Reranker, make_reranker
from agentic_rag.retrieve.retrievers import CandidateMemo, FusionRetriever
from agentic_rag.store.index import AgenticIndex


class Pipeline:
    def __init__(self, config: RAGConfig, index: AgenticIndex | None = None,
                 chat_model: ChatModel | None = None) -> None:
        self.config = config
        self.index = index or AgenticIndex(config)
        self._chat = chat_model
        self._builder: AgentQueryBuilder | None = None
        self._types: dict[str, bool] = {}
        self._confidence = None
        self._reranker: Reranker | None = None
        self.candidates: CandidateMemo | None = None  # shared memo of candidate lists
        self.formatter = AgenticContextFormatter(config.context)

    @classmethod
    def from_config(cls, config: str | Path | RAGConfig, **kw: Any) -> Pipeline:
        cfg = config if isinstance(config, RAGConfig) else RAGConfig.load(config)
        return cls(cfg, **kw)

    @property
    def chat_model(self) -> ChatModel:
        if self._chat is None:
            self._chat = make_chat_model(self.config.llm, self.config.home)
        return self._chat

    @property
    def builder(self) -> AgentQueryBuilder:
        if self._builder is None:
            q = self.config.query
            needs_llm = q.classifier == "llm" or q.rewriter == "llm"
            self._builder = AgentQueryBuilder(q, self.chat_model if needs_llm else None,
                                              embed=self.index.embedder.embed)
        return self._builder

    def fusion(self) -> FusionRetriever:
        return FusionRetriever(self.config.fusion, self.index, self.candidates)

    @property
    def reranker(self) -> Reranker | None:
        if self._reranker is None and self.config.rerank.kind != "none":
            self._reranker = make_reranker(self.config.rerank, self.chat_model)
        return self._reranker

    def retriever(self, extra: Sequence[str] = ()) -> DynamicRetriever:
        """The gate over the fusion; `extra` queries (an expansion's) join every search."""
        gate = self.config.gate
        rewrite = rewrite_keywords if gate.rewriter == "keywords" else self.builder.rewrite
        if self._confidence is None:
            self._confidence = evidence_confidence(gate)
        search = self.fusion()
        if extra:
            names = self.config.fusion.retrievers  # hyde: the passage's embedding, beside
            dense = ("dense",) if self.config.query.expansion == "hyde" and "dense" in names \
                else None
            search = ExpandedSearch(search, list(extra), dense)  # type: ignore[assignment]
        return DynamicRetriever(gate, search, rewrite=rewrite,
                                retrievers=tuple(self.config.fusion.retrievers),
                                filter_mode=self.config.query.filter_mode,
                                confidence=self._confidence)

    def has_chunk_type(self, chunk_type: str) -> bool:
        if chunk_type not in self._types:
            self._types[chunk_type] = bool(self.index.store.get({"chunk_type": chunk_type},
                                                                limit=1))
        return self._types[chunk_type]

    def usable_filters(self, intent: RetrievalIntent) -> RetrievalIntent:
        """Drop chunk-type filters the index cannot satisfy; record what was dropped."""
        want = intent.filters.get("chunk_type")
        if want is None or self.config.query.filter_mode == "off":
            return intent
        wanted = [want] if isinstance(want, str) else list(want)
        present = [t for t in wanted if self.has_chunk_type(t)]
        if present == wanted:
            return intent
        filters = dict(intent.filters)
        if present:
            filters["chunk_type"] = present if len(present) > 1 else present[0]
        else:
            filters.pop("chunk_type")
        dropped = [t for t in wanted if t not in present]
        return intent.model_copy(update={"filters": filters, "dropped_filters": dropped})

    def retrieve(self, message: str, agent_state: dict[str, Any] | None = None,
                 previous_retrievals: Sequence[str] = (),
                 served: set[str] | None = None, k: int | None = None,
                 ) -> tuple[RetrievalIntent, RetrievalResult]:
        """The intent of `message` and its hits, within a `retrieval` span (`tracing`)."""
        with tracing.retrieval(message, Path(self.config.home).name) as span:
            intent, result = self._retrieve(message, agent_state, previous_retrievals, served, k)
            tracing.retrieval_done(span, result)
        return intent, result

    def _retrieve(self, message: str, agent_state: dict[str, Any] | None,
                  previous_retrievals: Sequence[str], served: set[str] | None, k: int | None,
                  ) -> tuple[RetrievalIntent, RetrievalResult]:
        intent = self.usable_filters(
            self.builder.build_query(message, agent_state, previous_retrievals))
        filters = intent.filters if self.config.query.filter_mode != "off" else None
        q, rr = self.config.query, self.config.rerank
        cost = LLMCost()
        extra = expand(q, self.chat_model, intent.query, cost) if q.expansion != "none" else []
        want = k or self.config.gate.initial_k
        result = self.retriever(extra).retrieve(
            intent.query, filters or None, intent.min_confidence,
            k=max(want, rr.depth) if self.reranker is not None else k)
        if self.reranker is not None:
            hits = self.reranker.rerank(intent.query, result.hits, cost)
            result = result.model_copy(
                update={"hits": hits[:max(want, result.widened_to or 0)]})
        if q.expansion != "none" or self.reranker is not None:
            result = result.model_copy(update={"strategy": {
                "expansion": q.expansion, "extra_queries": extra, "rerank": rr.kind
                if rr.kind == "none" else f"{rr.kind} {rr.mode} {rr.depth}", **cost.record()}})
        if served:
            hits = apply_history_penalty(result.hits, served, self.config.query.history_penalty)
            result = result.model_copy(update={"hits": hits})
        return intent, result

    def format(self, hits: Sequence[Hit], intent: RetrievalIntent | None = None) -> FormattedContext:
        return self.formatter.format_for_agent(hits, intent.query if intent else "",
                                               intent.intent if intent else None)
