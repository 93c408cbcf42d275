"""OpenTelemetry traces of agent runs under the GenAI semantic conventions: the spans and their export.

The library makes spans through the OpenTelemetry API (`tracer()`); with nothing recording
they are the API's no-op spans (or go to a tracer provider the application installed).
`recording(config, folder)` records the spans made inside it (`RAGConfig.tracing`):

- `file` (the default of `agent-eval`, `chat` and a sweep's agent rows): OTLP-JSON lines in
  `folder/traces.jsonl`, one `ExportTraceServiceRequest` a line, as the OpenTelemetry
  Collector's file exporter writes them (ids in hex, enums as integers), so Phoenix, Jaeger or
  a collector can read them; `trace_reading` reads them back.
- `otlp`: sent to `tracing.endpoint` (gRPC) in batches. An endpoint that does not accept a TCP
  connection at the start, or that fails an export later, is said once and the spans (the
  failed batch included) go to the file instead: a run never fails for its traces.
- `off`: nothing recorded.

The spans (names as the conventions give them; attribute names from
`opentelemetry-semantic-conventions`, never typed by hand, beside our own `OWN_ATTRIBUTES`):

- `invoke_agent agentic-rag`: one question (`agent/loop.py`'s `run_agent`); the gate's decision
  (`agentic_rag.gate`) and the support check (`agentic_rag.support`, with the conventions'
  `gen_ai.evaluation.*`) are its events; `labels(...)` adds a run's own keys (agent-eval's
  dataset, split, cell and question id);
- `conversation_turn`: one turn of a conversation (`agent/session.py`'s `run_turn`), the
  `invoke_agent` span inside it;
- `chat <model>`: each LLM call (`llm/client.py`): model, token usage, finish reason, cached;
- `execute_tool search_documents`: each search the agent made, its arguments and the passages
  it served, with the `retrieval` span of `retrieve/pipeline.py` inside it (the query searched,
  the returned passages' ids and scores as `gen_ai.retrieval.documents`).
"""

from __future__ import annotations

import base64
import json
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as G
from opentelemetry.trace import Span, Status, StatusCode

from agentic_rag.config_agent import TracingConfig
from agentic_rag.jsonl import append_rows

TRACER_NAME = "agentic_rag"
AGENT_NAME = "agentic-rag"
FILE_NAME = "traces.jsonl"

# every attribute (of a span or an event) that is not a semantic-conventions name; a test walks
# a recorded trace and fails on any name in neither
OWN_ATTRIBUTES = {
    "agentic_rag.dataset": "agent-eval: the dataset of the question (`labels`)",
    "agentic_rag.split": "agent-eval: its split",
    "agentic_rag.cell": "agent-eval: the cell, policy:mode[:gate]",
    "agentic_rag.question.id": "agent-eval: the question's id (rows.jsonl's qid)",
    "agentic_rag.repeat": "agent-eval --repeats: the repeat's number (absent for a greedy run)",
    "agentic_rag.question": "the question (a conversation turn: the user's message)",
    "agentic_rag.answer": "the final answer",
    "agentic_rag.policy": "AgentConfig.policy",
    "agentic_rag.mode": "AgentConfig.mode",
    "agentic_rag.stop_reason": "AgentResult.stop_reason",
    "agentic_rag.turn.n": "the turn's number in its conversation",
    "agentic_rag.turn.query": "the turn's search query, built from the history",
    "agentic_rag.turn.clarifying": "the turn asked a clarifying question",
    "agentic_rag.tool.via": "how the search was asked for (AgentStep.via: policy, native, json ...)",
    "agentic_rag.tool.served": "chunk ids of the passages the search served to the model",
    "agentic_rag.tool.query_used": "the query the retrieval searched (after the query builder)",
    "agentic_rag.retrieval.iterations": "the gate's retrieval iterations",
    "agentic_rag.retrieval.stop_reason": "why the gate stopped",
    "agentic_rag.retrieval.confidence": "the gate's confidence in the final list",
    "agentic_rag.llm.cached": "the reply came from the reply cache (no server call)",
    "agentic_rag.llm.attempts": "attempts the call took",
    "agentic_rag.llm.prompt_evaluated": "prompt tokens the server evaluated (llama-server)",
    "agentic_rag.gate.action": "the support gate's action: none | flag | retry | abstain",
    "agentic_rag.gate.figures": "figures the answer states",
    "agentic_rag.gate.unsupported": "figures no cited passage states",
    "agentic_rag.gate.wrong_product": "figures only in passages of other products",
    "agentic_rag.gate.notes": "what the gate did, in words",
    "agentic_rag.support.threshold": "support below it is unsupported",
}

