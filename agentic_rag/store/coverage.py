"""Title coverage: the `title` retriever scored by how much of each name the query covers
(issue 40), not by the words it shares with it.

BM25 over the title field (`lexical.field_text`) is a bag of words: "Blue checking account"
shares "blue" and "account" with Blue, Light Blue, Navy Blue, World Blue... and the longer,
rarer names win. Coverage asks the other way round: of a chunk's name fields, which share of
each one's words does the question contain? "Blue Account" (`checking accounts blue
account`) is covered whole by "What is the monthly fee of the Blue checking account?";
"World Blue" (`business checking accounts world blue`) is not: `business` and `world` are
missing.

A chunk's fields (each a set of stemmed, stop-worded tokens, the lexical index's tokenizer):
its document's name (`lexical.doc_name`), its document's title, its heading path, and the
API objects it describes. A field's coverage is the IDF-weighted share of its tokens found in
the query, Σ_{t∈F∩Q} idf(t) / Σ_{t∈F} idf(t) (a word every name carries, "account", counts
little; a distinguishing one, "world", a lot), and a chunk's score is the sum of its fields'
coverages. Ties (every chunk of one document shares its name) are broken by the field's
BM25 score, scaled to stay below any coverage step. Chunks that cover nothing are not ranked,
nor are chunks of documents without a name (ids that are hashes: HaluEval's paragraphs, whose
"title" is their first 60 characters — a title that names nothing; fused with it, the
coverage retriever cost HaluEval dev 0.038 nDCG@10 at weight 0.5 before this rule). A
retriever list that is empty then takes no part in fusion (`FusionRetriever.evidence`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from agentic_rag.documents import Chunk, Hit
from agentic_rag.store.base import top_k_stable
from agentic_rag.store.lexical import LexicalIndex, api_objects, doc_name


def chunk_fields(chunk: Chunk) -> list[str]:
    """The name fields of a chunk, as texts: document name, title (when the heading path does
    not already start with it), heading path, API objects (one field each)."""
    title = str(chunk.metadata.get("title", "") or "")
    fields = [doc_name(chunk.doc_id)]
    fields += [title] if title and not chunk.heading_path.startswith(title) else []
    fields.append(chunk.heading_path)
    fields += api_objects(chunk.text)
    return [f for f in fields if f]


SHARED_NAMES = 0.25  # share of documents sharing a name from which entity scope applies


def shared_name_share(doc_ids: Iterable[str]) -> float:
    """The share of documents whose name (`lexical.doc_name`) another document shares: a
    product, plan or command whose pages are several documents (the bank's
    `checking_accounts_blue_account_001` ... `_012`: 1.0; one page per module, the Python
    docs: ~0; hash ids name nothing: 0)."""
    ids = set(doc_ids)
    counts: dict[str, int] = {}
    for d in ids:
        name = doc_name(d)
        if name:
            counts[name] = counts.get(name, 0) + 1
    return round(sum(v for v in counts.values() if v > 1) / max(1, len(ids)), 3)


def coverage(field: frozenset[str], query: set[str], idf: dict[str, float]) -> float:
    """The IDF-weighted share of `field`'s tokens found in `query` (0 for an empty field)."""
    total = sum(idf.get(t, 0.0) for t in field)
    if total <= 0:
        return 0.0
    return sum(idf.get(t, 0.0) for t in field if t in query) / total


# words a negation governs name nothing the question asks about: "Green Account? (the regular
# one, not fee-free)" names the Green Account, not the Green Fee-Free Account. Only phrases
# that set a thing aside ("not", "other than", "rather than", "instead of", "except (for)"),
# after an optional article: a run of capitalised words ("other than the Lime Green one"),
# else one word (a hyphenated compound is one); not "or not" / "if not" ("whether or not the
# Blue Account ..."), nor "n't" ("Why doesn't the Blue Account ..." asks about Blue), nor "no"
# ("a no-fee account" may be a name). A reading that sets aside every name the question says
# is not used (`TitleCoverage.named_documents`: "I'm not a Diamond Elite holder yet").
_NEGATED = re.compile(
    r"\b(?i:(?<!\bor )(?<!\bif )not|other\s+than|rather\s+than|instead\s+of|except(?:\s+for)?)\s+"
    r"(?:(?i:the|a|an|my|your|that|this|any)\s+)?"
    r"(?:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*|\w+(?:-\w+)*)")


def unnegated(text: str) -> str:
    """`text` without the words a negation sets aside (`_NEGATED`): "the regular one, not
    fee-free" → "the regular one, "."""
    return _NEGATED.sub(" ", text)


