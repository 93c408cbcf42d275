"""The fourth round's agent rows (`agent-test-question-answers.jsonl`, setting
`question+abstain`) against today's default's committed rows (`agent-test-named-answers.jsonl`,
setting `named+abstain`, made 2026-12-04 on the AMD machine), paired by question id: rates,
paired bootstrap CIs (experiments/stats.py), and how many answers are identical verbatim.
No LLM. `wrong_figure` is also given rescored with document references taken out of the answer
first ("as stated in Document 3", a bare "[1]"): `agent_eval.score` reads their ordinals as
figures no gold document states; both settings' rows are rescored alike.

    PYTHONPATH=. python experiments/agent-support/question_vs_named.py   # -> agent-test-question-vs-named.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentic_rag.experiments.stats import paired_bootstrap

HERE = Path(__file__).parent
KEYS = ("correct", "wrong", "abstained", "wrong_figure")


def rows(path: Path, setting: str) -> dict[str, dict]:
    out = {}
    for line in path.open():
        r = json.loads(line)
        if r["setting"] == setting:
            out[r["id"]] = r
    return out


def rescored_wrong_figure(r: dict, q: dict, gold_numbers: set[str]) -> float:
    """`agent_eval.score`'s wrong_figure, which strips passage pointers ("Document 3", "[1]":
    `evaluation.figures.strip_passage_refs`) since this script was written; the committed
    rows' own wrong_figure was computed before that."""
    sys.path.insert(0, str(HERE))
    from agent_eval import score

    return score(q, r["answer"], bool(r["abstained"]), gold_numbers)["wrong_figure"]


def compare() -> dict:
    old = rows(HERE / "agent-test-named-answers.jsonl", "named+abstain")
    new = rows(HERE / "agent-test-question-answers.jsonl", "question+abstain")
    ids = [i for i in old if i in new and "error" not in old[i] and "error" not in new[i]]
    out = {"n": len(ids), "failed": sum("error" in new[i] for i in new),
           "identical_answers": sum(old[i]["answer"] == new[i]["answer"] for i in ids)}
    for k in KEYS:
        a, b = [new[i][k] for i in ids], [old[i][k] for i in ids]
        out[k] = {"named+abstain": sum(b) / len(b), "question+abstain": sum(a) / len(a),
                  "diff": paired_bootstrap(a, b)}
    from agentic_rag.datasets.corpora import banking_documents
    from agentic_rag.evaluation.support import numbers

    docs = {d.id: d for d in banking_documents()}
    qs = {q["id"]: q for q in map(json.loads, Path("datasets/banking-products/test.jsonl").open())}
    gold = {i: {x for d in qs[i]["doc_ids"] for x in numbers(docs[d].text)} for i in ids}
    a = [rescored_wrong_figure(new[i], qs[i], gold[i]) for i in ids]
    b = [rescored_wrong_figure(old[i], qs[i], gold[i]) for i in ids]
    out["wrong_figure, document references removed"] = {
        "named+abstain": sum(b) / len(b), "question+abstain": sum(a) / len(a),
        "diff": paired_bootstrap(a, b)}
    (HERE / "agent-test-question-vs-named.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    print(json.dumps(compare(), indent=1))
