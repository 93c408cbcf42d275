"""Layer 7, the agent: `tool` (the `search_documents` tool, its schema from the input model),
`loop` (`run_agent`: the tool-use loop and its policies), `result` (`AgentResult`: citations,
abstention) and `support` (how well the cited passages support the answer)."""
