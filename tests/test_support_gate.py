"""The support gate (issue 40): every figure of the answer in a cited passage from a document about
the product the question names; flag, retry (search within the named documents, answer again)
or abstain. The passages are the real ones of issue 20's Lime Green wire-fee case, rendered by
the real chunker and formatter (`test_support_flag.py`); which documents the question names
comes from the real name coverage over the whole τ²-banking corpus."""

from __future__ import annotations

import pytest

from agentic_rag.agent.loop import run_agent
from agentic_rag.agent.tool import AgenticRAGTool, ToolOutput
from agentic_rag.config import AgentConfig, RAGConfig, SupportConfig
from agentic_rag.evaluation.figures import Passage, check_figures
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.llm.types import ChatReply
from agentic_rag.retrieve.context import citation_id
from agentic_rag.store.coverage import TitleCoverage
from agentic_rag.store.lexical import LexicalIndex
from tests.test_support_flag import NAVY_15, NO_AMOUNT, QUESTION, RIGHT, STATES_10, WRONG, chunks, served_output

__all__ = ["chunks"]  # the fixture, imported


@pytest.fixture(scope="module")
def coverage(banking):
    cfg = RAGConfig()
    cs = AgenticChunker(cfg.chunking).chunk_many(banking)
    return TitleCoverage(LexicalIndex(cfg.lexical).build(cs, [c.index_text() for c in cs]))


class _Index:
    def __init__(self, coverage):  # noqa: ANN001
        self.named_documents = coverage.named_documents


class _Pipeline:
    def __init__(self, coverage):  # noqa: ANN001
        self.index = _Index(coverage)


class GateTool:
    """The served search (issue 20's passages), a real name-coverage index behind
    `named_documents`, and `search_within` serving the Lime Green "$10.00" passage."""

    openai_schema = staticmethod(AgenticRAGTool.openai_schema)

    def __init__(self, chunks, coverage, within=(STATES_10,)) -> None:  # noqa: ANN001
        self.first = served_output(chunks)
        self.within_out = served_output(chunks, [(c, 0.9) for c in within])
        self.pipeline = _Pipeline(coverage)
        self.within: list[tuple[str, list[str]]] = []

    def reset(self) -> None:
        pass

    def search(self, query, max_results=5, focus_area="any") -> ToolOutput:  # noqa: ANN001
        return self.first

    def search_within(self, query, doc_ids, max_results=5) -> ToolOutput:  # noqa: ANN001
        self.within.append((query, doc_ids))
        return self.within_out


class Replies:
    """The agent's answer turns, in order (the last one repeats)."""

    model_id = "scripted@test"

    def __init__(self, *answers: str) -> None:
        self.answers, self.prompts = list(answers), []

    def chat(self, messages, **kw):  # noqa: ANN001, ANN201
        self.prompts.append(messages[-1]["content"])
        return ChatReply(content=self.answers.pop(0) if len(self.answers) > 1 else self.answers[0])


def cfg(action: str) -> AgentConfig:
    return AgentConfig(max_steps=1, support=SupportConfig(on_unsupported=action))


def cite(answer: str, chunk: str) -> str:
    return f"{answer} [{citation_id(chunk)}]"


def test_check_figures_pure():
    ps = [Passage("aaaaa", "doc_navy_003", "--- Document 1 [aaaaa] ---\nSource: doc_navy_003\n"
                  "Domestic outgoing wire: $15.00"),
          Passage("bbbbb", "doc_lime_004", "Domestic outgoing wire: $10.00 per transfer.")]
    assert check_figures("q?", "It is $15.", ps, ["aaaaa"], ["doc_lime_004"]).wrong_product == ("15",)
    assert check_figures("q?", "It is $10.00.", ps, ["bbbbb"], ["doc_lime_004"]).ok
    c = check_figures("q?", "It is $12.", ps, ["bbbbb"], [])
    assert c.unsupported == ("12",) and c.against == "cited"
    assert check_figures("q?", "It is $15.", ps, [], []).against == "served"  # no citation
    # the header's document number is no figure; a number of the question is no claim
    assert check_figures("q?", "It is 3.", ps, ["aaaaa"], []).unsupported == ("3",)
    assert check_figures("my 2 cards?", "2 cards cost $10", ps, ["bbbbb"], []).figures == ("10",)
    assert check_figures("q?", "Per Document 3, $10.", ps, ["bbbbb"], []).figures == ("10",)


