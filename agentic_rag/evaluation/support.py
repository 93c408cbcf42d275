"""Graded support detectors: how well is an answer supported by the context it was given?

Every detector returns a support score in [0, 1] (1 = supported); the hallucination
score is `1 - support`, and AUROC is computed on those scores, never on 0/1 verdicts.

- `graded_support`: the LLM judge's P(yes) to "is every claim in the answer stated in the
  context?", read from the log-probabilities of its one-token reply (P(yes) / (P(yes) +
  P(no)) over the top alternatives). A reply without log-probabilities, or with neither
  "yes" nor "no" among them, raises `LLMError` naming the model: never a silent 0.5.
- `lexical_support`: the share of the answer's content words (SQuAD-normalised, English
  stopwords of bm25s removed) that occur in the context. Five lines, no LLM: the baseline
  an LLM judge has to beat to be worth its cost. Numbers are canonicalised first, in answer
  and context alike (`canonical_number`: "$10.00" = "$10" = "10", "1,000" = "1000", "10.50"
  = "10.5"), where SQuAD's normalisation alone makes "$10.00" the word "1000".
- `mean` (detector name): the average of the judge and the lexical baseline (fixed equal
  weights, not fitted).
- `lexical_numbers`: the lexical support, but 0 when a number of the answer (an amount, a
  year, a count) is not in the context: numbers are the claims most often wrong and the
  easiest to check without an LLM. `mean_numbers`: the average of the judge and it;
  `mean_numbers_q`: the average of the question-aware judge and it.
- `graded_judge_q`: the same judge shown the question too ("Question: ... Answer: ..."): an
  answer such as "Yes" or "1975" makes no checkable claim without the question it answers,
  and set (ii)'s labels were made with the question in view. On those 150 answers it is no
  better than the blind judge (docs/experiments.md), so it is selectable, not the default.

An answer without checkable words — fewer than `MIN_CHECKABLE_WORDS` content words besides
yes/no: a bare "Yes", "1975", "Vestfold" — makes no claim that can be checked without its
question (`checkable`). No question-blind part scores it: its lexical scores and the blind
judge's are undefined (NaN, not 0 or 1: a bare "Yes" used to score lexical 0 and a bare "No",
a stopword, 1.0), and a combined detector is the mean of its defined parts. So on such an
answer `mean_numbers_q` is the question-aware judge alone, and `mean_numbers`, `mean`,
`graded_judge` and the lexical detectors return NaN: undefined, which a caller must not
read as supported or unsupported (a sweep records `hallucinated` as missing and counts it).

`support_score(detector, chat, context, answer, question)` is the one entry point for a
selectable detector (`agent.support.detector` in `run_agent`); `combine_support` is the one definition
of how a detector's score is made from its primitive scores (floats or pandas columns).

The judge's messages start with the context, so an answer call and a judge call on the same
context can share a processed prefix on servers that cache it.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, get_args

from agentic_rag.config import SupportDetector
from agentic_rag.evaluation.answers import normalize_answer
from agentic_rag.llm.types import ChatModel, ChatReply, LLMError

GRADED_JUDGE_PROMPT = (
    "Read the answer below and check it against the context above. Is every claim in the "
    "answer stated in or directly implied by the context? Reply with one word: yes or no.")
GRADED_JUDGE_VERSION = "graded-yes-no-v1"
QUESTION_JUDGE_PROMPT = (
    "Read the question and the answer below and check the answer against the context above. "
    "Is every claim the answer makes, as an answer to this question, stated in or directly "
    "implied by the context? Reply with one word: yes or no.")
QUESTION_JUDGE_VERSION = "graded-yes-no-question-v1"
# The LLM judges by primitive-score name; the `_q` one reads the question as well.
JUDGES: dict[str, bool] = {"graded_judge": False, "graded_judge_q": True}
JUDGE_VERSIONS = {"graded_judge": GRADED_JUDGE_VERSION,
                  "graded_judge_q": QUESTION_JUDGE_VERSION}
TOP_LOGPROBS = 20
SUPPORT_DETECTORS: tuple[str, ...] = get_args(SupportDetector)  # graded_judge, lexical, ...


@functools.lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


# A number standing alone (not inside a word such as "10th", "B2B" or "1990s"): digits with
# optional thousands commas ("1,000") and an optional decimal part ("10.50").
_NUMBER = re.compile(r"(?<![^\W_])((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?![^\W_])")


def canonical_number(number: str) -> str:
    """"1,000" → "1000", "10.00" → "10", "10.50" → "10.5", "007" → "7"."""
    whole, _, frac = number.replace(",", "").partition(".")
    whole, frac = whole.lstrip("0") or "0", frac.rstrip("0")
    return f"{whole}.{frac}" if frac else whole


def numbers(text: str) -> list[str]:
    """The canonical numbers of `text`, in order ("$10.00 and 1,000" → ["10", "1000"])."""
    return [canonical_number(m) for m in _NUMBER.findall(text)]


def support_tokens(text: str) -> list[str]:
    """`text`'s tokens for the lexical detectors: SQuAD-normalised words, with each number
    one canonical token (`canonical_number`) rather than SQuAD's digits without punctuation
    ("$10.00" → "10", not "1000"). EM/F1 keep SQuAD's `normalize_answer` unchanged."""
    out: list[str] = []
    for i, piece in enumerate(_NUMBER.split(text)):  # text, number, text, ...
        out.extend(normalize_answer(piece).split() if i % 2 == 0 else [canonical_number(piece)])
    return out


