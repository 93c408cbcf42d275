"""The hallucination detector and the LLM labeller judged against people: MTRAG's 477
human-rated responses (159 tasks × the reference, Llama-3.1-405B and GPT-4o, each rated 1-4 for
faithfulness by, mostly, three people; `datasets.mtrag.load_mtrag_ratings`).

- **People's label**: a response is *faithful* when a majority of its raters give it ≥ 3
  ("Mostly Yes" or "Yes") on MTRAG's 1-4 scale; for three raters that is a median ≥ 3. A
  two-rater response whose raters fall on either side is a tie and left out of that
  binarisation (counted). `BINARISATIONS` holds the alternatives reported for sensitivity
  (≥ 2: only "No"/"Mostly No" majorities unfaithful; ≥ 4: anything short of a "Yes" majority
  unfaithful; the mean ≥ 2.5). `label` = 1 for an unfaithful (hallucinated) response, as every
  detector table here.
- **Detectors** (`evaluation/support.py`): every no-LLM score on all 477 (free), and the
  configured judge (`SupportConfig().detector`, `graded_judge_q`) on the responses scored
  so far (`scored.jsonl`, resumable; whole tasks in a seeded order stratified by collection, so
  any prefix is a stratified subset: `judge_order`), decided at the configured threshold
  (`SupportConfig().threshold`).
  The judge reads the passages the raters saw and the final user turn as the question.
- **The LLM labeller**: the labels made so far (`experiments/detectors/*/labels-pass*.jsonl`)
  are `llm:claude-helper-session`, an LLM engineering session reading RUBRIC.md; the same
  labeller's labels of the first 60 responses of `order` (seed 0; stratified by responding
  model and collection; `labels-pass1.jsonl`, made without the ratings in view) are compared
  with the people: accuracy, balanced accuracy, Cohen's κ.
- **The ceiling**: the raters' own agreement: Krippendorff's α on the 1-4 scores (interval)
  and on each binarisation (nominal), and Cohen's κ of each pair of raters on the responses
  both rated.
- MTRAG's own LLM judges' scores (`rl_f`: RAGAS faithfulness; `rb_llm`) ride along: another
  LLM's view on the same responses, made by MTRAG's authors.

CIs: 2,000 bootstrap draws of whole tasks (a task's three responses together).

    agentic-rag validate-detectors --mtrag-human 477 --out experiments/detectors/mtrag-human
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentic_rag.datasets.mtrag import RatedResponse, load_mtrag_ratings
from agentic_rag.evaluation.detection import auroc
from agentic_rag.jsonl import append_rows, read_rows
from agentic_rag.llm.calls import map_calls
from agentic_rag.llm.types import ChatModel
from agentic_rag.studies.detectors.scoring import score_answer, with_combined
from agentic_rag.studies.detectors.stats import _group_draws, cohens_kappa

OUT = Path("experiments/detectors/mtrag-human")
PRIMARY = "majority>=3"
BINARISATIONS = ("majority>=3", "majority>=2", "majority>=4", "mean>=2.5")
LABELLER = "llm:claude-helper-session"  # who made the LLM labels so far (RUBRIC.md)


def qid(r: RatedResponse) -> str:
    return f"{r.task_id}|{r.model_id}"


def context_of(r: RatedResponse) -> str:
    """The passages the raters saw, numbered, as the judge reads them."""
    return "\n\n".join(f"[{i}] {d.title}\n{d.text}" if d.title else f"[{i}] {d.text}"
                       for i, d in enumerate(r.passages, 1)) or "(no passages)"


def faithful(votes: Sequence[int], rule: str) -> float:
    """1 faithful, 0 not, NaN a tie, under `rule` (`BINARISATIONS`)."""
    if rule.startswith("mean>="):
        return float(np.mean(votes) >= float(rule.split(">=")[1]))
    cut = int(rule.split(">=")[1])
    yes = sum(v >= cut for v in votes)
    if 2 * yes == len(votes):
        return float("nan")
    return float(2 * yes > len(votes))


def human_rows(ratings: Sequence[RatedResponse] | None = None) -> pd.DataFrame:
    """One row per rated response: ids, question, context, answer, the faithfulness votes and
    each binarisation's `faithful_<rule>`, `label` (1 = unfaithful under `PRIMARY`)."""
    rows = []
    for r in ratings if ratings is not None else load_mtrag_ratings():
        votes = list(r.ratings["faithfulness"].values())
        row: dict[str, Any] = {
            "qid": qid(r), "task_id": r.task_id, "model_id": r.model_id,
            "collection": r.collection, "answerability": r.answerability,
            "question": r.question, "context": context_of(r), "answer": r.response,
            "passages": len(r.passages), "votes": votes, "raters": list(r.ratings["faithfulness"]),
            "mtrag_rl_f": r.system_scores.get("rl_f"), "mtrag_rb_llm": r.system_scores.get("rb_llm")}
        for rule in BINARISATIONS:
            row[f"faithful_{rule}"] = faithful(votes, rule)
        rows.append(row)
    df = pd.DataFrame(rows)
    return df.assign(label=1.0 - df[f"faithful_{PRIMARY}"])


