"""`MCPSearchTool`: the served `search_documents` as a tool `run_agent` can hold (the same call
interface as `AgenticRAGTool`), through the official MCP client."""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from typing import Any

from agentic_rag.agent.tool import TOOL_NAME, ToolOutput
from agentic_rag.serve.mcp import INDEX_URI, SESSION_META_KEY, SearchError

log = logging.getLogger("agentic_rag.serve.mcp")


class MCPSearchTool:
    """`AgenticRAGTool`'s call interface (`search`, `__call__`, `reset`, `openai_schema`) over an
    MCP connection, so `run_agent(question, chat, MCPSearchTool(url))` runs unchanged.
    `server`: a streamable-HTTP URL (…/mcp) or `mcp.StdioServerParameters`. Each `reset()`
    (run_agent calls it per question) starts a new server-side search session."""

    name = TOOL_NAME

    def __init__(self, server: Any, token: str | None = None) -> None:
        self.server = server
        self.token = token
        self.session_id = uuid.uuid4().hex
        self._stack: contextlib.ExitStack | None = None
        self._portal: Any = None
        self._client: Any = None
        self._tool: Any = None

    def open(self) -> MCPSearchTool:
        from anyio.from_thread import start_blocking_portal
        from mcp import Client

        target = self.server
        if isinstance(target, str) and self.token:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            http = create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
            target = streamable_http_client(target, http_client=http)
        stack = contextlib.ExitStack()
        try:
            self._portal = stack.enter_context(start_blocking_portal())
            self._client = stack.enter_context(self._portal.wrap_async_context_manager(
                Client(target)))
            tools = self._portal.call(self._client.list_tools).tools
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        found = [t for t in tools if t.name == TOOL_NAME]
        if not found:
            self.close()
            raise RuntimeError(f"{self.server}: the server lists no {TOOL_NAME!r} tool "
                               f"(has {[t.name for t in tools]})")
        self._tool = found[0]
        return self

    def close(self) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack = self._portal = self._client = None

    def __enter__(self) -> MCPSearchTool:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reset(self) -> None:
        self.session_id = uuid.uuid4().hex

    def openai_schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": TOOL_NAME,
                                                 "description": self._tool.description,
                                                 "parameters": self._tool.input_schema}}

    def _call(self, arguments: dict[str, Any]) -> ToolOutput:
        if self._client is None:
            raise RuntimeError("MCPSearchTool is not open: use `with MCPSearchTool(...) as tool`")
        from functools import partial

        res = self._portal.call(partial(self._client.call_tool, TOOL_NAME, arguments,
                                        meta={SESSION_META_KEY: self.session_id}))
        if res.is_error:
            raise SearchError(" ".join(getattr(c, "text", "") for c in res.content))
        return ToolOutput.model_validate(res.structured_content)

    def search(self, query: str, max_results: int = 5, focus_area: str = "any") -> ToolOutput:
        return self._call({"query": query, "max_results": max_results, "focus_area": focus_area})

    def __call__(self, arguments: dict[str, Any] | str) -> ToolOutput:
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError as exc:
                raise SearchError(f"arguments are not JSON: {exc}") from None
        return self._call(arguments)

    def describe(self) -> dict[str, Any]:
        res = self._portal.call(self._client.read_resource, INDEX_URI)
        return json.loads(res.contents[0].text)
