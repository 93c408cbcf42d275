"""Does `answer_in_context` (no LLM) agree with the LLM's token F1 where both exist?

For each answered question: `in_context` = the normalised reference occurs in the context the
model was served (`evaluation.containment.answer_in_context`), `token_f1` = the model's answer
against the reference (`evaluation.answers.token_f1`). `agreement` reports how often the
reference was served, the mean F1 when it was and when it was not (bootstrap CIs), the AUROC
of `in_context` as a predictor of "F1 ≥ threshold" (CI resampling questions) and Cohen's κ of
the two binary readings. Sources:

- the own-answers set of the detector validation (`answers.jsonl`: question, reference, the
  judge's view of the served chunks, answer), read only — its `context` is the served
  context whenever its token count equals the row's `served_tokens` (same chunks, same
  formatter; only the judge's budget is larger), which is checked per row;
- sweep run folders whose rows carry both `token_f1` and `answer_in_context` (the claims
  b-answers and c-boundaries, when run since containment was logged).

    agentic-rag containment-agreement [--answers PATH] [--runs DIR ...] [--threshold 0.5]

(`report` in code.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentic_rag.evaluation.answers import token_f1
from agentic_rag.evaluation.containment import answer_in_context
from agentic_rag.experiments.stats import bootstrap_ci
from agentic_rag.jsonl import read_rows
from agentic_rag.studies.detectors.stats import auroc_ci, cohens_kappa

OWN_ANSWERS = "experiments/detectors/halueval-own/answers.jsonl"
RUN_GLOBS = ("*-claim-b-answers-*", "*-claim-c-boundaries-*")


def agreement(in_context: Sequence[float], f1: Sequence[float], threshold: float = 0.5,
              ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Agreement of a 0/1 containment reading with token F1 over the same items (pairs with
    a NaN on either side are dropped). `ids` group items for the AUROC's bootstrap (one
    question answered in two arms is one group); default: each item its own group."""
    x, y = np.asarray(in_context, dtype=float), np.asarray(f1, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"agreement: {len(x)} containment values vs {len(y)} F1 values")
    if not set(np.unique(x[~np.isnan(x)])) <= {0.0, 1.0}:
        raise ValueError("agreement: containment values must be 0 or 1")
    keep = ~(np.isnan(x) | np.isnan(y))
    groups = np.asarray(ids if ids is not None else np.arange(len(x)).astype(str))[keep]
    x, y = x[keep], y[keep]
    good = (y >= threshold).astype(int)
    out: dict[str, Any] = {"n": int(len(x)), "threshold": threshold}
    if not len(x):
        return out
    inside, outside = y[x == 1], y[x == 0]
    out["share_in_context"] = float(x.mean())
    out["share_in_context_ci"] = bootstrap_ci(x.tolist())
    out["share_f1_at_threshold"] = float(good.mean())
    for name, v in (("in_context", inside), ("not_in_context", outside)):
        out[f"n_{name}"] = int(len(v))
        out[f"f1_{name}"] = float(v.mean()) if len(v) else float("nan")
        out[f"f1_{name}_ci"] = bootstrap_ci(v.tolist())
    a, lo, hi = auroc_ci(good, x, groups)
    out["auroc"], out["auroc_ci"] = a, (lo, hi)
    same = (x.astype(int) == good)
    out["agreement"] = float(same.mean())
    out["kappa"] = cohens_kappa(x.astype(int).tolist(), good.tolist()) \
        if len(set(x)) > 1 or len(set(good)) > 1 else float("nan")
    out["confusion"] = {"in_and_good": int(((x == 1) & (good == 1)).sum()),
                        "in_not_good": int(((x == 1) & (good == 0)).sum()),
                        "out_and_good": int(((x == 0) & (good == 1)).sum()),
                        "out_not_good": int(((x == 0) & (good == 0)).sum())}
    return out


