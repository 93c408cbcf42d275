"""ragas metrics, run against the configured OpenAI-compatible model (the local
llama.cpp server by default) through ragas' own LLM wrapper (`llm_factory` with our
`AsyncOpenAI` client — ragas never builds its default client here). With `llm.base_url` or
`llm.endpoints` set, that client's chat completions are answered by `llm.make_chat_model`
(`chat_model_client`): the same requests (messages, JSON mode, max_tokens, temperature 0),
sent through the one call path every other LLM call takes, so a pool spreads them over its
endpoints, `llm.max_concurrency` each, and a dead endpoint's calls go to the others.

- LLM metrics: Faithfulness, FactualCorrectness, ContextPrecision, ContextRecall.
  Slow on 2 cores (tens of seconds to minutes per sample with the 1.5B model): run them
  on a sample. A metric that fails (parse errors after instructor's retries, timeouts)
  is recorded as a failure with its error, never as a score.
- Non-LLM metrics: NonLLMContextRecall, NonLLMContextPrecisionWithReference (legacy
  API: they exist only there), ExactMatch, StringPresence, RougeScore.

Telemetry: `RAGAS_DO_NOT_TRACK=true` is set before ragas is first imported (in
`_ragas()`, at call time, not at our import time).

Install: `pip install ragas==0.4.3 langchain-community==0.4.1 instructor==1.17.0
rapidfuzz rouge_score sacrebleu` (the pins avoid a broken resolution).
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentic_rag.config_llm import LLMConfig
from agentic_rag.evaluation.detection import auroc

RAGAS_INSTALL = ("pip install ragas==0.4.3 langchain-community==0.4.1 instructor==1.17.0 "
                 "rapidfuzz rouge_score sacrebleu")
LLM_METRICS = ("faithfulness", "factual_correctness", "context_precision", "context_recall")


def _ragas():  # noqa: ANN202 - the ragas module
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    try:
        import ragas
    except ImportError:
        raise RuntimeError(f"ragas is not installed: run `{RAGAS_INSTALL}`") from None
    return ragas


def _base_url(cfg: LLMConfig) -> str:
    return cfg.base_url or f"http://{cfg.server.host}:{cfg.server.port}/v1"


def chat_model_client(chat: Any) -> Any:
    """An `AsyncOpenAI` client whose `chat.completions.create` is answered by `chat` (a
    `ChatModel`: one endpoint or an `EndpointPool`, with its reply cache): the request's
    messages, JSON mode (`response_format`) and `max_tokens` are passed on; an `LLMError`
    (every endpoint failed) is raised to ragas, which records the metric as failed."""
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

    async def create(*, messages: list[dict[str, Any]], max_tokens: int | None = None,
                     response_format: dict | None = None, **_: Any) -> ChatCompletion:
        reply = await asyncio.to_thread(chat.chat, list(messages), max_tokens=max_tokens,
                                        json_mode=response_format is not None)
        return ChatCompletion.model_validate({
            "id": "chat-model", "object": "chat.completion", "created": 0,
            "model": chat.model_id,
            "choices": [{"index": 0, "finish_reason": reply.finish_reason or "stop",
                         "message": {"role": "assistant", "content": reply.content}}],
            "usage": {"prompt_tokens": reply.prompt_tokens,
                      "completion_tokens": reply.completion_tokens,
                      "total_tokens": reply.prompt_tokens + reply.completion_tokens}})

    client = AsyncOpenAI(base_url="http://chat-model.invalid/v1", api_key="unused")
    client.chat.completions.create = create  # the only method instructor calls
    return client


class RagasScorer:
    def __init__(self, llm: LLMConfig, metrics: Sequence[str] = LLM_METRICS,
                 timeout_s: float = 600.0, cache_dir: str | None = None) -> None:
        unknown = set(metrics) - set(LLM_METRICS)
        if unknown:
            raise ValueError(f"unknown ragas metrics {sorted(unknown)}; choose from {LLM_METRICS}")
        self.config = llm
        self.metric_names = tuple(metrics)
        self.timeout_s = timeout_s
        self.cache_dir = cache_dir or str(Path.home() / ".cache" / "agentic-rag" / "ragas")
        self._metrics: dict[str, Any] | None = None

    def _build(self) -> dict[str, Any]:
        if self._metrics is None:
            _ragas()
            from openai import AsyncOpenAI
            from ragas.cache import DiskCacheBackend
            from ragas.llms import llm_factory
            from ragas.metrics.collections import (
                ContextPrecision,
                ContextRecall,
                FactualCorrectness,
                Faithfulness,
            )

            if self.config.uses_local_server:
                key = os.environ.get(self.config.api_key_env) or "not-needed-for-local"
                client = AsyncOpenAI(base_url=_base_url(self.config), api_key=key,
                                     timeout=self.config.timeout_s)
            else:  # llm.base_url / llm.endpoints: through make_chat_model, at temperature 0
                from agentic_rag.llm.chat import make_chat_model

                client = chat_model_client(make_chat_model(
                    self.config.model_copy(update={"temperature": 0.0}), self.cache_dir))
            # ragas' own disk cache (keyed by the prompt): a rerun makes no LLM call
            llm = llm_factory(self.config.model, client=client, max_tokens=768, temperature=0,
                              cache=DiskCacheBackend(cache_dir=self.cache_dir))
            make = {"faithfulness": lambda: Faithfulness(llm=llm),
                    "factual_correctness": lambda: FactualCorrectness(llm=llm),
                    "context_precision": lambda: ContextPrecision(llm=llm),
                    "context_recall": lambda: ContextRecall(llm=llm)}
            self._metrics = {n: make[n]() for n in self.metric_names}
        return self._metrics

    async def _one(self, name: str, metric: Any, question: str, answer: str,
                   contexts: list[str], reference: str) -> Any:
        if name == "faithfulness":
            return await metric.ascore(user_input=question, response=answer,
                                       retrieved_contexts=contexts)
        if name == "factual_correctness":
            return await metric.ascore(response=answer, reference=reference)
        if name == "context_precision":
            return await metric.ascore(user_input=question, reference=reference,
                                       retrieved_contexts=contexts)
        return await metric.ascore(user_input=question, retrieved_contexts=contexts,
                                   reference=reference)

    def score(self, question: str, answer: str, contexts: list[str],
              reference: str = "") -> dict[str, Any]:
        """{metric: value, metric_seconds: s}; a failed metric gives {metric_error: text}."""
        out: dict[str, Any] = {}
        for name, metric in self._build().items():
            if name in ("factual_correctness", "context_precision", "context_recall") \
                    and not reference:
                continue
            t0 = time.perf_counter()
            try:
                res = asyncio.run(asyncio.wait_for(
                    self._one(name, metric, question, answer, contexts, reference),
                    self.timeout_s))
                value = float(res.value)
                if math.isnan(value):
                    raise ValueError("ragas returned NaN")
                out[f"ragas_{name}"] = value
            except Exception as exc:  # noqa: BLE001 - any ragas/instructor failure is recorded
                out[f"ragas_{name}_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            out[f"ragas_{name}_seconds"] = time.perf_counter() - t0
        return out


def non_llm_scores(answer: str, reference: str, contexts: list[str],
                   reference_contexts: list[str]) -> dict[str, float]:
    """ragas' non-LLM metrics (< 0.2 s per sample)."""
    _ragas()
    import warnings

    from ragas import SingleTurnSample
    from ragas.metrics.collections import ExactMatch, RougeScore, StringPresence

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import NonLLMContextPrecisionWithReference, NonLLMContextRecall

    async def run() -> dict[str, float]:
        out: dict[str, float] = {}
        if reference:
            out["ragas_exact_match"] = float((await ExactMatch().ascore(
                reference=reference, response=answer)).value)
            out["ragas_string_presence"] = float((await StringPresence().ascore(
                reference=reference, response=answer)).value)
            out["ragas_rouge"] = float((await RougeScore().ascore(
                reference=reference, response=answer)).value)
        if contexts and reference_contexts:
            s = SingleTurnSample(retrieved_contexts=contexts, reference_contexts=reference_contexts)
            out["ragas_nonllm_context_recall"] = float(
                await NonLLMContextRecall().single_turn_ascore(s))
            out["ragas_nonllm_context_precision"] = float(
                await NonLLMContextPrecisionWithReference().single_turn_ascore(s))
        return out

    return asyncio.run(run())


