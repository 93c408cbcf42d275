"""The fourth round's agent rows (`agent-test-question-answers.jsonl`, setting
`question+abstain`) against today's default's committed rows (`agent-test-named-answers.jsonl`,
setting `named+abstain`, made 2026-12-04 on the AMD machine), paired by question id: rates,
paired bootstrap CIs (experiments/stats.py), and how many answers are identical verbatim.
No LLM. `wrong_figure` is also given rescored with document references taken out of the answer
first ("as stated in Document 3", a bare "[1]"): the score of the time read their ordinals as
figures no gold document states (`studies.question_file.score` does not); both settings' rows
are rescored alike.

    PYTHONPATH=. python experiments/agent-support/question_vs_named.py   # -> agent-test-question-vs-named.json
"""

from __future__ import annotations

import json
from pathlib import Path

from agentic_rag.datasets.corpora import banking_documents
from agentic_rag.experiments.stats import paired_bootstrap
from agentic_rag.studies.question_file import gold_numbers, load_questions, score, setting_rows

HERE = Path(__file__).parent
KEYS = ("correct", "wrong", "abstained", "wrong_figure")


def rates(a: list, b: list) -> dict:
    return {"named+abstain": sum(b) / len(b), "question+abstain": sum(a) / len(a),
            "diff": paired_bootstrap(a, b)}


def compare() -> dict:
    old = setting_rows(HERE / "agent-test-named-answers.jsonl", "named+abstain")
    new = setting_rows(HERE / "agent-test-question-answers.jsonl", "question+abstain")
    ids = [i for i in old if i in new and "error" not in old[i] and "error" not in new[i]]
    out = {"n": len(ids), "failed": sum("error" in new[i] for i in new),
           "identical_answers": sum(old[i]["answer"] == new[i]["answer"] for i in ids)}
    for k in KEYS:
        out[k] = rates([new[i][k] for i in ids], [old[i][k] for i in ids])
    # wrong_figure as `score` gives it since passage pointers are stripped ("Document 3",
    # "[1]"); the committed rows' own wrong_figure was computed before that
    docs = {d.id: d for d in banking_documents()}
    qs = {q["id"]: q for q in load_questions("test")[0]}
    a, b = ([score(qs[i], x[i]["answer"], bool(x[i]["abstained"]), gold_numbers(qs[i], docs))
             ["wrong_figure"] for i in ids] for x in (new, old))
    out["wrong_figure, document references removed"] = rates(a, b)
    (HERE / "agent-test-question-vs-named.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    print(json.dumps(compare(), indent=1))
