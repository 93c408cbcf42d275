"""Against the REAL llama.cpp server (started here, on loopback): wiring with SmolLM2-135M,
judgement (intent, agent answers) with the default Qwen2.5-Coder-1.5B."""

from __future__ import annotations

import re

import pytest

from agentic_rag.agent.loop import run_agent
from agentic_rag.agent.tool import AgenticRAGTool
from agentic_rag.config import AgentConfig, QueryConfig, RAGConfig, SupportConfig
from agentic_rag.config_llm import LLMConfig, ServerConfig
from agentic_rag.datasets.corpora import banking_documents
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.llm.models import read_gguf_metadata, resolve_model
from agentic_rag.llm.server import LlamaServer
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.retrieve.query import AgentQueryBuilder
from agentic_rag.store.index import AgenticIndex

from .fakes import free_port

pytestmark = [pytest.mark.slow, pytest.mark.llm]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("llm-home")


@pytest.fixture(scope="module")
def smol(home):
    srv = LlamaServer(ServerConfig(model="smollm2-135m", port=free_port(), n_ctx=2048, binary=None),
                      home=home)
    with srv:
        yield srv
    assert srv.proc is None


@pytest.fixture(scope="module")
def qwen(home):
    # binary=None: the agent tests below pin native tool calls on llama-cpp-python's server. The
    # C++ llama-server (the default since issue 39) takes `tool_choice` only as a string: the
    # object naming the function that the agent sends is logged as the wrong type and read as
    # "auto", so nothing constrains the reply (with "required" too, Qwen2.5-Coder-1.5B wrote
    # its call as a fenced JSON block; checked 2026-12-06). The agent reads a call written as
    # text, and otherwise asks for the JSON action: native forcing is this server's feature
    with LlamaServer(ServerConfig(port=free_port(), n_ctx=4096, binary=None), home=home) as srv:
        yield srv


@pytest.fixture(scope="module")
def qwen_default(request, home):
    """Qwen on the default server (llama.cpp's C++ llama-server where it is built, issue 39):
    what `make run`, `agentic-rag ask` and the sweeps use; about twice as fast here. Where no
    llama-server is built the default is llama-cpp-python's server: `qwen` itself, not a
    second copy of it."""
    if ServerConfig().binary is None:
        yield request.getfixturevalue("qwen")
        return
    with LlamaServer(ServerConfig(port=free_port(), n_ctx=4096), home=home) as srv:
        yield srv


def test_models_verified_from_gguf_headers(home):
    meta = read_gguf_metadata(resolve_model("qwen2.5-coder-1.5b"))
    assert meta["general.architecture"] == "qwen2" and "Qwen2.5 Coder 1.5B" in meta["general.name"]
    assert "tokenizer.chat_template" in meta
    assert read_gguf_metadata(resolve_model("smollm2-135m"))["general.architecture"] == "llama"


def test_server_starts_answers_json_and_stops(smol):
    assert smol.running() and smol.proc.poll() is None
    m = OpenAIChatModel(LLMConfig(max_tokens=16), base_url=smol.base_url)
    reply = m.chat([{"role": "user", "content": "Say hi"}])
    assert reply.content and reply.prompt_tokens > 0 and reply.completion_tokens > 0
    schema = {"type": "object", "properties": {"intent": {"type": "string",
              "enum": ["fact", "code"]}}, "required": ["intent"]}
    # llama-server's JSON grammar lets the model spend tokens on whitespace
    # ('{\n  "intent" : "code"\n' was cut at 16): room for the closing brace
    m = OpenAIChatModel(LLMConfig(max_tokens=64), base_url=smol.base_url)
    data = m.chat([{"role": "user", "content": "code or fact?"}], json_schema=schema).json()
    assert data["intent"] in ("fact", "code")


def test_second_server_on_same_port_is_reused(smol, home):
    again = LlamaServer(smol.config, home=home).start()
    assert again.proc is None and again.running()  # reused, not restarted


def _fee_pipeline(home, server: LlamaServer, name: str) -> Pipeline:
    docs = [d for d in banking_documents() if "| Monthly maintenance fee" in d.text][:8]
    cfg = RAGConfig(home=str(home / name))
    idx = AgenticIndex(cfg)
    idx.add_documents(docs)
    chat = OpenAIChatModel(cfg.llm, base_url=server.base_url,
                           cache=ChatCache(home / f"{name}-llm.sqlite"))
    return Pipeline(cfg, index=idx, chat_model=chat)


@pytest.fixture(scope="module")
def fee_pipeline(home, qwen):
    return _fee_pipeline(home, qwen, "idx")


@pytest.mark.parametrize("message,intent", [
    ("Show me a Python code example that reverses a list", "code"),
    ("What is the overdraft fee amount?", "data"),
    ("What are the steps to close my account?", "procedure"),
])
def test_llm_intent_classifier_on_qwen(fee_pipeline, message, intent):
    b = AgentQueryBuilder(QueryConfig(classifier="llm"), chat_model=fee_pipeline.chat_model)
    got = b.build_query(message)
    assert got.classifier == "llm" and got.intent == intent


