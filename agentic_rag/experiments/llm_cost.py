"""The LLM cost of a run: estimated before it starts, metered while it runs.

- `measured_rates`: prompt and generated tokens per second of this endpoint: the
  constants (measured on this machine, below) scaled by how long the reply
  cache's latest replies of the model about to run (`planned_model`, or the running chat
  model's `model_id`: every estimate passes it) took against them, else the constants;
  `Rates.source` says which.
- `estimate_line`: the calls, tokens and wall time a run is about to spend. The time is
  divided by the calls in flight only when the endpoint serves calls in parallel (assumed
  for a configured `llm.base_url`, a hosted API); the embedded llama.cpp server has one
  slot, so concurrency there only queues calls.
- `Progress`: every few rows, done/total, elapsed, ETA from the pace so far, new LLM calls.
- `cap_message`: what a run stopped by `--max-llm-calls` (`llm.LLMCallCap`) says.
The calls themselves are counted in one place, `llm.CallMeter` behind `llm.MeteredChatModel`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_rag.config_llm import LLMConfig, ServerConfig
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.calls import CallMeter

# The local Qwen2.5-Coder-1.5B's token rates, the constants cost estimates start from:
# llama.cpp's own timings over the first 23 calls of the b-answers run of 2026-11-30 18:21
# (2 threads, machine otherwise idle): 58 prompt tokens/s, 14 generated tokens/s; rounded
# down. (Earlier figure, 40/10, was measured with the machine shared with benchmarks.)
PROMPT_TOKENS_PER_S = 55.0
COMPLETION_TOKENS_PER_S = 13.0
# per task and arm, from agent-v4 (30 banking tasks, retrieve_first): 2,033 prompt tokens for
# the agent's turns; the judges read ~1,200 more when the answer is not an abstention
AGENT_TOKENS_PER_TASK = 3300
JUDGE_TOKENS_PER_ROW = 1200  # beside AGENT_TOKENS_PER_TASK
RECENT = 200  # replies per cache file the speed is measured on
MIN_REPLIES = 20


@dataclass(frozen=True)
class Rates:
    prompt_per_s: float
    completion_per_s: float
    source: str

    def seconds(self, prompt_tokens: float, completion_tokens: float) -> float:
        return prompt_tokens / self.prompt_per_s + completion_tokens / self.completion_per_s


CONSTANTS = Rates(PROMPT_TOKENS_PER_S, COMPLETION_TOKENS_PER_S,
                  "the rate constants (local Qwen 1.5B, 2 threads, "
                  "this machine idle), no usable measurement in the reply cache")


def speed_factor(samples: list[tuple[int, int, float]]) -> float | None:
    """How many times the rate constants' time the replies took: Σ seconds over Σ
    (prompt/P + completion/C) at the constants' rates, from (prompt tokens, completion
    tokens, seconds) per reply; None with fewer than `MIN_REPLIES`. One factor, not two
    fitted rates: replies whose completions are all about as long (a judge's one token)
    cannot separate the two rates, and a two-rate fit then charges each call's fixed cost
    to its few generated tokens."""
    if len(samples) < MIN_REPLIES:
        return None
    expected = sum(CONSTANTS.seconds(p, c) for p, c, _ in samples)
    return sum(s for _, _, s in samples) / expected if expected > 0 else None


def measured_rates(caches: Iterable[Path], recent: int = RECENT,
                   model: str | None = None) -> Rates:
    """The rate constants scaled by this endpoint's measured speed (`speed_factor` over
    the last `recent` replies of each existing reply-cache file: replies the model computed,
    a cache hit is never stored again), else `CONSTANTS`. With `model` (the identity about to
    run: `ChatClient.model_id`), only the replies that identity computed: a cache also holds
    replies of other models, builds and CPU variants (on the Intel Xeon the AMX variant reads
    prompts 1.6× faster than `zen4`, whose replies the same cache keeps)."""
    samples, used = [], []
    for path in caches:
        path = Path(path)
        if not path.is_file():
            continue
        replies = ChatCache(path).recent(recent, model)
        got = [(r.prompt_tokens, r.completion_tokens, r.latency_s) for r in replies
               if r.latency_s > 0 and (r.prompt_tokens or r.completion_tokens)]
        if got:
            samples += got
            used.append(str(path))
    factor = speed_factor(samples)
    if factor is None:
        if model is not None:
            return Rates(CONSTANTS.prompt_per_s, CONSTANTS.completion_per_s,
                         f"the rate constants: fewer than {MIN_REPLIES} replies of this model "
                         f"({_short(model)}) in the reply cache to measure it on")
        return CONSTANTS
    of = f" of {_short(model)}" if model is not None else ""
    return Rates(CONSTANTS.prompt_per_s / factor, CONSTANTS.completion_per_s / factor,
                 f"measured on this endpoint: its {len(samples)} latest replies{of} in "
                 f"{', '.join(used)} took {factor:.2f}× the time at the rate constants' "
                 f"{CONSTANTS.prompt_per_s:.0f} / {CONSTANTS.completion_per_s:.0f} tokens/s")


def _short(model: str) -> str:
    """A model identity as a reader names it: the weights' name and the build's variant
    ("qwen2.5-coder-1.5b, llama-server .../sapphirerapids"), not the hashes."""
    parts = model.split("|")
    name = parts[0].split("@")[0]
    build = next((p[len("build="):] for p in parts if p.startswith("build=")), "")
    return f"{name}, {build}" if build else name


def planned_model(llm: LLMConfig) -> str | None:
    """The identity the replies of a run about to start will carry (`llm.cache.model_identity`:
    for the embedded server, the weights, the build and the CPU variant it will serve), so its
    cost is estimated from that model's own replies; None when it cannot be told yet (no
    built server, a probe that fails: the server's start says why)."""
    from agentic_rag.llm.binary import ServerError
    from agentic_rag.llm.cache import model_identity

    try:
        return model_identity(llm)
    except (ServerError, OSError, ValueError):
        return None


