"""The generated test set's filters: each turns a generator reply into (question, answer, span)
or a rejection with its reason (`REASONS`), recorded in `rejected.jsonl`. Used by
`testset.generate_testset` (`check_reply`); pure functions of the reply, the passage and the questions already
accepted, so they are tested without a model.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from agentic_rag.datasets.qa import find_answer
from agentic_rag.documents import Chunk, Document
from agentic_rag.evaluation.answers import normalize_answer
from agentic_rag.llm.types import LLMError
from agentic_rag.store.lexical import doc_name

REASONS = ("llm error", "malformed reply", "answer too long", "answer not in source",
           "copies the source", "near-duplicate", "question repeats the answer",
           "refers to the passage", "answer too generic", "names no subject",
           "pronoun without antecedent", "invented name not in question",
           "invented name in the corpus", "answerable from the corpus",
           # issue 38
           "answer made of the question's words", "fragment answer",
           "premise not in the passage", "knowable beyond its share", "no answer span",
           "answer does not round-trip",
           # issue 40: corpora whose documents share a name (a product's pages)
           "names another subject", "ambiguous subject")
_GENERIC = {"yes", "no", "true", "false", "none", "n/a", "not", "it", "this", "that"}
# a question that points at the text it was written from ("the person described in the
# passage") has no meaning for someone searching the whole corpus
# ("the code snippet provided", "the given code snippet": 2 of 30 span-first questions an LLM
# read, issue 38)
_DEICTIC = re.compile(r"\b(?:the|this|that|given|above|following) (?:(?:code|example|sample|"
                      r"given) )?(?:passage|text|paragraph|section|excerpt|snippet|article|"
                      r"document|code block|example)\b|\b(?:snippet|code|example) "
                      r"(?:provided|given|shown|above|below)\b|\b(?:mentioned|described|stated|"
                      r"shown) (?:above|here|in the (?:passage|text))\b"
                      # "in the given JSON data", "the provided fee structure", "in the
                      # documentation" (not "in the documentation of/for X", which names it),
                      # and the prompt's own words ("What version of the documentation search
                      # engine introduced ...?"): 6 of 40 questions kept from 8 Node.js API
                      # pages (2026-12-05); 0-2 % of the committed generated sets, 1 of 20 in
                      # notebook 10's set
                      r"|\b(?:the|this) (?:given|provided) (?:[a-z]+ )?(?:information|data|json|"
                      r"configuration|table|output|input|list|path|format|structure|values?|"
                      r"case|string|scenario|details|schedule|figures?|numbers?)\b"
                      r"|\bdocumentation search engine\b"
                      # "the context" alone ("... in the given context?"), not a library's
                      # own term: "the context object", "the context settings" (click.Context,
                      # Flask's app context), "in the context of X" (names X): 7 of 45 such
                      # rejections of click's docs (2026-12-06) were these
                      r"|\b(?:the|this|given|above|following) context(?=\s*(?:[?.!,;:]|$)|"
                      r"\s+(?:provided|given|above|below|shown)\b)"
                      r"|\b(?:in|according to|from) the (?:documentation|docs)\b"
                      r"(?!\s+(?:of|for|about)\b)", re.I)

# "What is the name of the town?": asks for the name of a subject it does not name (Qwen
# 1.5B's commonest question from an encyclopaedic passage, with prompts that forbid it);
# lower-case words only after "the": a named subject ("the Blue Account") passes
_UNNAMED = re.compile(r"^(?:[Ww]hat|[Ww]hich)(?: is| was| are| were|'s)? the (?:name|title) of "
                      r"(?:the|a|an|this|that|his|her|its|their) [a-z][a-z ,'-]*\?$")
# "What did he found in 1902?", "When was it built?", "What does this function return?": the
# question's subject is a pronoun or a bare demonstrative, so it names nothing a reader could
# look up. Only the subject's place counts: right after the opening (a wh-phrase of up to 3
# more words, then an auxiliary; or an auxiliary alone; or "the <words> of" after it), or the
# question's first word when a lower-case word follows it ("It Takes a Family" is a title).
# A pronoun after the subject is named ("Where was Chief Joseph born and what is his place of
# origin?") or bound to the wh-word ("Who is best known for her work with Zaha Hadid?") is not
# there. After has/have/had (a main verb too) a possessive belongs to the wh-phrase ("Which
# country has its capital on the coast?"): only a subject pronoun counts there.
_AUX = "is|was|are|were|do|does|did|can|could|will|would|should|shall|may|might|must"
_SUBJECT_PRONOUN = re.compile(
    r"^(?:(?:(?:in|on|at|for|from|by|with|during|since|until) )?"
    r"(?:(?:what|which|who|whose|when|where|why|how)(?: [\w'-]+){0,3}? )?"
    rf"(?:(?:{_AUX}) (?:the [a-z]+(?: [a-z]+){{0,2}} of )?"
    r"(?P<pro>he|she|it|they|this|that|these|those|his|her|its|their)"
    r"|(?:has|have|had) (?P<pro2>he|she|it|they|this|that|these|those))"
    r"|(?P<pro3>he|she|it|they|this|these|those|his|her|its|their)(?=(?-i: [a-z])))\b(?P<rest>.*)$",
    re.I)
# the empty "it" ("How long does it take to install pip?", "Is it possible to ...", "Is it
# true that ...")
_EMPTY_IT = re.compile(r"^(?: (?:true|possible|necessary|safe|ok|okay|allowed|advisable|better|"
                       r"best|required|recommended|worth|wise)\b|(?: [\w-]+){0,3} "
                       r"(?:to|that|whether|if) \w)", re.I)
# a demonstrative followed by a description that names something is not bare: people write
# "this American actor who starred in 'Veep'" (HotpotQA); a capital, a digit, a quote or a
# relative clause after it is such a description ("this Italian adventure film" passes too)
_DESCRIBED = re.compile(r"[A-Z0-9\"'`]|\b(?:who|whom|whose|which|that|where)\b")


def pronoun_subject(question: str) -> str | None:
    """The pronoun or bare demonstrative that is `question`'s subject (`_SUBJECT_PRONOUN`),
    or None when the question names its subject."""
    m = _SUBJECT_PRONOUN.match(question.strip())
    if m is None:
        return None
    pro = m.group("pro") or m.group("pro2") or m.group("pro3")
    rest = m.group("rest")
    if pro[0].isupper() and m.start("rest") > len(pro):
        return None  # a capital inside the question: a title ("What do It's a Small World ...")
    if pro.lower() == "it" and _EMPTY_IT.match(rest):
        return None
    if pro.lower() in ("this", "that", "these", "those") and _DESCRIBED.search(rest):
        return None
    return pro


_WORD = re.compile(r"[a-z0-9_]+")


def longest_common_run(a: str, b: str) -> int:
    """The longest run of consecutive words (lower-cased, alphanumeric) `a` shares with `b`."""
    wa, wb = _WORD.findall(a.lower()), _WORD.findall(b.lower())
    if not wa or not wb:
        return 0
    pos = defaultdict(list)
    for j, w in enumerate(wb):
        pos[w].append(j)
    best, prev = 0, {}
    for w in wa:
        cur = {j: prev.get(j - 1, 0) + 1 for j in pos.get(w, ())}
        if cur:
            best = max(best, max(cur.values()))
        prev = cur
    return best


def _jaccard(a: str, b: str) -> float:
    sa, sb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def clean_name(text: str) -> str:
    """A reply's answer or made-up name: whitespace folded, quotes and end dots stripped."""
    return " ".join(text.split()).strip(" .\"'`")


