"""A fault-injecting HTTP proxy for the reliability tests (test support, not library code).

    with FaultProxy("http://127.0.0.1:8765") as proxy:      # the real llama.cpp server
        proxy.plan(["500", "pass"])                          # one fault per request, in order
        model = OpenAIChatModel(cfg, base_url=proxy.url)

Each request takes the next fault of the plan (then `proxy.default`, "pass" unless set):

- `pass`: forwarded to the upstream server, its reply relayed unchanged;
- `timeout`: no reply until the client gives up (`hang_s`, or until the proxy stops);
- `400`, `401`, `429`, `500`, `503`: an OpenAI-style JSON error with that status;
- `reset`: the connection is reset (RST) without a reply;
- `truncated`: the upstream reply with its full Content-Length but only half the body;
- `malformed_json`: 200, `application/json`, a body that is not JSON;
- `not_completion`: 200 with valid JSON that is not a chat completion;
- `ignore_schema`: the upstream reply with the message content replaced by JSON that
  ignores the requested schema (what a model that ignores `response_format` returns).

`proxy.log` lists (fault, path) per request and `proxy.auth` the Authorization headers seen.
"""

from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

FAULTS = ("pass", "timeout", "400", "401", "429", "500", "503", "reset", "truncated",
          "malformed_json", "not_completion", "ignore_schema")


class FaultProxy:
    def __init__(self, upstream: str, hang_s: float = 30.0) -> None:
        u = urlparse(upstream)
        self.upstream = (u.hostname or "127.0.0.1", u.port or 80)
        self.hang_s = hang_s
        self.default = "pass"
        self.log: list[tuple[str, str]] = []
        self.auth: list[str] = []
        self._plan: deque[str] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    # -- control ---------------------------------------------------------------------
    def plan(self, faults: list[str]) -> FaultProxy:
        unknown = [f for f in faults if f not in FAULTS]
        assert not unknown, f"unknown faults {unknown}"
        with self._lock:
            self._plan = deque(faults)
        return self

    def next_fault(self, path: str) -> str:
        with self._lock:
            fault = self._plan.popleft() if self._plan else self.default
            self.log.append((fault, path))
        return fault

    @property
    def injected(self) -> int:
        return sum(1 for f, _ in self.log if f != "pass")

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- upstream --------------------------------------------------------------------
    def forward(self, method: str, path: str, body: bytes, headers: dict) -> tuple[int, dict, bytes]:
        conn = http.client.HTTPConnection(*self.upstream, timeout=600)
        try:
            conn.request(method, path, body=body or None, headers=headers)
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()


class _Handler(BaseHTTPRequestHandler):
    owner: FaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # noqa: ANN002 - quiet
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def _send(self, status: int, body: bytes, content_type: str = "application/json",
              length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def _handle(self, method: str) -> None:
        p = self.owner
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        p.auth.append(self.headers.get("Authorization", ""))
        fault = p.next_fault(self.path)
        try:
            if fault == "timeout":
                p._stop.wait(p.hang_s)
                self.close_connection = True
                return
            if fault in ("400", "401", "429", "500", "503"):
                err = {"error": {"message": f"injected {fault}", "type": "injected", "code": fault}}
                return self._send(int(fault), json.dumps(err).encode())
            if fault == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True
                return
            if fault == "malformed_json":
                return self._send(200, b'{"id": "x", "choices": [{"message": {"content": "ha')
            if fault == "not_completion":
                return self._send(200, b'{"status": "ok", "detail": "maintenance page"}')
            headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
            status, _, reply = p.forward(method, self.path, body, headers)
            if fault == "truncated":
                return self._send(status, reply[:len(reply) // 2], length=len(reply))
            if fault == "ignore_schema" and status == 200:
                data = json.loads(reply)
                data["choices"][0]["message"]["content"] = json.dumps(
                    {"reply": "I ignore schemas", "confidence": "high"})
                reply = json.dumps(data).encode()
            return self._send(status, reply)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True


class StubChatServer:
    """A minimal OpenAI-compatible chat server (canned replies; JSON that satisfies simple
    schemas), for machines where the real llama.cpp server cannot run. The reliability tests
    use the real server unless RELIABILITY_LLM_UPSTREAM=stub is set."""

    ROLES = {"system", "user", "assistant", "tool"}

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @staticmethod
    def sample(schema: dict):  # noqa: ANN205 - JSON value
        if "enum" in schema:
            return schema["enum"][0]
        t = schema.get("type", "object")
        t = t[0] if isinstance(t, list) else t
        if t == "object":
            props = schema.get("properties", {})
            return {k: StubChatServer.sample(props.get(k, {})) for k in props}
        return {"string": "x", "integer": 0, "number": 0.0, "boolean": True, "array": [],
                "null": None}.get(t, "x")

    def reply(self, req: dict) -> tuple[int, dict]:
        if any(m.get("role") not in self.ROLES for m in req.get("messages", [])):
            return 500, {"error": {"message": "invalid role"}}  # as llama.cpp's server does
        fmt = req.get("response_format") or {}
        content = (json.dumps(self.sample(fmt.get("schema") or {"type": "object"}))
                   if fmt else "The answer is in the context.")
        return 200, {"id": "stub", "object": "chat.completion", "created": 0, "model": "local",
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}],
                     "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}}

    def start(self) -> StubChatServer:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # noqa: ANN002
                pass

            def _send(self, status: int, data: dict) -> None:
                body = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                self._send(200, {"data": [{"id": "local"}]})

            def do_POST(self) -> None:  # noqa: N802
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self._send(*stub.reply(req))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
