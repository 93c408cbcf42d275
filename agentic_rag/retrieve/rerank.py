"""Reranking of the gate's final list (`rerank.kind`): one `Reranker` protocol, so a
cross-encoder can slot in beside the LLM one (none ships its weights in a registry package
here: every candidate downloads them at run time, docs/experiments.md).

`LLMReranker` reorders the top `rerank.depth` hits with the pipeline's chat model:

- `pointwise`: one call per hit, "does the passage answer the question? yes or no", with
  the reply's log-probabilities; the hit's relevance is P(yes) / (P(yes) + P(no)) at the
  first token, the graded support judge's math (`evaluation.support.p_yes`). Hits are
  sorted by it, ties kept in the fused order.
- `listwise`: one call listing the numbered passages; the reply is JSON
  `{"ranking": [3, 1, ...]}`. Numbers out of range or repeated are ignored, passages it
  leaves out follow in their fused order; a reply with no usable number is a failure.

A failed call (an `LLMError`: transport, malformed reply, no log-probabilities) keeps the
fused order, never a shorter list, and is recorded in `LLMCost.errors` (the sweep row's
`strategy_error`). Hits below `depth` keep their place after the reranked ones. Reranking
happens after the gate and fusion, on hits the candidate memo already holds, so a sweep's
replay covers it; its LLM replies are cached like every other call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from agentic_rag.config import RerankConfig
from agentic_rag.documents import Hit
from agentic_rag.evaluation.support import TOP_LOGPROBS, p_yes
from agentic_rag.llm.client import ask_json_field
from agentic_rag.llm.types import ChatModel, LLMError
from agentic_rag.retrieve.expansion import LLMCost

POINTWISE_PROMPT = (
    "Read the passage below and the question after it. Does the passage answer the question, "
    "or state what is needed to answer it? Reply with one word: yes or no.")
LISTWISE_PROMPT = (
    "Rank the numbered passages by how well they answer the question, most useful first. "
    "Answer with JSON {\"ranking\": [numbers]} listing the passage numbers.")
_RANKING_SCHEMA = {"type": "object", "properties": {"ranking": {
    "type": "array", "items": {"type": "integer"}}}, "required": ["ranking"]}
POINTWISE_CHARS = 2000  # a passage is cut to this many characters in a pointwise prompt
LISTWISE_CHARS = 600  # ... and in a listwise one (depth passages in one prompt)


class Reranker(Protocol):
    """Reorders `hits` for `query`; records its calls' cost and failures in `cost`; on a
    failure returns `hits` in their given order (same hits, same length)."""

    def rerank(self, query: str, hits: Sequence[Hit], cost: LLMCost) -> list[Hit]: ...


def passage_text(hit: Hit, chars: int) -> str:
    """The hit as a reranker reads it: its heading path, then its text, cut to `chars`."""
    c = hit.chunk
    head = f"{c.heading_path}\n" if c.heading_path else ""
    return (head + c.text)[:chars]


def pointwise_messages(query: str, passage: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": f"Passage:\n{passage}"},
            {"role": "user", "content": f"{POINTWISE_PROMPT}\n\nQuestion: {query}"}]


def listwise_messages(query: str, passages: Sequence[str]) -> list[dict[str, str]]:
    listed = "\n\n".join(f"[{i}] {p}" for i, p in enumerate(passages, 1))
    return [{"role": "system", "content": LISTWISE_PROMPT},
            {"role": "user", "content": f"Question: {query}\n\nPassages:\n{listed}"}]


def order_by_scores(hits: Sequence[Hit], scores: Sequence[float]) -> list[Hit]:
    """`hits` sorted by descending score, ties in their given order."""
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
    return [hits[i] for i in order]


def order_by_ranking(hits: Sequence[Hit], ranking: Sequence[Any]) -> list[Hit]:
    """`hits` in the order of `ranking` (1-based numbers; others and repeats ignored), the
    ones it leaves out after, in their given order. `ValueError` when no number is usable."""
    picked: list[int] = []
    for x in ranking:
        if isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= len(hits) \
                and x - 1 not in picked:
            picked.append(x - 1)
    if not picked:
        raise ValueError(f"no passage number in 1..{len(hits)} in {list(ranking)[:20]!r}")
    return [hits[i] for i in picked] + [h for i, h in enumerate(hits) if i not in picked]


def ranked(hits: Sequence[Hit]) -> list[Hit]:
    return [h.model_copy(update={"rank": r}) for r, h in enumerate(hits, 1)]


class LLMReranker:
    def __init__(self, config: RerankConfig, chat: ChatModel) -> None:
        self.config = config
        self.chat = chat

    def relevance(self, chat: ChatModel, query: str, hit: Hit) -> float:
        """P(yes) that the hit answers the query, from the reply's first-token logprobs."""
        reply = chat.chat(pointwise_messages(query, passage_text(hit, POINTWISE_CHARS)),
                          max_tokens=1, top_logprobs=TOP_LOGPROBS)
        if not reply.top_logprobs:
            raise LLMError(f"{chat.model_id}: the reply carries no log-probabilities (the "
                           "endpoint must support logprobs/top_logprobs)", "malformed",
                           reply.attempts)
        try:
            return p_yes(reply.top_logprobs[0])
        except ValueError as exc:
            raise LLMError(f"{exc} (reply {reply.content!r})", "malformed",
                           reply.attempts) from exc

    def rerank(self, query: str, hits: Sequence[Hit], cost: LLMCost) -> list[Hit]:
        head, tail = list(hits[:self.config.depth]), list(hits[self.config.depth:])
        if len(head) < 2:
            return list(hits)
        chat = cost.charged(self.chat)
        try:
            if self.config.mode == "pointwise":
                scores = [self.relevance(chat, query, h) for h in head]
                head = [h.model_copy(update={"score": s}) for h, s in
                        zip(order_by_scores(head, scores), sorted(scores, reverse=True))]
            else:
                head = self._listwise(chat, query, head)
        except LLMError as exc:
            cost.fail(f"rerank.kind=llm rerank.mode={self.config.mode}", exc)
            return list(hits)
        return ranked(head + tail)

    def _listwise(self, chat: ChatModel, query: str, head: list[Hit]) -> list[Hit]:
        msgs = listwise_messages(query, [passage_text(h, LISTWISE_CHARS) for h in head])
        value, reply = ask_json_field(chat, msgs[0]["content"], msgs[1]["content"], "ranking",
                                      _RANKING_SCHEMA, lambda v: isinstance(v, list),
                                      max_tokens=4 * len(head) + 20)
        try:
            return order_by_ranking(head, value)
        except ValueError as exc:
            raise LLMError(f"{exc} (reply {reply.content[:200]!r})", "malformed",
                           reply.attempts) from exc


RERANKERS = {"llm": LLMReranker}


def make_reranker(config: RerankConfig, chat: ChatModel | None) -> Reranker | None:
    """The configured reranker (None for `none`); `llm` needs a chat model."""
    if config.kind == "none":
        return None
    if chat is None:
        raise ValueError(f"rerank.kind {config.kind!r} needs a chat model (the llm section)")
    return RERANKERS[config.kind](config, chat)
