"""`Pipeline`: the whole retrieval stack rebuilt from one `RAGConfig`.

    pipe = Pipeline.from_config("pipeline.yaml")
    intent, result = pipe.retrieve("how much is a wire transfer?")
    print(pipe.format(result.hits, intent).text)

Components are created lazily; each gets only its own sub-config.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .config import RAGConfig
from .context import AgenticContextFormatter, FormattedContext
from .documents import Hit
from .gate import DynamicRetriever, RetrievalResult
from .index import AgenticIndex
from .llm import ChatModel, make_chat_model
from .query import AgentQueryBuilder, RetrievalIntent, apply_history_penalty
from .retrievers import FusionRetriever


class Pipeline:
    def __init__(self, config: RAGConfig, index: AgenticIndex | None = None,
                 chat_model: ChatModel | None = None) -> None:
        self.config = config
        self.index = index or AgenticIndex(config)
        self._chat = chat_model
        self._builder: AgentQueryBuilder | None = None
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

    def search_fn(self):  # noqa: ANN201 - SearchFn
        if tuple(self.config.fusion.retrievers) == ("dense",):
            return self.index.search
        return FusionRetriever(self.config.fusion, self.index).search

    def retriever(self) -> DynamicRetriever:
        return DynamicRetriever(self.config.gate, self.search_fn(), rewrite=self.builder.rewrite)

    def retrieve(self, message: str, agent_state: dict[str, Any] | None = None,
                 previous_retrievals: Sequence[str] = (),
                 served: set[str] | None = None) -> tuple[RetrievalIntent, RetrievalResult]:
        intent = self.builder.build_query(message, agent_state, previous_retrievals)
        result = self.retriever().retrieve(intent.query, intent.filters or None,
                                           intent.min_confidence)
        if served:
            hits = apply_history_penalty(result.hits, served, self.config.query.history_penalty)
            result = result.model_copy(update={"hits": hits})
        return intent, result

    def format(self, hits: Sequence[Hit], intent: RetrievalIntent | None = None) -> FormattedContext:
        return self.formatter.format_for_agent(hits, intent.query if intent else "",
                                               intent.intent if intent else None)
