"""Pilot (issue 38, 2026-12-05): overgenerate and filter (Heilman & Smith, 2010). One call
writes THREE different questions for the span (the zero-shot span prompt otherwise, the answer
shown); the free filters judge them in the model's order and the first that passes them goes
to the round trip; if it fails, the next that passes does. A draw is kept when one candidate
passes everything; a rejected draw records the last candidate's reason and every candidate's.
On the first draws of the committed span-100-norepair arm (seed 0, the 52 Python pages, round
trip on, knowable check off). Rule: `RULE-CANDIDATES.md`, committed before the run.

    PYTHONPATH=. python experiments/tune/pilot_candidates.py 100 60   # n, draw cap

Prints this arm's summary, the committed zero-shot arm's outcome on the same draws, the
discordant draws with the sign test, and every kept and rejected question."""
import json
import sys

sys.path.insert(0, "experiments/tune")
from pilot_fewshot import discordant  # noqa: E402
from pilot_run import run_pilot  # noqa: E402

import agentic_rag.datasets.testset as ts  # noqa: E402
import agentic_rag.datasets.testset_prompts as tp  # noqa: E402
from agentic_rag.datasets.testset_sampling import passage  # noqa: E402

K = 3
SYSTEM = tp._SYSTEM_SPAN.replace(
    "Write one question whose answer is exactly the ANSWER",
    f"Write {K} different questions, each of whose answer is exactly the ANSWER").replace(
    'Reply with JSON {"question": ...}.',
    f'Reply with JSON {{"questions": [{K} questions]}}.')
SCHEMA = {"type": "object", "required": ["questions"],
          "properties": {"questions": {"type": "array", "minItems": K, "maxItems": K,
                                       "items": {"type": "string", "maxLength": 300}}}}


def candidates(chat, chunk, doc, span):  # noqa: ANN001, ANN201
    """One call; the reply rewritten as {"answer", "question": the first, "candidates": all}."""
    reply = chat.chat([{"role": "system", "content": SYSTEM},
                       {"role": "user", "content": f"{passage(chunk, doc)}\n\nANSWER: {span.text}"}],
                      json_schema=SCHEMA, max_tokens=300)
    try:
        qs = [q for q in reply.json().get("questions") if isinstance(q, str)]
    except Exception:  # noqa: BLE001 - malformed: rejected as such
        return reply
    if not qs:
        return reply
    return reply.model_copy(update={"content": json.dumps(
        {"answer": span.text, "question": qs[0], "candidates": qs})})


_judge = ts._judge


def judge_candidates(run, reply, chunk, answerable, span, corpus, st):  # noqa: ANN001, ANN201, PLR0913
    """`testset._judge` on each candidate in turn: one draw, kept at the first that passes."""
    try:
        qs = reply.json()["candidates"]
    except Exception:  # noqa: BLE001 - an error or a malformed reply: judged as it is
        return _judge(run, reply, chunk, answerable, span, corpus, st)
    tried = []
    for i, q in enumerate(qs):
        one = reply.model_copy(update={"content": json.dumps({"answer": span.text, "question": q})})
        if i:
            run.draws -= 1  # `_judge` counts a draw per call: one draw here
        if _judge(run, one, chunk, answerable, span, corpus, st):
            return True
        tried.append({k: run.rejected[-1].get(k) for k in ("reason", "question")})
        if i < len(qs) - 1:
            run.rejected.pop()
    run.rejected[-1]["candidates"] = tried
    return False


if __name__ == "__main__":
    ts._judge = judge_candidates
    res = run_pilot(candidates, int(sys.argv[1]), int(sys.argv[2]))
    print(json.dumps(discordant(res)))
    for r in res.records:
        print("KEPT", repr(r.answer), "|", r.question)
    for r in res.rejected:
        print("REJ", r["reason"], "|", repr(r.get("answer")), "|",
              [c["reason"] for c in r.get("candidates", [])])