def test_llm_rewriter_on_qwen(fee_pipeline):
    from agentic_rag.retrieve.query import QueryRewriter

    q = QueryRewriter("llm", fee_pipeline.chat_model).rewrite(
        "Hi there! I was wondering, could you please tell me how much a wire transfer costs? Thanks")
    assert "wire" in q.lower() and "thanks" not in q.lower() and len(q) < 80


def _with_blue(pipe: Pipeline) -> Pipeline:
    blue = next(d for d in banking_documents() if d.id == "doc_checking_accounts_blue_account_003")
    assert "| Monthly maintenance fee | $20.00 |" in blue.text
    pipe.index.add_document(blue)
    return pipe


@pytest.fixture(scope="module")
def blue_pipeline(fee_pipeline):
    """The fee pages on llama-cpp-python's server: native tool calls (`tool_choice`) pinned."""
    return _with_blue(fee_pipeline)


@pytest.fixture(scope="module")
def blue_default(home, qwen_default):
    """The same pages on the default server: the default-config agent (`agentic-rag ask`) and
    a JSON-mode forced search."""
    return _with_blue(_fee_pipeline(home, qwen_default, "idx-default"))


def _blue(request, mode: str) -> Pipeline:
    return request.getfixturevalue("blue_pipeline" if mode == "native" else "blue_default")


BLUE_FEE_QUESTION = "What is the monthly maintenance fee of the Blue Account?"
BLUE_FEE_CHUNK = "doc_checking_accounts_blue_account_003#prose@16-150"  # "... | $20.00 |"
# JSON mode used to misread here: Qwen2.5-Coder-1.5B searched until max_steps and answered
# '$25.00', citing a Lime Green passage (3 of 3 cold-cache runs; a strict xfail until issue 40),
# with the Blue Account's '$20.00' line served 3rd of 5. With the entity scope the default
# applies where documents share names (`fusion.named_scope: auto`; 5 of these 9 pages share a
# product's name) the Blue Account's page is boosted for a question naming it, and JSON mode
# reads it right too.


@pytest.mark.parametrize("mode", ["native", "json"])
def test_agent_answers_from_default_corpus(blue_pipeline, mode):
    # both modes on llama-cpp-python's server: on the default server the JSON-mode agent kept
    # choosing "search" to max_steps here (its answer, given there, was the $20.00 fee; checked
    # 2026-12-06), so the stop reason pinned below is this server's
    res = run_agent(BLUE_FEE_QUESTION, blue_pipeline.chat_model, AgenticRAGTool(blue_pipeline),
                    max_steps=3, mode=mode)
    assert res.stop_reason == "answer", res
    assert res.tool_calls >= 1 and res.retrieval_iterations >= 1
    assert "20" in res.answer and BLUE_FEE_CHUNK in res.cited_chunks, (res.answer, res.citations)
    assert res.prompt_tokens > 0 and res.context_tokens > 0


def test_json_mode_answer_states_what_its_citation_says(blue_pipeline):
    """Right or wrong (it misread before issue 40, above), the JSON-mode answer comes from the passages:
    the Blue line was served, every citation names a served chunk, and each dollar amount
    the answer states is in a passage it cites. (Replies come from the test above's cache.)
    Read with the support gate flagging only; the default gate (abstain) is checked below."""
    flag = AgentConfig(max_steps=3, mode="json", support=SupportConfig(on_unsupported="flag"))
    res = run_agent(BLUE_FEE_QUESTION, blue_pipeline.chat_model, AgenticRAGTool(blue_pipeline),
                    flag)
    assert res.tool_calls >= 1 and BLUE_FEE_CHUNK in res.served
    assert res.cites_served and res.citation_valid, (res.answer, res.invalid_citations)
    texts = {c.id: c.text for c in blue_pipeline.index.store.get()}
    cited = " ".join(texts[cid] for cid in res.cited_chunks)
    amounts = re.findall(r"\$\d[\d,]*(?:\.\d+)?", res.answer)
    assert amounts and all(a in cited for a in amounts), (res.answer, cited)
    if "$20" not in res.answer:  # a misread (before issue 40): another product's fee
        gated = run_agent(BLUE_FEE_QUESTION, blue_pipeline.chat_model,
                          AgenticRAGTool(blue_pipeline), max_steps=3, mode="json")
        assert gated.abstained and gated.gate_action == "abstain", gated.answer


@pytest.fixture(scope="module")
def default_run(blue_default):
    """The default agent (AgentConfig()) on the default server: what `agentic-rag ask` runs."""
    return run_agent(BLUE_FEE_QUESTION, blue_default.chat_model,
                     AgenticRAGTool(blue_default))  # AgentConfig()


