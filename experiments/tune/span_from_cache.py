"""The span-first set as far as the cached replies go (no LLM call): the live run of
generate_sets.py was stopped at the deadline; this replays its cached replies with growing
`max_draws` until a reply is missing, and writes the largest complete set.

    PYTHONPATH=. python experiments/tune/span_from_cache.py python   # -> experiments/tune/python/span.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace as NS

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.testset import generate_testset
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.llm.binary import PACK_SERVER
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.studies.testset_validation import source_documents


class Uncached(BaseException):
    """A reply the cache does not hold (not an Exception: the client does not retry it)."""


def _missing(**kw):  # noqa: ANN003, ANN202
    raise Uncached()


def main(corpus: str) -> None:
    cfg = RAGConfig().with_overrides(PACK_SERVER)  # the server the pack's replies came from
    out = Path("experiments/tune") / corpus
    docs = source_documents(corpus)
    chunks = [c for d in docs for c in AgenticChunker(cfg.chunking).chunk(d)]
    chat = OpenAIChatModel(cfg.llm, client=NS(chat=NS(completions=NS(create=_missing))),
                           cache=ChatCache(Path(cfg.home) / "cache" / "llm.sqlite",
                                           pack=out / "llm-replies.jsonl"))
    best = None
    for max_draws in range(1, 400):
        try:
            best = generate_testset(docs, chat, n=400, seed=0, unanswerable=0.0, chunks=chunks,
                                    mode="span", dev_share=0.5, max_draws=max_draws,
                                    check_knowable=False)
        except Uncached:
            break
    if best is None:
        raise SystemExit(f"{out / 'llm-replies.jsonl'}: not even one draw's replies are cached "
                         f"under this model's identity ({chat.model_id})")
    best.write(out / "span.jsonl")
    print(json.dumps(best.summary, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
