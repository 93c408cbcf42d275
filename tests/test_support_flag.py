"""The support of the agent's answer, in front of users: `run_agent` scores its final answer
against the passages it cites (`agent.support`) and `agentic-rag ask` marks one below the
threshold as UNSUPPORTED.

The case from issue 20, on the real τ²-banking corpus: asked for a Lime Green business
account's domestic wire fee, the agent answered $15 citing a passage that states no amount
(the documents say $10). The passages are the ones the pipeline served for that question
with the default config on the whole corpus (`AgenticRAGTool.search`, the retrieve_first
search; 2026-12-01), in its order: first the Lime Green "Common reasons you may see a fee"
passage (no amount), fourth the Navy Blue account's "$15.00" — where the $15 came from.
Here they are rendered by the real chunker and formatter, so no index or model is needed.
"""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from agentic_rag.agent.loop import run_agent
from agentic_rag.agent.result import AgentResult, passages_by_citation
from agentic_rag.agent.tool import AgenticRAGTool, ToolOutput
from agentic_rag.cli.core import _echo_support
from agentic_rag.cli.main import app
from agentic_rag.config import AgentConfig, ContextConfig, RAGConfig, SupportConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.documents import Hit
from agentic_rag.evaluation.support import lexical_support, support_score
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.llm.types import ChatReply, LLMError
from agentic_rag.retrieve.context import AgenticContextFormatter, citation_id

QUESTION = "What is the domestic wire fee for a Lime Green business account?"
NO_AMOUNT = "doc_business_checking_accounts_lime_green_008#prose@37-339"
NAVY_15 = "doc_business_checking_accounts_navy_blue_003#prose@51-91"
SERVED = [(NO_AMOUNT, 0.99), ("doc_checking_accounts_bluest_account_003#table_row@671-709", 0.90),
          ("doc_checking_accounts_light_blue_account_004#table_row@345-383", 0.82),
          (NAVY_15, 0.77), ("doc_checking_accounts_light_green_account_002#table_row@754-822", 0.73)]
STATES_10 = "doc_business_checking_accounts_lime_green_004#prose@22-120"  # "Wire Transfer Pricing"
WRONG = "The domestic wire fee is $15."
RIGHT = "The domestic wire fee is $10."


@pytest.fixture(scope="module")
def chunks(banking):
    """The real chunks of the documents used here, by chunk id."""
    wanted = {cid.split("#")[0] for cid, _ in SERVED} | {STATES_10.split("#")[0]}
    chunker = AgenticChunker(RAGConfig().chunking)
    return {c.id: c for d in banking if d.id in wanted for c in chunker.chunk(d)}


def served_output(chunks, served=SERVED, context: ContextConfig | None = None) -> ToolOutput:
    hits = [Hit(chunk=chunks[cid], score=score, rank=i + 1) for i, (cid, score) in enumerate(served)]
    ctx = AgenticContextFormatter(context or RAGConfig().context).format_for_agent(hits)
    return ToolOutput(content=ctx.text, chunk_ids=ctx.included, intent="fact",
                      query_used=QUESTION, iterations=1, stop_reason="confident",
                      confidence=0.9, context_tokens=ctx.tokens)


class ServedTool:
    """The search tool, replaying one search's real output."""

    openai_schema = staticmethod(AgenticRAGTool.openai_schema)

    def __init__(self, output: ToolOutput) -> None:
        self.output = output

    def reset(self) -> None:
        pass

    def search(self, query, max_results=5, focus_area="any"):  # noqa: ANN001, ANN201
        return self.output


class ScriptedChat:
    """Answers the agent's turn with `answer`; a judge call (it asks for top_logprobs) gets
    P(yes) = `p_yes`, or a reply without log-probabilities when `p_yes` is None."""

    model_id = "scripted@test"

    def __init__(self, answer: str, p_yes: float | None = 0.5) -> None:
        self.answer, self.p_yes = answer, p_yes
        self.judged: list[str] = []  # the context of each judge call

    def chat(self, messages, **kw):  # noqa: ANN001, ANN201
        if not kw.get("top_logprobs"):  # the agent's own turns ask for none
            return ChatReply(content=self.answer)
        self.judged.append(messages[0]["content"])
        if self.p_yes is None:
            return ChatReply(content="yes")
        return ChatReply(content="yes", top_logprobs=[{"yes": math.log(self.p_yes),
                                                        "no": math.log(1 - self.p_yes)}])


def on(detector: str = "mean", threshold: float = 0.5) -> AgentConfig:
    # the detector's verdict on the answer as given: the gate only flags here (its default,
    # abstain, would replace the wrong-figure answer; tests/test_support_gate.py covers that)
    return AgentConfig(support=SupportConfig(enabled=True, detector=detector, threshold=threshold,
                                             on_unsupported="flag"))