def serves_in_parallel(llm: LLMConfig) -> bool:
    """Whether calls in flight are served at once: a configured endpoint (a hosted API) is
    assumed to, as is a pool (`llm.endpoints`); the embedded llama.cpp server (`llm.base_url`
    unset) has one slot."""
    return not llm.uses_local_server


def estimate_line(est: dict[str, int], rates: Rates, concurrency: int, parallel: bool) -> str:
    """One line: the calls, tokens and wall time to expect (`est`: `llm_calls`,
    `prompt_tokens_est`, `completion_tokens_est`, as `plan.estimate_llm_cost` and
    `agent_cost` give them), and what the time rests on."""
    calls, prompt_tokens = est["llm_calls"], est["prompt_tokens_est"]
    completion_tokens = est["completion_tokens_est"]
    seconds = rates.seconds(prompt_tokens, completion_tokens)
    if concurrency > 1 and parallel:
        seconds /= concurrency
        how = f"÷ {concurrency} calls in flight (the endpoint is assumed to serve them in parallel)"
    elif concurrency > 1:
        how = (f"not ÷ {concurrency}: the local llama.cpp server serves one call at a time, so "
               "calls in flight queue there")
    else:
        how = "one call at a time"
    return (f"LLM estimate: about {calls:,} calls, ~{prompt_tokens:,} prompt + "
            f"~{completion_tokens:,} completion tokens, ~{_duration(seconds)} at "
            f"{rates.prompt_per_s:.0f} prompt / {rates.completion_per_s:.1f} generated tokens/s "
            f"({rates.source}); {how}; a ceiling: cached calls are free")


def agent_cost(tasks: int) -> dict[str, int]:
    """The agent evaluation's ceiling per (task, cell): ≤ 3 agent turns + the judges, the
    prompt tokens measured on agent-v4 (`AGENT_TOKENS_PER_TASK`)."""
    return {"llm_calls": tasks * 4, "prompt_tokens_est": tasks * AGENT_TOKENS_PER_TASK,
            "completion_tokens_est": tasks * 80}


def judge_cost(rows: int) -> dict[str, int]:
    """The agent evaluation's judge pass: correctness + support per row, ~1,200 prompt tokens
    together (the note on `AGENT_TOKENS_PER_TASK`)."""
    return {"llm_calls": rows * 2, "prompt_tokens_est": rows * JUDGE_TOKENS_PER_ROW,
            "completion_tokens_est": rows * 20}


def local_server_meta(config: ServerConfig) -> dict[str, Any]:
    """What a run's meta records of the embedded llama.cpp server: its build and CPU variant
    (`server.build_info`) and the settings that change outputs (`server_settings`); a
    build that cannot be inspected is recorded as the error, not left out silently."""
    from agentic_rag.llm.binary import ServerError
    from agentic_rag.llm.server import build_info, server_settings

    try:
        build: dict[str, Any] = build_info(config)
    except ServerError as exc:
        build = {"error": str(exc)}
    return {"llama_build": build, "server_settings": server_settings(config)}


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """Logs `label: done/total, elapsed, ETA` every `every` items (default: ~10 lines per
    run) and at the last one; the ETA is the pace so far applied to what is left. With a
    `meter`, the new LLM calls made so far too."""

    def __init__(self, total: int, log: Callable[[str], Any], label: str,
                 meter: CallMeter | None = None, every: int | None = None) -> None:
        self.total, self.log, self.label, self.meter = total, log, label, meter
        self.every = every or max(1, total // 10)
        self.done = 0
        self.t0 = time.perf_counter()

    def advance(self, n: int = 1) -> None:
        if self.total <= 0 or n <= 0:
            return
        before, self.done = self.done, self.done + n
        if self.done // self.every == before // self.every and self.done < self.total:
            return
        elapsed = time.perf_counter() - self.t0
        eta = elapsed / self.done * (self.total - self.done)
        calls = ""
        if self.meter is not None:
            calls = f", {self.meter.calls} new LLM calls ({self.meter.cached} cached)"
        self.log(f"{self.label}: {self.done}/{self.total}, {_duration(elapsed)} elapsed, "
                 f"ETA {_duration(eta)}{calls}")


def cap_message(stop: Exception, what: str, rerun: str) -> str:
    """What a run stopped at its cap says: where it stands and how to continue."""
    return (f"{stop}. {what}; nothing is lost: rerun `{rerun}` (raise or drop "
            "--max-llm-calls) to continue — finished rows are kept and every call already made "
            "is read from the reply cache")