class CorpusText:
    """Every document's text, lower-cased and whitespace-folded once, for "does this name
    occur anywhere in the corpus?"."""

    def __init__(self, docs: Sequence[Document]) -> None:
        self._docs = [(d.id, " ".join(f"{d.title or ''} {d.text}".lower().split()))
                      for d in docs]

    def find(self, name: str) -> str | None:
        """The id of a document that contains `name` (case and spacing ignored), or None."""
        needle = " ".join(name.lower().split())
        return next((i for i, text in self._docs if needle in text), None)

    def ids(self) -> list[str]:
        return [i for i, _ in self._docs]

    def find_all(self, text: str) -> list[str]:
        """The ids of every document that contains `text` (case and spacing ignored)."""
        needle = " ".join(text.lower().split())
        return [i for i, t in self._docs if needle in t]

    def has_phrase(self, phrase: str) -> bool:
        """`phrase` occurs as whole words somewhere in the corpus (case and spacing ignored)."""
        pat = re.compile(r"(?<!\w)" + re.escape(" ".join(phrase.lower().split())) + r"(?!\w)")
        return any(pat.search(text) for _, text in self._docs)

    def made_of(self, name: str) -> tuple[str, str] | None:
        """Two phrases of the corpus, of 2 words or more each, that `name` is made of, in
        order, or None: "Blue Account Overdraft Protection" is "Blue Account" + "Overdraft
        Protection", both in the banking sample, and its fee is there (the agent found it);
        such a name is not made up. One-word parts do not count: "Silver" + "Account" are
        both in the corpus, and a Silver Account is not."""
        words = name.split()
        for k in range(2, len(words) - 1):
            head, tail = " ".join(words[:k]), " ".join(words[k:])
            if self.has_phrase(head) and self.has_phrase(tail):
                return head, tail
        return None


