"""How well the model's check separates the turns, whatever its cut: the dev run of
`clarify.yaml`'s llm arm again (`scores.yaml`: the same check prompt; clarify_documents 5
only keys the row cache apart, the check lists up to five titles either way), with the
check's call asking for the top 5 log-probabilities, so every turn gets P("true") at the
`ambiguous` value. Writes `dev/scores.jsonl` (the turn's message, the verdict, P(true), the
top log-probabilities at each position; committed gzipped); `analyse.py RUN --scores FILE`
reads it (AUROC of P(true), UNDERSPECIFIED vs ANSWERABLE).

    python experiments/conversations/clarify/scores.py
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import agentic_rag.agent.session as session
from agentic_rag.cli.main import app
from agentic_rag.llm.types import LLMError

HERE = Path(__file__).parent
OUT = HERE / "dev" / "scores.jsonl"
_MESSAGE = re.compile(r"Last user message: (.*?)\n\nThe search for it found", re.S)


def p_true(top: list[dict[str, float]]) -> float | None:
    """P(true) / (P(true) + P(false)) at the value's position: the one where "true" and
    "false" together are most likely (an earlier position may list "false" as a far
    runner-up, e.g. at the opening brace)."""
    best = None
    for pos in top:
        t = sum(math.exp(v) for k, v in pos.items() if k.strip().lower().startswith("true"))
        f = sum(math.exp(v) for k, v in pos.items() if k.strip().lower().startswith("false"))
        if (t or f) and (best is None or t + f > sum(best)):
            best = (t, f)
    return best[0] / sum(best) if best else None


def checked(chat, system, user, field, schema, valid, max_tokens):  # noqa: ANN001, ANN201
    """`ask_json_field` for the check, with log-probabilities, each turn's P(true) written."""
    reply = chat.chat([{"role": "system", "content": system}, {"role": "user", "content": user}],
                      json_schema=schema, max_tokens=max_tokens, top_logprobs=5)
    data = reply.json()
    value = data.get(field) if isinstance(data, dict) else None
    m = _MESSAGE.search(user)
    with OUT.open("a") as f:
        f.write(json.dumps({"message": m.group(1) if m else None, "ambiguous": value,
                            "p_true": p_true(reply.top_logprobs), "top": reply.top_logprobs}) + "\n")
    if not valid(value):
        raise LLMError(f"expected {{{field!r}: ...}}, got {reply.content[:200]!r}", "malformed",
                       reply.attempts)
    return value, reply


if __name__ == "__main__":
    OUT.unlink(missing_ok=True)
    session.ask_json_field = checked
    app(["sweep", str(HERE / "scores.yaml")])