def test_the_question_names_the_lime_green_documents(coverage):
    named = coverage.named_documents(QUESTION)
    assert named and all("_lime_green_" in d for d in named)
    assert STATES_10.split("#")[0] in named and NAVY_15.split("#")[0] not in named


def test_flag_keeps_the_answer_and_records_the_verdict(chunks, coverage):
    res = run_agent(QUESTION, Replies(cite(WRONG, NO_AMOUNT)), GateTool(chunks, coverage),
                    cfg("flag"))
    assert res.answer == cite(WRONG, NO_AMOUNT) and res.gate_action == "flag"
    assert res.figures == ["15"] and res.figures_unsupported == ["15"]
    assert "15 in no cited passage" in res.gate_notes[0]


def test_a_neighbours_figure_is_the_wrong_product(chunks, coverage):
    """$15 is stated by the passage it cites — Navy Blue's, not Lime Green's."""
    res = run_agent(QUESTION, Replies(cite(WRONG, NAVY_15)), GateTool(chunks, coverage),
                    cfg("flag"))
    assert res.figures_unsupported == [] and res.figures_wrong_product == ["15"]
    assert res.gate_action == "flag"


def test_retry_searches_the_named_documents_and_answers_again(chunks, coverage):
    chat = Replies(cite(WRONG, NAVY_15), cite(RIGHT, STATES_10))
    tool = GateTool(chunks, coverage)
    res = run_agent(QUESTION, chat, tool, cfg("retry"))
    assert res.answer == cite(RIGHT, STATES_10) and res.gate_action == "retry"
    (query, docs), = tool.within
    assert "Lime Green" in query and all("_lime_green_" in d for d in docs)
    assert res.gate_notes[1] == f"searched again for {query!r}"
    assert "every figure now in a cited passage" in res.gate_notes[-1]
    assert "Your previous answer gave 15" in chat.prompts[-1]
    assert [s.via for s in res.steps][-2:] == ["gate", "gate"]
    assert not res.abstained and res.cited_chunks == [STATES_10]


def test_retry_that_still_fails_answers_i_dont_know_naming_what_it_looked_for(chunks, coverage):
    tool = GateTool(chunks, coverage, within=(NO_AMOUNT,))  # the retry finds no amount either
    res = run_agent(QUESTION, Replies(cite(WRONG, NAVY_15)), tool, cfg("retry"))
    assert res.abstained and res.gate_action == "retry"
    query = tool.within[0][0]
    assert f"'{query}'" in res.answer and "lime green" in res.answer
    assert res.gate_notes[-1] == "not found: answered I don't know"


def test_abstain_at_once(chunks, coverage):
    tool = GateTool(chunks, coverage)
    res = run_agent(QUESTION, Replies(cite(WRONG, NAVY_15)), tool, cfg("abstain"))
    assert res.abstained and res.gate_action == "abstain" and tool.within == []


@pytest.mark.parametrize("action", ["flag", "retry", "abstain"])
def test_a_supported_answer_passes_untouched(chunks, coverage, action):
    tool = GateTool(chunks, coverage, within=(STATES_10,))
    tool.first = served_output(chunks, [(STATES_10, 0.9), (NAVY_15, 0.8)])
    res = run_agent(QUESTION, Replies(cite(RIGHT, STATES_10)), tool, cfg(action))
    assert res.answer == cite(RIGHT, STATES_10) and res.gate_action == "none"
    assert res.figures == ["10"] and tool.within == []


def test_config_rejects_an_unknown_action():
    with pytest.raises(ValueError):
        SupportConfig(on_unsupported="ignore")


def test_ask_shows_what_the_gate_did(chunks, coverage, capsys):
    from agentic_rag.cli.core import _echo_gate

    tool = GateTool(chunks, coverage, within=(NO_AMOUNT,))
    res = run_agent(QUESTION, Replies(cite(WRONG, NAVY_15)), tool, cfg("retry"))
    _echo_gate(res)
    out = capsys.readouterr().out
    assert f"gate (retry): searched again for '{tool.within[0][0]}'" in out
    assert "gate (retry): not found: answered I don't know" in out


