"""Graded support detectors: the LLM judge's P(yes) from log-probabilities, and the lexical
baseline it must beat."""

import math
from types import SimpleNamespace as NS

import pytest

from agentic_rag.config_llm import LLMConfig
from agentic_rag.evaluation.support import (
    checkable,
    content_words,
    graded_support,
    judge_messages,
    lexical_numbers_support,
    lexical_support,
    p_yes,
    support_score,
)
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.llm.types import ChatReply, LLMError


class _Chat:
    model_id = "fake@test"

    def __init__(self, top):
        self.top, self.calls = top, []

    def chat(self, messages, **kw):
        self.calls.append((messages, kw))
        return ChatReply(content="yes", top_logprobs=self.top)


def test_p_yes_pools_case_and_space_variants():
    top = {"Yes": math.log(0.5), " yes": math.log(0.1), "No": math.log(0.2), "maybe": -1.0}
    assert p_yes(top) == pytest.approx(0.6 / 0.8)
    with pytest.raises(ValueError, match="neither yes nor no"):
        p_yes({"maybe": -0.1, "perhaps": -2.0})


def test_graded_support_reads_first_position_and_fails_loudly():
    chat = _Chat([{"no": math.log(0.9), "yes": math.log(0.05)}])
    p, reply = graded_support(chat, "The fee is $10.", "The fee is $15.")
    assert p == pytest.approx(0.05 / 0.95)
    messages, kw = chat.calls[0]
    assert kw["top_logprobs"] >= 5 and kw["max_tokens"] == 1
    # the context comes first, so an answer prompt on the same context can share the prefix
    assert messages[0]["content"].startswith("Context:\nThe fee is $10.")
    with pytest.raises(LLMError, match="fake@test.*no log-probabilities"):
        graded_support(_Chat([]), "ctx", "answer")
    with pytest.raises(LLMError, match="fake@test.*neither yes nor no"):
        graded_support(_Chat([{"perhaps": -0.1}]), "ctx", "answer")


def test_openai_reply_logprobs_are_parsed_and_requested():
    """The OpenAI wire format (choices[0].logprobs.content[i].top_logprobs) reaches
    ChatReply.top_logprobs, and the request carries logprobs/top_logprobs."""
    seen = {}

    def create(**kw):
        seen.update(kw)
        pos = NS(token="Yes", logprob=-0.1, top_logprobs=[NS(token="Yes", logprob=-0.1),
                                                          NS(token="No", logprob=-2.4)])
        return NS(choices=[NS(message=NS(content="Yes", tool_calls=None), finish_reason="length",
                              logprobs=NS(content=[pos]))],
                  usage=NS(prompt_tokens=12, completion_tokens=1))

    chat = OpenAIChatModel(LLMConfig(base_url="http://127.0.0.1:9/v1"),
                           client=NS(chat=NS(completions=NS(create=create))))
    p, reply = graded_support(chat, "ctx", "answer")
    assert seen["logprobs"] is True and seen["top_logprobs"] == 20
    assert reply.top_logprobs == [{"Yes": -0.1, "No": -2.4}]
    assert p == pytest.approx(math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.4)))


def test_lexical_support_is_the_share_of_content_words_found():
    ctx = "Arthur's Magazine (1844-1846) was an American literary periodical in Philadelphia."
    assert lexical_support(ctx, "Philadelphia, Pennsylvania") == 0.5
    assert content_words("It was published in Boston") == ["published", "boston"]
    assert lexical_support(ctx, "It was published in Boston") < lexical_support(
        ctx, "It was published in Philadelphia")


@pytest.mark.parametrize("answer", ["Yes", "No", "yes.", "1975", "45,000", "Philadelphia",
                                    "the", "", "Yes, Philadelphia"])
def test_an_answer_without_checkable_words_gets_no_lexical_score(answer):
    """A bare yes/no, number or single word makes no claim checkable without its question:
    its lexical scores are undefined (NaN), neither 0 (a "Yes" used to be flagged) nor 1 (a
    "No", a stopword, used to pass), and no question-blind detector scores it."""
    ctx = "Arthur's Magazine (1844-1846) was an American literary periodical in Philadelphia."
    assert not checkable(answer)
    assert math.isnan(lexical_support(ctx, answer))
    assert math.isnan(lexical_numbers_support(ctx, answer))
    for det in ("lexical", "lexical_numbers"):
        assert math.isnan(support_score(det, None, ctx, answer))


def test_combined_detectors_use_the_question_aware_judge_alone_on_short_answers():
    ctx = "Arthur's Magazine (1844-1846) was an American literary periodical in Philadelphia."
    calls = []

    class Judge:
        model_id = "fake"

        def chat(self, messages, **kw):
            calls.append(messages[-1]["content"])
            return ChatReply(content="yes", top_logprobs=[{"yes": math.log(0.8),
                                                            "no": math.log(0.2)}])

    chat = Judge()
    q = "Where was Arthur's Magazine published?"
    assert support_score("mean_numbers_q", chat, ctx, "Philadelphia", q) == pytest.approx(0.8)
    assert "Question:" in calls[-1]
    n = len(calls)
    assert math.isnan(support_score("mean_numbers", chat, ctx, "Yes", q))  # blind: undefined
    assert math.isnan(support_score("graded_judge", chat, ctx, "Yes", q))
    assert len(calls) == n  # the blind judge is not even asked
    # a checkable answer: the mean of both parts, as before
    both = support_score("mean_numbers", chat, ctx, "published in Philadelphia")
    assert both == pytest.approx((0.8 + 0.5) / 2)  # "published" is not in the context


def test_judge_messages_shape():
    m = judge_messages("C", "A")
    assert [x["role"] for x in m] == ["system", "user"] and m[1]["content"].endswith("Answer: A")


def test_graded_judge_on_the_real_server(smol_server):
    """llama.cpp's server returns top log-probabilities for chat completions; the judge's
    score is computed from exactly those numbers (SmolLM2 checks the wiring, not judgement)."""
    chat = OpenAIChatModel(LLMConfig(), base_url=smol_server.base_url)
    reply = chat.chat(judge_messages("The sky is blue.", "The sky is blue."), max_tokens=1,
                      top_logprobs=20)
    assert reply.top_logprobs and len(reply.top_logprobs[0]) >= 5
    assert all(lp <= 0.0 for lp in reply.top_logprobs[0].values())
    try:
        p = p_yes(reply.top_logprobs[0])
    except ValueError:
        pytest.skip("SmolLM2 put neither yes nor no in its top 20 for this prompt")
    assert 0.0 <= p <= 1.0
