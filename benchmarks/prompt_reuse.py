"""Does a logprob-derived score depend on what the local server served before?

    .venv/bin/python benchmarks/prompt_reuse.py [--portable]

One answer prompt, then the judge prompt that continues it (the claims' context-first
layout), sent twice: right after the answer (its prefix cached) and after an unrelated
request; then the same with `cache_prompt: false` (every prompt evaluated from scratch).
Prints the judge's top logprobs for each. SmolLM2-135M, one thread, greedy; ~1 min.
Measured 2026-12-03 on the C++ llama-server (default): −1.0926 for "Yes" with prompt reuse,
−1.0434 without; equal within a setting. docs/experiments.md, "Same rows at any concurrency".
"""
from __future__ import annotations

import argparse
import json
import socket
import tempfile
import urllib.request
from pathlib import Path

from agentic_rag.config_llm import ServerConfig
from agentic_rag.llm.server import LlamaServer

CONTEXT = "Context: " + " ".join(f"Branch {i} opens at {8 + i % 3} am and closes at "
                                 f"{4 + i % 4} pm." for i in range(30))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(base_url: str, alias: str, messages: list[dict], n: int, cache: bool
          ) -> tuple[str, list[tuple[str, float]]]:
    body = {"model": alias, "messages": messages, "max_tokens": n, "temperature": 0,
            "logprobs": True, "top_logprobs": 3, "cache_prompt": cache}
    req = urllib.request.Request(base_url + "/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        choice = json.load(r)["choices"][0]
    top = choice["logprobs"]["content"][0]["top_logprobs"]
    return choice["message"]["content"], [(t["token"], round(t["logprob"], 4)) for t in top]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--portable", action="store_true", help="llama-cpp-python's server")
    args = ap.parse_args()
    extra = {"binary": None} if args.portable else {}
    srv = LlamaServer(ServerConfig(model="smollm2-135m", port=_free_port(), n_ctx=2048,
                                   n_threads=1, **extra), home=Path(tempfile.mkdtemp())).start()
    question = [{"role": "user", "content": CONTEXT + "\nQuestion: When does branch 7 close?"}]
    try:
        for cache in (True, False):
            answer, _ = _post(srv.base_url, srv.alias, question, 20, cache)
            judge = question + [{"role": "assistant", "content": answer},
                                {"role": "user", "content": "Is that answer supported by the "
                                                            "context? Grade 0-9:"}]
            after_answer = _post(srv.base_url, srv.alias, judge, 1, cache)[1]
            _post(srv.base_url, srv.alias, [{"role": "user", "content": "unrelated"}], 1, cache)
            after_other = _post(srv.base_url, srv.alias, judge, 1, cache)[1]
            print(f"cache_prompt={cache}: after the answer {after_answer}; after an unrelated "
                  f"request {after_other}")
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
