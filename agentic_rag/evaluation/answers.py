"""Answer metrics: exact match and token F1 with SQuAD's normalisation
(lower-case, strip punctuation and articles, collapse whitespace); max over references."""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(s: str) -> str:
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def exact_match(prediction: str, references: Sequence[str]) -> float:
    p = normalize_answer(prediction)
    return float(any(p == normalize_answer(r) for r in references)) if references else 0.0


def _f1(pred: str, ref: str) -> float:
    pt, rt = normalize_answer(pred).split(), normalize_answer(ref).split()
    common = collections.Counter(pt) & collections.Counter(rt)
    same = sum(common.values())
    if not pt or not rt:
        return float(pt == rt)
    if same == 0:
        return 0.0
    precision, recall = same / len(pt), same / len(rt)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, references: Sequence[str]) -> float:
    return max((_f1(prediction, r) for r in references), default=0.0)


_ABSTAIN = re.compile(r"\b(i don'?t know|i do not know|cannot (?:find|answer|determine)|"
                      r"(?:do|does) not (?:contain|mention|provide|specify|say))\b", re.I)


def is_abstention(answer: str) -> bool:
    return bool(_ABSTAIN.search(answer))


_ROUGE_TOKEN = re.compile(r"[^a-z0-9]+")


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    """The length of the longest common subsequence of `a` and `b` (two rows of the table)."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge_l(prediction: str, references: Sequence[str]) -> float:
    """ROUGE-L F1 (longest common subsequence of tokens), max over references, tokenised as
    Google's `rouge_score` does without stemming (lower-case, runs of [a-z0-9]); 0 when either
    side has no token (tested against `rouge_score.rouge_scorer`)."""
    def f(pred: str, ref: str) -> float:
        p = _ROUGE_TOKEN.sub(" ", pred.lower()).split()
        r = _ROUGE_TOKEN.sub(" ", ref.lower()).split()
        common = _lcs(p, r) if p and r else 0
        if not common:
            return 0.0
        precision, recall = common / len(p), common / len(r)
        return 2 * precision * recall / (precision + recall)
    return max((f(prediction, r) for r in references), default=0.0)
