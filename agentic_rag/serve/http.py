"""HTTP transport of `serve`: MCP over streamable HTTP at `/mcp`, `POST /search` and `GET
/index`, behind the loopback / bearer-token guard; `HttpServer` runs it in a thread. A search
refused by the memory guard (`serve.guard`) is HTTP 503 with `Retry-After`."""

from __future__ import annotations

import hmac
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from agentic_rag.serve.guard import RETRY_AFTER_S, Overloaded
from agentic_rag.serve.mcp import LOOPBACK, TOKEN_ENV, SearchError, ServedPipeline, mcp_server, session_handle

log = logging.getLogger("agentic_rag.serve.mcp")


def is_loopback(host: str) -> bool:
    return host in LOOPBACK


class _Guard:
    """ASGI wrapper: a bearer token on every HTTP request when one is set; on a loopback bind,
    only loopback Host headers (a web page cannot reach the server through DNS rebinding)."""

    def __init__(self, app: Any, token: str | None, loopback: bool) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.loopback = loopback

    async def _refuse(self, send: Any, status: int, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        headers = [(b"content-type", b"application/json")]
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if self.token is not None:
                given = headers.get(b"authorization", b"")
                if not hmac.compare_digest(given, b"Bearer " + self.token):
                    return await self._refuse(send, 401, "missing or wrong bearer token "
                                              "(send Authorization: Bearer <token>)")
            if self.loopback:
                host = headers.get(b"host", b"").decode("latin-1")
                name = host.rsplit(":", 1)[0] if not host.startswith("[") else host[1:].split("]")[0]
                if name not in LOOPBACK:
                    return await self._refuse(send, 403, f"Host {host!r} refused: this server "
                                              "serves loopback names only")
        await self.app(scope, receive, send)


def http_app(served: ServedPipeline, *, host: str = "127.0.0.1", token: str | None = None,
             mcp_path: str = "/mcp") -> Any:
    """The ASGI app: MCP streamable HTTP at `mcp_path`, `POST /search`, `GET /index`.
    Refuses a non-loopback `host` without a token."""
    import anyio
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    if not is_loopback(host) and not token:
        raise ValueError(f"binding {host} (not loopback) needs a token: set {TOKEN_ENV} "
                         "(clients send Authorization: Bearer <token>)")

    async def search(request: Request) -> JSONResponse:
        try:
            body = json.loads(await request.body() or b"null")
        except ValueError as exc:
            return JSONResponse({"error": f"body is not JSON: {exc}"}, status_code=400)
        try:
            if not isinstance(body, dict):
                raise SearchError(f"body must be a JSON object, got {type(body).__name__}")
            key = None
            if "session_id" in body:
                key = "http:" + session_handle(body.pop("session_id"), "session_id")
            out = await anyio.to_thread.run_sync(served.search, body, key, "http")
        except SearchError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except Overloaded as exc:  # memory over the limit: refuse now, serve again later
            log.warning("POST /search refused: %s", exc)
            return JSONResponse({"error": str(exc)}, status_code=503,
                                headers={"Retry-After": str(RETRY_AFTER_S)})
        except Exception as exc:  # noqa: BLE001 - reported to the caller, the server stays up
            log.exception("POST /search failed")
            return JSONResponse({"error": f"search failed: {type(exc).__name__}: {exc}"},
                                status_code=500)
        return JSONResponse(out.model_dump(mode="json"))

    async def index(request: Request) -> JSONResponse:
        return JSONResponse(await anyio.to_thread.run_sync(served.describe))

    server = mcp_server(served, "http")
    app = server.streamable_http_app(
        streamable_http_path=mcp_path, host=host,
        custom_starlette_routes=[Route("/search", search, methods=["POST"]),
                                 Route("/index", index, methods=["GET"])])
    return _Guard(app, token, is_loopback(host))


@dataclass
class HttpServer:
    """`http_app` under uvicorn in a background thread (tests, notebooks, benchmarks):
    `with HttpServer(served, port=p) as srv: srv.url`."""

    served: ServedPipeline
    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    _server: Any = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> HttpServer:
        import uvicorn

        if self.port == 0:
            import socket

            with socket.socket() as s:
                s.bind((self.host, 0))
                self.port = s.getsockname()[1]
        app = http_app(self.served, host=self.host, token=self.token)
        self._server = uvicorn.Server(uvicorn.Config(app, host=self.host, port=self.port,
                                                     log_level="warning", lifespan="on"))
        self._thread = threading.Thread(target=self._server.run, daemon=True,
                                        name=f"agentic-rag-serve-{self.port}")
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the HTTP server on {self.url} did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> HttpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---- the client side: the MCP tool as an in-process tool --------------------------------
