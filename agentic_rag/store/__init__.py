"""Layer 2, where chunks are kept and searched: `base` (the `VectorStore` protocol, exact search,
the similarity scale, filters), `chroma` and `qdrant` (the backends), `backends.make_store`,
`lexical` (BM25 over the same chunks), `sections` (a chunk's enclosing section: small-to-big),
`index.AgenticIndex` (chunk → embed → upsert, kept in step with BM25) and `sqlite_kv` (the
SQLite file behind the LLM and row caches). A new vector store goes in a module here, named
in `backends`."""
