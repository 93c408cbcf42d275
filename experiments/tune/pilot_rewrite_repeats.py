"""Pilot (issue 38, 2026-12-05): when the span-first question gives its answer away (it
contains the span, or is made of the span's words: the two commonest rejections, 75 of 273
draws on the Python pages), ask the model once more in the same conversation to rewrite it
without the answer, then judge the rewrite with the same filters and round trip.

    PYTHONPATH=. python experiments/tune/pilot_rewrite_repeats.py 100 60   # n, draw cap

Same draws as the committed span-100-norepair arm (seed 0, the 52 pages, knowable check off);
the first generation calls replay from the home's reply cache. Prints the summary, the shown
arm's outcome on the same draws, and each rewrite."""
import json
import sys

sys.path.insert(0, "experiments/tune")
from pilot_run import run_pilot  # noqa: E402

import agentic_rag.datasets.testset_prompts as tp  # noqa: E402
from agentic_rag.datasets.testset_filters import answer_in_question_words  # noqa: E402
from agentic_rag.datasets.testset_sampling import passage  # noqa: E402

REWRITE = ("That question gives its answer away: it contains {what}. A user who asks it would "
           "already know the answer. Rewrite the question so that it does not contain "
           "\"{span}\" nor its words, and so that its answer is still exactly \"{span}\": "
           "describe what the answer is or does, and name the module, function or product it "
           "belongs to. Reply with JSON {{\"question\": ...}}.")
LOG = []


def gives_away(question: str, span: str) -> str | None:
    if len(span) > 3 and span.lower() in question.lower():
        return f"\"{span}\" itself"
    if answer_in_question_words(question, span):
        return f"the words of \"{span}\""
    return None


def ask_for_span(chat, chunk, doc, span):
    messages = [{"role": "system", "content": tp._SYSTEM_SPAN},
                {"role": "user", "content": f"{passage(chunk, doc)}\n\nANSWER: {span.text}"}]
    reply = chat.chat(messages, json_schema=tp._QUESTION_SCHEMA, max_tokens=100)
    try:
        question = reply.json().get("question")
    except (ValueError, TypeError, AttributeError):
        return reply
    if not isinstance(question, str):
        return reply
    if what := gives_away(question, span.text):
        again = chat.chat(messages + [{"role": "assistant", "content": reply.content},
                                      {"role": "user", "content": REWRITE.format(
                                          what=what, span=span.text)}],
                          json_schema=tp._QUESTION_SCHEMA, max_tokens=100)
        try:
            new = again.json().get("question")
        except (ValueError, TypeError, AttributeError):
            new = None
        LOG.append({"chunk_id": chunk.id, "span": span.text, "before": question, "after": new})
        if isinstance(new, str):
            question, reply = new, again
    return reply.model_copy(update={"content": json.dumps({"answer": span.text,
                                                           "question": question})})


res = run_pilot(ask_for_span, int(sys.argv[1]), int(sys.argv[2]))
kept = {r.chunk_id for r in res.records}
why = {r["chunk_id"]: r["reason"] for r in res.rejected}
for x in LOG:
    print("REWRITE", "kept" if x["chunk_id"] in kept else why.get(x["chunk_id"]), "|",
          repr(x["span"]), "|", x["before"], "->", x["after"])
