"""Detectors judged on their decisions, not their ranking: each candidate's threshold is
chosen on labelled answers and its flags are scored on other, held-out labelled answers.

`decision_table` runs stratified k-fold cross-validation over the labelled answers of set
(ii) (`own.own_rows`): in each fold the threshold (flag = support < t) that maximises
balanced accuracy on the other folds is applied to the held-out fold, so every answer is
decided once by a threshold that never saw its label. The pooled held-out flags give
accuracy, balanced accuracy, and recall and precision on unsupported answers, each with a
95 % bootstrap CI over answers (the CI does not carry the threshold's own fold-to-fold
variation). "Call everything supported" is the row to beat. A fitted combination
(`logistic`: a logistic regression over the judges, the number check and the answer's
length) is fitted and thresholded on the training folds only, the same way.

An undefined score (NaN: an answer the detector may not score, `support.checkable`) is not
a flag; `coverage` says how many answers each detector scored. Cost per answer: LLM judge
calls, prompt tokens and seconds, as recorded in the scored rows.

    agentic-rag validate-detectors --decisions --out experiments/detectors/halueval-own
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from agentic_rag.evaluation.support import numbers
from agentic_rag.experiments.stats import resample_index

CANDIDATES = ("graded_judge", "graded_judge_q", "lexical_numbers", "mean_numbers",
              "mean_numbers_q")
# judge cost fields of a scored row, by primitive score
_COST = {"graded_judge": ("judge_prompt_tokens", "judge_s"),
         "graded_judge_q": ("judge_q_prompt_tokens", "judge_q_s")}
_PARTS = {"graded_judge": ("graded_judge",), "graded_judge_q": ("graded_judge_q",),
          "lexical_numbers": (), "mean_numbers": ("graded_judge",),
          "mean_numbers_q": ("graded_judge_q",), "logistic": ("graded_judge", "graded_judge_q")}


def stratified_folds(labels: np.ndarray, k: int, seed: int) -> np.ndarray:
    """A fold id in 0..k-1 per answer, each fold with its share of both labels (seeded)."""
    rng = np.random.default_rng(seed)
    fold = np.empty(len(labels), dtype=int)
    for value in np.unique(labels):
        idx = np.flatnonzero(labels == value)
        rng.shuffle(idx)
        fold[idx] = np.arange(len(idx)) % k
    return fold


def flags_at(support: np.ndarray, threshold: float) -> np.ndarray:
    """1 where support < threshold; an undefined (NaN) support is no flag."""
    s = np.asarray(support, dtype=float)
    return ((s < threshold) & ~np.isnan(s)).astype(int)


def balanced_accuracy(y: np.ndarray, flags: np.ndarray) -> float:
    pos, neg = y == 1, y == 0
    tpr = flags[pos].mean() if pos.any() else math.nan
    tnr = (1 - flags[neg]).mean() if neg.any() else math.nan
    return float((tpr + tnr) / 2)


def choose_threshold(support: np.ndarray, y: np.ndarray) -> float:
    """The threshold that maximises balanced accuracy on (support, y): candidates are the
    midpoints between consecutive distinct defined scores, plus one below and one above all
    (flag nothing / everything scored); ties go to the lowest threshold (fewest flags)."""
    s = np.unique(np.asarray(support, dtype=float)[~np.isnan(support)])
    if len(s) == 0:
        return 0.0
    cands = np.concatenate([[s[0] - 1e-9], (s[:-1] + s[1:]) / 2, [s[-1] + 1e-9]])
    scores = [balanced_accuracy(y, flags_at(support, t)) for t in cands]
    return float(cands[int(np.argmax(scores))])


def held_out_flags(support: np.ndarray, y: np.ndarray, fold: np.ndarray,
                   ) -> tuple[np.ndarray, list[float]]:
    """Every answer's flag from the threshold chosen on the other folds; the thresholds."""
    flags, ts = np.zeros(len(y), dtype=int), []
    for f in np.unique(fold):
        train, test = fold != f, fold == f
        t = choose_threshold(support[train], y[train])
        flags[test] = flags_at(support[test], t)
        ts.append(t)
    return flags, ts


def features(rows: pd.DataFrame) -> np.ndarray:
    """The logistic combination's features: the question-aware judge, the blind judge and
    the number check (undefined → 0.5, with an indicator), whether the answer has a number,
    log(1 + content-free length in words)."""
    jq = rows["graded_judge_q"].to_numpy(float)
    jb = rows["graded_judge"].to_numpy(float)
    ln = rows["lexical_numbers"].to_numpy(float)
    miss = np.isnan(ln).astype(float)
    answers = rows["answer"].astype(str)
    return np.column_stack([jq, np.where(np.isnan(jb), jq, jb), np.where(miss == 1, 0.5, ln),
                            miss, [float(bool(numbers(a))) for a in answers],
                            np.log1p([len(a.split()) for a in answers])])