_recording: Any = None  # the tracer of `recording`'s SDK TracerProvider (imported there)
# the API's tracer: a proxy, a no-op until an application sets a global provider
_api_tracer = trace.get_tracer(TRACER_NAME)
_labels: ContextVar[tuple[tuple[str, Any], ...]] = ContextVar("agentic_rag_trace_labels",
                                                              default=())


def tracer() -> trace.Tracer:
    """The recording's tracer, else the API's (a no-op unless the application set a provider)."""
    return _recording if _recording is not None else _api_tracer


# ---- the spans --------------------------------------------------------------------------------
@contextmanager
def labels(**values: Any) -> Iterator[None]:
    """Add `agentic_rag.<key>` attributes (`OWN_ATTRIBUTES`; None values left out) to the
    `invoke_agent` spans begun inside: `with labels(dataset=..., **{"question.id": qid})`."""
    token = _labels.set((*_labels.get(), *((f"agentic_rag.{k}", v) for k, v in values.items()
                                           if v is not None)))
    try:
        yield
    finally:
        _labels.reset(token)


@contextmanager
def invoke_agent(question: str, policy: str, mode: str) -> Iterator[Span]:
    """The span of one question; `agent_done` records its result."""
    with tracer().start_as_current_span(f"invoke_agent {AGENT_NAME}") as span:
        if span.is_recording():
            span.set_attributes({
                G.GEN_AI_OPERATION_NAME: G.GenAiOperationNameValues.INVOKE_AGENT.value,
                G.GEN_AI_AGENT_NAME: AGENT_NAME, "agentic_rag.question": question,
                "agentic_rag.policy": policy, "agentic_rag.mode": mode, **dict(_labels.get())})
        yield span


def agent_done(span: Span, res: Any) -> None:  # noqa: ANN401 - agent.result.AgentResult
    """The result of a question on its `invoke_agent` span, and the gate's and the support
    check's verdicts as its events."""
    if not span.is_recording():
        return
    span.set_attributes({"agentic_rag.stop_reason": res.stop_reason,
                         "agentic_rag.answer": res.answer,
                         G.GEN_AI_USAGE_INPUT_TOKENS: res.prompt_tokens,
                         G.GEN_AI_USAGE_OUTPUT_TOKENS: res.completion_tokens})
    if res.error:
        span.set_status(Status(StatusCode.ERROR, res.error))
        span.set_attribute("error.type", res.stop_reason)
    if res.gate_action is not None:
        span.add_event("agentic_rag.gate", {
            "agentic_rag.gate.action": res.gate_action, "agentic_rag.gate.figures": res.figures,
            "agentic_rag.gate.unsupported": res.figures_unsupported,
            "agentic_rag.gate.wrong_product": res.figures_wrong_product,
            "agentic_rag.gate.notes": res.gate_notes})
    if res.support_detector or res.support_error or (
            res.support_note and not res.support_note.endswith("is off")):
        event: dict[str, Any] = {G.GEN_AI_EVALUATION_NAME: res.support_detector or "support"}
        if res.support_score is not None:
            event[G.GEN_AI_EVALUATION_SCORE_VALUE] = res.support_score
            event[G.GEN_AI_EVALUATION_SCORE_LABEL] = "supported" if res.supported \
                else "unsupported"
            event["agentic_rag.support.threshold"] = res.support_threshold
        if res.support_note or res.support_error:
            event[G.GEN_AI_EVALUATION_EXPLANATION] = res.support_error or res.support_note
        span.add_event("agentic_rag.support", event)


@contextmanager
def turn_span(conversation_id: str, n: int, message: str) -> Iterator[Span]:
    """The span of a conversation's turn; `turn_done` records its outcome."""
    with tracer().start_as_current_span("conversation_turn") as span:
        if span.is_recording():
            span.set_attributes({G.GEN_AI_CONVERSATION_ID: conversation_id,
                                 "agentic_rag.turn.n": n, "agentic_rag.question": message,
                                 **dict(_labels.get())})
        yield span


def turn_done(span: Span, turn: Any) -> None:  # noqa: ANN401 - agent.session.Turn
    if span.is_recording():
        span.set_attributes({"agentic_rag.turn.query": turn.query,
                             "agentic_rag.turn.clarifying": turn.clarifying,
                             "agentic_rag.stop_reason": turn.stop_reason,
                             "agentic_rag.answer": turn.answer})