def validate_faithfulness(llm: LLMConfig, items: Sequence[tuple[str, str, str]],
                          questions: Sequence[str]) -> dict[str, float]:
    """ragas Faithfulness on HaluEval (context, right, hallucinated): label 1 = hallucinated,
    score = 1 − faithfulness. Failures are counted, not scored."""
    scorer = RagasScorer(llm, ("faithfulness",))
    labels, scores, failures = [], [], 0
    errors: dict[str, int] = {}
    for (context, right, wrong), question in zip(items, questions):
        for answer, label in ((right, 0), (wrong, 1)):
            res = scorer.score(question, answer, [context])
            if "ragas_faithfulness_error" in res:
                kind = res["ragas_faithfulness_error"].split(":")[0]
                errors[kind] = errors.get(kind, 0) + 1
            if "ragas_faithfulness" not in res:
                failures += 1
                continue
            labels.append(label)
            scores.append(1.0 - res["ragas_faithfulness"])
    y, s = np.asarray(labels), np.asarray(scores)
    acc = float(((s >= 0.5) == (y == 1)).mean()) if len(y) else float("nan")
    return {"n": len(labels), "failures": failures, "failure_kinds": errors, "accuracy": acc,
            "auroc": auroc(labels, scores),
            "mean_faithfulness_right": float(1 - s[y == 0].mean()) if (y == 0).any() else math.nan,
            "mean_faithfulness_hallucinated": float(1 - s[y == 1].mean()) if (y == 1).any()
            else math.nan}
