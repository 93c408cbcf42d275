"""The same generated set before issue 38's new filters (issue 38, item 3): its kept questions
plus the ones only those filters rejected, to tune on both and compare.

    PYTHONPATH=. python experiments/tune/filters_before_after.py experiments/tune/python/span-200.jsonl

Writes `<stem>-before.jsonl` (+ `.summary.json`) beside the set: every kept question, and each
question rejected for one of `NEW` ("answer made of the question's words", "fragment answer",
"premise not in the passage", "knowable beyond its share") with its answer's span found in its
passage (`qa.find_answer` over the chunk's characters), split by id as the generator splits
(`testset_sampling.split_of`). An approximation of the generator without those filters: a question
they rejected had passed every filter before them, not necessarily the checks after them
(the closed-book check, near-duplicates), and without them the draws would have stopped
sooner. No LLM call."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from evidence import documents

from agentic_rag.datasets.qa import find_answer
from agentic_rag.datasets.testset_sampling import split_of

NEW = ("answer made of the question's words", "fragment answer", "premise not in the passage",
       "knowable beyond its share")


def before(set_path: Path, corpus: str = "python") -> Path:
    summary = json.loads(set_path.with_name(f"{set_path.stem}.summary.json").read_text())
    kept = [json.loads(x) for x in set_path.read_text().splitlines() if x.strip()]
    rejected = [json.loads(x) for x in set_path.with_name(f"{set_path.stem}.rejected.jsonl")
                .read_text().splitlines() if x.strip()]
    docs = {d.id: d for d in documents(corpus)}
    seed, share = summary["settings"]["seed"], summary["settings"]["dev_share"]
    added, unplaced = [], Counter()
    for n, r in enumerate(x for x in rejected if x.get("reason") in NEW):
        doc = docs[r["doc_id"]]
        lo, hi = (int(v) for v in r["chunk_id"].rsplit("@", 1)[1].split("-"))
        at = find_answer(doc.text[lo:hi], r["answer"])
        if at is None:
            unplaced[r["reason"]] += 1
            continue
        qid = f"b{n:04d}-{r['chunk_id'][-8:]}"
        added.append({"id": qid, "question": r["question"], "answer": r["answer"],
                      "doc_ids": [r["doc_id"]], "answerable": True,
                      "spans": [{"doc_id": r["doc_id"], "start": lo + at[0], "end": lo + at[1]}],
                      "chunk_id": r["chunk_id"], "chunk_type": r.get("chunk_type"),
                      "intent": r.get("intent"), "split": split_of(qid, seed, share),
                      "rejected_by": r["reason"]})
    out = set_path.with_name(f"{set_path.stem}-before.jsonl")
    out.write_text("".join(json.dumps(r) + "\n" for r in kept + added))
    out.with_name(f"{out.stem}.summary.json").write_text(json.dumps(
        {**summary, "accepted": len(kept) + len(added), "before_filters": {
            "kept": len(kept), "added": dict(Counter(r["rejected_by"] for r in added)),
            "answer not found in its passage (left out)": dict(unplaced)}}, indent=1))
    print(f"{out}: {len(kept)} kept + {len(added)} rejected only by the new filters "
          f"({dict(Counter(r['rejected_by'] for r in added))}); left out {dict(unplaced)}")
    return out


if __name__ == "__main__":
    before(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "python")