@contextmanager
def execute_tool(name: str, via: str, call_id: str | None = None) -> Iterator[Span]:
    """The span of one search the agent made; `tool_done` records what it served."""
    with tracer().start_as_current_span(f"execute_tool {name}") as span:
        if span.is_recording():
            span.set_attributes({
                G.GEN_AI_OPERATION_NAME: G.GenAiOperationNameValues.EXECUTE_TOOL.value,
                G.GEN_AI_TOOL_NAME: name, G.GEN_AI_TOOL_TYPE: "function",
                "agentic_rag.tool.via": via,
                **({G.GEN_AI_TOOL_CALL_ID: call_id} if call_id else {})})
        yield span


def tool_done(span: Span, arguments: dict | None, output: Any = None,  # noqa: ANN401 - ToolOutput
              error: str | None = None) -> None:
    """The search's arguments as the agent's step records them, and the chunk ids it served
    (or the error of a call whose arguments did not validate)."""
    if not span.is_recording():
        return
    if arguments is not None:
        span.set_attribute(G.GEN_AI_TOOL_CALL_ARGUMENTS, json.dumps(arguments))
    if output is not None:
        span.set_attributes({"agentic_rag.tool.served": list(output.chunk_ids),
                             "agentic_rag.tool.query_used": output.query_used})
    if error is not None:
        span.set_status(Status(StatusCode.ERROR, error))
        span.set_attribute("error.type", "invalid_arguments")


@contextmanager
def retrieval(query: str, data_source: str) -> Iterator[Span]:
    """The span of one retrieval (`Pipeline.retrieve`); `retrieval_done` records its hits."""
    with tracer().start_as_current_span(f"retrieval {data_source}") as span:
        if span.is_recording():
            span.set_attributes({
                G.GEN_AI_OPERATION_NAME: G.GenAiOperationNameValues.RETRIEVAL.value,
                G.GEN_AI_RETRIEVAL_QUERY_TEXT: query, G.GEN_AI_DATA_SOURCE_ID: data_source})
        yield span


def retrieval_done(span: Span, result: Any) -> None:  # noqa: ANN401 - gate.RetrievalResult
    if span.is_recording():
        docs = [{"id": h.chunk.id, "score": round(float(h.score), 6)} for h in result.hits]
        span.set_attributes({G.GEN_AI_RETRIEVAL_DOCUMENTS: json.dumps(docs),
                             "agentic_rag.retrieval.iterations": result.iterations,
                             "agentic_rag.retrieval.stop_reason": result.stop_reason,
                             "agentic_rag.retrieval.confidence": float(result.confidence)})


@contextmanager
def chat_span(model: str, provider: str, address: str | None, port: int | None,
              params: dict[str, Any]) -> Iterator[Span]:
    """The span of one LLM call (`OpenAIChatModel.chat`); `chat_done` records the reply."""
    with tracer().start_as_current_span(f"chat {model}") as span:
        if span.is_recording():
            attrs: dict[str, Any] = {
                G.GEN_AI_OPERATION_NAME: G.GenAiOperationNameValues.CHAT.value,
                G.GEN_AI_PROVIDER_NAME: provider, G.GEN_AI_REQUEST_MODEL: model,
                G.GEN_AI_OUTPUT_TYPE: "json" if "response_format" in params else "text"}
            for key, name in (("max_tokens", G.GEN_AI_REQUEST_MAX_TOKENS),
                              ("temperature", G.GEN_AI_REQUEST_TEMPERATURE),
                              ("seed", G.GEN_AI_REQUEST_SEED)):
                if params.get(key) is not None:
                    attrs[name] = params[key]
            if address:
                attrs["server.address"] = address
            if port:
                attrs["server.port"] = port
            span.set_attributes(attrs)
        yield span


