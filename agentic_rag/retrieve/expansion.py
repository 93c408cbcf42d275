"""First-pass LLM query expansion: multi-query and HyDE (`query.expansion`).

- `multi_query`: the LLM writes `query.expansion_n` paraphrases of the query; each is searched
  exactly like the query (same retrievers, filters and filter mode) and the lists are fused
  with the query's own by RRF (`gate.rrf_hits`).
- `hyde`: the LLM writes a short hypothetical passage that would answer the query; the
  passage is searched by the dense retriever (its embedding, "beside" the query: BM25 keeps
  the query's words) and fused with the query's list by RRF. Without a dense retriever
  in the mix the passage is searched by the configured ones.

Built as a first-pass option, not a gate expansion: the expansion runs once per retrieval,
before the gate, and its extra queries join every search the gate makes (relaxed filters
and added retrievers apply to them too). That measures the strategy on every query at a
known cost per query; as a gate expansion it would only run where the gate widens, whose
share of queries depends on the calibrated threshold and the dataset (5-73 % on our dev
sets), so its cost and effect could not be told apart from the gate's.

The calls go through the pipeline's chat model (`llm.make_chat_model`: reply cache keyed by
the model identity, retries, `LLMError`). A failed call is never silent: the pipeline serves
the unexpanded list and records the error in `RetrievalResult.strategy`.

Replay: the extra queries' candidate lists are memoised like the query's, under their own
text (`retrievers.CandidateMemo`); with the reply cache a rerun writes the same paraphrases,
so a sweep's configs sharing an index replay them exactly. The interactive `Tuner`
(`experiments/replay.py`) refuses LLM strategies: it promises no new call per setting.

`LLMCost` is what a strategy's calls cost one retrieval: calls, those read from the reply
cache, tokens and seconds. A cached reply is charged its recorded tokens and seconds (as a
replayed candidate list is charged its first search's time), so a row reports what the
strategy costs, whether or not this run paid it. The sweep's `llm.CallMeter` still counts
(and caps) the calls actually sent: they go through the pipeline's metered chat model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentic_rag.config import QueryConfig
from agentic_rag.llm.client import ask_json_field
from agentic_rag.llm.types import ChatModel, ChatReply, LLMError
from agentic_rag.retrieve.evidence import Evidence
from agentic_rag.retrieve.gate import EvidenceSearch, rrf_hits


@dataclass
class LLMCost:
    """The LLM calls one retrieval's strategies made (see module doc)."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached_seconds: float = 0.0  # the recorded seconds of replies read from the cache
    errors: list[str] = field(default_factory=list)

    def add(self, reply: ChatReply) -> ChatReply:
        self.calls += 1
        self.cached += bool(reply.cached)
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.seconds += reply.latency_s
        if reply.cached:
            self.cached_seconds += reply.latency_s
        return reply

    def charged(self, chat: ChatModel) -> ChatModel:
        """`chat` with every call charged here: a reply by `add`, a failed call (`LLMError`)
        counted as a call."""
        return _Charged(chat, self)  # type: ignore[return-value]

    def fail(self, strategy: str, exc: LLMError) -> None:
        """The strategy was not applied: its error, under its name."""
        self.errors.append(f"{strategy}: llm {exc.kind}: {str(exc)[:200]}")

    def record(self) -> dict[str, Any]:
        return {"llm_calls": self.calls, "llm_cached": self.cached,
                "llm_prompt_tokens": self.prompt_tokens,
                "llm_completion_tokens": self.completion_tokens,
                "llm_s": round(self.seconds, 4), "llm_cached_s": round(self.cached_seconds, 4),
                "error": "; ".join(self.errors) or None}


class _Charged:
    def __init__(self, chat: ChatModel, cost: LLMCost) -> None:
        self._chat, self._cost = chat, cost

    @property
    def model_id(self) -> str:
        return self._chat.model_id

    def chat(self, messages: list[dict[str, Any]], **kwargs: Any) -> ChatReply:
        try:
            reply = self._chat.chat(messages, **kwargs)
        except LLMError:
            self._cost.calls += 1
            raise
        return self._cost.add(reply)


MULTI_QUERY_PROMPT = (
    "You help a documentation search engine. Write {n} different search queries that ask for "
    "the same information as the user's question: vary the wording, use the technical terms "
    "the documentation would use, keep names and numbers. Answer with JSON "
    "{{\"queries\": [\"...\"]}}.")
HYDE_PROMPT = (
    "Write a short passage (two or three sentences) from technical documentation that answers "
    "the user's question. State it as the documentation would; if unsure, write a plausible "
    "passage. Reply with the passage only.")
_QUERIES_SCHEMA = {"type": "object", "properties": {"queries": {
    "type": "array", "items": {"type": "string"}}}, "required": ["queries"]}


def paraphrases(chat: ChatModel, query: str, n: int) -> list[str]:
    """Up to `n` distinct paraphrases (the query itself and blanks left out); `LLMError` when
    the reply holds none."""
    def valid(v: Any) -> bool:
        return isinstance(v, list) and any(isinstance(x, str) and x.strip() for x in v)

    value, reply = ask_json_field(chat, MULTI_QUERY_PROMPT.format(n=n), query, "queries",
                                  _QUERIES_SCHEMA, valid, max_tokens=40 * n + 20)
    seen, out = {query.strip().lower()}, []
    for q in value:
        q = q.strip() if isinstance(q, str) else ""
        if q and q.lower() not in seen:
            seen.add(q.lower())
            out.append(q)
    if not out:
        raise LLMError(f"no paraphrase differs from the query: {value!r}"[:300], "malformed",
                       reply.attempts)
    return out[:n]


def hyde_passage(chat: ChatModel, query: str) -> str:
    reply = chat.chat([{"role": "system", "content": HYDE_PROMPT},
                       {"role": "user", "content": query}], max_tokens=120)
    passage = reply.content.strip()
    if not passage:
        raise LLMError("the reply is empty", "malformed", reply.attempts)
    return passage


def expand(config: QueryConfig, chat: ChatModel, query: str, cost: LLMCost) -> list[str]:
    """The extra queries of `config.expansion` for `query` ([] for none). Every call is
    charged to `cost`; a failure is recorded there and gives [] (the query alone is
    searched)."""
    charged = cost.charged(chat)
    try:
        if config.expansion == "multi_query":
            return paraphrases(charged, query, config.expansion_n)
        if config.expansion == "hyde":
            return [hyde_passage(charged, query)]
    except LLMError as exc:
        cost.fail(f"query.expansion={config.expansion}", exc)
    return []


class ExpandedSearch:
    """An `EvidenceSearch` that adds `extra` queries to every search of `source`: each
    searched with `extra_retrievers` (None = the search's own), the lists fused by RRF, the
    query's own list first. `runs` stay the query's own retrievers' lists (the gate's
    calibrated confidence was fitted on those)."""

    def __init__(self, source: EvidenceSearch, extra: list[str],
                 extra_retrievers: tuple[str, ...] | None = None) -> None:
        self.source = source
        self.extra = list(extra)
        self.extra_retrievers = extra_retrievers

    def evidence(self, query: str, k: int, where: dict[str, Any] | None,
                 retrievers: tuple[str, ...] | None, filter_mode: str) -> Evidence:
        ev = self.source.evidence(query, k, where, retrievers, filter_mode)
        names = self.extra_retrievers or retrievers
        lists = [ev.hits] + [self.source.evidence(q, k, where, names, filter_mode).hits
                             for q in self.extra]
        return Evidence(hits=rrf_hits(lists), runs=ev.runs, filtered=ev.filtered, k=ev.k)