def logistic_held_out(rows: pd.DataFrame, y: np.ndarray, fold: np.ndarray,
                      ) -> tuple[np.ndarray, list[float]]:
    """Held-out flags of a logistic regression fitted (and thresholded, on its predicted
    support = P(supported)) on the training folds only."""
    from sklearn.linear_model import LogisticRegression

    x = features(rows)
    flags, ts = np.zeros(len(y), dtype=int), []
    for f in np.unique(fold):
        train, test = fold != f, fold == f
        model = LogisticRegression(C=1.0, max_iter=1000).fit(x[train], 1 - y[train])
        t = choose_threshold(model.predict_proba(x[train])[:, 1], y[train])
        flags[test] = flags_at(model.predict_proba(x[test])[:, 1], t)
        ts.append(t)
    return flags, ts


def _metrics(y: np.ndarray, flags: np.ndarray) -> dict[str, float]:
    tp = int(((flags == 1) & (y == 1)).sum())
    return {"accuracy": float((flags == y).mean()), "balanced_accuracy": balanced_accuracy(y, flags),
            "recall_unsupported": tp / max(1, int((y == 1).sum())),
            "precision_unsupported": tp / int(flags.sum()) if flags.sum() else math.nan}


def metrics_ci(y: np.ndarray, flags: np.ndarray, n_boot: int = 2000,
               seed: int = 0) -> dict[str, float]:
    """`_metrics` with 95 % bootstrap CIs over answers (`{m}_ci_low`, `{m}_ci_high`)."""
    out = _metrics(y, flags)
    boots = [_metrics(y[i], flags[i]) for i in resample_index(len(y), n_boot, seed)]
    for m in list(out):
        vals = np.array([b[m] for b in boots], dtype=float)
        vals = vals[~np.isnan(vals)]
        out[f"{m}_ci_low"], out[f"{m}_ci_high"] = (
            (float(np.quantile(vals, 0.025)), float(np.quantile(vals, 0.975)))
            if len(vals) else (math.nan, math.nan))
    return out


def accuracy_gain(y: np.ndarray, flags: np.ndarray, n_boot: int = 2000,
                  seed: int = 0) -> dict[str, float]:
    """Accuracy minus that of calling everything supported, on the same answers, with its
    paired 95 % bootstrap CI (both on each resample of answers)."""
    def gain(i: np.ndarray) -> float:
        return float((flags[i] == y[i]).mean() - (y[i] == 0).mean())

    boots = [gain(i) for i in resample_index(len(y), n_boot, seed)]
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {"accuracy_gain": gain(np.arange(len(y))), "accuracy_gain_ci_low": float(lo),
            "accuracy_gain_ci_high": float(hi)}


def _cost(rows: pd.DataFrame, name: str) -> dict[str, float]:
    """Judge calls, prompt tokens and seconds per answer that `name` costs: each judge part
    is asked only where it may score (the blind judge: checkable answers only)."""
    calls = tokens = seconds = 0.0
    for part in _PARTS[name]:
        asked = rows[part].notna()
        tok, sec = _COST[part]
        calls += float(asked.mean())
        tokens += float(rows[tok].where(asked, 0).fillna(0).mean()) if tok in rows else math.nan
        seconds += float(rows[sec].where(asked, 0).fillna(0).mean()) if sec in rows else math.nan
    return {"llm_calls_per_answer": calls, "prompt_tokens_per_answer": tokens,
            "judge_s_per_answer": seconds}


def decision_table(rows: pd.DataFrame, candidates: Sequence[str] = CANDIDATES, k: int = 5,
                   seed: int = 0, logistic: bool = True) -> pd.DataFrame:
    """One row per candidate (and `logistic`, and "call everything supported"): held-out
    decision metrics with CIs, coverage, the folds' thresholds, the threshold chosen on all
    labelled answers (what a default would use), the accuracy gain over calling everything
    supported (paired CI), and the cost per answer."""
    y = rows["label"].to_numpy(int)
    fold = stratified_folds(y, k, seed)
    runs: list[tuple[str, Callable[[], tuple[np.ndarray, list[float]]], float, float]] = []
    for det in candidates:
        s = rows[det].to_numpy(float)
        runs.append((det, lambda s=s: held_out_flags(s, y, fold), float(np.mean(~np.isnan(s))),
                     choose_threshold(s, y)))
    if logistic:
        runs.append(("logistic", lambda: logistic_held_out(rows, y, fold), 1.0, math.nan))
    out = [{"detector": "call everything supported", "n": len(y), "coverage": 1.0,
            **metrics_ci(y, np.zeros(len(y), dtype=int)), "llm_calls_per_answer": 0.0,
            "prompt_tokens_per_answer": 0.0, "judge_s_per_answer": 0.0}]
    for name, run, coverage, t_all in runs:
        flags, ts = run()
        out.append({"detector": name, "n": len(y), "coverage": coverage,
                    **metrics_ci(y, flags), **accuracy_gain(y, flags),
                    "fold_thresholds": " ".join(f"{t:.3f}" for t in ts),
                    "threshold_all": t_all,
                    **(_cost(rows, name) if name in _PARTS else {})})
    return pd.DataFrame(out)


def winner(table: pd.DataFrame, deployable: Sequence[str] = CANDIDATES) -> str:
    """The deployable detector with the best held-out balanced accuracy (ties: accuracy)."""
    ok = table[table["detector"].isin(deployable)]
    best = ok.sort_values(["balanced_accuracy", "accuracy"], ascending=False, kind="stable")
    return str(best.iloc[0]["detector"])
