"""`agentic-rag serve`: the exported pipeline as an MCP server (stdio, or streamable HTTP with
`--http`) and a `POST /search` JSON endpoint. The logic is in `serve.py`."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.cli.app import HomeOpt, _fail, app
from agentic_rag.config_base import ConfigError


@app.command()
def serve(
    config: Annotated[Path, typer.Option("--config", "-c",
                                         help="the exported RAGConfig (agentic-rag export)")],
    home: HomeOpt = None,
    http: Annotated[bool, typer.Option(
        "--http", help="serve MCP over streamable HTTP (at /mcp) and POST /search, "
                       "instead of MCP over stdio")] = False,
    host: Annotated[str, typer.Option(help="--http: address to bind; not loopback needs a "
                                           "token")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="--http: port")] = 8800,
    token_env: Annotated[str, typer.Option(
        help="--http: NAME of the env var holding the bearer token; when it is set, every "
             "request must send it (required to bind a non-loopback address)")] = "AGENTIC_RAG_SERVE_TOKEN",
    log_queries: Annotated[bool, typer.Option(help="log query text (off: only sizes)")] = False,
    memory_limit_mb: Annotated[float | None, typer.Option(
        min=1, help="refuse searches (HTTP 503, an MCP error result) while the server's "
                    "resident memory is over this many MiB; it serves again once back under "
                    "(off by default)")] = None,
) -> None:
    """Serve the exported pipeline to agents: the `search_documents` tool over MCP and
    `POST /search`. The index is opened, never built: build it first with `agentic-rag index`."""
    from agentic_rag.serve.http import http_app, is_loopback
    from agentic_rag.serve.mcp import IndexMissing, ServedPipeline
    from agentic_rag.store.index import IndexLocked, IndexStateError

    # stdout carries the MCP stdio protocol: every log line goes to stderr
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    token = os.environ.get(token_env) or None
    if http and not is_loopback(host) and not token:
        _fail(f"--host {host} is not loopback: set a token in ${token_env} (clients send "
              "Authorization: Bearer <token>), or bind 127.0.0.1")
    try:
        served = ServedPipeline.open(config, home, log_queries=log_queries,
                                     memory_limit_mb=memory_limit_mb)
    except (ConfigError, IndexMissing, IndexLocked, IndexStateError) as exc:
        _fail(str(exc))
    info = served.describe()
    where = f"http://{host}:{port}/mcp and POST /search" if http else "MCP over stdio"
    typer.echo(f"serving {info['config']} (config {info['config_hash']}): {info['documents']} "
               f"documents, {info['chunks']} chunks in {info['home']}, on {where}"
               f"{' (token required)' if http and token else ''}", err=True)
    if http:
        import uvicorn

        uvicorn.run(http_app(served, host=host, token=token), host=host, port=port,
                    log_level="warning")
    else:
        import anyio

        from agentic_rag.serve.mcp import serve_stdio

        anyio.run(serve_stdio, served)
