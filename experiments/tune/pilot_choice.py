"""Pilot (issue 38, 2026-12-06): the model chooses the answer. The rule lists the passage's
candidate spans (`spans.candidate_spans`, every kind, at most `MAX_CHOICES`, in passage order;
a sample seeded by the chunk id when there are more); one call picks one and writes its
question (`{"choice": k, "question": ...}`). The answer is the chosen span, verbatim; the
filters, subject check and round trip are unchanged and judge it as the gold. On the first
draws of the committed span-100-norepair arm (seed 0, the 52 Python pages, round trip on,
knowable check off). Rule: `RULE-CHOICE.md`, committed before the run.

    PYTHONPATH=. python experiments/tune/pilot_choice.py 100 60   # n, draw cap

Prints this arm's summary, the committed zero-shot arm's outcome on the same draws, the
discordant draws with the sign test, and every kept and rejected question with the candidates
it was offered."""
import json
import random
import sys

sys.path.insert(0, "experiments/tune")
from pilot_fewshot import discordant  # noqa: E402
from pilot_run import run_pilot  # noqa: E402

import agentic_rag.datasets.testset as ts  # noqa: E402
from agentic_rag.datasets.spans import Span, candidate_spans  # noqa: E402
from agentic_rag.datasets.testset_sampling import passage  # noqa: E402

MAX_CHOICES = 8
SYSTEM = (
    "You write test questions for a documentation search engine. You are given a passage and "
    "a numbered list of CANDIDATE answers copied from it. Choose the candidate that a user of "
    "this documentation would most plausibly need to look up: a fact the passage states about "
    "something it names. Then write one question whose answer is exactly that candidate, as a "
    "user who has NOT read the passage would ask it: in your own words, not copying phrases "
    "from the passage, never containing the answer itself, and specific enough to have one "
    "answer (name the product, module, function, person or place it is about). Ask only "
    "about what the passage says. Reply with JSON {\"choice\": <the candidate's number>, "
    "\"question\": ...}.")


def offered(chunk, doc) -> list[Span]:  # noqa: ANN001
    """The candidates shown for `chunk`: offsets into the chunk's passage, in passage order."""
    text = doc.text[chunk.start_char:chunk.end_char]
    heading = " ".join(x for x in (doc.title, chunk.heading_path) if x)
    spans = candidate_spans(text, chunk.chunk_type, heading)
    if len(spans) > MAX_CHOICES:
        spans = random.Random(chunk.id).sample(spans, MAX_CHOICES)
    return sorted(spans, key=lambda s: s.start)


def choose(chat, chunk, doc, span):  # noqa: ANN001, ANN201, ARG001 - the rule's span is not used
    """One call; the reply rewritten as {"answer", "question", "chosen": [start, end, kind]}."""
    spans = offered(chunk, doc)
    listed = "\n".join(f"{i}. {s.text}" for i, s in enumerate(spans, 1))
    schema = {"type": "object", "required": ["choice", "question"],
              "properties": {"choice": {"type": "integer", "minimum": 1, "maximum": len(spans)},
                             "question": {"type": "string", "maxLength": 300}}}
    reply = chat.chat([{"role": "system", "content": SYSTEM},
                       {"role": "user", "content": f"{passage(chunk, doc)}\n\nCANDIDATES:\n{listed}"}],
                      json_schema=schema, max_tokens=120)
    try:
        data = reply.json()
        k, q = int(data["choice"]), data["question"]
    except Exception:  # noqa: BLE001 - malformed: rejected as such
        return reply
    if not (1 <= k <= len(spans)) or not isinstance(q, str):
        return reply
    s = spans[k - 1]
    return reply.model_copy(update={"content": json.dumps(
        {"answer": s.text, "question": q, "chosen": [s.start, s.end, s.kind],
         "offered": [x.text for x in spans]})})


_judge = ts._judge


def judge_chosen(run, reply, chunk, answerable, span, corpus, st):  # noqa: ANN001, ANN201, PLR0913
    """`testset._judge` with the chosen span as the gold (the rule's span when none was chosen)."""
    try:
        start, end, kind = reply.json()["chosen"]
        span = Span(start, end, reply.json()["answer"], kind)
    except Exception:  # noqa: BLE001 - an error or a malformed reply: judged as it is
        pass
    return _judge(run, reply, chunk, answerable, span, corpus, st)


if __name__ == "__main__":
    ts._judge = judge_chosen
    res = run_pilot(choose, int(sys.argv[1]), int(sys.argv[2]))
    print(json.dumps(discordant(res)))
    for r in res.records:
        print("KEPT", repr(r.answer), r.span_kind, "|", r.question)
    for r in res.rejected:
        print("REJ", r["reason"], "|", repr(r.get("answer")), "|", r.get("question"))