def order(rows: pd.DataFrame, seed: int = 0) -> list[str]:
    """The qids in a seeded order stratified by (responding model, collection): round robin
    over the strata, each shuffled, so the first n are a stratified subset for any n. The
    people's labels play no part in it."""
    rng = np.random.default_rng(seed)
    strata = [list(rng.permutation(g["qid"].to_numpy()))
              for _, g in rows.sort_values("qid").groupby(["model_id", "collection"])]
    out: list[str] = []
    while any(strata):
        for s in strata:
            if s:
                out.append(str(s.pop(0)))
    return out


def judge_order(rows: pd.DataFrame, seed: int = 0) -> list[str]:
    """The judge's order: tasks in a seeded order stratified by collection (round robin over
    the collections, each shuffled), each task's three responses together, so the first n
    responses are about n / 3 whole tasks with every responding model equally often, and the
    judge's calls on one task share its passages as a prompt prefix (the server's prompt cache
    evaluates them once). The people's labels play no part in it."""
    rng = np.random.default_rng(seed)
    tasks = [list(rng.permutation(sorted(g["task_id"].unique())))
             for _, g in rows.sort_values("task_id").groupby("collection")]
    by_task = rows.sort_values(["task_id", "model_id"]).groupby("task_id")["qid"].apply(list)
    out: list[str] = []
    while any(tasks):
        for t in tasks:
            if t:
                out += by_task[t.pop(0)]
    return out


def score_human(chat: ChatModel | None, out: str | Path = OUT, n: int = 477, seed: int = 0,
                judges: Sequence[str] = ("graded_judge_q",), max_concurrency: int = 1,
                log: Callable[..., Any] = print) -> pd.DataFrame:
    """Every no-LLM score on all responses, and `judges` (the configured detector's judge) on
    the first `n` of `judge_order`, in `out/scored.jsonl` (row by row, fsync'd, resumable; a rerun
    asks only what is missing; replies are cached by the chat model)."""
    rows = human_rows()
    by_id = rows.set_index("qid")
    path = Path(out) / "scored.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    done = {r["qid"]: r for r in read_rows(path)} if path.exists() else {}
    ordered = judge_order(rows, seed)
    first = set(ordered[:n])
    todo = [q for q in ordered
            if q not in done or (chat is not None and q in first
                                 and any(done[q].get(j) is None for j in judges))]
    log(f"mtrag-human: {len(done)} scored, {len(todo)} to score → {path}")

    def score(q: str) -> dict[str, Any]:
        r = by_id.loc[q]
        ask = chat if q in first else None
        return {"qid": q, **score_answer(ask, r["context"], r["answer"], r["question"], judges)}

    t0 = time.perf_counter()
    for i, (_, row) in enumerate(map_calls(score, todo, max_concurrency), 1):
        done[row["qid"]] = {**done.get(row["qid"], {}), **row}
        append_rows(path, [done[row["qid"]]])
        if i % 10 == 0:
            log(f"  {i}/{len(todo)} in {time.perf_counter() - t0:.0f} s")
    return scored(out)


def scored(out: str | Path = OUT) -> pd.DataFrame:
    """The human rows with the latest scores of each response and the combined detectors."""
    path = Path(out) / "scored.jsonl"
    rows = human_rows()
    if not path.exists():
        return rows
    s = pd.DataFrame({r["qid"]: r for r in read_rows(path)}.values())
    return with_combined(rows.merge(s.drop(columns=["answer"], errors="ignore"), on="qid",
                                    how="left"))


