"""The agent loop around `search_documents`, with a retrieval policy and grounded answers.

Policies (`AgentConfig.policy`), so "does the agent retrieve?" is a setting, not luck:

- `retrieve_first`: the question itself is searched before the model's first turn; the
  model reads those passages and may search again.
- `tool_required`: the model's first turn must be a search. Native mode forces it with
  `tool_choice` (llama-cpp-python's server then constrains the reply to the tool's JSON
  schema; the C++ llama-server reads the object as "auto": a call written as text is read);
  if the server refuses, or the reply holds no call, a JSON action constrained to `search`
  is asked for instead.
- `free`: the model decides whether to search (small local models often do not).
- `closed_book`: no retrieval at all, one answer from the model's own knowledge: the
  "without RAG" arm of every comparison.

Two ways to call the tool (`AgentConfig.mode`):

- `native`: chat completions with `tools=[search_documents]`; the reply's `tool_calls`
  are executed. A call written as text (Qwen's
  `<tool_call>{...}</tool_call>`, or a bare `{"name": "search_documents", ...}` object)
  is understood too.
- `json`: each decision is a small JSON action, `{"action": "search", "query": ...}` or
  `{"action": "answer"}`, under a schema whose strings are bounded (`maxLength`) and with
  `action_max_tokens`, so it cannot run away; the answer itself is then asked for as plain
  text. A malformed action gets one retry with a corrective message; a second failure
  ends the run (`stop_reason="invalid_action"`), counted, never re-requested.

Whatever found them, the passages reach the model the same way: every turn is rebuilt with
the passages of all searches so far in the user turn, then the question, then the turn's
instruction (the answer turn has no tools and no JSON). `max_steps` bounds the model's
turns: up to `max_steps - 1` decision turns (each may search), then a last turn that must
answer from the passages. Passages carry a short citation id (`context.citation_id`); the
answer is asked to cite them as `[3fa9c]`.
`AgentResult` lists the citations, which of them name a chunk that was actually served,
and the invalid ones (a citation of a chunk never served is an error). When searches
ran and served nothing, the answer is "I don't know" without asking the model. A failed
LLM call ends the run with `stop_reason="llm_error"` — never a made-up answer.

A turn of a conversation (`agent/session.py`'s `run_turn`) passes a `TurnContext`: the
earlier turns as chat messages, placed between the system prompt and the turn's user message
(a stable prefix for the server's prompt cache), and the turn's first search, made by the
caller on the tool's session it keeps across turns (the tool is then not reset). Without one,
the messages are exactly a single question's.

Support (`AgentConfig.support`, off by default; `agentic-rag ask` turns it on): the final
answer is scored against the text of the passages it cites (`support_against="cited"`), or
against every passage served when it cites none (`"served"`), with the selected detector of
`evaluation/support.py` through the same `chat`; below `support.threshold` it is marked
`supported=False`. An abstention, a run without an answer or without passages is not scored
(`support_note` says why); a judge failure is `support_error`, never a score.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from agentic_rag import tracing
from agentic_rag.agent import gate
from agentic_rag.agent.prompts import (  # noqa: F401 - re-exported
    ACTION_QUERY_MAX_CHARS,
    DECIDE_JSON,
    FIX_ACTION,
    FORCE_SEARCH_JSON,
    NOTHING_FOUND,
    PASSAGES,
    PROMPT_AFTER,
    SYSTEM_ANSWER,
    SYSTEM_CLOSED,
    SYSTEM_JSON,
    SYSTEM_NATIVE,
    Policy,
    action_schema,
)
from agentic_rag.agent.result import AgentResult, AgentStep, parse_citations
from agentic_rag.agent.support import answer_support
from agentic_rag.agent.tool import TOOL_NAME, AgenticRAGTool, SearchInput, ToolOutput
from agentic_rag.config import AgentConfig
from agentic_rag.llm.types import ChatModel, ChatReply, LLMError
from agentic_rag.retrieve.context import citation_id

_TOOL_CALL_TEXT = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


def _usage(reply: ChatReply) -> dict[str, Any]:
    return {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "latency_s": reply.latency_s, "cached": reply.cached,
            "prompt_evaluated": reply.prompt_evaluated, "prompt_reused": reply.prompt_reused}


def _run_tool(tool: AgenticRAGTool, args: Any, via: str
              ) -> tuple[ToolOutput | None, dict | None, str | None]:
    with tracing.execute_tool(TOOL_NAME, via) as span:
        try:
            parsed = SearchInput.model_validate_json(args) if isinstance(args, str) \
                else SearchInput.model_validate(args)
        except ValidationError as exc:
            error = f"invalid arguments: {exc.errors()[0]['msg']}"
            tracing.tool_done(span, None, error=error)
            return None, None, error
        output = tool.search(parsed.query, parsed.max_results, parsed.focus_area)
        tracing.tool_done(span, parsed.model_dump(), output)
        return output, parsed.model_dump(), None


@dataclass(frozen=True)
class TurnContext:
    """A conversation's turn (module doc): `history`, the earlier turns as chat messages
    (`{"role": "user" | "assistant", "content": ...}`, oldest first); `first_search`, the
    retrieve_first policy's search, made by the caller with the turn's query built from the
    history; `subject`, that query, read by the support gate for the documents the turn names
    and its search again ("How much is its fee?" names nothing; the query carries "Blue
    Account"). The tool's session is the caller's: `run_agent` does not reset it."""

    history: Sequence[dict[str, str]] = ()
    first_search: ToolOutput | None = None
    subject: str | None = None


def _resolve(config: AgentConfig | None, **overrides: Any) -> AgentConfig:
    cfg = config or AgentConfig()
    given = {k: v for k, v in overrides.items() if v is not None}
    return AgentConfig.model_validate({**cfg.model_dump(), **given}) if given else cfg


def run_agent(question: str, chat: ChatModel, tool: AgenticRAGTool | None = None,
              config: AgentConfig | None = None, *, policy: Policy | None = None,
              mode: Literal["native", "json"] | None = None,
              max_steps: int | None = None, turn: TurnContext | None = None) -> AgentResult:
    """Answer `question` under `config` (default `AgentConfig()`); the keyword arguments
    override single fields of it (`run_agent(q, chat, tool, max_steps=3, mode="json")`).
    `turn`: a conversation's turn (`TurnContext`; `agent.session.run_turn` passes it)."""
    cfg = _resolve(config, policy=policy, mode=mode, max_steps=max_steps)
    if cfg.policy != "closed_book" and tool is None:
        raise ValueError(f"policy {cfg.policy!r} needs a tool (only closed_book runs without)")
    with tracing.invoke_agent(question, cfg.policy, cfg.mode) as span:
        res = _AgentRun(question, chat, tool, cfg, turn).run()
        tracing.agent_done(span, res)
    return res


class _AgentRun:
    """One question: the searches made so far, the steps taken, and the policy's control flow.

    Every turn is built afresh from the searches made so far (`_messages`): before any search,
    the question alone; after one, the passages of every search in the user turn, then the
    question, then the turn's instruction (answer, or choose the next JSON action). The
    1.5B model answered from passages there; from `tool` messages or after its own JSON
    actions it abstained (experiments/agent-runs/README.md, agent-v5 and agent-v6)."""

    def __init__(self, question: str, chat: ChatModel, tool: AgenticRAGTool | None,
                 cfg: AgentConfig, turn: TurnContext | None = None) -> None:
        self.question, self.chat, self.tool, self.cfg = question, chat, tool, cfg
        self.history = list(turn.history) if turn is not None else []
        self.first_search = turn.first_search if turn is not None else None
        # what the gate reads for the documents named and its search again: in a conversation
        # the turn's query, which carries the subject a follow-up leaves out
        self.subject = turn.subject if turn is not None and turn.subject else question
        if tool is not None and turn is None:
            tool.reset()  # a session per question: no history penalty from earlier questions
        self.native = cfg.mode == "native"
        self.steps: list[AgentStep] = []
        self.action_failures = 0
        self.searches: list[ToolOutput] = []  # served outputs, in order
        self.failed: list[str] = []  # errors of search calls that could not run
        self.t0 = time.perf_counter()

    # ---- the prompt of each turn ------------------------------------------------------------
    def _messages(self, turn: Literal["decide", "answer"]) -> list[dict[str, Any]]:
        if turn == "answer":
            system = SYSTEM_ANSWER
        else:
            system = SYSTEM_NATIVE if self.native else SYSTEM_JSON
        notes = "".join(f"\n\n(A search_documents call failed: {e})" for e in self.failed)
        head = [{"role": "system", "content": system}, *self.history]
        if not self.searches:
            return [*head, {"role": "user", "content": self.question + notes}]
        if turn == "decide" and not self.native:
            queries = "; ".join(json.dumps(s.query_used) for s in self.searches)
            after = DECIDE_JSON.format(question=self.question, queries=queries)
        else:
            after = PROMPT_AFTER.format(question=self.question)
        passages = "\n\n".join(s.content for s in self.searches)
        return [*head, {"role": "user", "content": PASSAGES + passages + notes + after}]

    # ---- results --------------------------------------------------------------------------
    def _build(self, answer: str, stop_reason: str, error: str | None = None) -> AgentResult:
        answer = answer.strip()
        cite_map = {citation_id(c): c for s in self.steps if s.tool for c in s.tool.chunk_ids}
        cites = parse_citations(answer)
        return AgentResult(
            question=self.question, answer=answer, stop_reason=stop_reason,  # type: ignore[arg-type]
            policy=self.cfg.policy, mode=self.cfg.mode, steps=list(self.steps), error=error,
            latency_s=time.perf_counter() - self.t0, citations=cites,
            cited_chunks=[cite_map[c] for c in cites if c in cite_map],
            invalid_citations=[c for c in cites if c not in cite_map],
            action_failures=self.action_failures)

    def _result(self, answer: str, stop_reason: str, error: str | None = None) -> AgentResult:
        res = self._gate(self._build(answer, stop_reason, error))
        return res.model_copy(update=answer_support(res, self.searches, self.chat,
                                                    self.cfg.support))

    # ---- the support gate (agent/gate.py) ---------------------------------------------------
    def _gate(self, res: AgentResult) -> AgentResult:
        """The figure-and-product check on an answer, and the action of `on_unsupported`."""
        if (not self.searches or not res.answer or res.abstained
                or res.stop_reason in ("llm_error", "invalid_action", "nothing_found")):
            return res
        need, numbers = self.cfg.support.amount_needs_figure, self.cfg.support.passage_numbers
        check = gate.check_answer(self.question, res.answer, res.cited_chunks, self.searches, [],
                                  need, numbers)
        if not check.figures and check.ok:  # nothing to check: no index lookup
            return res.model_copy(update={"gate_action": "none"})
        named = gate.named_documents(self.tool, self.subject)
        check = gate.check_answer(self.question, res.answer, res.cited_chunks, self.searches,
                                  named, need, numbers)
        action = self.cfg.support.on_unsupported
        fields = {"figures": list(check.figures), "named_documents": named,
                  "figures_unsupported": list(check.unsupported),
                  "figures_wrong_product": list(check.wrong_product)}
        if check.ok:
            return res.model_copy(update={**fields, "gate_action": "none"})
        notes = [f"figure check failed: {gate.describe(check)}"]
        if action == "flag":
            return res.model_copy(update={**fields, "gate_action": "flag", "gate_notes": notes})
        query = gate.retry_query(self.subject, named)
        if action == "retry":
            res, check, more = self._retry(res, check, query, named)
            notes += more
            if check.ok:
                return res.model_copy(update={
                    "figures": list(check.figures), "named_documents": named,
                    "gate_action": "retry", "gate_notes": notes})
        notes.append("not found: answered I don't know")
        out = self._build(gate.abstention(self.question, query, named), res.stop_reason)
        return out.model_copy(update={**fields, "gate_action": action, "gate_notes": notes})

    def _retry(self, res: AgentResult, check, query: str,  # noqa: ANN001 - FigureCheck
               named: list[str]) -> tuple[AgentResult, object, list[str]]:
        """One more search for the missing fact, one more answer, checked again."""
        n = max((s.step for s in self.steps), default=0) + 1
        try:
            with tracing.execute_tool(TOOL_NAME, "gate") as span:
                if named and hasattr(self.tool, "search_within"):
                    output = self.tool.search_within(query, named)
                else:
                    output = self.tool.search(query)
                tracing.tool_done(span, {"query": query}, output)
        except Exception as exc:  # noqa: BLE001 - a failed retry search: say so, abstain
            return res, check, [f"the search again for {query!r} failed: {exc!r}"]
        self._record(n, "gate", {"query": query}, output)
        notes = [f"searched again for {query!r}"]
        messages = self._messages("answer")
        messages[-1]["content"] += gate.retry_note(check, named)
        try:
            reply = self.chat.chat(messages, max_tokens=self.cfg.answer_max_tokens)
        except LLMError as exc:
            return res, check, [*notes, f"the answer again failed: {exc.kind}"]
        self.steps.append(AgentStep(step=n + 1, kind="answer", via="gate", **_usage(reply)))
        again = self._build(reply.content, res.stop_reason)
        if again.abstained:
            return again, check, [*notes, "the model answered I don't know"]
        check2 = gate.check_answer(self.question, again.answer, again.cited_chunks,
                                   self.searches, named, self.cfg.support.amount_needs_figure,
                                   self.cfg.support.passage_numbers)
        notes.append("answered again: " + (f"still {gate.describe(check2)}" if not check2.ok
                                            else "every figure now in a cited passage"
                                            if check2.figures else "no figure to check"))
        return again, check2, notes

    def _llm_error(self, exc: LLMError) -> AgentResult:
        return self._result("", "llm_error", f"{exc.kind}: {exc}")

    # ---- control flow ---------------------------------------------------------------------
    def run(self) -> AgentResult:
        if self.cfg.policy == "closed_book":
            return self._closed_book()
        if self.cfg.policy == "retrieve_first":
            output = self.first_search  # a conversation's turn made it (and its span)
            if output is None:
                with tracing.execute_tool(TOOL_NAME, "policy") as span:
                    output = self.tool.search(self.question)
                    tracing.tool_done(span, {"query": output.query_used}, output)
            self._record(0, "policy", {"query": output.query_used}, output)
        decisions = max(self.cfg.max_steps - 1, 1 if self.cfg.policy == "tool_required" else 0)
        for n in range(1, decisions + 1):
            try:
                if n == 1 and self.cfg.policy == "tool_required":
                    done = self._forced_search(n)
                else:
                    done = self._decide(n)
            except LLMError as exc:
                return self._llm_error(exc)
            if isinstance(done, AgentResult):
                return done
        return self._final_answer(decisions + 1, "max_steps" if decisions else "answer")

    def _closed_book(self) -> AgentResult:
        try:
            reply = self.chat.chat([{"role": "system", "content": SYSTEM_CLOSED}, *self.history,
                                    {"role": "user", "content": self.question}],
                                   max_tokens=self.cfg.answer_max_tokens)
        except LLMError as exc:
            return self._llm_error(exc)
        self.steps.append(AgentStep(step=1, kind="answer", via="closed_book", **_usage(reply)))
        return self._result(reply.content, "answer")

    def _searched_nothing(self) -> bool:
        return bool(self.searches) and not any(s.chunk_ids for s in self.searches)

    def _final_answer(self, n: int, stop_reason: str) -> AgentResult:
        if self._searched_nothing():
            return self._result(NOTHING_FOUND, "nothing_found")
        try:
            reply = self.chat.chat(self._messages("answer"),
                                   max_tokens=self.cfg.answer_max_tokens)
        except LLMError as exc:
            return self._llm_error(exc)
        self.steps.append(AgentStep(step=n, kind="answer", via=self.cfg.mode, **_usage(reply)))
        return self._result(reply.content, stop_reason)

    def _decide(self, n: int) -> AgentResult | None:
        """One decision turn: a search (returns None, the loop goes on) or the answer."""
        if self.native:
            reply = self.chat.chat(self._messages("decide"), tools=[self.tool.openai_schema()],
                                   max_tokens=self.cfg.answer_max_tokens)
            call = _native_call(reply)
            if call is None:
                self.steps.append(AgentStep(step=n, kind="answer", via="native", **_usage(reply)))
                if self._searched_nothing():
                    return self._result(NOTHING_FOUND, "nothing_found")
                return self._result(reply.content, "answer")
            via, args = call
            self._execute(n, via, args, reply)
            return None
        action = self._json_action(n, self._messages("decide"), action_schema())
        if isinstance(action, AgentResult):
            return action
        data, reply = action
        if data["action"] == "answer":
            self.steps.append(AgentStep(step=n, kind="answer", via="json_action", arguments=data,
                                        **_usage(reply)))
            return self._final_answer(n + 1, "answer")
        self._execute(n, "json", {"query": data["query"]}, reply)
        return None

    def _forced_search(self, n: int) -> AgentResult | None:
        """tool_required: the first turn is a search, whatever the model would prefer."""
        messages = self._messages("decide")
        if self.native:
            try:
                reply = self.chat.chat(
                    messages, tools=[self.tool.openai_schema()],
                    tool_choice={"type": "function", "function": {"name": TOOL_NAME}},
                    max_tokens=self.cfg.action_max_tokens)
            except LLMError as exc:
                if exc.kind != "refused":
                    raise
                reply = None  # the server does not take tool_choice: constrained JSON below
            call = _native_call(reply) if reply is not None else None
            if call is not None:
                via, args = call
                self._execute(n, "tool_choice" if via == "native" else via, args, reply)
                return None
        action = self._json_action(n, [*messages, {"role": "user", "content": FORCE_SEARCH_JSON}],
                                   action_schema(search_only=True))
        if isinstance(action, AgentResult):
            return action
        data, reply = action
        self._execute(n, "json_forced", {"query": data["query"]}, reply)
        return None

    # ---- JSON actions -----------------------------------------------------------------------
    def _json_action(self, n: int, messages: list[dict[str, Any]],
                     schema: dict) -> tuple[dict, ChatReply] | AgentResult:
        """A schema-constrained action; a malformed one is retried once with a corrective
        message, then counted as a failure that ends the run."""
        error = ""
        for attempt in range(2):
            turn = messages if attempt == 0 else [*messages, {"role": "user", "content": FIX_ACTION}]
            try:
                reply = self.chat.chat(turn, json_schema=schema, retry_malformed=False,
                                       max_tokens=self.cfg.action_max_tokens)
            except LLMError as exc:
                if exc.kind != "malformed":
                    raise
                error = str(exc)
                continue
            data = _valid_action(reply, schema)
            if data is not None:
                return data, reply
            error = f"invalid action: {reply.content[:200]!r}"
        self.action_failures += 1
        self.steps.append(AgentStep(step=n, kind="invalid_call", via="json", error=error))
        return self._result("", "invalid_action", error)

    # ---- tool execution -----------------------------------------------------------------
    def _execute(self, n: int, via: str, args: Any, reply: ChatReply) -> None:
        output, parsed, error = _run_tool(self.tool, args, via)
        if output is None:
            self.steps.append(AgentStep(step=n, kind="invalid_call", via=via, error=error,
                                        **_usage(reply)))
            self.failed.append(error)
            return
        self._record(n, via, parsed, output, reply)

    def _record(self, n: int, via: str, args: dict, output: ToolOutput,
                reply: ChatReply | None = None) -> None:
        usage = _usage(reply) if reply is not None else {}
        self.steps.append(AgentStep(step=n, kind="tool_call", via=via, arguments=args,
                                    tool=output, **usage))
        self.searches.append(output)


def _valid_action(reply: ChatReply, schema: dict) -> dict | None:
    try:
        data = reply.json()
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(data, dict):
        return None
    allowed = schema["properties"]["action"]["enum"]
    if data.get("action") not in allowed:
        return None
    if data["action"] == "search":
        query = str(data.get("query") or "").strip()
        if not query or len(query) > ACTION_QUERY_MAX_CHARS:
            return None
        data = {**data, "query": query}
    return data


def _native_call(reply: ChatReply) -> tuple[str, Any] | None:
    """(via, arguments) of the first tool call in a native reply, or None."""
    for c in reply.tool_calls:
        if c.name == TOOL_NAME:
            return "native", c.arguments
    data = _json_call_in_text(reply.content or "")
    if data is not None:
        return "tool_call_text", data.get("arguments") or data.get("parameters") or {}
    return None


def _json_call_in_text(text: str) -> dict | None:
    """A tool call written as text: `<tool_call>{...}</tool_call>` (Qwen's format) or a bare /
    fenced JSON object `{"name": "search_documents", "arguments": {...}}`."""
    m = _TOOL_CALL_TEXT.search(text)
    candidates = [m.start(1)] if m else [i for i, ch in enumerate(text) if ch == "{"][:20]
    decoder = json.JSONDecoder()
    for start in candidates:
        try:
            data, _ = decoder.raw_decode(text[start:])
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and data.get("name") == TOOL_NAME:
            return data
    return None
