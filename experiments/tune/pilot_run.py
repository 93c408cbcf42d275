"""What the issue-38 pilots share: run the span-first generator with another question writer
(`testset_prompts._ask_for_span` replaced) on the first draws of the committed
span-100-norepair arm (seed 0, the 52 Python pages, round trip on, knowable check off), print
its summary and the committed arm's outcome on the same draws. Replies cached under the home,
keyed by the zen4 variant the committed arm ran on."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from evidence import documents  # this folder's evidence.py

import agentic_rag.datasets.testset_prompts as tp
from agentic_rag.config import RAGConfig
from agentic_rag.datasets.testset import TestsetResult, generate_testset
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.llm.binary import PACK_SERVER
from agentic_rag.llm.chat import make_chat_model
from agentic_rag.llm.server import serve_local

# the server these replies were cached under (a Xeon's own pick is AMX `sapphirerapids`
# since 2026-12-05, an AMD EPYC's zen4 runs plain kernels since 2026-12-06: both round
# differently, so their replies are cached apart)
PACK_VARIANT = PACK_SERVER
SHOWN = "experiments/tune/python/span-100-norepair"  # the committed arm: the answer shown


def run_pilot(ask_for_span: Callable[..., Any], n: int, cap: int) -> TestsetResult:
    """The generator with `ask_for_span` as its question writer, n questions, `cap` draws."""
    tp._ask_for_span = ask_for_span
    cfg = RAGConfig().with_overrides(PACK_VARIANT)
    docs = documents("python")
    chunks = [c for d in docs for c in AgenticChunker(cfg.chunking).chunk(d)]
    with serve_local(cfg.llm, cfg.home):
        chat = make_chat_model(cfg.llm, cfg.home)
        res = generate_testset(docs, chat, n=n, seed=0, unanswerable=0.0, chunks=chunks,
                               mode="span", dev_share=0.5, max_draws=cap, check_knowable=False)
    print(json.dumps({k: res.summary[k] for k in ("accepted", "drawn", "rejected", "llm_calls",
                                                  "accepted_share_of_draws")}, indent=1))
    shown = shown_outcomes()
    ids = [r.chunk_id for r in res.records] + [r["chunk_id"] for r in res.rejected]
    print("shown arm on the same draws:", sum(shown.get(i) == "kept" for i in ids), "kept of",
          sum(i in shown for i in ids), "judged")
    return res


def shown_outcomes() -> dict[str, str]:
    """The committed arm's outcome per drawn chunk: "kept" or its rejection reason."""
    shown = {json.loads(x)["chunk_id"]: json.loads(x)["reason"]
             for x in open(f"{SHOWN}.rejected.jsonl")}
    shown.update({json.loads(x)["chunk_id"]: "kept" for x in open(f"{SHOWN}.jsonl")})
    return shown