def llm_labels(out: str | Path = OUT) -> pd.DataFrame:
    """The LLM labeller's labels (`labels-pass1.jsonl`, RUBRIC.md's format; a qid's last
    label counts; unsure rows left out): qid, `llm_label` (1 = unsupported), labeller."""
    path = Path(out) / "labels-pass1.jsonl"
    if not path.exists():
        return pd.DataFrame(columns=["qid", "llm_label", "labeller", "note"])
    last = {r["qid"]: r for r in read_rows(path)}
    df = pd.DataFrame(last.values())
    df = df[df["supported"].notna()]
    return df.assign(llm_label=1 - df["supported"].astype(int))[
        ["qid", "llm_label", "labeller", "note"]]


# --- statistics ----------------------------------------------------------------------------

def balanced_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    """The mean of the recall on each class (NaN with one class)."""
    if len(np.unique(y)) < 2:
        return float("nan")
    return float(np.mean([np.mean(pred[y == c] == c) for c in (0, 1)]))


def _kappa(y: np.ndarray, p: np.ndarray) -> float:
    """Cohen's κ of two 0/1 labellings (the closed form of `stats.cohens_kappa`, fast enough
    for 2,000 bootstrap draws; NaN when chance agreement is 1)."""
    po = float(np.mean(y == p))
    my, mp = float(np.mean(y)), float(np.mean(p))
    pe = my * mp + (1 - my) * (1 - mp)
    return (po - pe) / (1 - pe) if pe < 1 else float("nan")


