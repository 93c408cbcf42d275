"""Metric declarations: every metric a sweep summarises, declared once (`METRICS`).

A `Metric` states its name; its group, the sweep's `metrics` entry that measures it
(`retrieval`, `answers`, `hallucination`, `agent`, `ragas`, `ragas_nonllm`; `row` for the
decision and cost columns every row has); its direction (is higher better?); whether the
summary gives its mean with a 95 % CI (`mean`) and its paired difference vs the baseline
over the same queries (`paired`); whether it needs the LLM (`llm`: measured only for the
sweep's LLM sample, after the answer: the judged and agent groups); whether it is a headline retrieval measure
(`headline`: the printout and the Pareto front are read by the first present); and, for a
metric of your own, `compute`: its value for one row from a `RowInputs`.

The package's own metrics are computed by their group's code in `experiments/measure.py`
(ir-measures scores the five ranking metrics at once; span and containment metrics come in
families) and declared here for the summary. A metric with `compute` is measured by the
sweep runner for every row of its group: a metric of your own is a function in its own
module plus one line, `register_metric(Metric(name, group, compute=...))`.
`experiments/summary.py` summarises, pairs and sorts what is declared, as declared; asking it
for a name that is not declared is an error (`metric`), not a silent omission.

Columns a row has that are not declared here (span precision, hits per chunk type, tokens,
latencies, the agent's counts) are observations, kept in `results.parquet`, not summarised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from agentic_rag.documents import GoldSpan, Hit

GROUPS = ("row", "retrieval", "answers", "hallucination", "agent", "ragas", "ragas_nonllm")


@dataclass(frozen=True)
class RowInputs:
    """What one row's metric may read: the query, the hits it was served (at most `k`, rank
    order), the context text the model is given, the gold (document qrels, character spans,
    reference answers) and the row measured so far (with `answer` for an `llm` metric)."""

    query: str
    hits: list[Hit]
    context: str
    qrels: dict[str, int]
    spans: list[GoldSpan]
    answers: list[str]
    k: int
    row: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Metric:
    name: str
    group: str
    direction: Literal["higher", "lower"] = "higher"
    mean: bool = True  # the summary's mean with its 95 % CI
    paired: bool = True  # the summary's paired difference vs the baseline, with its CI
    llm: bool = False
    headline: bool = False
    compute: Callable[[RowInputs], float | None] | None = None

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(f"metric {self.name!r}: unknown group {self.group!r} (one of "
                             f"{', '.join(GROUPS)})")
        if self.direction not in ("higher", "lower"):
            raise ValueError(f"metric {self.name!r}: direction is 'higher' or 'lower', "
                             f"not {self.direction!r}")
        if not (self.mean or self.paired):
            raise ValueError(f"metric {self.name!r}: neither summarised (mean) nor paired")


def _declare(*metrics: Metric) -> dict[str, Metric]:
    return {m.name: m for m in metrics}


_RAGAS = ("ragas_context_precision", "ragas_context_recall", "ragas_exact_match",
          "ragas_factual_correctness", "ragas_faithfulness", "ragas_nonllm_context_precision",
          "ragas_nonllm_context_recall", "ragas_rouge", "ragas_string_presence")
_RAGAS_LLM = ("ragas_context_precision", "ragas_context_recall", "ragas_factual_correctness",
              "ragas_faithfulness")

# in the summary's column order: headline retrieval measures first (the printout is read by
# the first present), then the others; `mean=False`: paired only
METRICS: dict[str, Metric] = _declare(
    *(Metric(n, "retrieval", headline=True)
      for n in ("ndcg@10", "recall@10", "recall@5", "mrr@10", "precision@5")),
    Metric("span_recall@10", "retrieval"),
    Metric("span_iou@10", "retrieval"),
    Metric("answer_in_context", "retrieval"),
    Metric("answer@5", "retrieval"),
    Metric("answer@10", "retrieval"),
    Metric("exact_match", "answers", llm=True),
    Metric("token_f1", "answers", llm=True),
    Metric("hallucinated", "hallucination", direction="lower", llm=True),
    Metric("agent_token_f1", "agent", llm=True),
    Metric("agent_exact_match", "agent", llm=True),
    Metric("agent_tool_calls", "agent", direction="lower", llm=True),
    Metric("agent_retrieval_iterations", "agent", direction="lower", llm=True),
    # an agent's trajectory (evaluation/trajectory.py; no LLM judge, measured on the agent's
    # run): searches repeating a query, the first search serving a gold document, the LLM
    # turns to the answer, the served documents' precision / recall against the gold ones
    Metric("repeated_queries", "agent", direction="lower", llm=True),
    Metric("first_search_gold", "agent", llm=True),
    Metric("llm_turns", "agent", direction="lower", llm=True),
    Metric("served_doc_precision", "agent", llm=True),
    Metric("served_doc_recall", "agent", llm=True),
    # a session's turn (experiments/sessions.py, evaluation/sessions.py; no LLM judge):
    # ROUGE-L vs the reference, the support detector's decision on answered turns, the
    # turn's searches, passages served again, context and prompt tokens (evaluated by the
    # server vs reused from its prompt cache); abstention precision / recall and the
    # clarifying rate are sweep-level figures (evaluation.sessions.abstention)
    Metric("agent_rouge_l", "agent", llm=True),
    Metric("agent_hallucinated", "agent", direction="lower", llm=True),
    Metric("agent_answer_in_context", "agent", llm=True),
    Metric("session_searches", "agent", direction="lower", llm=True),
    Metric("session_served_again", "agent", direction="lower", llm=True),
    Metric("session_context_tokens", "agent", direction="lower", llm=True),
    Metric("session_prompt_evaluated", "agent", direction="lower", llm=True),
    Metric("session_prompt_reused", "agent", llm=True, paired=False),
    *(Metric(n, "ragas", llm=True) if n in _RAGAS_LLM else Metric(n, "ragas_nonllm")
      for n in _RAGAS),
    Metric("span_recall@5", "retrieval", mean=False),
    Metric("iterations", "row", direction="lower", mean=False),
    Metric("context_tokens", "row", direction="lower", mean=False),
)


def metric(name: str) -> Metric:
    """The declaration of `name`; an undeclared name is a KeyError that lists the declared."""
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"metric {name!r} is not declared (evaluation/metrics.py METRICS: "
                       f"{', '.join(METRICS)}; a metric of your own: register_metric)") from None


def register_metric(m: Metric) -> Metric:
    """Declare `m`: a sweep then measures it (with `compute`), summarises and pairs it as it
    says. A name already declared is an error."""
    if m.name in METRICS:
        raise ValueError(f"metric {m.name!r} is already declared")
    METRICS[m.name] = m
    return m


def unregister_metric(name: str) -> None:
    """Remove a metric `register_metric` declared (a test's toy, when it is done)."""
    METRICS.pop(name, None)


def names(*, mean: bool | None = None, paired: bool | None = None,
          headline: bool | None = None) -> list[str]:
    """The declared names, in declaration order, with the given flags."""
    return [m.name for m in METRICS.values()
            if (mean is None or m.mean == mean) and (paired is None or m.paired == paired)
            and (headline is None or m.headline == headline)]


def in_groups(*groups: str) -> list[str]:
    """The declared names of `groups`, in declaration order."""
    return [m.name for m in METRICS.values() if m.group in groups]


def computed(inputs: RowInputs, groups: set[str] | frozenset[str],
             llm: bool) -> dict[str, float]:
    """One row's values of the declared metrics that have a `compute`, belong to one of
    `groups` (or to `row`) and need the LLM (`llm`) or not; a metric that returns None
    (undefined for this row) is left out."""
    out: dict[str, float] = {}
    for m in METRICS.values():
        if m.compute is not None and m.llm == llm and m.group in {*groups, "row"}:
            value = m.compute(inputs)
            if value is not None:
                out[m.name] = value
    return out
