"""Passages grouped by document under the document's title (`context.group_by_document`,
issue 40), on real banking chunks: the Lime Green and Navy Blue wire passages interleaved by
score come out one document at a time, each under its title, ids and budget unchanged."""

from __future__ import annotations

from agentic_rag.agent.result import passages_by_citation
from agentic_rag.config import ContextConfig, RAGConfig
from agentic_rag.documents import Hit
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.retrieve.context import AgenticContextFormatter, citation_id

DOCS = ("doc_business_checking_accounts_lime_green_004", "doc_business_checking_accounts_navy_blue_003")


def _hits(banking):
    chunker = AgenticChunker(RAGConfig().chunking)
    by_doc = {d.id: chunker.chunk(d) for d in banking if d.id in DOCS}
    lime, navy = by_doc[DOCS[0]], by_doc[DOCS[1]]
    order = [lime[0], navy[0], lime[1], navy[1]]  # interleaved, best first
    return [Hit(chunk=c, score=1.0 - i / 10, rank=i + 1) for i, c in enumerate(order)]


def test_grouped_by_document_under_its_title(banking):
    hits = _hits(banking)
    flat = AgenticContextFormatter(ContextConfig(max_tokens=4000)).format_for_agent(hits)
    grouped = AgenticContextFormatter(
        ContextConfig(max_tokens=4000, group_by_document=True)).format_for_agent(hits)
    assert flat.included == [h.chunk.id for h in hits]
    assert grouped.included == [hits[0].chunk.id, hits[2].chunk.id, hits[1].chunk.id,
                                hits[3].chunk.id]
    text = grouped.text
    lime = text.index("=== From the document: Lime Green Account: Wire Transfer Pricing "
                      f"({DOCS[0]}) ===")
    navy = text.index(f"=== From the document: Navy Blue Account: Wire Transfer Pricing ({DOCS[1]})")
    assert lime == 0 and text.count("=== From the document") == 2 and navy > lime
    assert "=== From" not in flat.text
    # every passage still has its citation header; ids are the same in both layouts
    assert set(passages_by_citation(text)) == {citation_id(h.chunk.id) for h in hits}
