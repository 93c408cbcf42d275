"""Deterministic fakes for unit tests only (never the default path)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np


class HashingEmbedder:
    """Bag of words hashed into `dim` buckets, L2-normalised: same words → similar vectors."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.model_id = f"fake-hashing-{dim}"
        self.calls = 0
        self.texts_embedded = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


class FailingEmbedder(HashingEmbedder):
    """A HashingEmbedder whose `fail_on_call`-th call raises (an embedding service going away)."""

    def __init__(self, fail_on_call: int) -> None:
        super().__init__()
        self.fail_on_call = fail_on_call

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.calls + 1 == self.fail_on_call:
            self.calls += 1
            raise RuntimeError("embedding service went away")
        return super().embed(texts)


class Cut(str):
    """A scripted reply the server stopped at `max_tokens` (finish_reason "length")."""


class FakeCompletions:
    """Stands in for `client.chat.completions`: replays a script of replies / exceptions."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = []

    def create(self, **kwargs):
        from types import SimpleNamespace as NS

        self.requests.append(kwargs)
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        content, calls = (item, []) if isinstance(item, str) else item
        tool_calls = [NS(id=f"c{i}", function=NS(name=name, arguments=args))
                      for i, (name, args) in enumerate(calls)]
        return NS(choices=[NS(message=NS(content=content, tool_calls=tool_calls),
                              finish_reason="length" if isinstance(item, Cut) else "stop")],
                  usage=NS(prompt_tokens=10, completion_tokens=5))


def fake_openai_client(script):
    from types import SimpleNamespace as NS

    completions = FakeCompletions(script)
    return NS(chat=NS(completions=completions)), completions


def local_corpus(root: Path, docs: dict[str, str], questions) -> tuple[Path, Path]:  # noqa: ANN001
    """`docs` written under `root/docs` and `questions` ((id, text, doc file, answer), ...)
    as `root/questions.jsonl`, the layout `load_local` reads."""

    folder = root / "docs"
    folder.mkdir()
    for name, text in docs.items():
        (folder / name).write_text(text)
    qs = root / "questions.jsonl"
    qs.write_text("".join(json.dumps({"id": i, "question": t, "doc_ids": [f"docs/{d}"],
                                      "answer": a}) + "\n" for i, t, d, a in questions))
    return folder, qs


# ---- a six-document toy bank and its questions (id, question, gold file, answer) -----------
BANK_DOCS = {
    "fees.md": "# Fees\n\nThe monthly maintenance fee is $20. A wire transfer costs $45.",
    "cards.md": "# Cards\n\nA lost debit card is replaced within five business days.",
    "loans.md": "# Loans\n\nPersonal loans run from 12 to 60 months at a fixed rate.",
    "savings.md": "# Savings\n\nThe savings account pays 2 % interest, compounded monthly.",
    "hours.md": "# Hours\n\nBranches open at 9 am and close at 5 pm on weekdays.",
    "fraud.md": "# Fraud\n\nReport fraud at once; the card is frozen within minutes.",
}
BANK_QUESTIONS = [
    ("q1", "How much is the monthly maintenance fee?", "fees.md", "$20"),
    ("q2", "How long does a lost card replacement take?", "cards.md", "five business days"),
    ("q3", "What terms do personal loans have?", "loans.md", "12 to 60 months"),
    ("q4", "What interest does savings pay?", "savings.md", "2 %"),
    ("q5", "When do branches open?", "hours.md", "9 am"),
    ("q6", "How fast is a card frozen after fraud?", "fraud.md", "within minutes"),
]


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
