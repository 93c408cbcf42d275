"""Agent traces (`agentic_rag/tracing.py`): the spans of a run on a small index with a scripted
model, their attribute names against the semantic conventions package, the OTLP-JSON file read
back into the searches and passages the agent-eval row records, and the export's fallbacks
(a closed port, a failing receiver) and a real OTLP/gRPC receiver."""

from __future__ import annotations

import json
import threading
from concurrent import futures

import pandas as pd
import pytest
from opentelemetry import trace
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as G

from agentic_rag import trace_reading, tracing
from agentic_rag.agent.loop import run_agent
from agentic_rag.agent.session import Session, run_turn
from agentic_rag.agent.tool import TOOL_NAME, AgenticRAGTool
from agentic_rag.config import AgentConfig, RAGConfig
from agentic_rag.config_agent import TracingConfig
from agentic_rag.retrieve.context import citation_id
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.store.index import AgenticIndex

from .fakes import HashingEmbedder, free_port
from .test_session import DOCS, model

FILE = TracingConfig(export="file")


@pytest.fixture
def tool(tmp_path):
    idx = AgenticIndex(RAGConfig(home=str(tmp_path / "home")), embedder=HashingEmbedder())
    idx.add_documents(DOCS)
    return AgenticRAGTool(Pipeline(idx.config, index=idx))


def _call(query: str) -> tuple[str, list]:
    return "", [(TOOL_NAME, json.dumps({"query": query}))]


def _two_searches(tool, run_dir, labels=None):  # noqa: ANN001, ANN202
    """retrieve_first, then a model search, then an answer citing the first passage."""
    first = AgenticRAGTool(tool.pipeline).search("What is the Blue Account's monthly fee?")
    chat, _ = model([_call("Gold Account fee"),
                     f"The fee is $20 [{citation_id(first.chunk_ids[0])}]."])
    with tracing.recording(FILE, run_dir) as path, tracing.labels(**(labels or {})):
        res = run_agent("What is the Blue Account's monthly fee?", chat, tool,
                        AgentConfig(max_steps=3))
    return res, path


