"""Pilot (issue 38, 2026-12-04): the span-first prompt with its answer hidden ([BLANK], the
cloze-to-question idea) instead of shown, on the first draws of the committed
span-100-norepair arm (same seed, same chunks, round trip on, knowable check off).

    PYTHONPATH=. python experiments/tune/pilot_masked_span.py 100 30   # n, draw cap

Prints the masked arm's summary, the shown arm's outcome on the same draws, and every kept and
rejected question. Not part of the package: the masked prompt lost (README, "Hiding the
answer")."""
import json
import sys

sys.path.insert(0, "experiments/tune")
from pilot_run import run_pilot  # noqa: E402

import agentic_rag.datasets.testset_prompts as tp  # noqa: E402
from agentic_rag.datasets.testset_sampling import passage  # noqa: E402

KIND = {"code": "a name or expression from the code or text", "number": "a number or amount",
        "term": "a term", "cell": "an entry of the table", "item": "an item of the list",
        "name": "a name"}
SYSTEM = ("You write test questions for a documentation search engine. In the passage below, "
          "one piece of text is hidden: each place it occurs reads [BLANK]. Write one question "
          "whose answer is exactly the hidden text, as a user who has NOT read the passage "
          "would ask it: in your own words, not copying phrases from the passage, and specific "
          "enough to have one answer (name the product, module, function, person or place it is "
          "about). Never write [BLANK] in the question. Ask only about what the passage says. "
          "Reply with JSON {\"question\": ...}.")

def masked(chat, chunk, doc, span):
    text = passage(chunk, doc).replace(span.text, "[BLANK]")
    reply = chat.chat([{"role": "system", "content": SYSTEM},
                       {"role": "user", "content": f"{text}\n\nThe hidden text is {KIND[span.kind]}."}],
                      json_schema=tp._QUESTION_SCHEMA, max_tokens=100)
    try:
        q = reply.json().get("question")
    except Exception:
        return reply
    if not isinstance(q, str):
        return reply
    return reply.model_copy(update={"content": json.dumps({"answer": span.text, "question": q})})

res = run_pilot(masked, int(sys.argv[1]), int(sys.argv[2]))
for r in res.records:
    print("KEPT", repr(r.answer), "|", r.question)
for r in res.rejected:
    print("REJ", r["reason"], "|", repr(r.get("answer")), "|", r.get("question"))