def chunks_bm25(chunks: Sequence[Chunk]) -> Any:
    """A `store.lexical.LexicalIndex` over `chunks` as the index's BM25 reads them (each under
    its heading path, `Chunk.index_text`)."""
    from agentic_rag.store.lexical import LexicalIndex

    return LexicalIndex().build(list(chunks), [c.index_text() for c in chunks])


class SubjectCheck:
    """Does a question say which document it is about, where documents share a name (issue 40)?

    In a corpus of product pages (`checking_accounts_blue_account_001` ... `_012`, World Blue,
    Navy Blue ...) a question written from the Blue Account's fee page must name the Blue
    Account: "What is the monthly maintenance fee?" has as many answers as products, and its
    gold document is one of them by accident. Of 93 figure questions `agentic-rag testset`
    kept on the τ²-banking product pages, 36 did not name their page's product (some named
    another). Two rejections, no LLM, read from the name words the question carries
    (`TitleCoverage.name_matches`: words at most a quarter of the names carry, and which at
    least a quarter of the documents using them carry in their name; "Lime Green Account"
    carries {lime, green}; the Lime Green pages' name has both, the Green Account's one):
    - "names another subject": its source's name carries none of those words, or another
      name carries all of them that it carries and more (World Blue {world, blue} over the
      Blue Account's {blue}), while some document's name carries one;
    - "ambiguous subject": no name carries any, and a document with another name fits it as
      well as its source: it has every word of the question that its source has, or the
      answer and every such word few documents use ("What is the incoming domestic wire
      fee?" fits every account's fee table: the question does not say whose; one about
      `clear_debit_card_fraud_alert_4892` names its subject by that word, though no
      document's name carries it).
    Built only where entity scope applies (`coverage.shared_name_share` ≥ `SHARED_NAMES`):
    elsewhere a question names its subject in its own words, which no name rule can read."""

    def __init__(self, lexical: Any, docs: Sequence[Document]) -> None:
        """`lexical`: a `store.lexical.LexicalIndex` over the documents' chunks (their
        `index_text`, as the index's BM25 reads them; the corpus check's own)."""
        from agentic_rag.store.coverage import TitleCoverage

        self._names = TitleCoverage(lexical)
        self._corpus = CorpusText(docs)

    @classmethod
    def of(cls, chunks: Sequence[Chunk], docs: Sequence[Document]) -> SubjectCheck:
        return cls(chunks_bm25(chunks), docs)

    @staticmethod
    def applies(doc_ids: Sequence[str]) -> bool:
        from agentic_rag.store.coverage import SHARED_NAMES, shared_name_share

        return shared_name_share(doc_ids) >= SHARED_NAMES

    def check(self, question: str, answer: str, doc_id: str) -> dict[str, str] | None:
        """A rejection {reason, detail}, or None when the question names its source's subject
        or its answer is its source's name's alone."""
        own = doc_name(doc_id)
        if not own:
            return None
        matches = self._names.name_matches(question)
        mine = matches.get(doc_id, frozenset())
        wider = {d: m for d, m in matches.items() if m > mine}
        if mine and not wider:
            return None
        if wider:  # the names carrying the most of the question's name words
            top = max(map(len, wider.values()))
            other = sorted({doc_name(d) for d, m in wider.items() if len(m) == top})
            return {"reason": "names another subject",
                    "detail": f"its words name {other[0]!r}"
                              f"{f' (+{len(other) - 1} more)' if len(other) > 1 else ''}; "
                              f"its source is {own!r}"}
        others = self._rivals(question, answer, doc_id, own)
        if others:
            return {"reason": "ambiguous subject",
                    "detail": f"names no document, and {len(others)} document(s) with another "
                              f"name fit it as well as its source, e.g. {others[0]}"}
        return None

    def _rivals(self, question: str, answer: str, doc_id: str, own: str) -> list[str]:
        """Documents with another name than `own` that the question fits as well as its
        source: whose text has every word of `question` that `doc_id`'s has, or has `answer`
        and every such word that at most a tenth of the documents use."""
        words = {t: docs for t in self._names.tokens(question)
                 if doc_id in (docs := self._names.docs_with(t))}
        # no word of its source's: it fits every document as well (as badly) as its source
        every = frozenset.intersection(*words.values()) if words else set(self._corpus.ids())
        rare = [docs for t, docs in words.items() if self._names.text_share(t) <= 0.1]
        with_answer = {d for d in (self._corpus.find_all(answer) if answer else [])
                       if all(d in docs for docs in rare)}
        return sorted(d for d in every | with_answer if doc_name(d) != own)


