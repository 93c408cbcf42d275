"""Layer 1, files into documents into chunks: `readers` (files into `Document`s; `html` and
`pdf` convert HTML pages, Word documents and PDFs to Markdown), `markup` (Markdown /
reStructuredText blocks in one pass), `chunking` (typed chunks that keep code, tables and
procedures whole), `tokens` (the `TokenCounter` protocol, tiktoken offline) and `embeddings`
(the `Embedder` protocol, MiniLM offline, the on-disk embedding cache). Imports only the
top-level records and config."""
