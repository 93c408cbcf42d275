"""Serve an exported pipeline to agents: `search_documents` over MCP, and `POST /search`.
Here: the served pipeline, input checks, sessions and the MCP server; the HTTP transport is
in `serve.http`, the MCP client tool for `run_agent` in `serve.client`.

    agentic-rag serve --config best-config.yaml                 # MCP over stdio
    agentic-rag serve --config best-config.yaml --http --port 8800
        # MCP (streamable HTTP) at http://127.0.0.1:8800/mcp, plain JSON at POST /search

The served pipeline is the one `Pipeline.from_config` rebuilds from the exported file; its
index is opened, never built: no document is chunked, embedded, added or removed
(`ServedPipeline.open` refuses a home without an index and names the `agentic-rag index`
command that builds it; only BM25, derived data, is rebuilt from the store when stale, as
every reader of an index does). Every answer is `AgenticRAGTool`'s
own output — the same formatted, cited context an in-process agent reads.

- Tools and resources (official MCP SDK, low-level `Server`): `search_documents`, whose input
  schema is `AgenticRAGTool.openai_schema()`'s and whose structured result is a `ToolOutput`;
  the resource `agentic-rag://index` describes the index (documents, chunks by type, config
  hash, the export's provenance). Plain HTTP: `POST /search`, `GET /index`.
- Bad input (an unknown argument, an empty or over-long query, `max_results` out of range)
  is a tool error (MCP `isError`) or HTTP 400 whose message names the field and the value;
  the server keeps serving.
- Search sessions (the queries made and the chunks served, which drive the history penalty
  and the "already searched" note) never mix clients. A session is chosen per call:
  the handle the client passes (MCP: `_meta["agentic-rag/session"]`; HTTP: `session_id` in
  the body) — `MCPSearchTool` sends a fresh random one per agent question; else the stdio
  connection (one client per server process); else the streamable-HTTP `Mcp-Session-Id` of
  a handshake-era (2025) client; else none: the call is stateless. The 2026-07-28 protocol
  has no sessions, so a modern HTTP client that wants one passes a handle.
- Concurrency: calls run in worker threads, but the retrieval itself is serialised by one
  lock and runs on one thread — the pipeline's lazy parts, its candidate memo and the
  embedding model are not known to be thread-safe, and on a CPU box parallel encoding gains
  little. Concurrent calls therefore return exactly what the same calls return one after
  the other.
- Binding: 127.0.0.1 by default. Any other address needs a bearer token
  (`Authorization: Bearer ...`), checked on every HTTP request. A loopback server also
  refuses requests whose Host header is not a loopback name (DNS rebinding).
- Memory: with `memory_limit_mb` (`--memory-limit-mb`), a call is refused — HTTP 503, an MCP
  error result — while the process's resident memory is over the limit, and so is a search
  that fails to allocate; the server keeps serving and answers again once memory is back
  under the limit (`serve.guard`).
- Logging: one line per call (session kind, arguments' sizes, chunks, milliseconds); the
  query text only with `log_queries=True` (`--log-queries`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import Counter, OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agentic_rag.agent.tool import QUERY_MAX_CHARS, TOOL_NAME, AgenticRAGTool, SearchInput, ToolOutput
from agentic_rag.config import RAGConfig
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.serve.guard import MemoryGuard, Overloaded, is_out_of_memory

log = logging.getLogger(__name__)

SESSION_META_KEY = "agentic-rag/session"  # MCP `_meta` key of a client-chosen session handle
SESSION_MAX_CHARS = 128
INDEX_URI = "agentic-rag://index"
MAX_SESSIONS = 1024  # search sessions kept (least recently used dropped first)
LOOPBACK = ("127.0.0.1", "localhost", "::1")
TOKEN_ENV = "AGENTIC_RAG_SERVE_TOKEN"


class IndexMissing(RuntimeError):
    """The config's home holds no index; the message names the command that builds it."""


class SearchError(ValueError):
    """Arguments the tool refuses; the message names the field and the value."""