def _auroc(y: np.ndarray, s: np.ndarray) -> float:
    """AUROC as the Mann-Whitney statistic (ties half; `detection.auroc`'s value, fast)."""
    from scipy.stats import rankdata

    pos = int(y.sum())
    neg = len(y) - pos
    if not pos or not neg:
        return float("nan")
    r = rankdata(s)
    return float((r[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))


def _draws(groups: np.ndarray, n_boot: int = 2000, seed: int = 0) -> list[np.ndarray]:
    return list(_group_draws(groups, n_boot, seed))


def _ci(stat: Callable[[np.ndarray], float], draws: list[np.ndarray]) -> tuple[float, float]:
    boots = [v for idx in draws if (v := stat(idx)) == v]
    if not boots:
        return float("nan"), float("nan")
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return float(lo), float(hi)


def decision_stats(y: np.ndarray, pred: np.ndarray, groups: np.ndarray,
                   score: np.ndarray | None = None, seed: int = 0) -> dict[str, Any]:
    """Accuracy, balanced accuracy, Cohen's κ of 0/1 decisions `pred` against `y` (1 =
    unfaithful), recall and precision on the unfaithful, and, with `score` (1 = surely
    unfaithful), AUROC (`detection.auroc`): each with a 95 % CI from 2,000 draws of whole
    tasks (`stats._group_draws`), the same draws for every statistic."""
    y, pred = y.astype(int), pred.astype(int)
    out: dict[str, Any] = {"n": len(y), "unfaithful": int(y.sum()), "flagged": int(pred.sum())}
    nan = float("nan")
    stats: dict[str, Callable[[np.ndarray], float]] = {
        "accuracy": lambda i: float(np.mean(pred[i] == y[i])),
        "balanced_accuracy": lambda i: balanced_accuracy(y[i], pred[i]),
        "kappa": lambda i: _kappa(y[i], pred[i]),
        "recall_unfaithful": lambda i: float(np.mean(pred[i][y[i] == 1])) if y[i].any() else nan,
        "precision_unfaithful": lambda i: float(np.mean(y[i][pred[i] == 1])) if pred[i].any() else nan}
    draws = _draws(groups, seed=seed)
    every = np.arange(len(y))
    for name, f in stats.items():
        out[name] = f(every)
        out[f"{name}_ci"] = _ci(f, draws)
    out["kappa"] = cohens_kappa(y, pred) if len(np.unique(np.r_[y, pred])) > 1 else nan
    if score is not None:
        out["auroc"] = auroc(y, score)
        out["auroc_ci"] = _ci(lambda i: _auroc(y[i], score[i]), draws)
    return out


def krippendorff_alpha(units: Sequence[Sequence[float]], metric: str = "interval") -> float:
    """Krippendorff's α of several raters' values per unit (units with < 2 values are not
    pairable and drop out); `metric`: interval (squared difference) or nominal."""
    units = [list(u) for u in units if len(u) >= 2]
    d = (lambda a, b: (a - b) ** 2) if metric == "interval" else (lambda a, b: float(a != b))
    pooled = [v for u in units for v in u]
    n = len(pooled)
    observed = sum(sum(d(a, b) for i, a in enumerate(u) for j, b in enumerate(u) if i != j)
                   / (len(u) - 1) for u in units) / n
    values, counts = np.unique(pooled, return_counts=True)
    expected = sum(ca * cb * d(a, b) for a, ca in zip(values, counts)
                   for b, cb in zip(values, counts)) / (n * (n - 1))
    return float(1 - observed / expected) if expected else float("nan")


def rater_agreement(rows: pd.DataFrame) -> dict[str, Any]:
    """The people's own agreement (the ceiling for any detector or labeller): α on the 1-4
    scores and on each binarisation, and Cohen's κ of each pair of raters (binarised at
    `PRIMARY`) over the responses both rated, with their number."""
    out: dict[str, Any] = {"alpha_interval_1to4": krippendorff_alpha(rows["votes"].tolist())}
    for rule in BINARISATIONS:
        if rule.startswith("majority>="):
            cut = int(rule.split(">=")[1])
            out[f"alpha_nominal_{rule.replace('majority', 'vote')}"] = krippendorff_alpha(
                [[int(v >= cut) for v in vs] for vs in rows["votes"]], "nominal")
    cut = int(PRIMARY.split(">=")[1])
    per: dict[str, dict[str, int]] = {}
    for q, raters, votes in zip(rows["qid"], rows["raters"], rows["votes"]):
        for r, v in zip(raters, votes):
            per.setdefault(r, {})[q] = int(v >= cut)
    pairs = []
    names = sorted(per)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = sorted(set(per[a]) & set(per[b]))
            if len(both) >= 20:
                ya, yb = [per[a][q] for q in both], [per[b][q] for q in both]
                pairs.append({"raters": f"{a}-{b}", "n": len(both),
                              "kappa": cohens_kappa(ya, yb),
                              "agreement": float(np.mean(np.equal(ya, yb)))})
    out["pairwise_kappa_vote>=3"] = pairs
    w = np.array([p["n"] for p in pairs], float)
    out["pairwise_kappa_vote>=3_weighted_mean"] = (
        float(np.sum(w * [p["kappa"] for p in pairs]) / w.sum()) if pairs else float("nan"))
    return out


def human_report(out: str | Path = OUT, threshold: float | None = None,
                 detector: str | None = None, seed: int = 0) -> dict[str, Any]:
    """The figures: per binarisation, each detector (at `threshold`, default the configured
    one, for decisions; AUROC on 1 − support) and the LLM labeller against the people, MTRAG's
    own LLM judges, and the raters' agreement."""
    from agentic_rag.config import SupportConfig
    from agentic_rag.evaluation.support import SUPPORT_DETECTORS

    cfg = SupportConfig()
    threshold = cfg.threshold if threshold is None else threshold
    detector = detector or cfg.detector
    rows = scored(out).merge(llm_labels(out), on="qid", how="left")
    report: dict[str, Any] = {
        "responses": len(rows), "tasks": int(rows["task_id"].nunique()),
        "configured_detector": detector, "threshold": threshold,
        "primary_binarisation": PRIMARY,
        "ties_left_out": {r: int(rows[f"faithful_{r}"].isna().sum()) for r in BINARISATIONS},
        "unfaithful": {r: int((rows[f"faithful_{r}"] == 0).sum()) for r in BINARISATIONS},
        "raters": rater_agreement(rows), "by_binarisation": {}}
    for rule in BINARISATIONS:
        part: dict[str, Any] = {}
        base = rows[rows[f"faithful_{rule}"].notna()]
        y_all = 1 - base[f"faithful_{rule}"].to_numpy(int)
        for det in SUPPORT_DETECTORS if rule == PRIMARY else (detector, "lexical"):
            if det not in base:
                continue
            ok = base[base[det].notna()]
            if ok.empty:
                continue
            y = 1 - ok[f"faithful_{rule}"].to_numpy(int)
            s = ok[det].to_numpy(float)
            part[det] = decision_stats(y, (s < threshold).astype(int), ok["task_id"].to_numpy(),
                                       1.0 - s, seed)
            part[det]["threshold"] = threshold
        judged = base[base[detector].notna()] if detector in base else base.iloc[:0]
        if 0 < len(judged) < len(base):  # the free baselines on the judge's subset: like for like
            for col in ("lexical", "mtrag_rl_f"):
                ok = judged[judged[col].notna()]
                y = 1 - ok[f"faithful_{rule}"].to_numpy(int)
                s = ok[col].to_numpy(float)
                cut = 0.5 if col == "mtrag_rl_f" else threshold
                part[f"{col}_on_judged"] = decision_stats(
                    y, (s < cut).astype(int), ok["task_id"].to_numpy(), 1.0 - s, seed)
        for col, name in (("mtrag_rl_f", "mtrag_ragas_faithfulness"), ("mtrag_rb_llm", "mtrag_rb_llm")):
            ok = base[base[col].notna()]
            y = 1 - ok[f"faithful_{rule}"].to_numpy(int)
            s = ok[col].to_numpy(float)
            part[name] = decision_stats(y, (s < 0.5).astype(int), ok["task_id"].to_numpy(),
                                        1.0 - s, seed)
            part[name]["threshold"] = 0.5
        ok = base[base["llm_label"].notna()]
        if not ok.empty:
            y = 1 - ok[f"faithful_{rule}"].to_numpy(int)
            part["llm_labeller"] = decision_stats(y, ok["llm_label"].to_numpy(int),
                                                  ok["task_id"].to_numpy(), None, seed)
            part["llm_labeller"]["labeller"] = sorted(set(ok["labeller"]))
            for j in dict.fromkeys((detector, "lexical", "mtrag_rl_f")):
                both = ok[ok[j].notna()] if j in ok else ok.iloc[:0]
                if both.empty:  # the detectors on the labelled subset: like for like
                    continue
                y2 = 1 - both[f"faithful_{rule}"].to_numpy(int)
                s2 = both[j].to_numpy(float)
                cut = 0.5 if j == "mtrag_rl_f" else threshold
                part[f"{j}_on_labelled"] = decision_stats(
                    y2, (s2 < cut).astype(int), both["task_id"].to_numpy(), 1.0 - s2, seed)
        part["always_faithful"] = {"n": len(y_all), "accuracy": float(np.mean(y_all == 0)),
                                   "balanced_accuracy": 0.5}
        report["by_binarisation"][rule] = part
    return report


def flat_table(report: dict[str, Any]) -> pd.DataFrame:
    """`report` as one row per (binarisation, detector or labeller)."""
    rows = []
    for rule, part in report["by_binarisation"].items():
        for name, st in part.items():
            row = {"binarisation": rule, "who": name}
            for k, v in st.items():
                if isinstance(v, tuple):
                    row[f"{k}_low"], row[f"{k}_high"] = v
                elif not isinstance(v, list):
                    row[k] = v
            rows.append(row)
    return pd.DataFrame(rows)


def write_report(out: str | Path = OUT, **kw: Any) -> dict[str, Any]:
    """`human.json` (the report) and `human.csv` (`flat_table`) in `out`."""
    out = Path(out)
    report = human_report(out, **kw)
    (out / "human.json").write_text(json.dumps(report, indent=1, default=float) + "\n")
    flat_table(report).round(4).to_csv(out / "human.csv", index=False)
    return report


def validate_human(n: int, out: str | Path = OUT, home: str | Path = "experiments/cache",
                   config: str | None = None, no_llm: bool = False,
                   max_concurrency: int | None = None, seed: int = 0,
                   log: Callable[..., Any] = print) -> dict[str, Any]:
    """`agentic-rag validate-detectors --mtrag-human N`: score (the judge on the first `n`,
    on the local server, started or reused, replies cached under `home`), then the report."""
    from agentic_rag.config import RAGConfig

    cfg = RAGConfig()
    if config:
        cfg = cfg.model_copy(update={"llm": RAGConfig.load(config).llm})
    if no_llm:
        score_human(None, out, 0, seed, log=log)
    else:
        from agentic_rag.llm.chat import make_chat_model
        from agentic_rag.llm.server import serve_local

        with serve_local(cfg.llm, home) as srv:
            chat = make_chat_model(cfg.llm, home, base_url=srv and srv.base_url)
            score_human(chat, out, n, seed, max_concurrency=max_concurrency or cfg.llm.slots,
                        log=log)
    report = write_report(out, seed=seed)
    table = flat_table(report)
    cols = [c for c in ("binarisation", "who", "n", "accuracy", "balanced_accuracy", "kappa",
                        "auroc", "auroc_ci_low", "auroc_ci_high") if c in table]
    log(table[cols].round(3).to_string(index=False))
    log(f"raters: α (1-4, interval) {report['raters']['alpha_interval_1to4']:.3f}; mean "
        f"pairwise κ (≥ 3) {report['raters']['pairwise_kappa_vote>=3_weighted_mean']:.3f}")
    return report