def test_the_served_passages_are_the_real_ones(chunks):
    out = served_output(chunks)
    no_amount, navy = passages_by_citation(out.content)[citation_id(NO_AMOUNT)], \
        passages_by_citation(out.content)[citation_id(NAVY_15)]
    assert "Fees for sending domestic or international wire transfers" in no_amount
    assert "$" not in no_amount.split("\n", 2)[2]  # its text states no amount
    assert "$15.00" in navy and "Domestic outgoing wire: $10.00" in chunks[STATES_10].text


def test_wire_fee_case_the_lexical_baseline_cannot_flag(chunks):
    """The lexical baseline scores $15 and $10 alike against the passage without an amount
    (3 content words of 4: domestic, wire, fee; not the number): it does not flag this case
    at 0.5. Against the passage stating "$10.00" it finds the 10 ("$10.00" = "10") and not the
    15. `lexical_numbers` flags the case: the answer's number is not in the passage."""
    no_amount = passages_by_citation(served_output(chunks).content)[citation_id(NO_AMOUNT)]
    states_10 = served_output(chunks, [(STATES_10, 0.99)]).content
    assert lexical_support(no_amount, WRONG) == lexical_support(no_amount, RIGHT) == 0.75
    assert lexical_support(states_10, RIGHT) == 0.75 and lexical_support(states_10, WRONG) == 0.5
    assert support_score("lexical", None, no_amount, WRONG) == 0.75  # not below 0.5
    assert support_score("lexical_numbers", None, no_amount, WRONG) == 0.0  # flagged
    assert support_score("lexical_numbers", None, states_10, RIGHT) == 0.75  # supported


@pytest.mark.parametrize("p_yes, score, supported", [(0.1, (0.1 + 0.75) / 2, False),
                                                      (0.9, (0.9 + 0.75) / 2, True)])
def test_run_agent_scores_the_answer_against_the_passage_it_cites(chunks, p_yes, score, supported):
    chat = ScriptedChat(f"{WRONG} [{citation_id(NO_AMOUNT)}]", p_yes)
    res = run_agent(QUESTION, chat, ServedTool(served_output(chunks)), on("mean"))
    assert res.cited_chunks == [NO_AMOUNT] and res.stop_reason == "answer"
    assert (res.support_detector, res.support_against, res.support_threshold) == \
        ("mean", "cited", 0.5)
    assert res.support_score == pytest.approx(score) and res.supported is supported
    assert res.support_error is None and res.support_note is None
    # the judge read the cited passage only, not the served Navy Blue "$15.00"
    (context,) = chat.judged
    assert "Fees for sending domestic or international wire transfers" in context
    assert "$15.00" not in context and "Navy" not in context


def test_the_right_answer_citing_the_passage_that_states_it(chunks):
    output = served_output(chunks, [(STATES_10, 0.99), *SERVED])
    chat = ScriptedChat(f"{RIGHT} [{citation_id(STATES_10)}]", p_yes=0.9)
    res = run_agent(QUESTION, chat, ServedTool(output), on("lexical"))
    assert res.support_against == "cited" and res.support_score == 0.75 and res.supported
    assert chat.judged == []  # lexical asks no LLM
    mean = run_agent(QUESTION, chat, ServedTool(output), on("mean"))
    assert mean.support_score == pytest.approx((0.9 + 0.75) / 2) and mean.supported
    assert "Domestic outgoing wire: $10.00" in chat.judged[0] and "Navy" not in chat.judged[0]


def test_the_question_aware_detector_gets_the_agents_question(chunks):
    """`mean_numbers_q` in run_agent: the judge reads the question the agent answered (a
    caller that dropped it would raise, not score)."""
    chat = ScriptedChat(f"{WRONG} [{citation_id(NO_AMOUNT)}]", p_yes=0.9)
    prompts = []
    judge = chat.chat
    chat.chat = lambda messages, **kw: (prompts.append(messages[-1]["content"]),
                                         judge(messages, **kw))[1]
    res = run_agent(QUESTION, chat, ServedTool(served_output(chunks)), on("mean_numbers_q"))
    assert res.support_detector == "mean_numbers_q" and res.support_error is None
    assert res.support_score == pytest.approx((0.9 + 0.0) / 2)  # no amount: numbers 0
    assert f"Question: {QUESTION}\nAnswer: {WRONG}" in prompts[-1]


def test_no_citation_is_scored_against_everything_served(chunks):
    chat = ScriptedChat(WRONG, p_yes=0.9)
    res = run_agent(QUESTION, chat, ServedTool(served_output(chunks)), on("lexical"))
    assert res.cited_chunks == [] and res.support_against == "served"
    assert res.support_score == 1.0 and res.supported  # the served Navy Blue "$15.00" is 15
    assert "cites no served passage" in res.support_note


def test_a_judge_without_logprobs_is_recorded_never_scored(chunks):
    chat = ScriptedChat(f"{WRONG} [{citation_id(NO_AMOUNT)}]", p_yes=None)
    res = run_agent(QUESTION, chat, ServedTool(served_output(chunks)), on("graded_judge"))
    assert res.answer.startswith(WRONG) and res.stop_reason == "answer"
    assert res.support_score is None and res.supported is None
    assert res.support_error.startswith("malformed:") and "no log-probabilities" in res.support_error
    assert "scripted@test" in res.support_error  # names the model


