"""One config × query × repeat → one row of measured results.

`evaluate_row` runs the config's pipeline on the query and measures it: the decisions
(intent, gate iterations, stop reason, expansions, filters), the cost (context tokens,
latency), the ranking (`retrieved_docs`) and its IR / span metrics, and, for the queries
in the LLM sample, the answer, the judge and the agent metrics. The package's metrics are
computed here a group at a time (the sweep's `metrics` entries); a metric declared with a
`compute` (`evaluation/metrics.py`, a metric of your own) is computed for every row of its
group, after them (`metrics.computed`). A row is a flat dict of JSON-able values; the driver
(`runner.run_sweep`) writes it to `rows.jsonl`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from agentic_rag.agent.tool import QUERY_MAX_CHARS
from agentic_rag.datasets.base import Dataset, Query
from agentic_rag.evaluation.answers import exact_match, token_f1
from agentic_rag.evaluation.containment import answer_at_k, answer_in_context
from agentic_rag.evaluation.llm_judge import generate_answer
from agentic_rag.evaluation.metrics import METRICS, RowInputs, computed
from agentic_rag.evaluation.retrieval import doc_run, ir_metrics, per_type_hits, span_metrics
from agentic_rag.evaluation.support import support_score, unsupported
from agentic_rag.experiments.sessions import query_columns, session_agent_metrics, session_query
from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.llm.types import LLMError
from agentic_rag.retrieve.context import JUDGE_VIEW, FormattedContext, judge_view
from agentic_rag.retrieve.pipeline import Pipeline

_RAGAS = threading.Lock()  # the ragas scorer is not shared by threads (`_answer_metrics`)


def evaluation_settings(spec: SweepSpec) -> dict[str, Any]:
    """The spec's settings a row's values depend on (the row cache keys on them), with the
    declared metrics computed per row (`Metric.compute`) when there are any."""
    out = {"k": spec.k, "metrics": sorted(spec.metrics), "ragas_metrics": spec.ragas_metrics,
           "replay": spec.replay, "judge_view": JUDGE_VIEW.model_dump(mode="json")}
    own = sorted(m.name for m in METRICS.values() if m.compute is not None)
    return {**out, "computed_metrics": own} if own else out


def failed(row: dict[str, Any]) -> bool:
    """A row with a failure (`error`, `agent_error`, a ragas metric's `_error`)."""
    return any(v is not None for k, v in row.items() if k == "error" or k.endswith("_error"))


def evaluate_row(spec: SweepSpec, ds: Dataset, i: int, config: tuple, pipe: Pipeline, q: Query,
                 r: int, scorer=None, docs_by_id=None,  # noqa: ANN001
                 llm_ids: frozenset[str] = frozenset()) -> dict:
    """The row of config `i` (`config` = (label, overrides, RAGConfig)) on query `q`,
    repeat `r`. LLM metrics only for queries in `llm_ids`; `scorer` is the ragas scorer."""
    return start_row(spec, ds, i, config, pipe, q, r, scorer, docs_by_id, llm_ids).finish()


@dataclass
class PendingRow:
    """A row measured up to its LLM metrics; `finish()` adds them (the LLM-bound part, which
    a sweep runs in a worker thread, `llm.map_calls`) and returns the row."""

    row: dict[str, Any]
    llm: Callable[[], None] | None = None

    def finish(self) -> dict[str, Any]:
        if self.llm is not None:
            self.llm()
        return self.row


def start_row(spec: SweepSpec, ds: Dataset, i: int, config: tuple, pipe: Pipeline, q: Query,
              r: int, scorer=None, docs_by_id=None,  # noqa: ANN001
              llm_ids: frozenset[str] = frozenset()) -> PendingRow:
    """`evaluate_row` without the LLM calls: retrieval, the decision, cost, IR, span and
    containment columns, ragas' non-LLM metrics; the agent, answer, judge and ragas LLM
    metrics are left to `PendingRow.finish` (same columns, same order)."""
    label = config[0]
    row: dict[str, Any] = {"config_id": f"c{i:02d}", "config": label, "query_id": q.id,
                           "repeat": r, "error": None}
    built = session_query(q, pipe.config.agent.session, lambda: pipe.chat_model,
                          QUERY_MAX_CHARS)
    if built is not None:  # a conversation's final turn: the query the session builds
        row.update(query_columns(built))
    hits, ctx, measured = _retrieve(spec, pipe, q, built.query if built is not None else None)
    row.update(measured)
    qrels = ds.qrels.get(q.id, {})
    run = doc_run(hits)
    row["retrieved_docs"] = json.dumps(list(run))  # rank order, for re-scoring and analysis
    if "retrieval" in spec.metrics and qrels:
        row.update(ir_metrics({q.id: qrels}, {q.id: run})[q.id])
        for k in sorted({5, spec.k}):
            if ds.spans.get(q.id):
                row.update(span_metrics(hits, ds.spans[q.id], k))
        row.update(per_type_hits(hits, set(qrels), spec.k))
    if "retrieval" in spec.metrics and q.answers:
        row.update(containment_metrics(hits, ctx, q.answers, spec.k))
    groups = set(spec.metrics)
    inputs = RowInputs(q.text, hits, ctx.text, qrels, ds.spans.get(q.id, []), q.answers,
                       spec.k, row)
    row.update(computed(inputs, groups, llm=False))
    if q.id not in (llm_ids or ()):
        return PendingRow(row)
    if "ragas_nonllm" in groups:
        from agentic_rag.evaluation.ragas_metrics import non_llm_scores

        gold_texts = [docs_by_id[d].text for d in qrels if d in docs_by_id]
        row.update(non_llm_scores("", "", [h.chunk.text for h in hits], gold_texts))
    own_llm = any(m.compute is not None and m.llm and m.group in groups
                  for m in METRICS.values())
    if not groups & {"agent", "answers", "hallucination", "ragas"} and not own_llm:
        return PendingRow(row)

    def llm() -> None:
        if built is not None:  # a session turn: its answer is the agent's (sessions.py)
            if groups & {"agent", "answers", "hallucination"}:
                row.update(session_agent_metrics(pipe, q, judge="hallucination" in groups,
                                                 gold=qrels))
        elif "agent" in groups:
            row.update(agent_metrics(pipe, q, qrels))
        if built is None and groups & {"answers", "hallucination", "ragas"}:
            row.update(_answer_metrics(pipe, q, hits, ctx, groups, scorer))
        row.update(computed(inputs, groups, llm=True))  # reads the row: the answer

    return PendingRow(row, llm)


def containment_metrics(hits: list, ctx: FormattedContext, answers: list[str],
                        k: int) -> dict[str, float]:
    """The reference answer in what was served (no LLM, every query): in the whole context
    the model is given, and in the first 5 and `k` hits, heading line included."""
    out = {"answer_in_context": answer_in_context(ctx.text, answers)}
    out.update({f"answer@{n}": answer_at_k(hits, answers, n) for n in sorted({5, k})})
    return out


def _retrieve(spec: SweepSpec, pipe: Pipeline, q: Query, text: str | None = None
              ) -> tuple[list, FormattedContext, dict]:
    """Retrieve and format the query's context (`text`, default the query's own: a session's
    final turn searches the query built from its history): (hits, context, the row's
    decision and cost columns). Replayed candidate lists are charged what their first search
    cost."""
    memo = pipe.candidates
    if memo is not None:
        memo.take()
    t0 = time.perf_counter()
    # equal budget: every config is asked for, and scored on, the same number of hits
    intent, result = pipe.retrieve(q.text if text is None else text, k=spec.k)
    t2 = time.perf_counter()
    hits = result.hits[:spec.k]
    ctx = pipe.format(hits, intent)
    t3 = time.perf_counter()
    retrieval_s = t2 - t0
    if memo is not None:
        cost, fresh = memo.take()
        retrieval_s += cost - fresh
    strategy = strategy_columns(result.strategy)
    retrieval_s += result.strategy.get("llm_cached_s", 0.0)  # cached replies: their recorded s
    return hits, ctx, {
        "intent": intent.intent, "iterations": result.iterations,
        "stop_reason": result.stop_reason, "confidence": result.confidence,
        "expansions": json.dumps(result.expansions), "skipped_expansions": len(result.skipped),
        "filter_applied": bool(intent.filters) and pipe.config.query.filter_mode != "off",
        "dropped_filters": len(intent.dropped_filters), "widened_to": result.widened_to,
        "n_hits": len(hits), "context_tokens": ctx.tokens,
        "expanded_hits": sum("child_id" in h.chunk.metadata for h in hits),  # small-to-big
        "latency_retrieval_ms": 1000 * retrieval_s, "latency_context_ms": 1000 * (t3 - t2),
        "latency_ms": 1000 * (retrieval_s + (t3 - t2)), **strategy}


def strategy_columns(strategy: dict[str, Any]) -> dict[str, Any]:
    """The LLM strategies' columns (query expansion, rerank: `expansion.LLMCost`), only for
    configs that use one: calls, replies read from the reply cache, tokens and seconds (a
    cached reply charged what it cost when made), and `strategy_error`, a failed call whose
    strategy was not applied. Such a row is a failure: it is written to rows.jsonl (not to
    the row cache, so a rerun retries it), its metrics measure the fallback list and are
    left out of the strategy's means and paired comparison (`summary.without_failures`),
    and it counts in the arm's `failures`."""
    if not strategy:
        return {}
    return {"strategy_llm_calls": strategy["llm_calls"],
            "strategy_llm_cached": strategy["llm_cached"],
            "strategy_llm_prompt_tokens": strategy["llm_prompt_tokens"],
            "strategy_llm_completion_tokens": strategy["llm_completion_tokens"],
            "strategy_llm_s": strategy["llm_s"],
            "strategy_extra_queries": len(strategy["extra_queries"]),
            "strategy_error": strategy["error"]}


def _answer_metrics(pipe: Pipeline, q: Query, hits: list, ctx: FormattedContext,
                    groups: set[str], scorer=None) -> dict[str, Any]:  # noqa: ANN001
    """Answer from the context, score it against the gold answers, ask the judge whether
    the context supports it, and the ragas metrics. An LLM failure sets `error`."""
    out: dict[str, Any] = {}
    try:
        reply = generate_answer(pipe.chat_model, q.text, ctx.text)
        answer = reply.content.strip()
        out.update({"answer": answer, "llm_prompt_tokens": reply.prompt_tokens,
                    "llm_completion_tokens": reply.completion_tokens,
                    "latency_answer_ms": 1000 * reply.latency_s})
        if q.answers:
            out["exact_match"] = exact_match(answer, q.answers)
            out["token_f1"] = token_f1(answer, q.answers)
        if "hallucination" in groups:
            # the instrument does not change with the treatment: the judge reads one
            # canonical rendering of the hits the answer was given, whatever the format
            # hallucinated = support below the threshold, under the configured detector
            # (`agent.support`: the best on the model's own labelled answers by default)
            sup = pipe.config.agent.support
            score = support_score(sup.detector, pipe.chat_model,
                                  judge_view(hits, ctx.included), answer, q.text)
            # NaN support: the detector may not score this answer (no checkable words
            # and no question-aware part): undefined, not a 0 or a 1
            out.update({"support": score, "hallucinated": unsupported(score, sup.threshold),
                        "support_detector": sup.detector})
    except LLMError as exc:
        out["error"] = f"llm {exc.kind}: {str(exc)[:200]}"
    else:
        if scorer is not None:
            with _RAGAS:  # ragas drives its own async client: one sample at a time
                out.update(scorer.score(q.text, answer, [h.chunk.text for h in hits],
                                        q.answers[0] if q.answers else ""))
    return out


def agent_metrics(pipe: Pipeline, q: Query, gold: Iterable[str] = ()) -> dict[str, Any]:
    """The full agent loop on the query under the config's `agent` section (policy, mode,
    max_steps): searches, retrieval iterations, citations, answer quality, and its trajectory
    against the gold document ids (`AgentResult.trajectory`)."""
    from agentic_rag.agent.loop import run_agent
    from agentic_rag.agent.tool import AgenticRAGTool

    closed = pipe.config.agent.policy == "closed_book"
    res = run_agent(q.text, pipe.chat_model, None if closed else AgenticRAGTool(pipe),
                    pipe.config.agent)
    out: dict[str, Any] = {"agent_tool_calls": res.tool_calls,
                           "agent_model_tool_calls": res.model_tool_calls,
                           "agent_retrieval_iterations": res.retrieval_iterations,
                           "agent_stop_reason": res.stop_reason,
                           "agent_citations": len(res.citations),
                           "agent_invalid_citations": len(res.invalid_citations),
                           "agent_citation_valid": float(res.citation_valid),
                           "agent_cites_served": float(res.cites_served),
                           "agent_abstained": float(res.abstained),
                           "agent_prompt_tokens": res.prompt_tokens,
                           "agent_completion_tokens": res.completion_tokens,
                           "agent_context_tokens": res.context_tokens,
                           "latency_agent_ms": 1000 * res.latency_s, "agent_answer": res.answer,
                           **res.trajectory(gold)}
    if res.stop_reason in ("llm_error", "invalid_action"):
        out["agent_error"] = res.error
    elif q.answers:
        out["agent_token_f1"] = token_f1(res.answer, q.answers)
        out["agent_exact_match"] = exact_match(res.answer, q.answers)
    return out