def content_words(text: str) -> list[str]:
    """`support_tokens` of `text` without English stopwords."""
    stop = _stopwords()
    return [w for w in support_tokens(text) if w not in stop]


MIN_CHECKABLE_WORDS = 2
_NOT_CHECKABLE = frozenset({"yes", "no"})


def checkable(answer: str) -> bool:
    """True when `answer` has at least `MIN_CHECKABLE_WORDS` content words besides yes/no:
    words whose presence in the context says something without the question."""
    return sum(w not in _NOT_CHECKABLE for w in content_words(answer)) >= MIN_CHECKABLE_WORDS


def lexical_support(context: str, answer: str) -> float:
    """Share of the answer's content words found in the context; NaN (undefined) for an
    answer without checkable words (`checkable`)."""
    words = content_words(answer)
    if not checkable(answer):
        return math.nan
    vocab = set(support_tokens(context))
    return sum(w in vocab for w in words) / len(words)


def lexical_numbers_support(context: str, answer: str) -> float:
    """`lexical_support`, but 0.0 when a number of the answer is not among the context's;
    NaN (undefined) for an answer without checkable words, a bare number included."""
    if not checkable(answer):
        return math.nan
    if not set(numbers(answer)) <= set(numbers(context)):
        return 0.0
    return lexical_support(context, answer)


def judge_messages(context: str, answer: str,
                   question: str | None = None) -> list[dict[str, str]]:
    """The judge's messages: the context first (a prefix shared with the answer prompt),
    then the instruction and the answer; with `question`, the question-aware judge's."""
    if question is None:
        user = f"{GRADED_JUDGE_PROMPT}\n\nAnswer: {answer}"
    else:
        user = f"{QUESTION_JUDGE_PROMPT}\n\nQuestion: {question.strip()}\nAnswer: {answer}"
    return [{"role": "system", "content": f"Context:\n{context}"},
            {"role": "user", "content": user}]


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


def graded_support(chat: ChatModel, context: str, answer: str,
                   question: str | None = None) -> tuple[float, ChatReply]:
    """P(supported) from the judge's first reply token (see module doc); with `question`,
    the question-aware judge (`graded_judge_q`)."""
    reply = chat.chat(judge_messages(context, answer, question), max_tokens=1,
                      top_logprobs=TOP_LOGPROBS)
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


# The no-LLM primitive scores, by name: cheap and pure, so a table recomputes them from
# (context, answer) rather than trusting a score written by an older version of them.
LEXICAL_SCORES: dict[str, Callable[[str, str], float]] = {
    "lexical": lexical_support, "lexical_numbers": lexical_numbers_support}
