"""The figure-and-product check (issue 40): no LLM, a verdict on every figure of an answer.

An answer's figures are its numbers, canonicalised as `support.numbers` does ("$10.00" = "$10"
= "10", "1,000" = "1000"): amounts, rates, limits, counts, dates. A figure is *supported* when
a passage the answer cites states it, and — when the question names a product, plan,
function or command — that passage comes from a document about that thing (`named`: the
documents whose name the question covers best, `store/coverage.py`), not from a neighbour's.

- `unsupported`: stated by no passage of the pool (the cited passages, or every served one
  when the answer cites none);
- `wrong_product`: stated only by passages of other documents than the named ones (the Blue
  Account question answered with World Blue's $50.00).

- `no_figure`: the question asks for an amount (`asks_amount`) and the answer states none,
  nor a zero in words (`states_zero`): "The bonus is premium referral rewards." for "What's
  the bonus on ...?" (checked only with `require_figure`).
- `placeholder`: the answer holds a template placeholder instead of a fact ("... is [value
  not available] months.", "[insert amount]"): never an answer, whatever the question.

A figure the question itself contains ("my 2 cards", "24 months") is no claim of the answer
and is not checked, nor is a passage number ("According to Document 4 [382c9]").
`check_figures` is pure: the passages come in as `Passage`s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agentic_rag.config_agent import QUESTION_WORDS
from agentic_rag.evaluation.support import numbers


@dataclass(frozen=True)
class Passage:
    cid: str  # citation id
    doc_id: str
    text: str  # the passage's body (its header's doc id carries digits: leave it out)


@dataclass(frozen=True)
class FigureCheck:
    figures: tuple[str, ...]  # canonical numbers of the answer not in the question
    unsupported: tuple[str, ...] = ()  # in no passage of the pool
    wrong_product: tuple[str, ...] = ()  # only in passages of documents the question does not name
    against: str = "cited"  # cited | served: the pool the figures were looked for in
    named: tuple[str, ...] = ()  # documents about what the question names (empty: no check)
    sources: dict[str, tuple[str, ...]] = field(default_factory=dict)  # figure → citation ids
    no_figure: bool = False  # an amount asked, none stated (module doc)
    placeholder: bool = False  # a template placeholder where a fact should be (module doc)

    @property
    def ok(self) -> bool:
        return (not self.unsupported and not self.wrong_product and not self.no_figure
                and not self.placeholder)

    @property
    def failing(self) -> tuple[str, ...]:
        return self.unsupported + self.wrong_product


# a question that asks for an amount: "how much/many", or one asking what a fee, rate,
# limit... is ("What's the bonus on ...?", "Can you tell me the APY of ...?"; the amount noun
# within the noun phrase after "what is the"), not a how-to ("How do I check my balance?",
# "What is the process to dispute a charge?") nor a yes/no question ("Does the Gold Account
# earn interest?", "Is my deposit FDIC insured?")
_AMOUNT_NOUN = (r"(?:fees?|costs?|prices?|charges?|rates?|apy|apr|limits?|minimum|maximum|"
                r"balances?|deposits?|bonus(?:es)?|rewards?|rebates?|credits?|thresholds?|"
                r"interest|percent(?:age)?|amounts?|markup)")
_NOUN_PHRASE = (r"(?:the\s+|my\s+|your\s+|a\s+|an\s+)?"
                r"(?:(?!(?:to|for|on|of|in|with|do|does|i|you)\b)[^\s?!]+\s+){0,3}?")
_ASKS_AMOUNT = re.compile(
    rf"\bhow\s+(?:much|many)\b|"
    rf"\b(?:what|which)(?:'s|\s+is|\s+are|\s+was|\s+were)\s+{_NOUN_PHRASE}{_AMOUNT_NOUN}\b|"
    rf"\btell\s+me\s+(?:what\s+(?:is|are)\s+)?{_NOUN_PHRASE}{_AMOUNT_NOUN}\b", re.I)
# an amount answered in words: a zero ("free", "no monthly fee", "does not charge", "you pay
# nothing") or no bound ("unlimited"); not a non-answer ("no fee amount is listed", "no
# information about the fee") nor a name ("Fee-Free", "toll-free", "zero-liability")
_STATES_ZERO = re.compile(
    r"(?<![\w-])(?:free(?:\s+of\s+charge)?(?![\w-])|complimentary|"
    r"(?:costs?|charge[ds]?|pays?|paid)\s+(?:you\s+)?nothing\b|"
    r"no\s+(?:(?!(?:information|details|data|mention|amount|figure|specific)\b)[a-z\-]+\s+)"
    r"{0,2}?(?:fees?|charges?|costs?|minimum|maximum|limit)\b"
    r"(?!\s+(?:amount|information|figure|is\s+(?:listed|stated|given|mentioned)))|"
    r"(?:does|do|will)\s*(?:not|n't)\s+(?:be\s+)?(?:charge[ds]?|cost)\b|"
    r"won't\s+(?:be\s+)?charge[ds]?\b|not\s+(?:be\s+)?charged\b|unlimited\b|zero(?![\w-]))",
    re.I)


# "[value not available]", "[insert amount]", "[amount]", "[N/A]": a slot the model left
# unfilled (not a citation "[3aefe]", "[Document 2]", nor code "[get_input()]")
_PLACEHOLDER = re.compile(
    r"\[\s*(?:[a-z]+\s+){0,3}?(?:not\s+(?:available|provided|specified|stated|given|found)|"
    r"insert\b[^\]]*|placeholder|unknown|n/?a|amount|value|figure|number|fee|rate)\s*\]",
    re.I)


def has_placeholder(answer: str) -> bool:
    """`answer` holds a template placeholder where a fact should be (`_PLACEHOLDER`)."""
    return bool(_PLACEHOLDER.search(answer))


def asks_amount(question: str) -> bool:
    """`question` asks for an amount: "how much/many", "what is the <fee, rate, limit...>",
    "tell me the ..." (`_ASKS_AMOUNT`); a message over `config_agent.QUESTION_WORDS` words is a
    ticket, not a question (as first built, the rule turned 32 of 39 committed τ²-banking
    answers into "I don't know": experiments/agent-support/CHOICE-RULE-AMOUNT.md)."""
    return len(question.split()) <= QUESTION_WORDS and bool(_ASKS_AMOUNT.search(question))


def states_zero(answer: str, question: str = "") -> bool:
    """`answer` states a zero or no bound in words ("free", "no monthly fee", "does not charge",
    "unlimited"): an amount answered without digits; not when `question` says it too (a zero
    in words the question contains is no claim of the answer, as its figures are not)."""
    return bool(_STATES_ZERO.search(answer)) and not _STATES_ZERO.search(question)


def passage_body(text: str) -> str:
    """A served passage without its header lines (`--- Document N [id] ---`, `Source: ...`,
    `<document ...>`, `### [N] ...`, `_id: [...]`): only what the documents say."""
    keep = [ln for ln in text.splitlines()
            if not ln.startswith(("--- Document", "Source:", "<document", "</document",
                                  "### [", "_id: [", "=== From the document"))]
    return "\n".join(keep)


# "Document 4 [382c9]", "passage 2": the answer pointing at a passage header, not a figure
_PASSAGE_REF = re.compile(r"\b(?:document|passage)\s+\d+\b", re.I)
# the same, and a bare bracketed ordinal ("... is $10.00 [1]"): for scoring an answer's figures
_ANY_REF = re.compile(rf"{_PASSAGE_REF.pattern}|\[\d+\]", re.I)


def passage_refs(answer: str) -> list[int]:
    """The passage numbers `answer` points at ("Document 3", "passage 2", "[1]"), in order."""
    return [int(re.search(r"\d+", m.group(0)).group(0)) for m in _ANY_REF.finditer(answer)]


def strip_passage_refs(answer: str) -> str:
    """`answer` without its pointers at passages ("Document 3", "passage 2", "[1]"), whose
    ordinals are not figures the answer states: what an evaluation counts as its figures."""
    return _ANY_REF.sub(" ", answer)


def check_figures(question: str, answer: str, passages: Sequence[Passage],
                  cited: Iterable[str], named: Iterable[str] = (),
                  require_figure: bool = False, pointers: bool = False) -> FigureCheck:
    """Every figure of `answer` (citations stripped) against the passages it `cited` (all of
    `passages` when it cites none of them), and against the `named` documents (module doc);
    with `require_figure`, an amount question answered without one fails (`no_figure`); with
    `pointers`, a bare "[2]" is a pointer at a passage, not a figure (`strip_passage_refs`)."""
    asked = set(numbers(question))
    # without `pointers` a bare "[2]" stays a figure (`agent.support.passage_numbers`,
    # experiments/agent-support/CHOICE-RULE-ORDINAL.md); "Document 4" never is
    answer = (_ANY_REF if pointers else _PASSAGE_REF).sub(" ", answer)
    figures = tuple(dict.fromkeys(n for n in numbers(answer) if n not in asked))
    cited = set(cited)
    pool = [p for p in passages if p.cid in cited]
    against = "cited" if pool else "served"
    pool = pool or list(passages)
    named = tuple(sorted(set(named)))
    stated = {p.cid: set(numbers(passage_body(p.text))) for p in pool}
    unsupported, wrong, sources = [], [], {}
    for f in figures:
        where = [p for p in pool if f in stated[p.cid]]
        sources[f] = tuple(p.cid for p in where)
        if not where:
            unsupported.append(f)
        elif named and not any(p.doc_id in named for p in where):
            wrong.append(f)
    no_figure = (require_figure and not figures and asks_amount(question)
                 and not states_zero(answer, question))
    return FigureCheck(figures=figures, unsupported=tuple(unsupported),
                       wrong_product=tuple(wrong), against=against, named=named,
                       sources=sources, no_figure=no_figure,
                       placeholder=has_placeholder(answer))