# ---- input ------------------------------------------------------------------------------
def _shown(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def parse_search(arguments: Any) -> SearchInput:
    """`SearchInput` from a call's arguments, or a `SearchError` that says what is wrong.
    Beyond the model: a query of blanks is empty, and the schema's `maxLength` is enforced."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise SearchError(f"arguments are not JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise SearchError(f"arguments must be an object, got {type(arguments).__name__}")
    try:
        args = SearchInput.model_validate(arguments)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = ".".join(str(p) for p in err["loc"]) or "arguments"
            if err["type"] == "extra_forbidden":
                allowed = ", ".join(SearchInput.model_fields)
                problems.append(f"unknown argument {name!r} (allowed: {allowed})")
            elif err["type"] == "missing":
                problems.append(f"{name}: required")
            else:
                problems.append(f"{name}: {err['msg']} (got {_shown(err.get('input'))})")
        raise SearchError("invalid arguments: " + "; ".join(problems)) from None
    if not args.query.strip():
        raise SearchError(f"invalid arguments: query: empty (got {_shown(args.query)})")
    if len(args.query) > QUERY_MAX_CHARS:
        raise SearchError(f"invalid arguments: query: {len(args.query)} characters, the limit "
                          f"is {QUERY_MAX_CHARS} (a few words: {_shown(args.query)})")
    return args


def session_handle(value: Any, where: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= SESSION_MAX_CHARS:
        raise SearchError(f"{where}: a session handle is a string of 1-{SESSION_MAX_CHARS} "
                          f"characters (got {_shown(value)})")
    return value


# ---- the served pipeline ----------------------------------------------------------------
def _provenance(path: Path) -> dict[str, Any] | None:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))  # JSON is YAML too
    except (OSError, yaml.YAMLError):
        return None
    prov = data.get("provenance") if isinstance(data, dict) else None
    return prov if isinstance(prov, dict) else None


def _index_command(config_path: Path | None, home: str | Path | None) -> str:
    cmd = "agentic-rag index PATH..."
    if config_path is not None:
        cmd += f" --config {config_path}"
    if home is not None:
        cmd += f" --home {home}"
    return f"`{cmd}` (or --corpus NAME instead of PATH...)"


def check_index(cfg: RAGConfig, config_path: Path | None = None,
                home: str | Path | None = None) -> None:
    """Raise `IndexMissing` unless `cfg`'s store folder exists (nothing is created here)."""
    if cfg.store.kind == "qdrant" and cfg.store.url:
        return  # a server store: its emptiness is checked once opened
    store = Path(cfg.store.path) if cfg.store.path else Path(cfg.home) / f"store-{cfg.store.kind}"
    if not store.exists():
        raise IndexMissing(f"no index at {cfg.home} (no {store}): build it first with "
                           f"{_index_command(config_path, home)}; serve opens an index, "
                           "it never builds one")


class ServedPipeline:
    """One opened `Pipeline` shared by many search sessions (an `AgenticRAGTool` each)."""

    def __init__(self, pipeline: Pipeline, *, provenance: dict[str, Any] | None = None,
                 config_path: str | Path | None = None, log_queries: bool = False,
                 max_sessions: int = MAX_SESSIONS, memory_limit_mb: float | None = None) -> None:
        self.pipeline = pipeline
        self.guard = MemoryGuard(memory_limit_mb)
        self.provenance = provenance
        self.config_path = Path(config_path) if config_path else None
        self.log_queries = log_queries
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, AgenticRAGTool] = OrderedDict()
        self._sessions_lock = threading.Lock()
        self._search_lock = threading.Lock()  # retrieval runs one call at a time (module doc)
        # ... and always on the same thread: memory a thread keeps after running the model
        # (allocator arenas, per-thread buffers) is then kept once, not once per worker thread
        self._search_thread = ThreadPoolExecutor(1, thread_name_prefix="agentic-rag-search")
        self._described: tuple[int, dict[str, Any]] | None = None

    @classmethod
    def open(cls, config: str | Path, home: str | Path | None = None,
             **kw: Any) -> ServedPipeline:
        """Load the exported config, open its index (refusing a missing or empty one) and
        warm it (`warm`) before the first call."""
        path = Path(config)
        cfg = RAGConfig.load(path)  # ConfigError names the file, the field and the value
        if home is not None:
            cfg = cfg.with_overrides({"home": str(home)})
        check_index(cfg, path, home)
        pipeline = Pipeline.from_config(cfg)
        if pipeline.index.count() == 0:
            raise IndexMissing(f"the index at {cfg.home} is empty: add documents with "
                               f"{_index_command(path, home)}")
        served = cls(pipeline, provenance=_provenance(path), config_path=path, **kw)
        served.warm()
        return served

    def warm(self) -> ServedPipeline:
        """Load BM25 and the embedding model, and (when retrieving calls no LLM) run one
        search on the search thread in a throw-away session, so that the parts built on first
        use exist before the first client: its latency does not pay for them, and the resident
        size at rest is the working set (what `memory_limit_mb` must leave room for)."""
        if self.pipeline.config.lexical.enabled:
            len(self.pipeline.index.lexical)
        if self.pipeline.config.retrieval_calls_llm:
            self.pipeline.index.embed_query("warm up")
        else:
            self._search_thread.submit(AgenticRAGTool(self.pipeline).search, "warm up").result()
        return self

    # -- sessions --------------------------------------------------------------------
    def session(self, key: str | None) -> AgenticRAGTool:
        """The search session `key` (created on first use), or a fresh one for None."""
        if key is None:
            return AgenticRAGTool(self.pipeline)
        with self._sessions_lock:
            tool = self._sessions.get(key)
            if tool is None:
                tool = self._sessions[key] = AgenticRAGTool(self.pipeline)
                while len(self._sessions) > self.max_sessions:
                    self._sessions.popitem(last=False)
            self._sessions.move_to_end(key)
            return tool

    # -- calls -----------------------------------------------------------------------
    def search(self, arguments: Any, session: str | None = None, via: str = "") -> ToolOutput:
        """Validate, then run `AgenticRAGTool.search` in the session; `SearchError` on bad
        arguments, `Overloaded` while memory is over the guard's limit or when the search
        runs out of memory. Blocking: the MCP and HTTP handlers call it in a worker thread."""
        args = parse_search(arguments)
        self.guard.check()
        tool = self.session(session)
        t0 = time.perf_counter()
        with self._search_lock:
            self.guard.check()  # again: memory may have grown while this call waited
            try:
                out = self._search_thread.submit(tool.search, args.query, args.max_results,
                                                 args.focus_area).result()
            except Exception as exc:
                if is_out_of_memory(exc):
                    raise self.guard.refuse_oom(exc) from exc
                raise
        ms = (time.perf_counter() - t0) * 1000
        what = f"query={args.query!r}" if self.log_queries else f"query_chars={len(args.query)}"
        log.info("search via=%s session=%s %s max_results=%d focus_area=%s chunks=%d "
                 "confidence=%.3f ms=%.1f", via or "-", "yes" if session else "none", what,
                 args.max_results, args.focus_area, len(out.chunk_ids), out.confidence, ms)
        return out

    def describe(self) -> dict[str, Any]:
        """What is served: the index's documents and chunks, the config and its provenance."""
        index = self.pipeline.index
        version = index.version()
        if self._described is None or self._described[0] != version:
            with self._search_lock:
                chunks = index.store.get()
            by_type = Counter(c.chunk_type for c in chunks)
            cfg = self.pipeline.config
            self._described = (version, {
                "config": str(self.config_path) if self.config_path else None,
                "config_hash": cfg.config_hash(), "home": cfg.home, "index_version": version,
                "documents": len({c.doc_id for c in chunks}), "chunks": len(chunks),
                "chunks_by_type": dict(sorted(by_type.items())),
                "embedding": cfg.embedding.model, "store": cfg.store.kind,
                "retrievers": list(cfg.fusion.retrievers), "gate": cfg.gate.mode,
                "context_max_tokens": cfg.context.max_tokens, "provenance": self.provenance,
                "tool": TOOL_NAME})
        return self._described[1]