def own_answer_rows(path: str | Path, count_tokens=None) -> pd.DataFrame:  # noqa: ANN001
    """One row per answered question of an own-answers file: qid, in_context, token_f1 and
    `served_view` (the row's context has the served token count, see the module doc)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no own-answers file (agentic-rag validate-detectors "
                                "--own writes it)")
    rows = []
    for n, r in enumerate(read_rows(path, repair=False), 1):
        missing = [k for k in ("qid", "reference", "context") if k not in r]
        if missing:
            raise ValueError(f"{path}: row {n} has no {missing}")
        if r.get("answer") is None:  # an LLM failure: no answer to score
            continue
        rows.append({"qid": r["qid"], "in_context": answer_in_context(r["context"], [r["reference"]]),
                     "token_f1": token_f1(r["answer"], [r["reference"]]),
                     "served_view": None if count_tokens is None or "served_tokens" not in r
                     else count_tokens(r["context"]) == r["served_tokens"]})
    return pd.DataFrame(rows)


def run_rows(run_dir: str | Path) -> pd.DataFrame:
    """A sweep run's rows with both `token_f1` and `answer_in_context` (config_id, query_id)."""
    path = Path(run_dir) / "rows.jsonl"
    rows = [r for r in read_rows(path, repair=False) if r.get("token_f1") is not None
            and r.get("answer_in_context") is not None] if path.exists() else []
    return pd.DataFrame([{"qid": r["query_id"], "config_id": r["config_id"],
                          "in_context": r["answer_in_context"], "token_f1": r["token_f1"]}
                         for r in rows])


def _fmt(res: dict[str, Any]) -> str:
    if not res.get("n"):
        return "n = 0"

    def ci(k: str) -> str:
        lo, hi = res[f"{k}_ci"]
        return f"{res[k]:.3f} [{lo:.3f}, {hi:.3f}]"

    c = res["confusion"]
    return (f"n = {res['n']}; reference in context {ci('share_in_context')}; "
            f"mean token F1 in context {ci('f1_in_context')} (n {res['n_in_context']}), "
            f"not in context {ci('f1_not_in_context')} (n {res['n_not_in_context']}); "
            f"F1 ≥ {res['threshold']}: {res['share_f1_at_threshold']:.3f}; AUROC of "
            f"answer_in_context for F1 ≥ {res['threshold']} {ci('auroc')}; agreement "
            f"{res['agreement']:.3f}, κ {res['kappa']:.3f}; in/good {c['in_and_good']}, "
            f"in/not {c['in_not_good']}, out/good {c['out_and_good']}, "
            f"out/not {c['out_not_good']}")


def report(answers: str | Path | None = None, runs: Sequence[str | Path] | None = None,
           threshold: float = 0.5, log: Callable[[str], Any] = print) -> None:
    """The agreement on the own-answers set (`answers`, default `OWN_ANSWERS`) and on each
    run folder in `runs` (None: the claim b-answers / c-boundaries runs under
    experiments/runs/; empty: none), one line each through `log`. F1 ≥ `threshold` counts
    as right."""
    from agentic_rag.config import RAGConfig
    from agentic_rag.ingest.tokens import make_token_counter

    answers = OWN_ANSWERS if answers is None else answers
    counter = make_token_counter(RAGConfig().context.tokenizer)
    own = own_answer_rows(answers, counter.count)
    views = own["served_view"].dropna() if len(own) else pd.Series(dtype=bool)
    log(f"{answers}: {len(own)} answered questions; context = served context "
        f"(token count = served_tokens) in {int(views.sum())} of {len(views)}")
    if len(own):
        log("  " + _fmt(agreement(own["in_context"], own["token_f1"], threshold,
                                   own["qid"].tolist())))
    runs = [Path(r) for r in runs] if runs is not None else sorted(
        {d for g in RUN_GLOBS for d in Path("experiments/runs").glob(g) if d.is_dir()})
    if not runs:
        log("runs: no claim b-answers / c-boundaries run folder under experiments/runs/")
    for d in runs:
        rows = run_rows(d)
        log(f"{d}: {len(rows)} rows with token_f1 and answer_in_context")
        if len(rows):
            log("  " + _fmt(agreement(rows["in_context"], rows["token_f1"], threshold,
                                       rows["qid"].tolist())))
