"""Graded support detectors: how well is an answer supported by the context it was given?

Every detector returns a support score in [0, 1] (1 = supported); the hallucination
score is `1 - support`, and AUROC is computed on those scores, never on 0/1 verdicts.

- `graded_support`: the LLM judge's P(yes) to "is every claim in the answer stated in the
  context?", read from the log-probabilities of its one-token reply (P(yes) / (P(yes) +
  P(no)) over the top alternatives). A reply without log-probabilities, or with neither
  "yes" nor "no" among them, raises `LLMError` naming the model: never a silent 0.5.
- `lexical_support`: the share of the answer's content words (SQuAD-normalised, English
  stopwords of bm25s removed) that occur in the context. Five lines, no LLM: the baseline
  an LLM judge has to beat to be worth its cost.
- `mean` (detector name): the average of the two (fixed equal weights, not fitted).

`support_score(detector, chat, context, answer)` is the one entry point for a selectable
detector (`agent.support.detector` in `run_agent`); `combine_support` is the one definition
of how a detector's score is made from the two primitive scores (floats or pandas columns).

The judge's messages start with the context, so an answer call and a judge call on the same
context can share a processed prefix on servers that cache it.
"""

from __future__ import annotations

import functools
import math
from typing import Any, get_args

from ..config import SupportDetector
from ..llm import ChatModel, ChatReply, LLMError
from .answers import normalize_answer

GRADED_JUDGE_PROMPT = (
    "Read the answer below and check it against the context above. Is every claim in the "
    "answer stated in or directly implied by the context? Reply with one word: yes or no.")
GRADED_JUDGE_VERSION = "graded-yes-no-v1"
TOP_LOGPROBS = 20
SUPPORT_DETECTORS: tuple[str, ...] = get_args(SupportDetector)  # graded_judge, lexical, mean


@functools.lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def content_words(text: str) -> list[str]:
    """Normalised tokens of `text` without English stopwords."""
    stop = _stopwords()
    return [w for w in normalize_answer(text).split() if w not in stop]


def lexical_support(context: str, answer: str) -> float:
    """Share of the answer's content words found in the context; 1.0 for an answer without
    content words (nothing in it can be unsupported)."""
    words = content_words(answer)
    if not words:
        return 1.0
    vocab = set(normalize_answer(context).split())
    return sum(w in vocab for w in words) / len(words)


def judge_messages(context: str, answer: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": f"Context:\n{context}"},
            {"role": "user", "content": f"{GRADED_JUDGE_PROMPT}\n\nAnswer: {answer}"}]


def p_yes(top: dict[str, float]) -> float:
    """P(yes) / (P(yes) + P(no)) from one position's {token: log-probability}; tokens are
    compared stripped and lower-cased, so "Yes", " yes" and "YES" all count as yes."""
    mass = {"yes": 0.0, "no": 0.0}
    for token, logprob in top.items():
        t = token.strip().lower()
        if t in mass:
            mass[t] += math.exp(logprob)
    total = mass["yes"] + mass["no"]
    if total == 0.0:
        raise ValueError(f"neither yes nor no among the top tokens {sorted(top)[:10]}")
    return mass["yes"] / total


def graded_support(chat: ChatModel, context: str, answer: str) -> tuple[float, ChatReply]:
    """P(supported) from the judge's first reply token (see module doc)."""
    reply = chat.chat(judge_messages(context, answer), max_tokens=1, top_logprobs=TOP_LOGPROBS)
    where = " at ".join(str(x) for x in (getattr(chat, "model_id", type(chat).__name__),
                                          getattr(chat, "base_url", None)) if x)
    if not reply.top_logprobs:
        raise LLMError(f"{where}: the judge's reply carries no log-probabilities (the endpoint "
                       "must support `logprobs`/`top_logprobs`; llama-cpp-python needs "
                       "logits_all, its server's default)", "malformed", reply.attempts)
    try:
        return p_yes(reply.top_logprobs[0]), reply
    except ValueError as exc:
        raise LLMError(f"{where}: {exc} (reply {reply.content!r})", "malformed",
                       reply.attempts) from exc


def combine_support(detector: str, graded_judge: Any, lexical: Any) -> Any:
    """`detector`'s support score from the judge's and the lexical score (floats, or pandas
    columns: the same arithmetic); a detector that does not use a score ignores it."""
    if detector == "graded_judge":
        return graded_judge
    if detector == "lexical":
        return lexical
    if detector == "mean":
        return (graded_judge + lexical) / 2
    raise ValueError(f"unknown support detector {detector!r} (one of {list(SUPPORT_DETECTORS)})")


def support_score(detector: str, chat: ChatModel | None, context: str, answer: str) -> float:
    """The support in [0, 1] of `answer` by `context` under `detector` (graded_judge | lexical
    | mean). The judge's detectors ask `chat` once and raise its `LLMError` (a reply without
    usable log-probabilities included): a failure is never turned into a score."""
    if detector not in SUPPORT_DETECTORS:
        raise ValueError(f"unknown support detector {detector!r} (one of "
                         f"{list(SUPPORT_DETECTORS)})")
    judge = lexical = None
    if detector != "graded_judge":
        lexical = lexical_support(context, answer)
    if detector != "lexical":
        if chat is None:
            raise ValueError(f"support detector {detector!r} needs a chat model (the LLM "
                             "judge); 'lexical' needs none")
        judge, _ = graded_support(chat, context, answer)
    return float(combine_support(detector, judge, lexical))
