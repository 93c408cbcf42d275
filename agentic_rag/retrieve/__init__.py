"""Layer 6, from a question to the passages an agent reads: `query` (intent, filters, rewrites),
`expansion` (multi-query, HyDE), `retrievers` (dense + BM25 candidate lists, fused), `fusion`
(RRF and score fusion, pure), `evidence`, `calibration` and `gate` (confidence-gated
iterations), `rerank`, `context` (token-budgeted formatting with document boundaries),
`tiers` (hot / warm / cold) and `pipeline.Pipeline` (the whole stack from one `RAGConfig`).
A new retriever goes in `retrievers` (or its own module here), named in the config's
`retrieval.retrievers`."""