def longest_names(matched: dict[str, frozenset[str]], candidates: Iterable[str]) -> list[str]:
    """Maximal munch over names: the `candidates` whose matched name words (`matched`, per
    document; none when absent) are not a strict subset of another candidate's. "Lime Green
    Account ... check deposits": Lime Green {lime, green} drops the Green Account {green};
    "Blue checking account": Blue Account and World Blue both {blue}, both kept."""
    cands = list(candidates)
    sets = {d: matched.get(d, frozenset()) for d in cands}
    distinct = set(sets.values())
    return [d for d in cands if not any(sets[d] < s for s in distinct)]


class TitleCoverage:
    """Every chunk's name fields, tokenised once; `search` ranks chunks by field coverage."""

    def __init__(self, lexical: LexicalIndex) -> None:
        self._lex = lexical
        self._chunks = lexical.chunks
        self._bm25 = lexical.fields()  # the tie-break: BM25 over the same field text
        texts: list[str] = []
        owner: list[int] = []
        for i, c in enumerate(self._chunks):
            for f in chunk_fields(c):
                texts.append(f)
                owner.append(i)
        tokens = lexical._tokenize(texts) if texts else []  # noqa: SLF001 - one tokenizer
        self._fields: list[list[frozenset[str]]] = [[] for _ in self._chunks]
        for i, toks in zip(owner, tokens):
            if toks:
                self._fields[i].append(frozenset(toks))
        # a chunk is ranked only when its document has a name (`lexical.doc_name`): the name is
        # the entity; a first-60-characters title (HaluEval's paragraphs) names nothing
        self._named = [bool(doc_name(c.doc_id)) for c in self._chunks]
        # IDF over documents' field token sets (a chunk's fields repeat its document's name:
        # counting per chunk would make a long document's name look common)
        df: dict[str, int] = {}
        seen: dict[str, set[str]] = {}
        for c, fields in zip(self._chunks, self._fields):
            words = seen.setdefault(c.doc_id, set())
            words.update(t for f in fields for t in f)
        for words in seen.values():
            for t in words:
                df[t] = df.get(t, 0) + 1
        n = max(1, len(seen))
        self._idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        ids = sorted(seen)
        self._n_docs = len(ids)
        self._with: dict[str, frozenset[str]] = {}  # token → documents whose text has it
        names = lexical._tokenize([doc_name(d) for d in ids]) if ids else []  # noqa: SLF001
        self._names = {d: frozenset(t) for d, t in zip(ids, names) if t}
        self._name_docs: dict[str, int] = {}  # token → documents whose name carries it
        for words in self._names.values():
            for t in words:
                self._name_docs[t] = self._name_docs.get(t, 0) + 1

    def named_documents(self, question: str, min_coverage: float = 0.6,
                        max_share: float = 0.1, match: str = "coverage") -> list[str]:
        """The documents about what `question` names: those whose name (`lexical.doc_name`)
        it covers best, when that coverage is at least `min_coverage`, they are at most
        `max_share` of the documents (a name every document shares names nothing), and one of
        the name's words the question contains is `distinctive`: in the text of at most
        `max_share` of the documents, or of no more than carry it in their name (a name made
        of words every document uses names nothing). With `match="longest"` a name whose name
        words in the question (`name_matches`) are a strict subset of another candidate's is
        dropped first (`longest_names`). Empty when the question names no document's
        subject. A name said negated ("not fee-free") does not count (`unnegated`), unless
        the negation sets aside every name the question says ("I'm not a Diamond Elite
        holder yet": then the question as written)."""
        kept = unnegated(question)
        found = self._named_in(kept, min_coverage, max_share, match)
        if found or kept == question:
            return found
        return self._named_in(question, min_coverage, max_share, match)

    def _named_in(self, text: str, min_coverage: float, max_share: float, match: str) -> list[str]:
        """`named_documents` of `text` as written."""
        q = self.tokens(text)
        if not q or not self._names:
            return []
        idf = self._idf
        # a name is named only by a word it shares with the question that few documents'
        # texts use: "python" covers the name of library/python.rst whole, but 72 % of the
        # Python docs say "python"; "lime" (0.6 % of the bank's documents) names Lime Green
        rare = {t for t in q if self.distinctive(t, max_share)}
        # coverage first; among names covered alike, the one matching more of the question
        # ("Lime Green business checking" covers "checking accounts green account" whole
        # too, but "lime" is the Lime Green name's alone)
        key = {d: (round(coverage(f, q, idf), 9), round(sum(idf.get(t, 0.0) for t in f & q), 9))
               for d, f in self._names.items() if f & rare}
        if match == "longest":
            key = {d: key[d] for d in longest_names(self._name_words(text), key)}
        if not key:
            return []
        best = max(key.values())
        if best[0] < min_coverage:
            return []
        named = sorted(d for d, k in key.items() if k == best)
        return named if len(named) <= max(1, max_share * len(self._names)) else []

    def name_matches(self, question: str, max_share: float = 0.25
                     ) -> dict[str, frozenset[str]]:
        """Per document whose name carries one of `question`'s name words, those words. A name
        word is carried by at most `max_share` of the documents' names (more is a category:
        "account" is in 67 % of the bank's product pages' names, "business" in 43 %) and by
        at least `max_share` of the documents whose text uses it (a word mostly used for other
        things, "fee" in 231 texts and in the 7 Green Fee-Free pages' names, names nothing):
        "blue" (68 names, 62 texts), "lime" (8, 8). "Lime Green Account" → the Lime Green
        pages {lime, green}, the Green Account's {green}: the name carrying the most of them
        is the one the question names (`testset_filters.SubjectCheck`). Words a negation
        sets aside are not name words (`unnegated`), unless that leaves none."""
        kept = unnegated(question)
        found = self._name_words(kept, max_share)
        if found or kept == question:
            return found
        return self._name_words(question, max_share)

    def _name_words(self, text: str, max_share: float = 0.25) -> dict[str, frozenset[str]]:
        """`name_matches` of `text` as written."""
        q = self.tokens(text)
        most = max_share * max(1, len(self._names))

        def names(t: str) -> bool:
            carried = self._name_docs.get(t, 0)
            return 0 < carried <= most and carried >= max_share * self.text_share(t) * self._n_docs

        words = frozenset(t for t in q if names(t))
        return {d: f & words for d, f in self._names.items() if f & words}

    def distinctive(self, token: str, max_share: float = 0.1) -> bool:
        """`token` is used in the text of at most `max_share` of the documents, or of no more
        documents than carry it in their own name (a 9-document corpus: "blue" in the Blue
        Account's page only is distinctive, though 1 of 9 is over a tenth)."""
        own = self._name_docs.get(token, 0)
        return self.text_share(token) * self._n_docs <= max(max_share * self._n_docs, own)

    def text_share(self, token: str) -> float:
        """The share of documents whose text (chunk text, heading path prefixed) contains
        `token`."""
        return len(self.docs_with(token)) / max(1, self._n_docs)

    def docs_with(self, token: str) -> frozenset[str]:
        """The documents whose text (chunk text, heading path prefixed) contains `token`;
        cached per token."""
        docs = self._with.get(token)
        if docs is None:
            docs = self._with[token] = frozenset(
                self._chunks[i].doc_id for i in np.flatnonzero(self._lex.chunks_with(token)))
        return docs

    def tokens(self, text: str) -> set[str]:
        """`text` as the lexical index's tokens (stemmed, stop words out)."""
        return set(self._lex._tokenize([text])[0])  # noqa: SLF001

    def __len__(self) -> int:
        return len(self._chunks)

    def scores(self, query: str) -> np.ndarray:
        """Coverage score of every chunk for `query`, with the BM25 tie-break added."""
        q = set(self._lex._tokenize([query])[0])  # noqa: SLF001
        out = np.zeros(len(self._chunks), dtype=np.float64)
        if not q:
            return out
        idf = self._idf
        cache: dict[frozenset[str], float] = {}
        for i, fields in enumerate(self._fields):
            if not self._named[i]:
                continue  # no document name: no entity to match (HaluEval's hash ids)
            s = 0.0
            for f in fields:
                v = cache.get(f)
                if v is None:
                    v = cache[f] = coverage(f, q, idf)
                s += v
            out[i] = s
        bm = self._bm25.scores(query).astype(np.float64)
        if len(bm) == len(out) and bm.max(initial=0.0) > 0:
            out = np.where(out > 0, out + 1e-3 * bm / bm.max(), 0.0)
        return out

    def search(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[Hit]:
        raw = self.scores(query)
        if not len(raw) or k <= 0:
            return []
        if where:
            raw = np.where(self._lex._mask(where), raw, 0.0)  # noqa: SLF001 - same filter
        order = [i for i in top_k_stable(raw, k) if raw[i] > 0]
        best = float(raw[order[0]]) if order else 1.0
        return [Hit(chunk=self._chunks[i], score=float(raw[i]) / best, raw_score=float(raw[i]),
                    rank=r, retriever="title") for r, i in enumerate(order, 1)]

