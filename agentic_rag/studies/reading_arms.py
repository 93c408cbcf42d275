"""The same questions over two readings of the same documents (issue 38's reading studies in
experiments/tune/: HTML pages vs their source, a site's Markdown as written vs converted, .rst
as written vs as Sphinx builds it): each reading indexed in a home of its own under the
shipped default pipeline, every question searched once (`arm`: answer@5, loose answer@5,
nDCG@10 by document), and the paired difference of two arms with its bootstrap CI
(`compare`, `experiments.stats.paired_bootstrap`). No LLM."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from agentic_rag.config import RAGConfig
from agentic_rag.documents import Document
from agentic_rag.evaluation.containment import answer_at_k, chunk_view
from agentic_rag.evaluation.retrieval import doc_run, ir_metrics
from agentic_rag.experiments.stats import paired_bootstrap
from agentic_rag.jsonl import read_records
from agentic_rag.retrieve.pipeline import Pipeline

METRICS = ("answer@5", "loose answer@5", "ndcg@10")


def set_questions(path: Path) -> list[dict]:
    """The answerable questions of a generated set (`agentic-rag testset`) as `arm` reads them."""
    return [{"id": q["id"], "text": q["question"], "answers": [q["answer"]],
             "qrels": {d: 1 for d in q["doc_ids"]}, "split": q["split"]}
            for q in read_records(path) if q.get("answerable", 1)]


def loose(s: str) -> str:
    """Lower case, punctuation read as a space, padded: " os getenv key default none "."""
    return " " + " ".join(re.sub(r"[^\w]+", " ", s.lower()).split()) + " "


def loose_at_5(hits, answers: list[str]) -> float:  # noqa: ANN001
    """answer@5 with punctuation read as a space: "os.getenv(key, default=None)" holds
    "getenv(key, default=None)" (the project's SQuAD normalisation deletes punctuation, so
    there "osgetenvkey" does not hold "getenvkey")."""
    refs = [loose(a) for a in answers if loose(a).strip()]
    return float(any(r in loose(chunk_view(h)) for h in hits[:5] for r in refs))


def arm(docs: list[Document], questions: list[dict], home: Path,
        answers: str = "answers") -> tuple[dict, list[dict]]:
    """`docs` indexed under `home`, each question searched (k 10): the index's counts and a
    row per question (`answers`: the question's field holding the answers to look for)."""
    pipe = Pipeline(RAGConfig().with_overrides({"home": str(home)}))
    pipe.index.add_documents(docs)
    chunks = pipe.index.store.get(None, limit=1_000_000)
    stats = {"documents": len(docs), "characters": sum(len(d.text) for d in docs),
             "chunks": len(chunks),
             "by_type": dict(sorted(Counter(c.chunk_type for c in chunks).items()))}
    rows, run = [], {}
    for q in questions:
        _, result = pipe.retrieve(q["text"], k=10)
        run[q["id"]] = doc_run(result.hits[:10])
        rows.append({"id": q["id"], "split": q["split"],
                     "answer@5": answer_at_k(result.hits, q.get(answers, q["answers"]), 5),
                     "loose answer@5": loose_at_5(result.hits, q.get(answers, q["answers"]))})
    ndcg = ir_metrics({q["id"]: q["qrels"] for q in questions}, run)
    for r in rows:
        r["ndcg@10"] = ndcg[r["id"]]["ndcg@10"]
    return stats, rows


def compare(first: list[dict], second: list[dict], names: tuple[str, str] = ("source", "html")
            ) -> dict:
    """Each metric's mean per arm and the paired difference (second arm − first) with its
    bootstrap CI, keyed by the arms' `names`."""
    out: dict = {"questions": len(first)}
    for metric in METRICS:
        a, b = [r[metric] for r in first], [r[metric] for r in second]
        out[metric] = {names[0]: sum(a) / len(a), names[1]: sum(b) / len(b),
                       f"{names[1]}_minus_{names[0]}": paired_bootstrap(b, a)}
    return out
