"""Graded support detectors: the LLM judge's P(yes) from log-probabilities, and the lexical
baseline it must beat."""

import math
from types import SimpleNamespace as NS

import pytest

from agentic_rag.config_llm import LLMConfig
from agentic_rag.evaluation.support import content_words, graded_support, judge_messages, lexical_support, p_yes
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
    assert lexical_support(ctx, "Philadelphia") == 1.0
    assert content_words("It was published in Boston") == ["published", "boston"]
    assert lexical_support(ctx, "It was published in Boston") < lexical_support(
        ctx, "It was published in Philadelphia")
    assert lexical_support(ctx, "the") == 1.0  # nothing that could be unsupported


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