# Each detector from its primitive scores: the judge's P(yes) and the no-LLM ones.
def _mean(*parts: Any) -> Any:
    """The mean of the defined parts (floats or pandas columns); NaN where none is."""
    if all(isinstance(p, float) for p in parts):
        ok = [p for p in parts if p == p]
        return sum(ok) / len(ok) if ok else math.nan
    import pandas as pd

    return pd.concat([pd.Series(p, dtype=float) for p in parts], axis=1).mean(axis=1)


_COMBINE: dict[str, tuple[tuple[str, ...], Callable[..., Any]]] = {
    "graded_judge": (("graded_judge",), lambda j: j),
    "lexical": (("lexical",), lambda lex: lex),
    "mean": (("graded_judge", "lexical"), _mean),
    "lexical_numbers": (("lexical_numbers",), lambda ln: ln),
    "mean_numbers": (("graded_judge", "lexical_numbers"), _mean),
    "graded_judge_q": (("graded_judge_q",), lambda j: j),
    "mean_numbers_q": (("graded_judge_q", "lexical_numbers"), _mean),
}


def _known(detector: str) -> None:
    if detector not in SUPPORT_DETECTORS:
        raise ValueError(f"unknown support detector {detector!r} (one of "
                         f"{list(SUPPORT_DETECTORS)})")


def detector_inputs(detector: str) -> tuple[str, ...]:
    """The primitive scores `detector` is made of (`JUDGES` and/or `LEXICAL_SCORES`)."""
    _known(detector)
    return _COMBINE[detector][0]


def combine_support(detector: str, scores: Mapping[str, Any]) -> Any:
    """`detector`'s support score from its primitive scores (`scores[name]`, floats or pandas
    columns: the same arithmetic; fixed equal weights over the defined parts, nothing
    fitted). The callers set the question-blind parts of an answer without checkable words
    to NaN (`blind_parts_undefined`)."""
    names = detector_inputs(detector)
    return _COMBINE[detector][1](*(scores[n] for n in names))


def blind_parts_undefined(scores: Any, answers: Any) -> Any:
    """A frame of primitive scores (one row per answer) with the question-blind columns
    (`LEXICAL_SCORES`, the blind judge) set to NaN on the answers without checkable words."""
    short = [not checkable(str(a)) for a in answers]
    out = scores.copy()
    for name in [*LEXICAL_SCORES, *(j for j, q in JUDGES.items() if not q)]:
        if name in out:
            out.loc[short, name] = math.nan
    return out


def unsupported(score: float, threshold: float) -> float:
    """The decision a `hallucinated` column counts: 1.0 when `score` is below `threshold`,
    0.0 when not, NaN when the detector left the answer undefined (NaN score)."""
    return float(score < threshold) if score == score else math.nan


def support_score(detector: str, chat: ChatModel | None, context: str, answer: str,
                  question: str | None = None) -> float:
    """The support in [0, 1] of `answer` (to `question`) by `context` under `detector` (one of
    `SUPPORT_DETECTORS`). The judge's detectors ask `chat` once and raise its `LLMError` (a
    reply without usable log-probabilities included): a failure is never turned into a score.
    The `_q` detectors need the question; the others ignore it. NaN (undefined) when no part
    of `detector` may score the answer (`checkable`: the question-blind parts of an answer
    without checkable words)."""
    scores: dict[str, float] = {}
    short = not checkable(answer)
    for name in detector_inputs(detector):
        if short and not JUDGES.get(name, False):
            scores[name] = math.nan  # no question-blind score of an uncheckable answer
        elif name in LEXICAL_SCORES:
            scores[name] = LEXICAL_SCORES[name](context, answer)
        elif chat is None:
            raise ValueError(f"support detector {detector!r} needs a chat model (the LLM "
                             f"judge); {sorted(LEXICAL_SCORES)} need none")
        elif JUDGES[name] and not (question or "").strip():
            raise ValueError(f"support detector {detector!r} reads the question the answer "
                             "answers; none was given")
        else:
            scores[name], _ = graded_support(chat, context, answer,
                                             question if JUDGES[name] else None)
    return float(combine_support(detector, scores))