def test_a_recorded_run_has_the_conventions_spans_and_only_known_attribute_names(tool, tmp_path):
    res, path = _two_searches(tool, tmp_path)
    assert path == tmp_path / "traces.jsonl" and res.tool_calls == 2
    spans = trace_reading.read_spans(path)
    ops = [s["attributes"].get("gen_ai.operation.name") for s in spans]
    assert ops.count("invoke_agent") == 1 and ops.count("execute_tool") == 2
    assert ops.count("retrieval") == 2 and ops.count("chat") == 2
    root = next(s for s in spans if s["name"] == "invoke_agent agentic-rag")
    assert root["parent_id"] is None and len({s["trace_id"] for s in spans}) == 1
    assert all(s["parent_id"] for s in spans if s is not root)
    assert root["attributes"]["gen_ai.usage.input_tokens"] == res.prompt_tokens == 20
    assert root["attributes"]["agentic_rag.stop_reason"] == res.stop_reason
    chat = next(s for s in spans if s["name"].startswith("chat "))
    assert chat["attributes"]["gen_ai.usage.output_tokens"] == 5
    assert chat["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]
    by_id = {s["span_id"]: s for s in spans}
    for r in (s for s in spans if s["attributes"].get("gen_ai.operation.name") == "retrieval"):
        assert by_id[r["parent_id"]]["name"] == f"execute_tool {TOOL_NAME}"
        docs = json.loads(r["attributes"]["gen_ai.retrieval.documents"])
        assert docs and all(set(d) == {"id", "score"} for d in docs)
    assert "agentic_rag.gate" in [e["name"] for e in root["events"]]
    # ids as the OTLP/JSON rules want them: lower-case hex, 32 and 16 digits
    assert len(root["trace_id"]) == 32 and len(root["span_id"]) == 16
    int(root["trace_id"], 16)
    assert trace_reading.unknown_attributes(spans) == []


def test_the_name_check_fails_on_a_name_of_neither_list(tmp_path):
    with tracing.recording(FILE, tmp_path) as path:
        with tracing.tracer().start_as_current_span("x") as span:
            span.set_attribute("gen_ai.usage.input_tokens", 3)  # a conventions name
            span.set_attribute("agentic_rag.policy", "free")  # one of ours
            span.set_attribute("agentic_rag.made_up", 1)
            span.add_event("e", {"gen_ai.prompt_tokens_total": 1})  # not in the package
    assert trace_reading.unknown_attributes(trace_reading.read_spans(path)) == [
        "x: agentic_rag.made_up", "x/e: gen_ai.prompt_tokens_total"]
    names = trace_reading.convention_names()
    assert {"gen_ai.tool.call.arguments", "gen_ai.retrieval.documents", "server.port"} <= names
    assert not any(n.startswith("agentic_rag.") for n in names)


def test_the_trace_reads_back_into_the_rows_searches_and_passages(tool, tmp_path):
    from agentic_rag.studies.agent_eval.run import agent_row

    res, path = _two_searches(tool, tmp_path, {"dataset": "faq", "question.id": "q7"})
    row = agent_row(res, {"answers": []})  # what agent-eval writes to rows.jsonl
    [q] = trace_reading.questions(trace_reading.read_spans(path))
    assert q["agentic_rag.question.id"] == "q7" and q["agentic_rag.dataset"] == "faq"
    assert [s["query"] for s in q["searches"]] == row["queries"]
    assert q["served"] == row["served"] and len(row["served"]) > 0
    assert [s["served"] for s in q["searches"]] == [st.tool.chunk_ids for st in res.steps
                                                    if st.tool]


def test_a_conversation_turn_is_a_span_with_its_first_search_and_the_agent_inside(tool, tmp_path):
    chat, _ = model(["The Blue Account's fee is $20.", "The Gold Account's fee is $30."])
    s = Session()
    with tracing.recording(FILE, tmp_path) as path:
        for message in ("What is the Blue Account's monthly fee?", "And the Gold Account?"):
            run_turn(s, message, chat, tool, AgentConfig(max_steps=1))
    spans = trace_reading.read_spans(path)
    turns = [x for x in spans if x["name"] == "conversation_turn"]
    assert [t["attributes"]["agentic_rag.turn.n"] for t in turns] == [1, 2]
    assert {t["attributes"]["gen_ai.conversation.id"] for t in turns} == {s.id}
    got = trace_reading.questions(spans)
    assert [[x["query"] for x in q["searches"]] for q in got] == [t.queries for t in s.turns]
    assert [q["served"] for q in got] == [[p.chunk_id for p in t.passages] for t in s.turns]
    assert trace_reading.unknown_attributes(spans) == []


def test_off_records_nothing_and_makes_no_file(tool, tmp_path):
    with tracing.recording(TracingConfig(export="off"), tmp_path) as path:
        assert path is None
        assert not tracing.tracer().start_span("x").is_recording()
        run_agent("What is the Blue Account's monthly fee?", model(["$20."])[0], tool,
                  AgentConfig(max_steps=1))
    assert not (tmp_path / "traces.jsonl").exists()


def test_an_unreachable_otlp_endpoint_says_so_once_and_writes_the_file(tool, tmp_path):
    said: list[str] = []
    cfg = TracingConfig(export="otlp", endpoint=f"127.0.0.1:{free_port()}")  # nobody listens
    with tracing.recording(cfg, tmp_path, say=said.append) as path:
        for _ in range(2):
            run_agent("What is the Blue Account's monthly fee?", model(["$20."])[0], tool,
                      AgentConfig(max_steps=1))
    assert path == tmp_path / "traces.jsonl" and len(said) == 1 and "does not answer" in said[0]
    assert len(trace_reading.questions(trace_reading.read_spans(path))) == 2  # nothing lost


def test_an_export_that_fails_later_goes_to_the_file_said_once_with_nothing_lost(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

    class Dies:
        calls = 0

        def export(self, spans):  # noqa: ANN001, ANN202
            self.calls += 1
            return SpanExportResult.SUCCESS if self.calls == 1 else SpanExportResult.FAILURE

        def shutdown(self) -> None:
            pass

    said: list[str] = []
    file_exporter, fallback = tracing._exporters()
    primary = Dies()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(
        fallback(primary, file_exporter(tmp_path / "t.jsonl"), said.append, "collector:4317")))
    for name in ("a", "b", "c"):
        provider.get_tracer("t").start_span(name).end()
    assert [s["name"] for s in trace_reading.read_spans(tmp_path / "t.jsonl")] == ["b", "c"]
    assert primary.calls == 2 and len(said) == 1 and "collector:4317" in said[0]


def test_otlp_sends_the_spans_to_a_grpc_receiver(tool, tmp_path):
    grpc = pytest.importorskip("grpc")
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    got, lock = [], threading.Lock()

    class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):  # noqa: ANN001, ANN202, N802 - the gRPC method
            with lock:
                got.extend(s.name for rs in request.resource_spans for ss in rs.scope_spans
                           for s in ss.spans)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Receiver(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    said: list[str] = []
    try:
        cfg = TracingConfig(export="otlp", endpoint=f"127.0.0.1:{port}")
        with tracing.recording(cfg, tmp_path, say=said.append) as path:
            run_agent("What is the Blue Account's monthly fee?", model(["$20."])[0], tool,
                      AgentConfig(max_steps=1))
    finally:
        server.stop(None)
    assert path is None and said == [] and not (tmp_path / "traces.jsonl").exists()
    assert "invoke_agent agentic-rag" in got and f"execute_tool {TOOL_NAME}" in got


def test_the_file_export_matches_the_sdk_spans_ids(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    file_exporter, _ = tracing._exporters()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(file_exporter(tmp_path / "t.jsonl")))
    t = provider.get_tracer("t")
    with t.start_as_current_span("outer", kind=trace.SpanKind.CLIENT):
        with t.start_as_current_span("inner") as inner:
            inner.set_attributes({"n": 3, "xs": ["a", "b"], "f": 0.5, "ok": True})
    sdk = {s.name: s for s in memory.get_finished_spans()}
    mine = {s["name"]: s for s in trace_reading.read_spans(tmp_path / "t.jsonl")}
    for name in ("outer", "inner"):
        assert mine[name]["span_id"] == format(sdk[name].context.span_id, "016x")
        assert mine[name]["trace_id"] == format(sdk[name].context.trace_id, "032x")
        assert mine[name]["start"] == sdk[name].start_time
    assert mine["inner"]["parent_id"] == format(sdk["outer"].context.span_id, "016x")
    assert mine["inner"]["attributes"] == {k: list(v) if isinstance(v, tuple) else v
                                           for k, v in sdk["inner"].attributes.items()}
    line = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    assert line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["kind"] == 1  # INTERNAL, an int


def test_agent_eval_writes_a_trace_that_reads_back_into_its_rows(tmp_path, monkeypatch):
    """The command's default: `traces.jsonl` in the run folder, one `invoke_agent` span per
    row with the row's keys, the same searches and passages as rows.jsonl (a stub LLM and the
    hashing embedder on a 12-document slice of the Python FAQ)."""
    import yaml

    from agentic_rag.studies.agent_eval import run as agent_eval_run

    monkeypatch.setattr(agent_eval_run, "AgenticIndex",
                        lambda cfg: AgenticIndex(cfg, embedder=HashingEmbedder()))

    from agentic_rag.jsonl import read_rows
    from agentic_rag.studies.agent_eval.options import AgentEvalOptions
    from agentic_rag.studies.agent_eval.run import run

    from .test_endpoints import CountingStub

    stub = CountingStub().start()
    try:
        cfg = tmp_path / "llm.yaml"
        cfg.write_text(yaml.safe_dump({"llm": {"base_url": stub.base_url, "model": "echo-1",
                                               "max_retries": 0, "max_tokens": 24}}))
        run(AgentEvalOptions(run="r", runs_dir=str(tmp_path / "runs"), home=str(tmp_path / "h"),
                             datasets=("python-faq",), split="dev", n=3,
                             cells=("retrieve_first:native", "closed_book:native"),
                             config=str(cfg), no_judge=True, corpus_size={"python-faq": 12}),
            llm=RAGConfig.load(cfg).llm)
    finally:
        stub.stop()
    run_dir = tmp_path / "runs" / "r"
    rows = read_rows(run_dir / "rows.jsonl")
    got = {(q["agentic_rag.cell"], q["agentic_rag.question.id"]): q
           for q in trace_reading.questions(trace_reading.read_spans(run_dir / "traces.jsonl"))}
    assert len(rows) == 6 and set(got) == {(r["cell"], r["qid"]) for r in rows}
    for r in rows:
        q = got[r["cell"], r["qid"]]
        assert [s["query"] for s in q["searches"]] == r["queries"]
        assert q["served"] == r["served"]
        assert q["agentic_rag.stop_reason"] == r["stop_reason"]
    assert sum(len(r["served"]) for r in rows) > 0
    assert trace_reading.unknown_attributes(trace_reading.read_spans(run_dir / "traces.jsonl")) == []


def test_chat_traces_each_turn_into_a_file_under_home(tmp_path, stub_llm):
    from typer.testing import CliRunner

    from agentic_rag.cli.main import app

    from .test_chat import _config

    script = tmp_path / "turns.txt"
    script.write_text("What is a list?\nHow do I sort it?\n")
    res = CliRunner().invoke(app, ["chat", "--script", str(script), "-c",
                                   str(_config(tmp_path, stub_llm.base_url)), "--no-serve"])
    assert res.exit_code == 0, res.output
    [path] = (tmp_path / "home" / "chats").glob("*/traces.jsonl")
    assert f"traces: {path}" in res.output
    spans = trace_reading.read_spans(path)
    turns = [s for s in spans if s["name"] == "conversation_turn"]
    assert [t["attributes"]["agentic_rag.turn.n"] for t in turns] == [1, 2]
    assert sum(s["name"].startswith("chat ") for s in spans) == 2  # closed_book: one call a turn


def test_one_questions_trace_in_tree_order_and_as_a_timeline(tool, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    _, path = _two_searches(tool, tmp_path)
    spans = trace_reading.read_spans(path)
    [q] = trace_reading.questions(spans)
    tree = trace_reading.trace_spans(spans, q["span"])
    assert [(s["depth"], s["name"].split()[0]) for s in tree] == [
        (0, "invoke_agent"), (1, "execute_tool"), (2, "retrieval"), (1, "chat"),
        (1, "execute_tool"), (2, "retrieval"), (1, "chat")]
    fig = trace_reading.plot_timeline(tree, "q")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[0] == "invoke_agent agentic-rag" and labels[2].startswith("    retrieval")
    assert len(fig.axes[0].patches) == len(tree)


@pytest.mark.llm
@pytest.mark.slow
def test_a_run_on_the_real_smollm2_server_reads_back_into_its_result(tool, tmp_path):
    """The same read-back on a real llama-server (SmolLM2-135M, ~100 MB, a free port): the
    chat spans carry the server's token counts; the searches and passages equal the result's."""
    from agentic_rag.config_llm import LLMConfig, ServerConfig
    from agentic_rag.llm.client import OpenAIChatModel
    from agentic_rag.llm.server import LlamaServer

    with LlamaServer(ServerConfig(model="smollm2-135m", port=free_port(), n_ctx=4096),
                     home=tmp_path) as srv:
        chat = OpenAIChatModel(LLMConfig(server=srv.config, max_tokens=48), base_url=srv.base_url)
        with tracing.recording(FILE, tmp_path) as path:
            res = run_agent("What is the Blue Account's monthly fee?", chat, tool,
                            AgentConfig(max_steps=2, mode="json"))
    spans = trace_reading.read_spans(path)
    [q] = trace_reading.questions(spans)
    assert [s["query"] for s in q["searches"]] == [s.arguments["query"] for s in res.steps
                                                   if s.kind == "tool_call"]
    assert q["served"] == res.served and res.served
    chats = [s["attributes"] for s in spans if s["name"].startswith("chat ")]
    assert chats and all(c["gen_ai.usage.input_tokens"] > 0 and c["server.port"] == srv.config.port
                         and not c["agentic_rag.llm.cached"] for c in chats)
    assert trace_reading.unknown_attributes(spans) == []


def test_a_sweep_over_sessions_traces_each_agent_turn_into_its_run_folder(tmp_path, monkeypatch,
                                                                         stub_llm):
    """A conversation run of the sweep runner (MTRAG-UN's fiqa sessions, the `agent` metrics):
    one `conversation_turn` span per computed agent row in `<run>/traces.jsonl`, the agent
    inside it, only known names; `tracing.export: off` writes no file."""
    from agentic_rag.experiments import plan
    from agentic_rag.experiments.runner import run_sweep
    from agentic_rag.experiments.spec import SweepSpec

    monkeypatch.setattr(plan, "make_embedder", lambda config, cache_dir=None: HashingEmbedder())

    def spec(export: str) -> SweepSpec:
        return SweepSpec.model_validate({
            "name": f"sessions-{export}", "k": 5, "llm_sample": 2,
            "metrics": ["retrieval", "agent"],
            "dataset": {"name": "mtrag-fiqa", "split": "dev", "n": 3, "seed": 0},
            "grid": {"agent.session.query_mode": ["last_turn", "carry"]},
            "base": {"llm": {"base_url": stub_llm.base_url, "max_retries": 0, "max_tokens": 24},
                     "tracing": {"export": export}}})

    res = run_sweep(spec("file"), tmp_path / "runs", tmp_path / "cache", progress=False,
                    log=lambda *a: None)
    spans = trace_reading.read_spans(res.run_dir / "traces.jsonl")
    turns = [s for s in spans if s["name"] == "conversation_turn"]
    agents = [s for s in spans if s["attributes"].get(G.GEN_AI_OPERATION_NAME) == "invoke_agent"]
    assert len(turns) == 4 and len(agents) == 4  # 2 sampled sessions × 2 configs
    by_id = {s["span_id"]: s for s in spans}
    assert all(by_id[a["parent_id"]]["name"] == "conversation_turn" for a in agents)
    assert trace_reading.unknown_attributes(spans) == []
    # the agent rows carry their trajectory (evaluation/trajectory.py) into the summary
    assert {"served_doc_recall", "first_search_gold", "llm_turns"} <= set(res.summary.columns)
    # and the sweep-level session figures (evaluation/sessions.py), one row per config
    figs = pd.read_csv(res.run_dir / "session-figures.csv")
    assert len(figs) == 2 and (figs["sessions"] == 2).all()
    assert {"recall", "abstained_on_answerable", "clarifying_on_underspecified"} <= set(figs)
    off = run_sweep(spec("off"), tmp_path / "runs", tmp_path / "cache2", progress=False,
                    log=lambda *a: None)
    assert not (off.run_dir / "traces.jsonl").exists()