def test_an_answer_without_figures_is_not_looked_up(chunks, coverage):
    class NoLookup(GateTool):
        @property
        def pipeline(self):  # noqa: ANN202
            raise AssertionError("named_documents looked up for an answer without figures")

        @pipeline.setter
        def pipeline(self, value):  # noqa: ANN001, ANN202
            pass

    # with amount_needs_figure off (the default fails it: the question asks for a fee)
    words = AgentConfig(max_steps=1, support=SupportConfig(on_unsupported="retry",
                                                           amount_needs_figure=False))
    res = run_agent(QUESTION, Replies(cite("Wires are priced per transfer.", STATES_10)),
                    NoLookup(chunks, coverage), words)
    assert res.gate_action == "none" and res.figures == [] and not res.abstained
    res = run_agent("Which documents do I need to open a Lime Green account?",
                    Replies(cite("A passport.", STATES_10)), NoLookup(chunks, coverage),
                    cfg("retry"))  # the default: no amount asked, nothing to look up
    assert res.gate_action == "none" and not res.abstained


def test_the_retry_query_keeps_the_content_words_only():
    from agentic_rag.agent.gate import retry_query

    assert retry_query("what's the annual fee on the green rewards card?", []) == \
        "annual fee green rewards card"


def test_passage_pointers_are_not_figures_an_answer_states():
    from agentic_rag.evaluation.figures import strip_passage_refs
    from agentic_rag.evaluation.support import numbers

    answer = "The fee is $10.00 per transfer, as stated in Document 3 and passage 2 [1]."
    assert numbers(answer) != numbers(strip_passage_refs(answer))
    assert numbers(strip_passage_refs(answer)) == numbers("The fee is $10.00 per transfer.")
    # a figure in brackets that is not a bare ordinal stays
    assert numbers(strip_passage_refs("a limit of [$3,000]")) == numbers("a limit of $3,000")


def test_which_questions_ask_for_an_amount_and_which_answers_state_a_zero_in_words():
    from agentic_rag.evaluation.figures import asks_amount, states_zero

    assert asks_amount("What's the bonus on the Beige business checking account?")
    assert asks_amount("How much can I spend each day with my card?")
    assert asks_amount("how many free ATM withdrawals do I get?")
    assert asks_amount("Can you tell me the APY boost of the Green Account?")
    for other in ("Which documents do I need to open a Lime Green account?",
                  "What does functools.partial return?", "How do I check my balance?",
                  "How can I dispute a charge on my card?", "What is the process to dispute a "
                  "charge?", "Does the Gold Account earn interest?", "Is my deposit FDIC insured?",
                  "Is the Blue Account monthly fee $15?"):  # how-to, yes/no: no amount asked
        assert not asks_amount(other), other
    # a ticket, not a question: it says "fee" and asks for many things
    ticket = " ".join(["I was charged twice last month and want my money back."] * 6)
    assert asks_amount(ticket[:200] + " What is the fee?") and not asks_amount(ticket + " fee?")
    for zero in ("The Bluest Account does not charge for stop payment requests.",
                 "Stop payments are free.", "There is no monthly fee.", "Transfers are unlimited.",
                 "Yes, you get charged nothing each month for paper statements.",
                 "You pay nothing for incoming wires.", "The bank charges nothing for it."):
        assert states_zero(zero), zero
    for other in ("The bonus is premium referral rewards.", "None of the passages say.",
                  "It is charged monthly.", "No fee amount is listed for the Lime Green account.",
                  "I found no information about the fee.", "Open a Green Fee-Free account.",
                  "Call our toll-free number.", "Zero-liability protection applies.",
                  "I searched and found nothing about the fee.", "Nothing in the passages says."):
        assert not states_zero(other), other
    # a zero the question says is no claim of the answer (as the question's figures are not)
    assert not states_zero("Requests at no charge are in the table.", "The fee at no charge?")


