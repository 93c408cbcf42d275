"""A minimal agent loop: the model calls `search_documents` until it can answer.

Two ways to call the tool, because small local models often lack native tool calls:

- `native`: chat completions with `tools=[search_documents]`; the reply's
  `tool_calls` are executed and fed back as `tool` messages. A model whose server
  returns the call as text (Qwen's `<tool_call>{...}</tool_call>`, or a JSON object
  `{"name": "search_documents", "arguments": ...}`, as llama.cpp's server does with
  the GGUF's own chat template) is understood too.
- `json`: a JSON-action prompt, `{"action": "search", "query": ...}` or
  `{"action": "answer", "answer": ...}`, constrained by a JSON schema.

The loop stops on a final answer or after `max_steps` (the last step asks for an
answer without tools). It returns the answer and a trace: every step's tool call,
retrieval iterations, tokens and latency. A failed LLM call ends the run with
`stop_reason="llm_error"` and the error recorded — never a made-up answer.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .llm import ChatModel, ChatReply, LLMError
from .tool import TOOL_NAME, AgenticRAGTool, SearchInput, ToolOutput

SYSTEM_NATIVE = (
    "You answer questions using only the documentation. Call the search_documents tool to "
    "find passages, then answer briefly, citing sources. If the passages do not contain the "
    "answer, say you don't know.")
SYSTEM_JSON = (
    "You answer questions using only the documentation. Each turn, reply with JSON only:\n"
    '{"action": "search", "query": "<a few words>", "focus_area": "any|code|procedure|data|fact"}'
    " to search the documentation, or\n"
    '{"action": "answer", "answer": "<brief answer citing sources>"} when you can answer. '
    "If the passages do not contain the answer, answer that you don't know.")
FORCE_ANSWER = "Answer the question now, using only the passages above."

_ACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["search", "answer"]},
        "query": {"type": "string"},
        "focus_area": {"type": "string", "enum": ["any", "code", "procedure", "data", "fact"]},
        "answer": {"type": "string"},
    },
    "required": ["action"],
}
_TOOL_CALL_TEXT = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


class AgentStep(BaseModel):
    model_config = ConfigDict(frozen=True)

    step: int
    kind: Literal["tool_call", "answer", "invalid_call"]
    via: str  # native | tool_call_text | json
    arguments: dict[str, Any] | None = None
    tool: ToolOutput | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0


class AgentResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    question: str
    answer: str
    stop_reason: Literal["answer", "max_steps", "llm_error"]
    steps: list[AgentStep] = Field(default_factory=list)
    error: str | None = None
    latency_s: float = 0.0

    @property
    def tool_calls(self) -> int:
        return sum(1 for s in self.steps if s.kind == "tool_call")

    @property
    def retrieval_iterations(self) -> int:
        return sum(s.tool.iterations for s in self.steps if s.tool)

    @property
    def prompt_tokens(self) -> int:
        return sum(s.prompt_tokens for s in self.steps)

    @property
    def completion_tokens(self) -> int:
        return sum(s.completion_tokens for s in self.steps)

    @property
    def context_tokens(self) -> int:
        return sum(s.tool.context_tokens for s in self.steps if s.tool)


def _usage(reply: ChatReply) -> dict[str, Any]:
    return {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "latency_s": reply.latency_s}


def _run_tool(tool: AgenticRAGTool, args: Any) -> tuple[ToolOutput | None, dict | None, str | None]:
    try:
        parsed = SearchInput.model_validate_json(args) if isinstance(args, str) \
            else SearchInput.model_validate(args)
    except ValidationError as exc:
        return None, None, f"invalid arguments: {exc.errors()[0]['msg']}"
    return tool.search(parsed.query, parsed.max_results, parsed.focus_area), \
        parsed.model_dump(), None


def run_agent(question: str, chat: ChatModel, tool: AgenticRAGTool, max_steps: int = 4,
              mode: Literal["native", "json"] = "native") -> AgentResult:
    t0 = time.perf_counter()
    steps: list[AgentStep] = []
    native = mode == "native"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_NATIVE if native else SYSTEM_JSON},
        {"role": "user", "content": question}]
    for n in range(1, max_steps + 1):
        last = n == max_steps
        if last:
            messages.append({"role": "user", "content": FORCE_ANSWER +
                             ("" if native else ' Reply {"action": "answer", "answer": ...}.')})
        try:
            if native:
                reply = chat.chat(messages, tools=None if last else [tool.openai_schema()])
            else:
                reply = chat.chat(messages, json_schema=_ACTION_SCHEMA)
        except LLMError as exc:
            return AgentResult(question=question, answer="", stop_reason="llm_error", steps=steps,
                               error=f"{exc.kind}: {exc}", latency_s=time.perf_counter() - t0)

        call = _extract_call(reply, native)
        if call is None or last:
            answer = reply.content if native else _json_answer(reply)
            steps.append(AgentStep(step=n, kind="answer", via=mode, **_usage(reply)))
            return AgentResult(question=question, answer=answer.strip(),
                               stop_reason="answer" if call is None else "max_steps",
                               steps=steps, latency_s=time.perf_counter() - t0)
        via, call_id, args = call
        output, parsed, error = _run_tool(tool, args)
        steps.append(AgentStep(step=n, kind="tool_call" if output else "invalid_call", via=via,
                               arguments=parsed, tool=output, error=error, **_usage(reply)))
        result_text = output.content if output else f"Error: {error}"
        if via == "native":
            messages.append({"role": "assistant", "content": reply.content or None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": TOOL_NAME, "arguments": json.dumps(args)
                              if not isinstance(args, str) else args}}]})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result_text})
        else:
            messages.append({"role": "assistant", "content": reply.content})
            messages.append({"role": "user", "content": f"Search results:\n{result_text}"})
    raise AssertionError("unreachable: the last step always answers")


def _extract_call(reply: ChatReply, native: bool) -> tuple[str, str, Any] | None:
    """(via, call id, arguments) of the first tool call in the reply, or None for an answer."""
    if native:
        for c in reply.tool_calls:
            if c.name == TOOL_NAME:
                return "native", c.id, c.arguments
        data = _json_call_in_text(reply.content or "")
        if data is not None:
            return "tool_call_text", "call_text", data.get("arguments") or data.get("parameters") or {}
        return None
    data = reply.json()
    if isinstance(data, dict) and data.get("action") == "search" and data.get("query"):
        return "json", "json", {"query": data["query"],
                                "focus_area": data.get("focus_area", "any")}
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


def _json_answer(reply: ChatReply) -> str:
    data = reply.json()
    if isinstance(data, dict):
        return str(data.get("answer") or data.get("query") or "")
    return reply.content