_FUNCTION = {"the", "a", "an", "of", "to", "and", "or", "in", "on", "for", "with", "by", "from",
             "as", "at", "is", "are", "was", "were", "be", "that", "which", "its", "their",
             "this", "these", "those", "than", "into", "onto", "if", "when", "but", "not"}
_OPEN_CLOSE = (("(", ")"), ("[", "]"), ("{", "}"), ("<", ">"))


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def answer_in_question_words(question: str, answer: str) -> bool:
    """Every content word of `answer` is a word of `question` (plurals folded; two adjacent
    question words joined count too: "memory view" covers "memoryview"): the answer restates
    the question ("What are the last 48 bits of a UUID?" → "48 bits of the UUID") and a
    reader learns nothing from it."""
    a = [_stem(w) for w in _WORD.findall(answer.lower()) if w not in _FUNCTION]
    if not a:
        return False
    qw = _WORD.findall(question.lower())
    have = {_stem(w) for w in qw} | {_stem(x + y) for x, y in zip(qw, qw[1:])}
    return all(w in have for w in a)


def fragment_answer(answer: str) -> str | None:
    """Why `answer` is a fragment (cut mid-phrase, or ending in markup), or None: it ends
    on a function word ("the asyncio TaskGroup of"), ends in markup or an open
    punctuation mark (`*`, `[`, `(`, `:`, `,`, `=`, a backtick or quote left open), or has
    a bracket or quote it does not close."""
    a = answer.strip()
    if not a:
        return None
    last = a.split()[-1].lower()
    if last in _FUNCTION and len(a.split()) > 1:
        return f"ends on {last!r}"
    if a[-1] in "*[({<:,;=\\/|-" or a.endswith(("->", "=>")):
        return f"ends in {a[-1]!r}"
    for o, c in _OPEN_CLOSE:
        if a.count(o) != a.count(c):
            return f"unbalanced {o}{c}"
    for q in ("`", '"'):
        if a.count(q) % 2:
            return f"unclosed {q}"
    return None


# what a question asserts that the passage must say too: identifiers, numbers and versions,
# and the claim words of documentation ("deprecated", "removed in", ...)
_ANCHOR = re.compile(r"`[^`]+`|\b[A-Za-z_]\w*(?:\.\w+)+\b|\b\w+_\w+\b|\b[a-z]+[A-Z]\w*\b|"
                     r"\b\d+(?:\.\d+)*\b")
# claim words (stems), in groups of words that say the same ("added in 3.8" answers
# "introduced in"; "projected removal" answers "removed")
_CLAIMS = (("deprecat",), ("remov", "no longer"), ("obsolet",), ("discontinu",),
           ("introduc", "added", "new in"), ("renam",), ("replac",))


def premise_not_in_passage(question: str, passage: str) -> str | None:
    """What `question` takes for granted that `passage` (with its title and headings) does
    not say, or None: an identifier (a dotted one counts when each of its parts is there:
    `collections.deque` on the collections page that names `deque`), a number or version,
    or a claim word (`_CLAIMS`, with its synonyms: "In which version was the `typing`
    module deprecated?" from a passage that never says deprecated). The rule-checkable part
    of a false premise: a question resting on a fact the passage does not state is one its
    gold cannot answer."""
    text = " ".join(passage.lower().split())
    for m in _ANCHOR.finditer(question):
        anchor = m.group(0).strip("`").lower()
        if anchor and anchor not in text and not (
                "." in anchor and all(p and p in text for p in anchor.split("."))):
            return f"{m.group(0)!r} is not in the passage"
    q = question.lower()
    for group in _CLAIMS:
        said = next((w for w in group if re.search(rf"\b{w}", q)), None)
        if said and not any(re.search(rf"\b{w}", text) for w in group):
            return f"asks what was {said!r}: the passage does not say it"
    return None