def chat_done(span: Span, reply: Any = None, error: Any = None) -> None:  # noqa: ANN401
    """A `ChatReply` (token usage, finish reason, cached) or the `LLMError` of a failed call."""
    if not span.is_recording():
        return
    if reply is not None:
        attrs: dict[str, Any] = {G.GEN_AI_USAGE_INPUT_TOKENS: reply.prompt_tokens,
                                 G.GEN_AI_USAGE_OUTPUT_TOKENS: reply.completion_tokens,
                                 "agentic_rag.llm.cached": reply.cached,
                                 "agentic_rag.llm.attempts": reply.attempts}
        if reply.finish_reason:
            attrs[G.GEN_AI_RESPONSE_FINISH_REASONS] = [reply.finish_reason]
        if reply.prompt_reused is not None:
            attrs[G.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = reply.prompt_reused
        if reply.prompt_evaluated is not None:
            attrs["agentic_rag.llm.prompt_evaluated"] = reply.prompt_evaluated
        span.set_attributes(attrs)
    if error is not None:
        span.set_status(Status(StatusCode.ERROR, str(error)[:500]))
        span.set_attribute("error.type", getattr(error, "kind", type(error).__name__))


# ---- recording and export ---------------------------------------------------------------------
def _hex(value: str) -> str:
    return base64.b64decode(value).hex()


def otlp_json(spans: Sequence[Any]) -> dict[str, Any]:
    """`spans` (SDK ReadableSpans) as one OTLP-JSON `ExportTraceServiceRequest`: the protobuf
    encoding of `opentelemetry-exporter-otlp-proto-common`, in protobuf's JSON mapping with
    the OTLP/JSON rules (trace and span ids in hex, enums as integers)."""
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    data = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for rs in data.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for s in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in s:
                        s[key] = _hex(s[key])
                for link in s.get("links", []):
                    for key in ("traceId", "spanId"):
                        if key in link:
                            link[key] = _hex(link[key])
    return data


def _exporters():  # noqa: ANN202 - the SDK's classes, imported only when recording
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class FileExporter(SpanExporter):
        """OTLP-JSON lines appended to `path` (`jsonl.append_rows`), one request per export."""

        def __init__(self, path: Path) -> None:
            self.path, self.lock = path, threading.Lock()

        def export(self, spans):  # noqa: ANN001, ANN202
            with self.lock:
                append_rows(self.path, [otlp_json(spans)])
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            pass

    class FallbackExporter(SpanExporter):
        """`primary` until an export fails; that batch and every later one go to `fallback`,
        said once through `say`."""

        def __init__(self, primary, fallback, say: Callable[[str], None], what: str) -> None:  # noqa: ANN001
            self.primary, self.fallback, self.say, self.what = primary, fallback, say, what
            self.failed = False

        def export(self, spans):  # noqa: ANN001, ANN202
            if not self.failed:
                try:
                    if self.primary.export(spans) == SpanExportResult.SUCCESS:
                        return SpanExportResult.SUCCESS
                except Exception:  # noqa: BLE001, S110 - an exporter's failure is a failed export
                    pass
                self.failed = True
                self.say(f"tracing: the export to {self.what} failed; the spans go to "
                         f"{self.fallback.path} instead")
            return self.fallback.export(spans)

        def shutdown(self) -> None:
            for e in (self.primary, self.fallback):
                try:
                    e.shutdown()
                except Exception:  # noqa: BLE001, S110 - shutting down a dead exporter
                    pass

    return FileExporter, FallbackExporter


def reachable(endpoint: str, timeout_s: float = 1.0) -> bool:
    """Whether `host:port` (an `http://` prefix allowed) accepts a TCP connection."""
    hostport = endpoint.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def _batch(exporter):  # noqa: ANN001, ANN202
    """Spans exported from a background thread, in batches at most a second apart (one line,
    one fsync, per batch: a line and an fsync per span cost ~25 ms a question,
    benchmarks/trace_overhead.py); a process killed hard loses at most that second's."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    return BatchSpanProcessor(exporter, schedule_delay_millis=1000)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def recording(config: TracingConfig, folder: str | Path,
              say: Callable[[str], None] = _say) -> Iterator[Path | None]:
    """Record the spans made inside (module doc); yields the trace file (None when `off`, or
    `otlp` to a reachable endpoint). Spans are flushed when the block ends."""
    global _recording
    if config.export == "off":
        yield None
        return
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    FileExporter, FallbackExporter = _exporters()
    path = Path(folder) / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    provider = TracerProvider(resource=Resource.create({"service.name": AGENT_NAME}))
    out: Path | None = path
    if config.export == "otlp" and not reachable(config.endpoint, min(config.timeout_s, 2.0)):
        say(f"tracing: the OTLP endpoint {config.endpoint} does not answer; writing the "
            f"traces to {path} instead")
        provider.add_span_processor(_batch(FileExporter(path)))
    elif config.export == "otlp":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        primary = OTLPSpanExporter(endpoint=config.endpoint, insecure=config.insecure,
                                   timeout=config.timeout_s)
        provider.add_span_processor(_batch(
            FallbackExporter(primary, FileExporter(path), say, config.endpoint)))
        out = None
    else:
        provider.add_span_processor(_batch(FileExporter(path)))
    before, _recording = _recording, provider.get_tracer(TRACER_NAME)
    try:
        yield out
    finally:
        _recording = before
        provider.shutdown()  # flushes a batch still queued
