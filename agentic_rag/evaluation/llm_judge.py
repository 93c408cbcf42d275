"""LLM-based answer generation, the correctness judge, and the support detector's check on
HaluEval pairs.

Every call goes through a `ChatModel` (cached on disk, retried); a failure raises `LLMError`,
which the runner records as a failure: it is counted and shown, never averaged in as a
score. Support (is the answer backed by the context?) has one home, `evaluation.support`
(`support_score`: the graded judges and the no-LLM scores; the yes/no JSON judge this module
held before is gone). `validate_judge` measures how well a support detector, at its
threshold, separates HaluEval's right from hallucinated answers (accuracy of its decisions and
AUROC of its score), so the metric is trusted only as far as it was shown to work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agentic_rag.evaluation.detection import auroc
from agentic_rag.evaluation.support import support_score, unsupported
from agentic_rag.llm.calls import map_calls
from agentic_rag.llm.client import ask_json_field
from agentic_rag.llm.types import ChatModel, ChatReply, LLMError

ANSWER_PROMPT = ("Answer the question using only the context. Reply with the answer only, in "
                 "a few words. If the context does not contain the answer, reply \"I don't know\".")
CORRECT_PROMPT = ("You grade an answer against a reference. Is the answer correct: does it give "
                  "the key information of the reference (it may be shorter or worded "
                  "differently) without contradicting it? An answer that says it does not know "
                  "is not correct. Reply with JSON {\"correct\": true} or {\"correct\": false}.")
_CORRECT_SCHEMA = {"type": "object", "properties": {"correct": {"type": "boolean"}},
                   "required": ["correct"], "additionalProperties": False}


# How the answer prompt is laid out. "context-first" (the default since 2026-12-01): the
# system message is the context alone, exactly as the graded judge's
# (`support.judge_messages`), so a judge call right after the answer call on the same
# context (a sweep row with the hallucination metric, default formatting) re-uses the
# server's processed prefix and reads only its own question and the answer: llama.cpp keeps
# the longest common prefix with the previous prompt. "instructions-first" is the layout of
# the answers labelled in set (ii) (`experiments/detectors_own.own_answers`), kept so that set
# can be regenerated exactly. The instruction text is the same in both.
ANSWER_LAYOUTS = ("context-first", "instructions-first")


def answer_messages(question: str, context: str,
                    layout: str = "context-first") -> list[dict[str, str]]:
    if layout == "context-first":
        return [{"role": "system", "content": f"Context:\n{context}"},
                {"role": "user", "content": f"{ANSWER_PROMPT}\n\nQuestion: {question}"}]
    if layout == "instructions-first":
        return [{"role": "system", "content": ANSWER_PROMPT},
                {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}"}]
    raise ValueError(f"answer layout {layout!r}: expected one of {ANSWER_LAYOUTS}")


def generate_answer(chat: ChatModel, question: str, context: str, max_tokens: int = 64,
                    layout: str = "context-first") -> ChatReply:
    return chat.chat(answer_messages(question, context, layout), max_tokens=max_tokens)


def judge_correctness(chat: ChatModel, question: str, reference: str,
                      answer: str) -> tuple[bool, ChatReply]:
    """True when the judge finds `answer` correct against the gold `reference`."""
    return ask_json_field(chat, CORRECT_PROMPT, f"Question: {question}\n\nReference: "
                          f"{reference}\n\nAnswer: {answer}", "correct", _CORRECT_SCHEMA,
                          lambda v: isinstance(v, bool), max_tokens=16)


def validate_judge(chat: ChatModel, items: Sequence[tuple[str, str, str, str]],
                   detector: str = "graded_judge_q", threshold: float = 0.536,
                   max_concurrency: int = 1) -> dict[str, Any]:
    """items: (question, context, right answer, hallucinated answer). Label 1 = hallucinated.
    Each answer's support under `detector` (`support.support_score`); the decision is support
    below `threshold` (what a sweep's `hallucinated` and the agent's gate count), scored by
    accuracy; AUROC ranks by 1 − support. An LLM failure is counted, not scored; an answer the
    detector leaves undefined (NaN: no checkable word for a question-blind part) is counted in
    `undefined` and left out. Up to `max_concurrency` judge calls in flight (`llm.map_calls`:
    the same result at any concurrency)."""
    def one(job: tuple[str, str, str, int]) -> tuple[int, float | None]:
        question, context, answer, label = job
        try:
            return label, support_score(detector, chat, context, answer, question)
        except LLMError:
            return label, None

    jobs = [(question, context, answer, label) for question, context, right, wrong in items
            for answer, label in ((right, 0), (wrong, 1))]
    labels, supports, failures, undefined = [], [], 0, 0
    for _, (label, support) in map_calls(one, jobs, max_concurrency):
        if support is None:
            failures += 1
        elif support != support:
            undefined += 1
        else:
            labels.append(label)
            supports.append(support)
    y = np.asarray(labels)
    flags = np.asarray([unsupported(v, threshold) for v in supports]) == 1.0
    acc = float((flags == (y == 1)).mean()) if len(y) else float("nan")
    return {"n": len(labels), "failures": failures, "undefined": undefined,
            "detector": detector, "threshold": threshold, "accuracy": acc,
            "auroc": auroc(labels, [1.0 - v for v in supports]),
            "flags_right": float(flags[y == 0].mean()) if (y == 0).any() else float("nan"),
            "flags_hallucinated": float(flags[y == 1].mean()) if (y == 1).any()
            else float("nan")}