def check_reply(reply: Any, chunk: Chunk, doc: Document, answerable: bool,
                accepted: Sequence[Any], max_copied: int, max_answer_words: int,
                dup_jaccard: float, corpus: CorpusText | None = None,
                ) -> tuple[str, str, tuple[int, int] | None] | dict[str, Any]:
    """(question, answer, span) or a rejection {reason, detail, question?, answer?}; `accepted`:
    the questions kept so far (`.id`, `.question`), for the near-duplicate check. For an
    unanswerable draw the reply's `answer` is the invented name: it must be in the question
    and, given `corpus`, in no document (it is then dropped: no reference)."""
    if isinstance(reply, LLMError):
        return {"reason": "llm error", "detail": f"{reply.kind}: {str(reply)[:200]}"}
    try:
        data = reply.json()
    except (json.JSONDecodeError, ValueError) as exc:
        return {"reason": "malformed reply", "detail": f"{exc}: {reply.content[:200]!r}"}
    q = data.get("question") if isinstance(data, dict) else None
    a = data.get("answer") if isinstance(data, dict) else None
    if not isinstance(q, str) or not q.strip() or not isinstance(a, str):
        return {"reason": "malformed reply", "detail": reply.content[:200]}
    q = " ".join(q.split())
    a = clean_name(a)
    if not answerable:  # `a` is the invented name; the question has no reference
        seen = {"question": q, "answer": "", "invented": a}
        if not a or a.lower() not in q.lower():
            return {"reason": "invented name not in question",
                    "detail": f"{a!r} is not in the question", **seen}
        if corpus is not None and (where := corpus.find(a)):
            return {"reason": "invented name in the corpus",
                    "detail": f"{a!r} occurs in {where}", **seen}
        if corpus is not None and (parts := corpus.made_of(a)):
            return {"reason": "invented name in the corpus",
                    "detail": f"{a!r} is {parts[0]!r} + {parts[1]!r}, both in the corpus",
                    **seen}
        a = ""
    seen = {"question": q, "answer": a}
    span = None
    if answerable:
        if not a or len(a.split()) > max_answer_words:
            return {"reason": "answer too long" if a else "malformed reply",
                    "detail": f"{len(a.split())} words (at most {max_answer_words})", **seen}
        if normalize_answer(a) in _GENERIC or len(normalize_answer(a)) < 2:
            return {"reason": "answer too generic", "detail": f"{a!r} would be found in "
                    "almost any passage", **seen}
        # in the passage itself (its span in the document): a heading of the chunk's
        # path, or the same words elsewhere in the document, are not what the passage says
        at = find_answer(doc.text[chunk.start_char:chunk.end_char], a)
        if at is None:
            return {"reason": "answer not in source", "detail": f"{a!r} not in the passage "
                    f"({doc.id} [{chunk.start_char}:{chunk.end_char}])", **seen}
        span = (chunk.start_char + at[0], chunk.start_char + at[1])
        if len(a) > 3 and a.lower() in q.lower():
            return {"reason": "question repeats the answer", "detail": a, **seen}
        if answer_in_question_words(q, a):
            return {"reason": "answer made of the question's words", "detail": a, **seen}
        if why := fragment_answer(a):
            return {"reason": "fragment answer", "detail": why, **seen}
    if m := _DEICTIC.search(q):
        return {"reason": "refers to the passage", "detail": m.group(0), **seen}
    if _UNNAMED.match(q):
        return {"reason": "names no subject", "detail": "asks for the name of a subject it "
                "does not name", **seen}
    if pro := pronoun_subject(q):
        return {"reason": "pronoun without antecedent", "detail": f"its subject is {pro!r}, "
                "which names nothing a reader could look up", **seen}
    run = longest_common_run(q, chunk.text)
    if run >= max_copied:
        return {"reason": "copies the source", "detail": f"{run} consecutive words of the "
                f"passage (at most {max_copied - 1})", **seen}
    if answerable and (why := premise_not_in_passage(
            q, f"{doc.title or ''} {chunk.heading_path} {chunk.text}")):
        return {"reason": "premise not in the passage", "detail": why, **seen}
    for r in accepted:
        if _jaccard(q, r.question) >= dup_jaccard:
            return {"reason": "near-duplicate", "detail": f"of {r.id}: {r.question!r}", **seen}
    return q, a, span
