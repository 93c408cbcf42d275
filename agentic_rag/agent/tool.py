"""The retrieval tool an LLM agent calls: `search_documents`.

Its OpenAI tool schema is generated from the pydantic input model, never written
by hand. One tool instance is one agent session: it remembers the queries it ran
and the chunks it served, for de-duplication and the history penalty.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentic_rag.retrieve.pipeline import Pipeline

TOOL_NAME = "search_documents"
QUERY_MAX_CHARS = 200  # in the schema the model sees: a grammar-constrained call stays short


class SearchInput(BaseModel):
    """Search the documentation and return the most relevant passages with their sources."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(..., min_length=1, description="what to look for, in a few words",
                       json_schema_extra={"maxLength": QUERY_MAX_CHARS})
    max_results: int = Field(5, ge=1, le=20, description="how many passages to return")
    focus_area: Literal["any", "code", "procedure", "data", "fact"] = Field(
        "any", description="code examples, step-by-step procedures, data/table values, or facts")


class ToolOutput(BaseModel):
    model_config = ConfigDict(frozen=True)

    content: str  # what the agent reads
    chunk_ids: list[str]
    intent: str
    query_used: str
    iterations: int
    stop_reason: str
    confidence: float
    context_tokens: int
    duplicate_of: str | None = None


class AgenticRAGTool:
    name = TOOL_NAME

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.previous_queries: list[str] = []
        self.served: set[str] = set()

    def reset(self) -> None:
        """Start a new search session: forget the queries made and the chunks served (the
        history penalty and the "already searched" note apply within one session).
        `run_agent` calls it first, so one question is one session whoever held the tool."""
        self.previous_queries.clear()
        self.served.clear()

    @staticmethod
    def openai_schema() -> dict[str, Any]:
        params = SearchInput.model_json_schema()
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        return {"type": "function",
                "function": {"name": TOOL_NAME, "description": SearchInput.__doc__.strip(),
                             "parameters": params}}

    def __call__(self, arguments: dict[str, Any] | str) -> ToolOutput:
        args = SearchInput.model_validate_json(arguments) if isinstance(arguments, str) \
            else SearchInput.model_validate(arguments)
        return self.search(args.query, args.max_results, args.focus_area)

    def search_within(self, query: str, doc_ids: list[str], max_results: int = 5) -> ToolOutput:
        """One search restricted to `doc_ids` (the support gate's retry: the documents about
        what the question names), fused as configured, formatted like `search`."""
        ev = self.pipeline.fusion().evidence(query, max_results, {"doc_id": list(doc_ids)},
                                             None, "hard")
        seen = [h for h in ev.hits if h.chunk.id not in self.served] or ev.hits
        ctx = self.pipeline.format(seen[:max_results])
        self.previous_queries.append(query)
        self.served.update(ctx.included)
        return ToolOutput(content=ctx.text or "No relevant passages found.",
                          chunk_ids=ctx.included, intent="fact", query_used=query,
                          iterations=1, stop_reason="within_named", confidence=0.0,
                          context_tokens=ctx.tokens)

    def search(self, query: str, max_results: int = 5, focus_area: str = "any") -> ToolOutput:
        args = SearchInput(query=query, max_results=max_results, focus_area=focus_area)
        state = {} if args.focus_area == "any" else {"task_type": args.focus_area}
        intent, result = self.pipeline.retrieve(args.query, state, self.previous_queries,
                                                self.served, k=args.max_results)
        hits = result.hits[:args.max_results]
        ctx = self.pipeline.format(hits, intent)
        self.previous_queries.append(intent.query)
        self.served.update(ctx.included)
        content = ctx.text or "No relevant passages found."
        if intent.duplicate_of:
            content = (f"(You already searched for {intent.duplicate_of!r}; passages you have seen "
                       f"are ranked lower.)\n\n{content}")
        return ToolOutput(content=content, chunk_ids=ctx.included, intent=intent.intent,
                          query_used=intent.query, iterations=result.iterations,
                          stop_reason=result.stop_reason, confidence=result.confidence,
                          context_tokens=ctx.tokens, duplicate_of=intent.duplicate_of)