def test_not_scored_abstention_closed_book_failure_and_off_by_default(chunks):
    tool = ServedTool(served_output(chunks))
    abstain = run_agent(QUESTION, ScriptedChat("I don't know."), tool, on())
    assert abstain.support_score is None and abstain.supported is None
    assert "abstention" in abstain.support_note and abstain.support_detector is None
    closed = run_agent(QUESTION, ScriptedChat(WRONG), None,
                       on().model_copy(update={"policy": "closed_book"}))
    assert closed.support_score is None and "no passages" in closed.support_note

    class Down(ScriptedChat):
        def chat(self, messages, **kw):  # noqa: ANN001, ANN201
            raise LLMError("HTTP 500", "transport", 3)

    failed = run_agent(QUESTION, Down(WRONG), tool, on())
    assert failed.stop_reason == "llm_error" and failed.support_score is None
    assert "no answer" in failed.support_note and failed.support_error is None
    chat = ScriptedChat(f"{WRONG} [{citation_id(NO_AMOUNT)}]")
    default = run_agent(QUESTION, chat, tool)  # AgentConfig(): off, no judge call
    assert default.support_score is None and chat.judged == []
    assert "enabled is off" in default.support_note
    assert AgentConfig().support.detector == "graded_judge_q" and not AgentConfig().support.enabled


@pytest.mark.parametrize("style", ["dashes", "xml", "markdown"])
def test_passages_by_citation_reads_every_header_style(chunks, style):
    out = served_output(chunks, context=ContextConfig(header_style=style))
    passages = passages_by_citation(out.content)
    assert list(passages) == [citation_id(c) for c in out.chunk_ids]
    assert "$15.00" in passages[citation_id(NAVY_15)]
    assert "$15.00" not in passages[citation_id(NO_AMOUNT)]


def test_ask_marks_an_unsupported_answer(capsys):
    base = dict(question=QUESTION, answer=WRONG, stop_reason="answer", support_detector="mean",
                support_threshold=0.5, support_against="cited")
    _echo_support(AgentResult(**base, support_score=0.12, supported=False))
    _echo_support(AgentResult(**base, support_score=0.83, supported=True))
    _echo_support(AgentResult(**{**base, "support_against": None}, support_error="malformed: x"))
    out = capsys.readouterr().out.splitlines()
    assert out[0].strip() == "UNSUPPORTED by the cited passages (support 0.12 < 0.50, detector mean)"
    assert out[1].strip() == "supported by the cited passages (support 0.83 >= 0.50, detector mean)"
    assert out[2].strip() == "support: judge failed: malformed: x"


def test_ask_reports_support_through_the_cli(tmp_path):
    """`ask` turns the check on (config default off) and prints why it did not score a
    closed-book answer; --no-support prints nothing about it. The LLM is a canned HTTP stub."""
    from .faultproxy import StubChatServer

    stub = StubChatServer().start()
    try:
        cfg = tmp_path / "config.yaml"
        RAGConfig().with_overrides({"home": str(tmp_path / "home"), "llm.base_url": stub.base_url,
                                    "llm.max_retries": 0}).save(cfg)
        args = ["ask", QUESTION, "--config", str(cfg), "--policy", "closed_book", "--no-serve"]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        assert "support: not scored: no passages were served" in res.output
        off = CliRunner().invoke(app, [*args, "--no-support"])
        assert off.exit_code == 0 and "support:" not in off.output
    finally:
        stub.stop()


@pytest.mark.llm
def test_graded_judge_wiring_on_the_real_server(chunks, smol_server):
    """The judge call goes through a real OpenAI-compatible llama.cpp server (SmolLM2-135M:
    its verdicts are not judged here, only the wiring): a score in [0, 1], or — when SmolLM2
    puts neither yes nor no among its top 20 tokens — an error, never both."""
    real = OpenAIChatModel(LLMConfig(max_retries=0), base_url=smol_server.base_url)

    class AgentTurnScripted:
        model_id = real.model_id

        def chat(self, messages, **kw):  # noqa: ANN001, ANN201
            if kw.get("top_logprobs"):
                return real.chat(messages, **kw)
            return ChatReply(content=f"{WRONG} [{citation_id(NO_AMOUNT)}]")

    res = run_agent(QUESTION, AgentTurnScripted(), ServedTool(served_output(chunks)),
                    on("graded_judge"))
    assert res.support_detector == "graded_judge" and res.support_against == "cited"
    if res.support_error is None:
        assert 0.0 <= res.support_score <= 1.0
        assert res.supported is (res.support_score >= 0.5)
    else:
        assert res.support_score is None and res.supported is None
        assert "neither yes nor no" in res.support_error
