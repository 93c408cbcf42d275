"""Layer 8, serving an exported pipeline to agents: `mcp` (the MCP server and input checks),
`http` (streamable HTTP, `POST /search`) and `client` (the served tool as an agent's tool)."""