def test_default_agent_searches_on_a_documentation_question(default_run):
    """Issue 11: with the default AgentConfig the agent searches and cites nothing unserved."""
    res = default_run
    assert res.policy == AgentConfig().policy and res.tool_calls >= 1 and res.served
    assert res.citation_valid, (res.answer, res.invalid_citations)


def test_default_agent_answer_cites_a_served_chunk(default_run):
    """Issue 11: the default agent's answer cites a chunk it was served. On llama-cpp-python's
    server, with the Blue row served 3rd of 5 (two Lime Green $25.00 passages above it),
    Qwen2.5-Coder-1.5B answered "… $20.00, as stated in Document 3 [6ab58]". It was xfail
    under the agent-v2 prompt (question before the passages: "I don't know"); the
    passages-first prompt (chosen on dev, experiments/agent-runs/README.md) passed every run
    since; since 2026-12-06 it runs on the default server (passed there too)."""
    res = default_run
    assert res.cites_served, (res.answer, res.citations)
    assert set(res.cited_chunks) <= set(res.served) and "20" in res.answer


@pytest.mark.parametrize("mode", ["native", "json"])
def test_tool_required_makes_the_first_turn_a_bounded_search(request, mode):
    """llama-cpp-python's server honours `tool_choice` (native: pinned there); JSON actions
    stay under their max_tokens whatever the model would write (on the default server)."""
    cfg = AgentConfig(policy="tool_required", mode=mode)
    pipe = _blue(request, mode)
    res = run_agent("Is there a fee for an outgoing international wire transfer?",
                    pipe.chat_model, AgenticRAGTool(pipe), cfg)
    first = res.steps[0]
    assert first.kind == "tool_call" and first.via == ("tool_choice" if mode == "native" else
                                                       "json_forced"), res.steps
    assert first.arguments["query"] and first.completion_tokens <= cfg.action_max_tokens
    assert res.action_failures == 0 and res.stop_reason in ("answer", "max_steps", "nothing_found")


def test_support_judge_separates_halueval_answers(qwen_default):
    from agentic_rag.datasets.qa import load_dataset
    from agentic_rag.evaluation.llm_judge import validate_judge

    ds = load_dataset("halueval-qa").split("dev").sample(8, seed=5)
    items = [(q.text, q.metadata["knowledge"], q.answers[0], q.metadata["hallucinated_answer"])
             for q in ds.queries]
    chat = OpenAIChatModel(LLMConfig(), base_url=qwen_default.base_url)
    res = validate_judge(chat, items)
    assert res["n"] + res["failures"] == 16
    assert res["flags_hallucinated"] > res["flags_right"]  # it tells them apart on average
    assert 0.5 < res["auroc"] <= 1.0


def test_sweep_with_llm_metric_groups(qwen_default, tmp_path):
    """answers + hallucination + ragas (faithfulness) + non-LLM ragas + the agent loop,
    on one sampled query."""
    from agentic_rag.experiments.runner import run_sweep
    from agentic_rag.experiments.spec import SweepSpec

    spec = SweepSpec.model_validate({
        "name": "llm", "dataset": {"name": "halueval-qa", "n": 3, "seed": 1, "corpus_size": 60},
        "base": {"llm": {"server": {"port": qwen_default.config.port}},  # the fixture's server
                 "context": {"max_tokens": 400}},
        "metrics": ["retrieval", "answers", "hallucination", "ragas", "ragas_nonllm", "agent"],
        "ragas_metrics": ["faithfulness"], "llm_sample": 1})
    res = run_sweep(spec, tmp_path / "runs", tmp_path / "cache", progress=False,
                    log=lambda *_: None)
    df = res.results
    assert len(df) == 3
    sampled = df[df["answer"].notna()]
    assert len(sampled) == 1  # LLM metrics only on the sample
    row = sampled.iloc[0]
    assert row["llm_prompt_tokens"] > 0 and row["hallucinated"] in (0.0, 1.0)
    assert 0.0 <= row["token_f1"] <= 1.0
    # ragas scores it on the real server (0.5 in 224 s at load 6 when checked); a failure is
    # recorded as an error, not a score (test_evaluation), and fails this test
    error = row.get("ragas_faithfulness_error")
    assert not isinstance(error, str), f"ragas faithfulness failed: {error}"
    assert 0.0 <= row["ragas_faithfulness"] <= 1.0
    assert 0.0 <= row["ragas_nonllm_context_recall"] <= 1.0
    assert row["agent_stop_reason"] in ("answer", "max_steps")
    # retrieve_first (the default policy): exactly one search is the policy's own
    assert row["agent_tool_calls"] == row["agent_model_tool_calls"] + 1
    assert row["agent_retrieval_iterations"] >= 1 and row["agent_context_tokens"] > 0
    assert row["agent_prompt_tokens"] > 0
    s = res.summary.iloc[0]
    assert s["llm_prompt_tokens_total"] == row["llm_prompt_tokens"] and s["failures"] == 0
