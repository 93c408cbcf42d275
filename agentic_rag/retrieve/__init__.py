"""Layer 6, from a question to the passages an agent reads: `query` (intent, filters, rewrites),
`expansion` (multi-query, HyDE), `retrievers` (dense + BM25 candidate lists, fused), `fusion`
(RRF and score fusion, pure), `evidence`, `calibration` and `gate` (confidence-gated
iterations), `rerank`, `context` (token-budgeted formatting with document boundaries),
`tiers` (hot / warm / cold) and `pipeline.Pipeline` (the whole stack from one `RAGConfig`).
A new retriever: a `retrievers.Retriever` in its own module here, registered in
`retrievers.RETRIEVERS` (its name in `config.RETRIEVER_NAMES`) or by `register_retriever`."""
