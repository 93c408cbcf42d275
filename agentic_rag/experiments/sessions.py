"""Session rows: a sweep query that is a conversation's final turn is measured as a session turn.

A query whose metadata holds `session` (`{"users": [...], "answers": [...]}`: the earlier user
turns and the agent's replies as written; MTRAG's tasks, `Mtrag.dataset(sessions=True)`) is
not a single question. `seed_session` turns its history into an `agent.session.Session`, each
earlier turn with the query a session builds for it (`retrieve.query.conversation_queries`,
`agent.session.query_mode`) and the reply as written; the earlier turns served no passages
(MTRAG's history names none), so the history penalty has nothing to act on.

- **Retrieval** (`session_query`): the final turn's query is the one `run_turn` would build
  from that session (`ConversationQueryBuilder`, the same code `agentic-rag chat` runs), and
  the sweep searches it, so `agent.session.query_mode` can be swept and paired like any
  setting. `llm_rewrite` asks the config's model (cached); a failed rewrite is the row's
  `error` (its fallback's score is not kept).
- **Agent** (`session_agent_metrics`): `agent.session.run_turn` runs the final turn on the
  seeded session with the config's agent, so what is measured is what ships; the columns are
  those of `measure.agent_metrics` plus the session's (`evaluation/sessions.py`). A session
  row's answer is the agent's turn: the sweep's `answers` and `hallucination` groups read it
  (no single-question answer is generated), `hallucination` adding the support detector's
  `agent_hallucinated` on answered turns.

Other queries are untouched: their rows, and their row-cache keys, are what they were.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agentic_rag.agent.session import Session, Turn, run_turn
from agentic_rag.config_agent import SessionConfig
from agentic_rag.datasets.base import Query
from agentic_rag.evaluation.answers import exact_match, rouge_l, token_f1
from agentic_rag.evaluation.sessions import turn_metrics
from agentic_rag.evaluation.support import support_score, unsupported
from agentic_rag.llm.types import ChatModel
from agentic_rag.retrieve.query import ConversationQuery, ConversationQueryBuilder, conversation_queries

SESSION_KEY = "session"
AS_WRITTEN = "as written"  # the stop reason of a seeded turn: the dataset's reply


def history(q: Query) -> tuple[list[str], list[str]] | None:
    """(earlier user turns, the agent's replies) of a session query; None for a question."""
    s = q.metadata.get(SESSION_KEY)
    if s is None:
        return None
    users, answers = list(s.get("users") or []), list(s.get("answers") or [])
    if len(answers) != len(users):
        raise ValueError(f"query {q.id}: session metadata has {len(users)} earlier user turns "
                         f"and {len(answers)} replies; one reply per earlier turn")
    return users, answers


def seed_session(users: Sequence[str], answers: Sequence[str],
                 config: SessionConfig) -> Session:
    """A `Session` holding the earlier turns as written, each with the query a session builds
    for it (under `llm_rewrite`, carry's: a rewrite reads the messages, not earlier queries, so
    the final turn's query is the same and the history costs no LLM call)."""
    seed = config if config.query_mode != "llm_rewrite" else \
        config.model_copy(update={"query_mode": "carry"})
    built = conversation_queries(users, answers, seed)
    session = Session()
    for i, (message, answer, b) in enumerate(zip(users, answers, built)):
        session.turns.append(Turn(
            n=i + 1, message=" ".join(message.split()), query=b.query, query_mode=b.mode,
            follow_up=b.follow_up, follow_up_reason=b.reason, carried=b.carried,
            answer=answer, stop_reason=AS_WRITTEN))
    return session


def session_query(q: Query, config: SessionConfig, chat: Callable[[], ChatModel],
                  max_chars: int) -> ConversationQuery | None:
    """The final turn's search query as `run_turn` builds it from the seeded session; None
    for a query that is not a session's. `chat` gives the model, asked only under
    `llm_rewrite` (a pipeline's model is started when first asked for)."""
    h = history(q)
    if h is None:
        return None
    session = seed_session(*h, config)
    builder = ConversationQueryBuilder(config, chat() if config.query_mode == "llm_rewrite"
                                       else None, max_chars)
    return builder.build_query(q.text, session.state(), session.queries())


def query_columns(built: ConversationQuery) -> dict[str, Any]:
    """The row's columns saying how the session's query was built; a failed rewrite is the
    row's `error` (the fallback's score is no score of llm_rewrite's)."""
    out: dict[str, Any] = {"session_query": built.query, "session_query_mode": built.mode,
                           "session_follow_up": built.follow_up}
    if "failed" in built.mode:
        out["error"] = f"session query: {built.mode}"
    return out


def session_agent_metrics(pipe, q: Query, judge: bool = False,  # noqa: ANN001
                          gold: Iterable[str] = ()) -> dict[str, Any]:
    """`run_turn` on the seeded session (module doc): the agent's columns (as
    `measure.agent_metrics`, its trajectory against the `gold` document ids included) and
    the turn's (`evaluation.sessions.turn_metrics`); with `judge` (the sweep's
    `hallucination` group), the support detector on an answered turn."""
    from agentic_rag.agent.tool import AgenticRAGTool

    users, answers = history(q) or ([], [])
    cfg = pipe.config.agent
    session = seed_session(users, answers, cfg.session)
    closed = cfg.policy == "closed_book"
    tool = None if closed else AgenticRAGTool(pipe)
    try:
        turn = run_turn(session, q.text, pipe.chat_model, tool, cfg)
    except ValueError as exc:  # a turn the session refuses (empty, over the query limit)
        return {"agent_error": f"refused: {exc}", "agent_answer": ""}
    res = turn.result
    out: dict[str, Any] = {"agent_tool_calls": len(turn.queries),
                           "agent_stop_reason": turn.stop_reason,
                           "agent_answer": turn.answer, "latency_agent_ms": 1000 * turn.latency_s,
                           "agent_history_turns": turn.history_turns,
                           **turn_metrics(turn, q.metadata.get("answerability"), q.answers)}
    if turn.question and turn.question != turn.message:  # session.answer_question: rewrite
        out["session_question"] = turn.question
    if turn.question_error:
        out["session_question_error"] = turn.question_error
    if turn.clarify_check:  # session.clarify: llm
        out["session_clarify_check"] = turn.clarify_check
    if res is not None:  # a clarifying question is asked without the model
        out.update({"agent_model_tool_calls": res.model_tool_calls,
                    "agent_retrieval_iterations": res.retrieval_iterations,
                    "agent_citations": len(res.citations),
                    "agent_invalid_citations": len(res.invalid_citations),
                    "agent_citation_valid": float(res.citation_valid),
                    "agent_cites_served": float(res.cites_served),
                    "agent_prompt_tokens": res.prompt_tokens,
                    "agent_completion_tokens": res.completion_tokens,
                    "agent_context_tokens": res.context_tokens, **res.trajectory(gold)})
        if res.stop_reason in ("llm_error", "invalid_action"):
            out["agent_error"] = res.error
            return out
    if q.answers:
        out["agent_token_f1"] = token_f1(turn.answer, q.answers)
        out["agent_rouge_l"] = rouge_l(turn.answer, q.answers)
        out["agent_exact_match"] = exact_match(turn.answer, q.answers)
    if judge and res is not None and not out["agent_abstained"] and turn.passages:
        out.update(_support(pipe, q, turn))
    return out


def _support(pipe, q: Query, turn: Turn) -> dict[str, Any]:  # noqa: ANN001
    """`agent_hallucinated` of an answered turn: support below the threshold under the
    configured detector (`agent.support`), the answer (to the turn's query, which carries
    the subject) against the passages served on the turn in one canonical rendering whatever the arm
    (`context.judge_view`'s); NaN support (no checkable words) is left undecided. A failed
    judge call is `agent_support_error`, never a score."""
    from agentic_rag.documents import Hit
    from agentic_rag.llm.types import LLMError
    from agentic_rag.retrieve.context import judge_view

    sup = pipe.config.agent.support
    wanted = [p.chunk_id for p in turn.passages]
    chunks = {c.id: c for c in pipe.index.lexical.chunks if c.id in set(wanted)}
    hits = [Hit(chunk=chunks[c], score=1.0, rank=i) for i, c in enumerate(wanted)
            if c in chunks]
    try:
        score = support_score(sup.detector, pipe.chat_model, judge_view(hits, wanted),
                              turn.answer, turn.query)
    except LLMError as exc:
        return {"agent_support_error": f"llm {exc.kind}: {str(exc)[:200]}"}
    return {"agent_support": score, "agent_support_detector": sup.detector,
            "agent_hallucinated": unsupported(score, sup.threshold)}
