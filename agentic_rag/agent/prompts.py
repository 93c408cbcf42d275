"""The agent loop's prompts (`agent/loop.py` re-exports them): the system prompts of each
policy and mode, the answer turn's instruction, the JSON actions and their schema, with the
evidence behind each wording."""

from __future__ import annotations

from typing import Any, Literal

# Wording checked on Qwen2.5-Coder-1.5B: "if the passages do not contain the answer, say I don't
# know" made it abstain with the answer in the passages (4 FAQ questions of 4, gold passage
# served); "only when no passage is about the question" and the passages in the user turn
# made it answer 3 of 3 and cite a served id in 2 (experiments/agent-runs/README.md). With
# the question *before* the passages it still abstained on 3 of 5 test questions whose
# first passage was the FAQ's own answer (agent-v3); passages first, then the question, then
# the instruction (`PROMPT_AFTER`) raised token F1 on 6 dev FAQ questions from 0.11 to 0.40
# (prompt variants A vs B, experiments/agent-runs/README.md; chosen on dev). No example id:
# the earlier wording's "like [1a2b3]" was copied into 2–5 of 30 FAQ answers per retrieval
# cell (agent-v6, counted as invalid citations); this wording removed the copies and the bare-id
# answers on 10 dev FAQ questions and raised the default's token F1 there, +0.17 [+0.02,
# +0.35] (cite-dev-before → cite-dev-after). On test (agent-v7 vs agent-v6): 0 invalid
# citations (was 5 of 30), the default's token F1 unchanged (+0.01 [−0.07, +0.10]), but 16 of
# its 29 FAQ answers cite nothing (was 4 of 27).
_IDS = ("Each passage starts with a header \"--- Document N [id] ---\"; the five letters and "
        "digits in its square brackets are the passage id.")
_CITE = ("in one or two sentences that state the answer itself, and end with the id of the passage "
         "you used, in square brackets. Say \"I don't know\" only when no passage is about the "
         "question.")
PASSAGES = "Passages from the documentation:\n\n"
PROMPT_AFTER = ("\n\nQuestion: {question}\n\nAnswer the question above from the passages "
                + _CITE)
SYSTEM_NATIVE = ("You are a documentation assistant with a search_documents tool. " + _IDS +
                 " Answer the question from the passages " + _CITE)
SYSTEM_JSON = (
    "You are a documentation assistant. Each turn, reply with one JSON object only: "
    "{\"action\": \"search\", \"query\": \"<a few words>\"} to search the documentation, or "
    "{\"action\": \"answer\"} when the passages found so far answer the question; you will "
    "then be asked for the answer. " + _IDS)
# The answer turn of every policy and mode: no tools, no JSON (a JSON-mode system prompt in
# the answer turn asked for "one JSON object only" while the user turn asked for prose).
SYSTEM_ANSWER = "You are a documentation assistant. " + _IDS + \
    " Answer the question from the passages " + _CITE
DECIDE_JSON = ("\n\nQuestion: {question}\n\nSearches so far: {queries}. If the passages above "
               "answer the question, reply {{\"action\": \"answer\"}}; otherwise reply "
               "{{\"action\": \"search\", \"query\": \"<a few new words>\"}}.")
SYSTEM_CLOSED = ("Answer the question from your own knowledge, in one or two sentences. If you "
                 "do not know the answer, say \"I don't know\".")
FORCE_SEARCH_JSON = ("Search the documentation first. Reply with JSON only: "
                     "{\"action\": \"search\", \"query\": \"<a few words>\"}.")
FIX_ACTION = ("That was not a valid action. Reply with one JSON object only: "
              "{\"action\": \"search\", \"query\": \"<a few words>\"} or {\"action\": \"answer\"}.")
NOTHING_FOUND = "I don't know: the documentation search found no passages for this question."

ACTION_QUERY_MAX_CHARS = 120  # a search query in a JSON action: "a few words"
Policy = Literal["retrieve_first", "tool_required", "free", "closed_book"]


def action_schema(search_only: bool = False) -> dict[str, Any]:
    """The JSON-action schema: an enum and one bounded string, no free-form fields, so the
    grammar-constrained output is at most ~40 tokens."""
    return {"type": "object",
            "properties": {"action": {"type": "string",
                                      "enum": ["search"] if search_only else ["search", "answer"]},
                           "query": {"type": "string", "minLength": 1,
                                     "maxLength": ACTION_QUERY_MAX_CHARS}},
            "required": ["action", "query"] if search_only else ["action"],
            "additionalProperties": False}
