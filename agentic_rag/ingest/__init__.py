"""Layer 1, documents into chunks: `markup` (Markdown / reStructuredText blocks in one pass),
`chunking` (typed chunks that keep code, tables and procedures whole), `tokens` (the
`TokenCounter` protocol, tiktoken offline) and `embeddings` (the `Embedder` protocol, MiniLM
offline, the on-disk embedding cache). Imports only the top-level records and config."""