# ---- MCP --------------------------------------------------------------------------------
def tool_definition() -> dict[str, Any]:
    """`search_documents` as MCP lists it: `AgenticRAGTool`'s own schema and description."""
    fn = AgenticRAGTool.openai_schema()["function"]
    output = ToolOutput.model_json_schema()
    output.pop("title", None)
    return {"name": TOOL_NAME, "description": fn["description"], "input_schema": fn["parameters"],
            "output_schema": output}


def mcp_server(served: ServedPipeline, transport: str = "stdio"):  # noqa: ANN201
    """The MCP `Server` (SDK low-level API) exposing `served`. `transport` ("stdio" or
    "http") decides what a call without a session handle belongs to (module doc)."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    tool = types.Tool(**tool_definition())
    stdio_key = f"stdio:{uuid.uuid4().hex}"

    def session_key(ctx: Any, params: types.CallToolRequestParams) -> str | None:
        meta = params.meta or {}
        if SESSION_META_KEY in meta:
            return "mcp:" + session_handle(meta[SESSION_META_KEY], f"_meta[{SESSION_META_KEY!r}]")
        if transport == "stdio":
            return stdio_key
        request = getattr(ctx, "request", None)
        sid = request.headers.get("mcp-session-id") if request is not None else None
        return f"mcp-http:{sid}" if sid else None

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != TOOL_NAME:
            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"unknown tool {params.name!r}; this server has {TOOL_NAME!r}")
        try:
            key = session_key(ctx, params)
            out = await anyio.to_thread.run_sync(served.search, params.arguments or {}, key,
                                                 f"mcp-{transport}")
        except (SearchError, Overloaded) as exc:
            if isinstance(exc, Overloaded):
                log.warning("search_documents refused: %s", exc)
            return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
        except Exception as exc:  # noqa: BLE001 - reported to the caller, the server stays up
            log.exception("search_documents failed")
            return types.CallToolResult(
                content=[types.TextContent(text=f"search failed: {type(exc).__name__}: {exc}")],
                is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=out.content)],
                                    structured_content=out.model_dump(mode="json"))

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(
            uri=INDEX_URI, name="index", mime_type="application/json",
            description="the served index: documents, chunks by type, config hash, provenance")])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        if str(params.uri) != INDEX_URI:
            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"unknown resource {str(params.uri)!r}; have {INDEX_URI!r}")
        info = await anyio.to_thread.run_sync(served.describe)
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=INDEX_URI, mime_type="application/json", text=json.dumps(info, indent=1))])

    from importlib.metadata import version

    return Server("agentic-rag", version=version("agentic-rag"),
                  instructions="search_documents searches the documentation and returns cited "
                               "passages; cite a passage by the id in its header.",
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource)


async def serve_stdio(served: ServedPipeline) -> None:
    from mcp.server.stdio import stdio_server

    server = mcp_server(served, "stdio")
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


# ---- HTTP: MCP (streamable HTTP) + POST /search -----------------------------------------
