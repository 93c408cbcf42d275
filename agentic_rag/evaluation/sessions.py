"""Session metrics without an LLM judge: one session turn's columns, and the sweep-level figures.

Per turn (`turn_metrics`, a sweep row of a session query, `experiments/sessions.py`): whether
the agent abstained ("I don't know", `answers.is_abstention`) or asked a clarifying question,
its searches, the passages served again within the session (on an earlier turn or by an
earlier search of the turn), the context tokens served, and the prompt tokens llama-server
evaluated vs reused from its prompt cache (None: the server did not say, or every reply came
from the reply cache). ROUGE-L and token F1 against the reference answer are `answers.py`'s.

Over a sweep's session rows (`abstention`, `clarifying_rate`), by the task's answerability:

- **Abstention** as a detector of UNANSWERABLE turns, ANSWERABLE ones the negatives (PARTIAL
  and UNDERSPECIFIED left out): recall = abstained on UNANSWERABLE, precision = UNANSWERABLE
  among the turns abstained on, and the abstention rate on ANSWERABLE. Their 95 % CIs are
  percentile bootstraps over sessions (MTRAG-UN has one task per conversation, so a row is a
  session): the rows are resampled whole, and each figure recomputed on the resample (a
  resample without a positive, or without an abstention, gives no value and is skipped).
- **Clarifying rate** on UNDERSPECIFIED turns (and, beside it, on the others), with a
  bootstrap CI over sessions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from agentic_rag.evaluation.answers import is_abstention
from agentic_rag.evaluation.containment import answer_in_context

POSITIVE, NEGATIVE = "UNANSWERABLE", "ANSWERABLE"


def served_again(turn: Any, earlier: set[str] = frozenset()) -> int:  # noqa: ANN401
    """Passages served on `turn` that were served before within the session: on an earlier
    turn (`earlier`, chunk ids) or by an earlier search of the same turn."""
    seen, again = set(earlier), 0
    res = turn.result
    outputs = [s.tool for s in res.steps if s.tool is not None] if res is not None else []
    for o in outputs:
        for c in dict.fromkeys(o.chunk_ids):
            again += c in seen
            seen.add(c)
    return again


def turn_metrics(turn: Any, answerability: str | None, references: list[str] = (),  # noqa: ANN401
                 earlier: set[str] = frozenset()) -> dict[str, Any]:
    """One session turn's columns (module doc); `answerability`, the task's label, is kept on
    the row for the sweep-level figures."""
    res = turn.result
    abstained = bool(turn.abstained) or (not turn.clarifying and is_abstention(turn.answer))
    served = "\n\n".join(p.text for p in turn.passages)
    out: dict[str, Any] = {
        "answerability": answerability, "agent_abstained": float(abstained),
        "agent_clarifying": float(turn.clarifying),
        "session_searches": len(turn.queries),
        "session_served_again": served_again(turn, earlier),
        "session_context_tokens": res.context_tokens if res is not None else 0,
        "session_prompt_tokens": turn.prompt_tokens,
        "session_prompt_evaluated": turn.prompt_evaluated,
        "session_prompt_reused": turn.prompt_reused}
    if references and turn.passages:
        out["agent_answer_in_context"] = answer_in_context(served, list(references))
    return out


def _boot(rows: pd.DataFrame, fn, n_boot: int = 2000, seed: int = 0  # noqa: ANN001
          ) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n_boot):
        v = fn(rows.iloc[rng.integers(0, len(rows), len(rows))])
        if v == v:
            vals.append(v)
    if not vals:
        return float("nan"), float("nan")
    return float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))


def _recall(d: pd.DataFrame) -> float:
    pos = d[d.answerability == POSITIVE]
    return float(pos.agent_abstained.mean()) if len(pos) else float("nan")


def _precision(d: pd.DataFrame) -> float:
    ab = d[d.agent_abstained == 1]
    return float((ab.answerability == POSITIVE).mean()) if len(ab) else float("nan")


def _false_rate(d: pd.DataFrame) -> float:
    neg = d[d.answerability == NEGATIVE]
    return float(neg.agent_abstained.mean()) if len(neg) else float("nan")


def abstention(rows: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Abstention on UNANSWERABLE (positives) vs ANSWERABLE (negatives) turns, from session
    rows with `answerability` and `agent_abstained` (module doc): n of each, recall,
    precision and the abstention rate on ANSWERABLE, each with its bootstrap CI."""
    d = rows[rows.answerability.isin([POSITIVE, NEGATIVE]) & rows.agent_abstained.notna()]
    out: dict[str, Any] = {"n_unanswerable": int((d.answerability == POSITIVE).sum()),
                           "n_answerable": int((d.answerability == NEGATIVE).sum())}
    for name, fn in (("recall", _recall), ("precision", _precision),
                     ("abstained_on_answerable", _false_rate)):
        out[name] = fn(d)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = _boot(d, fn, n_boot, seed) \
            if len(d) else (float("nan"), float("nan"))
    return out


def clarifying_rate(rows: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """The share of UNDERSPECIFIED turns answered with a clarifying question (bootstrap CI over
    sessions), and the share of the other turns, where a question is not called for."""
    d = rows[rows.agent_clarifying.notna()]
    under = d[d.answerability == "UNDERSPECIFIED"]
    rest = d[d.answerability != "UNDERSPECIFIED"]

    def rate(x: pd.DataFrame) -> float:
        return float(x.agent_clarifying.mean()) if len(x) else float("nan")

    lo, hi = _boot(under, rate, n_boot, seed) if len(under) else (float("nan"), float("nan"))
    return {"n_underspecified": len(under), "clarifying_on_underspecified": rate(under),
            "clarifying_on_underspecified_ci_low": lo,
            "clarifying_on_underspecified_ci_high": hi,
            "n_other": len(rest), "clarifying_on_other": rate(rest)}


def session_figures(results: pd.DataFrame, n_boot: int = 2000) -> pd.DataFrame:
    """One row per config of a sweep's session rows (`results.parquet`, rows with an agent
    turn and no `agent_error`): sessions, abstention (`abstention`), the clarifying rate
    (`clarifying_rate`), and per turn the mean searches, passages served again and context
    tokens, the median prompt tokens evaluated and reused."""
    out = []
    for cid, g in results.groupby("config_id", sort=True):
        g = g[g["agent_abstained"].notna()]
        if "agent_error" in g:
            g = g[g["agent_error"].isna()]
        row: dict[str, Any] = {"config_id": cid, "config": g["config"].iloc[0] if len(g) else "",
                               "sessions": len(g)}
        if len(g):
            row.update(abstention(g, n_boot))
            row.update(clarifying_rate(g, n_boot))
            for c in ("session_searches", "session_served_again", "session_context_tokens"):
                row[f"{c}_mean"] = float(g[c].mean())
            for c in ("session_prompt_evaluated", "session_prompt_reused"):
                row[f"{c}_median"] = float(g[c].median()) if g[c].notna().any() else None
        out.append(row)
    return pd.DataFrame(out)
