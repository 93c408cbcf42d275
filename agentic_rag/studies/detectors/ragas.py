"""ragas Faithfulness on a subsample of set (ii), the local model's own labelled answers.

ragas' Faithfulness splits the answer into statements and asks the LLM, statement by
statement, whether the context supports it: several long calls per answer (25-400 s each on
this model and machine, `../shared/OFFLINE.md`), so it runs on a balanced, seeded subsample:
`n // 2` answers labelled unsupported and as many labelled supported (pass 1), scored against
the same context the labellers and the other detectors read. Each row records its seconds,
so the cost per answer is measured, not assumed; a failed metric is recorded with its error
and never scored. The summary puts ragas' AUROC beside the other detectors' AUROC on the
same answers (`scored.jsonl`), since a subsample's AUROC is only comparable on its own items.

    agentic-rag validate-detectors --own-answers 150 --ragas 20   # + the local server
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentic_rag.config_llm import LLMConfig
from agentic_rag.jsonl import append_rows, read_rows
from agentic_rag.studies.detectors.own import read_labels
from agentic_rag.studies.detectors.scoring import with_combined
from agentic_rag.studies.detectors.stats import DETECTORS, auroc_ci


def ragas_sample(out: str | Path, n: int, seed: int = 0) -> list[str]:
    """qids of a balanced, seeded subsample of the pass-1 labels: `n // 2` unsupported and
    `n - n // 2` supported (fewer when a class has fewer)."""
    labels = read_labels(out, 1).sort_values("qid")
    rng = random.Random(seed)
    bad = labels.loc[labels["label"] == 1, "qid"].tolist()
    good = labels.loc[labels["label"] == 0, "qid"].tolist()
    pick = rng.sample(bad, min(n // 2, len(bad))) + rng.sample(good, min(n - n // 2, len(good)))
    return sorted(pick)


def score_ragas(llm: LLMConfig, out: str | Path, n: int, seed: int = 0,
                log: Callable[..., Any] = print, scorer: Any = None) -> pd.DataFrame:
    """ragas Faithfulness on `ragas_sample(out, n, seed)` into `out/ragas.jsonl` (resumable:
    one row per answer, written as it is scored)."""
    from agentic_rag.evaluation.ragas_metrics import RagasScorer

    out = Path(out)
    answers = {r["qid"]: r for r in read_rows(out / "answers.jsonl")}
    path = out / "ragas.jsonl"
    done = {r["qid"]: r for r in read_rows(path)}
    todo = [q for q in ragas_sample(out, n, seed) if q not in done]
    log(f"ragas faithfulness: {len(done)} scored, {len(todo)} to score → {path}")
    scorer = scorer or RagasScorer(llm, ("faithfulness",))
    for qid in todo:
        a = answers[qid]
        res = scorer.score(a["question"], a["answer"], [a["context"]])
        row = {"qid": qid, **res}
        append_rows(path, [row])
        done[qid] = row
        log(f"  {qid}: {res.get('ragas_faithfulness', res.get('ragas_faithfulness_error'))} "
            f"({res['ragas_faithfulness_seconds']:.0f} s)")
    return pd.DataFrame(list(done.values()))


def ragas_summary(out: str | Path) -> dict[str, Any]:
    """ragas' AUROC (hallucination score 1 − faithfulness, against the pass-1 labels) with a
    bootstrap CI, its failures and seconds per answer, and every other detector's AUROC on
    the same answers."""
    out = Path(out)
    rows = pd.DataFrame(read_rows(out / "ragas.jsonl"))
    if rows.empty:
        raise FileNotFoundError(f"{out / 'ragas.jsonl'}: no ragas rows")
    labels = read_labels(out, 1)[["qid", "label"]]
    rows = rows.merge(labels, on="qid")
    ok = rows[rows["ragas_faithfulness"].notna()] if "ragas_faithfulness" in rows \
        else rows.iloc[0:0]
    secs = rows["ragas_faithfulness_seconds"].to_numpy(float)
    res: dict[str, Any] = {
        "answers": len(rows), "unsupported": int(rows["label"].sum()),
        "failures": int(len(rows) - len(ok)), "seconds_mean": float(secs.mean()),
        "seconds_median": float(np.median(secs)), "seconds_max": float(secs.max()),
        "seconds_total": float(secs.sum())}
    if len(ok):
        a, lo, hi = auroc_ci(ok["label"].to_numpy(int),
                             1.0 - ok["ragas_faithfulness"].to_numpy(float), ok["qid"].to_numpy())
        res["ragas_faithfulness"] = {"n": len(ok), "auroc": a, "auroc_ci_low": lo,
                                     "auroc_ci_high": hi}
    scored = with_combined(pd.DataFrame(read_rows(out / "scored.jsonl")).merge(
        ok[["qid", "label"]], on="qid"))
    for det in DETECTORS:
        if det in scored and scored[det].notna().any():
            s = scored[scored[det].notna()]
            a, lo, hi = auroc_ci(s["label"].to_numpy(int), 1.0 - s[det].to_numpy(float),
                                 s["qid"].to_numpy())
            res[det] = {"n": len(s), "auroc": a, "auroc_ci_low": lo, "auroc_ci_high": hi}
    return res
