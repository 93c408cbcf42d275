"""Pilot (issue 38, 2026-12-05): the span-first prompt with three worked examples (few-shot)
before the passage, on the first draws of the committed span-100-norepair arm (same seed,
same chunks, round trip on, knowable check off). The examples come from none of the corpora
evaluated here (git, PostgreSQL, a phone plan): each shows a question that paraphrases, names
its subject and does not contain its answer — the two commonest rejections of the zero-shot
prompt ("question repeats the answer", "answer made of the question's words").

    PYTHONPATH=. python experiments/tune/pilot_fewshot.py 100 60   # n, draw cap

Prints the few-shot arm's summary, the zero-shot arm's outcome on the same draws, and every
kept and rejected question."""
import json
import sys

sys.path.insert(0, "experiments/tune")
from pilot_run import run_pilot  # noqa: E402

import agentic_rag.datasets.testset_prompts as tp  # noqa: E402
from agentic_rag.datasets.testset_sampling import passage  # noqa: E402

EXAMPLES = [
    ("[git commit > Options]\n--amend\n    Replace the tip of the current branch by creating a "
     "new commit. The recorded tree is prepared as usual, and the message from the original "
     "commit is used as the starting point.", "--amend",
     "Which git commit option replaces the last commit of the branch with a new one?"),
    ("[PostgreSQL: Connections and Authentication > max_connections]\nmax_connections "
     "(integer)\nDetermines the maximum number of concurrent connections to the database "
     "server. The default is typically 100 connections. This parameter can only be set at "
     "server start.", "100",
     "How many simultaneous client connections does a PostgreSQL server accept by default?"),
    ("[Mobile plans > Prices]\n| Plan | Monthly price | Data |\n|---|---|---|\n| Starter | $15 "
     "| 5 GB |\n| Plus | $30 | 20 GB |", "20 GB",
     "How much mobile data does the Plus plan include each month?"),
]


def fewshot(chat, chunk, doc, span):  # noqa: ANN001, ANN201
    shots = []
    for text, answer, question in EXAMPLES:
        shots += [{"role": "user", "content": f"{text}\n\nANSWER: {answer}"},
                  {"role": "assistant", "content": json.dumps({"question": question})}]
    reply = chat.chat([{"role": "system", "content": tp._SYSTEM_SPAN}, *shots,
                       {"role": "user", "content": f"{passage(chunk, doc)}\n\nANSWER: {span.text}"}],
                      json_schema=tp._QUESTION_SCHEMA, max_tokens=100)
    try:
        q = reply.json().get("question")
    except Exception:  # noqa: BLE001 - malformed: rejected as such
        return reply
    if not isinstance(q, str):
        return reply
    return reply.model_copy(update={"content": json.dumps({"answer": span.text, "question": q})})


def discordant(res) -> dict:  # noqa: ANN001
    """Per draw judged by both arms: kept by the few-shot arm only, by the zero-shot arm only,
    and the exact two-sided sign test on those (the rule)."""
    from math import comb

    from pilot_run import shown_outcomes
    shown = {c: why == "kept" for c, why in shown_outcomes().items()}
    mine = {r.chunk_id: True for r in res.records}
    mine.update({r["chunk_id"]: False for r in res.rejected})
    both = [c for c in mine if c in shown]
    a = sum(mine[c] and not shown[c] for c in both)
    b = sum(shown[c] and not mine[c] for c in both)
    n, k = a + b, min(a, b)
    p = min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n) if n else 1.0
    return {"judged by both": len(both), "few-shot only": a, "zero-shot only": b, "p": p}


if __name__ == "__main__":
    res = run_pilot(fewshot, int(sys.argv[1]), int(sys.argv[2]))
    print(json.dumps(discordant(res)))
    for r in res.records:
        print("KEPT", repr(r.answer), "|", r.question)
    for r in res.rejected:
        print("REJ", r["reason"], "|", repr(r.get("answer")), "|", r.get("question"))
