"""What `generate_testset` costs before it runs (`estimate`: LLM calls and tokens for `n`
questions), from the rates measured on real runs: draws per kept question and the round
trip's pass rate. The CLI and `tune` print it before the first call."""

from __future__ import annotations

from collections.abc import Sequence

from agentic_rag.datasets.testset_prompts import CORPUS_CHECK_K
from agentic_rag.documents import Chunk

# draws per kept question: free mode 1.5 (an assumption); span mode 2.0, measured on the 52
# Python library pages (2026-12-04: 400 draws for 200 kept, no round trip); the round trip
# passes ROUND_TRIP_PASS of the questions that passed the filters (same pages: 126 of 254)
DRAWS_PER_KEPT = {"free": 1.5, "span": 2.0}
ROUND_TRIP_PASS = 0.5


def estimate(n: int, chunks: Sequence[Chunk], check_knowable: bool = True,
             unanswerable: float = 0.0, check_unanswerable: bool = False,
             mode: str = "span", round_trip: bool = False) -> dict[str, int]:
    """The calls and tokens `generate_testset` should take for `n` questions: draws per
    accepted question `DRAWS_PER_KEPT` (the summary reports a run's own rate), each the
    prompt (~180 tokens) + a passage of the chunks' mean size, ~40 tokens out; with
    `round_trip`, one check per question that passed the filters (n / `ROUND_TRIP_PASS`,
    and as many more draws) ~80 + a passage in, ~15 out; a second call for each unanswerable
    draw (`ask_about`, a ceiling) ~80 in, ~25 out; the closed-book check ~60 in, ~15 out;
    with `check_unanswerable`, the corpus check of each unanswerable question ~60 +
    `CORPUS_CHECK_K` passages in, ~20 out."""
    mean = sum(c.token_count for c in chunks) / len(chunks) if chunks else 0
    passed = n / ROUND_TRIP_PASS if round_trip else n
    draws = round(DRAWS_PER_KEPT.get(mode, 1.5) * passed)
    rt = round(passed) if round_trip else 0
    k = n if check_knowable else 0
    second = round(draws * unanswerable)
    u = round(n * unanswerable) if check_unanswerable else 0
    return {"llm_calls": draws + rt + second + k + u,
            "prompt_tokens_est": round(draws * (180 + mean) + rt * (80 + mean) + second * 80
                                       + k * 60 + u * (60 + CORPUS_CHECK_K * (mean + 10))),
            "completion_tokens_est": draws * 40 + rt * 15 + second * 25 + k * 15 + u * 20,
            "corpus_checks": u, "round_trips": rt}
