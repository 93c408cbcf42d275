"""The amount rule (`agent.support.amount_needs_figure`, CHOICE-RULE-AMOUNT.md) on every agent
answer committed in experiments/agent-runs/*/rows.jsonl (τ²-banking scenarios, Python FAQ
questions): how many distinct non-abstaining answers it would turn into "I don't know" — a
question asking for an amount (`figures.asks_amount`), an answer (with passages served: what
the gate sees) with no figure of its own and
no zero in words. No LLM, no index.

    PYTHONPATH=. python experiments/agent-support/amount_on_committed_runs.py
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from agentic_rag.agent.result import strip_citations
from agentic_rag.datasets.qa import banking_tasks, python_faq
from agentic_rag.evaluation.figures import asks_amount, states_zero, strip_passage_refs
from agentic_rag.evaluation.support import numbers


def main() -> dict:
    texts = {q.id: q.text for ds in (banking_tasks(), python_faq()) for q in ds.queries}
    seen: set[tuple[str, str]] = set()
    counts: Counter = Counter()
    fails = []
    for path in sorted(Path("experiments/agent-runs").glob("*/rows.jsonl")):
        for line in path.open():
            r = json.loads(line)
            q = texts.get(r.get("qid", ""))
            if q is None or not r.get("served") or r.get("abstained") or not r.get("answer") \
                    or (r["qid"], r["answer"]) in seen:
                continue
            seen.add((r["qid"], r["answer"]))
            ds = r.get("dataset", "?")
            answer = strip_passage_refs(strip_citations(r["answer"]))
            figures = [n for n in numbers(answer) if n not in set(numbers(q))]
            counts[f"{ds}: answers"] += 1
            counts[f"{ds}: asks an amount"] += asks_amount(q)
            if asks_amount(q) and not figures and not states_zero(answer):
                counts[f"{ds}: would fail"] += 1
                fails.append({"run": path.parent.name, "qid": r["qid"], "answer": r["answer"]})
    return {"counts": dict(sorted(counts.items())), "would_fail": fails}


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
