"""Trajectory metrics of one agent run, without an LLM: repeated queries, whether the first search
already served the gold, the LLM turns to the answer, and the precision / recall of the served
documents against the gold documents; and repeat-run reliability (pass@k, pass^k).

Every function takes plain values (lists of queries, of served document or chunk ids per
search, gold document ids), so a single-question row (`agent-eval`) and a conversation's turns
use the same code. A chunk id `doc#type@start-end` counts as its document (`doc_of`).

The served-document precision / recall follow ragas `ToolCallF1` (ragas 0.4, the set form:
tp = |served ∩ gold|, precision tp / |served|, recall tp / |gold|), each served document being
one call of a retrieval tool and each gold document one expected call; the recall is DeepEval
`ToolCorrectness`'s default score (the share of expected calls that were made, repeats and
order ignored). pass@k and pass^k are the unbiased estimators from n trials with c successes:
pass@k = 1 − C(n−c, k) / C(n, k) (Chen et al. 2021, Codex) and pass^k = C(c, k) / C(n, k)
(τ-bench, Yao et al. 2024; tau2-bench `metrics/agent_metrics.py` `pass_hat_k`), averaged
over questions."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

NAMES = ("repeated_queries", "first_search_gold", "llm_turns", "served_doc_precision",
         "served_doc_recall")


def normalise_query(query: str) -> str:
    """Lower case, punctuation dropped, whitespace collapsed: `"Gold card fee?"` and
    `"gold  card fee"` are one query."""
    return " ".join(re.sub(r"[^\w\s]", " ", query.lower()).split())


def repeated_queries(queries: Sequence[str | None]) -> int:
    """Searches whose normalised query was already searched in the same run (a missing query
    is not counted)."""
    seen: set[str] = set()
    repeats = 0
    for q in queries:
        if q is None:
            continue
        key = normalise_query(q)
        repeats += key in seen
        seen.add(key)
    return repeats


def doc_of(served_id: str) -> str:
    """The document of a served id: `doc#type@start-end` -> `doc`; a document id as it is."""
    return served_id.partition("#")[0]


def first_search_gold(served_by_search: Sequence[Sequence[str]],
                      gold_docs: Iterable[str]) -> float | None:
    """1.0 when the first search served a gold document, 0.0 when not; None when there was no
    search or no gold (undefined, not a miss)."""
    gold = set(gold_docs)
    if not served_by_search or not gold:
        return None
    return float(any(doc_of(c) in gold for c in served_by_search[0]))


def served_doc_scores(served: Iterable[str], gold_docs: Iterable[str]) -> dict[str, float | None]:
    """`served_doc_precision`, `served_doc_recall` and `served_doc_f1` of the documents served
    (chunk or document ids, repeats counted once) against the gold documents. Precision is
    None when nothing was served, everything None without gold: undefined, not 0."""
    docs, gold = {doc_of(c) for c in served}, set(gold_docs)
    if not gold:
        return {"served_doc_precision": None, "served_doc_recall": None, "served_doc_f1": None}
    tp = len(docs & gold)
    precision = tp / len(docs) if docs else None
    recall = tp / len(gold)
    f1 = (2 * precision * recall / (precision + recall) if precision and recall else 0.0) \
        if precision is not None else None
    return {"served_doc_precision": precision, "served_doc_recall": recall, "served_doc_f1": f1}


def trajectory_metrics(queries: Sequence[str | None], served_by_search: Sequence[Sequence[str]],
                       gold_docs: Iterable[str], llm_turns: int | None) -> dict[str, float | None]:
    """Every trajectory metric of one run (`NAMES`, plus `served_doc_f1`)."""
    gold = list(gold_docs)
    return {"repeated_queries": float(repeated_queries(queries)),
            "first_search_gold": first_search_gold(served_by_search, gold),
            "llm_turns": None if llm_turns is None else float(llm_turns),
            **served_doc_scores([c for s in served_by_search for c in s], gold)}


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k trials drawn from the n succeeds), c of n having succeeded."""
    _check(n, c, k)
    return 1.0 if n - c < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """τ-bench's pass^k: P(all k trials drawn from the n succeed), c of n having succeeded."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k: need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