def test_an_amount_asked_and_none_stated_fails_only_with_require_figure():
    ps = [Passage("bbbbb", "doc_lime_004", "Domestic outgoing wire: $10.00 per transfer.")]
    q = "What is the domestic wire fee for a Lime Green account?"
    words = "Wires are priced per transfer."
    assert check_figures(q, words, ps, ["bbbbb"], []).ok  # today's default: nothing to check
    c = check_figures(q, words, ps, ["bbbbb"], [], require_figure=True)
    assert c.no_figure and not c.ok and c.failing == ()
    assert check_figures(q, "Wires are free.", ps, ["bbbbb"], [], require_figure=True).ok
    assert check_figures("Which documents do I need?", words, ps, ["bbbbb"], [],
                         require_figure=True).ok  # no amount asked
    assert check_figures(q, "It is $10.00.", ps, ["bbbbb"], [], require_figure=True).ok


@pytest.mark.parametrize("action", ["abstain", "retry"])
def test_the_gate_acts_on_an_amount_question_answered_without_a_figure(chunks, coverage, action):
    words = cite("Wires are priced per transfer.", STATES_10)
    chat = Replies(words, cite(RIGHT, STATES_10))
    tool = GateTool(chunks, coverage)
    config = AgentConfig(max_steps=1, support=SupportConfig(on_unsupported=action,
                                                            amount_needs_figure=True))
    res = run_agent(QUESTION, chat, tool, config)
    assert "the question asks for an amount and the answer states none" in res.gate_notes[0]
    if action == "abstain":
        assert res.abstained and tool.within == []
    else:  # searched again, told it stated no figure, and the second answer states $10
        assert res.answer == cite(RIGHT, STATES_10) and res.gate_action == "retry"
        assert "stated no figure for the amount asked" in chat.prompts[-1]


def test_a_placeholder_is_never_an_answer(chunks, coverage):
    from agentic_rag.evaluation.figures import has_placeholder
    for slot in ("It is [value not available] months.", "The fee is [insert amount].",
                 "[N/A]", "The rate is [amount]."):
        assert has_placeholder(slot), slot
    for text in ("See [3aefe].", "[Document 2]", "Call [get_input()].", "It is $5 [1].",
                 'The list ["Task 1"]'):
        assert not has_placeholder(text), text
    ps = [Passage("bbbbb", "doc_lime_004", "Domestic outgoing wire: $10.00 per transfer.")]
    c = check_figures("How long can I borrow?", "Up to [value not available] months.", ps,
                      ["bbbbb"], [])
    assert c.placeholder and not c.ok
    res = run_agent(QUESTION, Replies(cite("It is [value not available].", STATES_10)),
                    GateTool(chunks, coverage), cfg("abstain"))
    assert res.abstained and "placeholder" in res.gate_notes[0]


def test_a_passage_number_is_a_figure_a_pointer_or_a_citation(chunks, coverage):
    from agentic_rag.agent.gate import check_answer, numbered_citations
    tool = GateTool(chunks, coverage)
    tool.first = served_output(chunks, [(NAVY_15, 0.9), (STATES_10, 0.8)])  # Document 1, 2
    searches = [tool.first]
    assert numbered_citations("It is $10. [2]", searches) == [citation_id(STATES_10)]
    assert numbered_citations("Per [Document 1] and Document 2: $10.", searches) == \
        [citation_id(NAVY_15), citation_id(STATES_10)]
    assert numbered_citations("It is $10. [7]", searches) == []  # no passage numbered 7
    right, wrong = "The domestic wire fee is $10. [2]", "The domestic wire fee is $15. [2]"
    # figure (today's default): "2" is a figure no passage states
    assert check_answer(QUESTION, right, [], searches, []).unsupported == ("2",)
    # pointer: "[2]" is no figure; the figures are looked for in every served passage
    assert check_answer(QUESTION, right, [], searches, [], passage_numbers="pointer").ok
    assert check_answer(QUESTION, wrong, [], searches, [], passage_numbers="pointer").ok
    # citation: "[2]" cites Document 2, which states $10 and not $15
    assert check_answer(QUESTION, right, [], searches, [], passage_numbers="citation").ok
    c = check_answer(QUESTION, wrong, [], searches, [], passage_numbers="citation")
    assert c.unsupported == ("15",) and c.against == "cited"
    config = AgentConfig(max_steps=1, support=SupportConfig(on_unsupported="abstain",
                                                            passage_numbers="citation"))
    assert not run_agent(QUESTION, Replies(right), tool, config).abstained
    assert run_agent(QUESTION, Replies(right), tool, cfg("abstain")).abstained
