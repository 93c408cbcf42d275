"""Generate the test sets the tune evidence runs on (issue 38), from the documents only.

    PYTHONPATH=. python experiments/tune/generate_sets.py python 20 span [max_draws] [--no-knowable]
        [--name STEM]

Writes experiments/tune/<corpus>/<STEM or mode>.jsonl (+ .rejected.jsonl, .summary.json) and the LLM
replies to experiments/tune/<corpus>/llm-replies.jsonl (the pack: a rerun reads them back).
Documents: `evidence.documents(corpus)` (python: the 52 pages the human questions are about;
halueval: the 2,000-paragraph sample; tau2: τ²-banking's 698 documents)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from evidence import documents  # this folder's evidence.py: the corpus's documents

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.testset import generate_testset
from agentic_rag.experiments.llm_cost import Progress
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.llm.binary import PACK_SERVER
from agentic_rag.llm.calls import CallMeter, MeteredChatModel
from agentic_rag.llm.chat import make_chat_model
from agentic_rag.llm.server import serve_local

# the server these replies were cached under (a Xeon's own pick is AMX `sapphirerapids`
# since 2026-12-05, an AMD EPYC's zen4 runs plain kernels since 2026-12-06: both round
# differently, so their replies are cached apart)
PACK_VARIANT = PACK_SERVER


def main(corpus: str, n: int, mode: str, max_draws: Annotated[int | None, typer.Argument()] = None,
         knowable: bool = True, name: Annotated[str | None, typer.Option(metavar="STEM")] = None
         ) -> None:
    cfg = RAGConfig().with_overrides(PACK_VARIANT)
    out = Path("experiments/tune") / corpus
    out.mkdir(parents=True, exist_ok=True)
    docs = documents(corpus)
    chunker = AgenticChunker(cfg.chunking)
    chunks = [c for d in docs for c in chunker.chunk(d)]
    print(f"{corpus}: {len(docs)} documents, {len(chunks)} chunks -> {n} questions ({mode})",
          flush=True)
    meter = CallMeter(None)
    with serve_local(cfg.llm, cfg.home):
        chat = MeteredChatModel(make_chat_model(cfg.llm, cfg.home,
                                                pack=out / "llm-replies.jsonl"), meter)
        res = generate_testset(docs, chat, n=n, seed=0, unanswerable=0.0, chunks=chunks,
                               mode=mode, dev_share=0.5, max_draws=max_draws or 3 * n,
                               check_knowable=knowable,
                               progress=Progress(n, lambda s: print(s, flush=True),
                                                 "testset", meter))
    res.write(out / f"{name or mode}.jsonl")
    print(json.dumps(res.summary, indent=1), flush=True)
    print(f"{meter.calls} new LLM calls, {meter.cached} cached", flush=True)


if __name__ == "__main__":
    typer.run(main)
