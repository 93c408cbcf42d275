"""The agent evaluation's tables, from a run folder's `rows.jsonl` and `judgements.jsonl`
(written by `run.py`): `summarize` (one row per dataset × split × cell: means with
95 % bootstrap CIs and paired differences vs closed-book, vs the default agent and vs the
gated tool), `compare` (two runs, question by question), `markdown` (the README table) and
`gold_served` (did a served passage hold the gold answer?) and `trajectory` (the trajectory
metrics of `evaluation.trajectory`, declared in `evaluation.metrics`). Every paired
difference is `stats.paired_effect`, the runner's arm-vs-baseline comparison. A run with
`--repeats` is summarised with each question's repeats averaged first (`runs` = `sampled×K`;
a greedy run in the same folder is its own `runs` = `greedy` row); its pass^k, spread and
flips are in `repeats.py`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from agentic_rag.config import AgentConfig
from agentic_rag.evaluation.metrics import metric
from agentic_rag.evaluation.retrieval import span_overlap
from agentic_rag.evaluation.trajectory import NAMES as TRAJECTORY
from agentic_rag.evaluation.trajectory import trajectory_metrics
from agentic_rag.experiments.stats import bootstrap_ci
from agentic_rag.jsonl import read_rows
from agentic_rag.studies.agent_eval import repeats
from agentic_rag.studies.agent_eval.repeats import paired

BASELINE = "closed_book:native"
DEFAULT_CELL = f"{AgentConfig().policy}:{AgentConfig().mode}"
METRICS = ["searched", "searches", "model_searches", "retrieval_iterations", "gold_served",
           "correct", "token_f1",
           "hallucinated",
           "citation_valid", "cites_served", "abstained", "failed", "latency_s",
           "prompt_tokens", "completion_tokens", *(metric(m).name for m in TRAJECTORY),
           "figure_correct", "wrong_figure"]
KEYS = ["dataset", "split", "cell", "qid", "repeat"]


def _datasets(load: Callable | None) -> Callable:
    if load is None:
        from agentic_rag.studies.agent_eval.tasks import dataset as load
    return load


def gold_served(df: pd.DataFrame, load: Callable | None = None) -> pd.Series:
    """1 when a served chunk overlaps a gold span (FAQ: the answer section; overlap by
    `evaluation.retrieval.span_overlap`) or is a gold document (banking: a required
    document); NaN for runs that served nothing. It tells a retrieval miss from a model that
    did not use what it was given. `load`: dataset name → `Dataset` (`tasks.dataset`)."""
    load = _datasets(load)
    out = pd.Series(np.nan, index=df.index)
    for name in df["dataset"].unique():
        ds = load(name)
        for i, r in df[df["dataset"] == name].iterrows():
            served = r["served"] or []
            if not served:
                continue
            spans = ds.spans.get(r["qid"], [])
            relevant = ds.qrels.get(r["qid"], {})
            hit = 0.0
            for cid in served:  # `doc#type@start-end` (chunking.chunk_id)
                doc, _, rest = cid.partition("#")
                start, _, end = rest.rpartition("@")[2].partition("-")
                gold = [(g.start, g.end) for g in spans if g.doc_id == doc]
                if span_overlap([(int(start), int(end))], gold) > 0:
                    hit = 1.0
                if not spans and doc in relevant:
                    hit = 1.0
            out[i] = hit
    return out


def trajectory(df: pd.DataFrame, load: Callable | None = None) -> pd.DataFrame:
    """The trajectory metrics (`evaluation.trajectory.trajectory_metrics`) of every row, against
    its question's gold documents (the dataset's qrels). Rows written before the trajectory
    was recorded: `served_by_search` is known when there was at most one search (else
    `first_search_gold` is NaN), and `llm_turns` is counted as the model's searches, its
    failed actions and the answer."""
    load = _datasets(load)
    gold = {name: load(name).qrels for name in df["dataset"].unique()}
    out = []
    for _, r in df.iterrows():
        by_search = r.get("served_by_search")
        known = isinstance(by_search, list) or r.get("searches", 0) <= 1
        if not isinstance(by_search, list):  # an older row: what all its searches served
            served = r.get("served") if isinstance(r.get("served"), list) else []
            by_search = [served] if served else []
        turns = r.get("llm_turns")
        if turns is None or turns != turns:
            turns = int(r.get("model_searches", 0) or 0) + int(r.get("action_failures", 0) or 0) + 1
        docs = gold[r["dataset"]].get(r["qid"], {})
        queries = r.get("queries") if isinstance(r.get("queries"), list) else []
        m = trajectory_metrics(queries, by_search, docs, turns)
        if not known:  # several searches, one list: the first one's share is not known
            m["first_search_gold"] = None
        out.append(m)
    return pd.DataFrame(out, index=df.index).astype(float)


def judged_rows(run_dir: Path) -> pd.DataFrame:
    """A run's rows with their judge verdicts (NaN where not judged); `repeat` −1 for a
    greedy row, the repeat's number for a sampled one."""
    df = pd.DataFrame(read_rows(run_dir / "rows.jsonl"))
    judged = pd.DataFrame(read_rows(run_dir / "judgements.jsonl"))
    if judged.empty:
        judged = pd.DataFrame(columns=[*KEYS, "correct", "hallucinated", "judge_failures"])
    for frame in (df, judged):
        frame["repeat"] = pd.to_numeric(frame.get("repeat", pd.Series(np.nan, index=frame.index)),
                                        errors="coerce").fillna(-1).astype(int)
    judged = judged[[c for c in judged if c not in ("llm_seed", "temperature")]]
    df = df.merge(judged, on=KEYS, how="left")
    # nothing served (closed_book, or no search): no hallucination verdict (agent_eval.judge)
    df.loc[df["evidence"].fillna("") == "", "hallucinated"] = np.nan
    return df


def measured_rows(run_dir: Path, load: Callable | None = None) -> pd.DataFrame:
    """`judged_rows` with `gold_served` and the trajectory metrics, every METRICS column
    numeric (NaN where a row has none)."""
    df = judged_rows(run_dir)
    df["gold_served"] = gold_served(df) if load is None else gold_served(df, load)
    df = pd.concat([df.drop(columns=[c for c in TRAJECTORY if c in df]),
                    trajectory(df, load)], axis=1)
    for c in METRICS:
        df[c] = pd.to_numeric(df[c], errors="coerce") if c in df else np.nan  # older rows
    return df


def summarize(run_dir: Path, load: Callable | None = None) -> pd.DataFrame:
    """One row per dataset × split × cell (× `runs`: greedy, or the sampled repeats with each
    question's K repeats averaged first; a question without all K is left out), written to
    `run_dir/summary.csv`; a run with repeats also writes `passk.csv` (per question),
    `passk-summary.csv` and `repeats.csv` (`repeats.py`)."""
    df = measured_rows(run_dir, load)
    k = df.loc[df["repeat"] >= 0, "repeat"].nunique()
    out = []
    for runs, rows in (("greedy", df[df["repeat"] < 0]), (f"sampled×{k}", df[df["repeat"] >= 0])):
        if rows.empty:
            continue
        if runs != "greedy":  # average repeats first: questions are the resampled unit,
            # each with every repeat (a run cut short leaves its last question partial)
            rows = rows[rows.groupby([*KEYS[:4]])["repeat"].transform("nunique") == k]
            rows = rows.groupby([*KEYS[:4]], as_index=False).agg(
                {**{m: "mean" for m in METRICS}, "cached_calls": "max", "latency_s": "mean",
                 "judge_failures": "sum"})
        for (d, split), g in rows.groupby(["dataset", "split"]):
            for cell, c in g.groupby("cell"):
                out.append({"dataset": d, "split": split, "cell": cell, "runs": runs,
                            **_cell_summary(c.set_index("qid"), cell, g)})
    summary = pd.DataFrame(out)
    summary.to_csv(run_dir / "summary.csv", index=False)
    if k:
        per_q = repeats.passk(df)
        per_q.to_csv(run_dir / "passk.csv", index=False)
        repeats.passk_table(per_q).to_csv(run_dir / "passk-summary.csv", index=False)
        repeats.spread(df, METRICS).to_csv(run_dir / "repeats.csv", index=False)
    return summary


def _cell_summary(c: pd.DataFrame, cell: str, g: pd.DataFrame) -> dict:
    """One cell's counts, p50 latency, and per metric: mean, CI, and the paired differences
    vs closed-book, vs the default agent (other cells) and vs the gated tool (a cell with a
    `:gate` suffix against the same policy and mode with the default gate)."""
    refs = {"vs_closed": g[g.cell == BASELINE].set_index("qid") if cell != BASELINE else None,
            "vs_default": g[g.cell == DEFAULT_CELL].set_index("qid")
            if cell not in (BASELINE, DEFAULT_CELL) else None,
            "vs_gated": g[g.cell == cell.rsplit(":", 1)[0]].set_index("qid")
            if cell.count(":") == 2 else None}
    s = {"n": len(c), "judged": int(c["correct"].notna().sum()),
         "halluc_judged": int(c["hallucinated"].notna().sum()),
         "judge_failures": int(c["judge_failures"].fillna(0).sum()), **_latency(c)}
    for m in METRICS:
        s[m] = float(c[m].mean())
        lo, hi = bootstrap_ci(c[m].tolist())
        s[f"{m}_ci"] = f"[{lo:.2f}, {hi:.2f}]"
        for name, ref in refs.items():
            shared = c.index.intersection(ref.index) if ref is not None else []
            if len(shared):
                s[f"{m}_{name}"] = paired(c.loc[shared, m].tolist(), ref.loc[shared, m].tolist())
    return s


def compare(before_dir: Path, after_dir: Path, metrics: tuple[str, ...] = (
        "token_f1", "abstained", "searches", "cites_served", "citation_valid", "correct",
        "hallucinated")) -> pd.DataFrame:
    """The same cells on the same questions in two runs (e.g. before / after an agent change,
    both at one commit each: see their meta files): per dataset × cell, each metric's mean
    in both and the paired difference after − before with its paired-bootstrap CI."""
    a, b = judged_rows(before_dir).set_index(KEYS), judged_rows(after_dir).set_index(KEYS)
    shared = a.index.intersection(b.index)
    out = []
    for d, split, cell in sorted({k[:3] for k in shared}):
        rows = [k for k in shared if k[:3] == (d, split, cell)]
        s = {"dataset": d, "split": split, "cell": cell, "n": len(rows)}
        for m in metrics:
            if m not in a or m not in b:
                continue
            x = pd.to_numeric(b.loc[rows, m], errors="coerce")
            y = pd.to_numeric(a.loc[rows, m], errors="coerce")
            s[f"{m}_before"], s[f"{m}_after"] = float(y.mean()), float(x.mean())
            s[f"{m}_diff"] = paired(x.tolist(), y.tolist())
        out.append(s)
    return pd.DataFrame(out)


def _latency(c: pd.DataFrame) -> dict:
    """p50 latency over the rows that made every LLM call (a reply read from the cache takes
    ~0 s); rows written before `cached_calls` was recorded count as made."""
    made = c[c["cached_calls"].fillna(0) == 0] if "cached_calls" in c else c
    return {"latency_p50_s": float(made["latency_s"].median()) if len(made) else np.nan,
            "latency_n": len(made)}


def markdown(summary: pd.DataFrame, command: str) -> str:
    """The README table: one row per dataset × cell, the paired diff vs closed_book."""
    lines = ["| dataset | split | policy:mode | n | searched | searches | retrieval iterations | correct [95% CI] | "
             "Δ correct vs closed-book [95% CI] | token F1 | Δ token F1 [95% CI] | gold passage "
             "served | hallucinated | citation valid | cites a served chunk | abstained | p50 s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in summary.iterrows():
        def f(m: str, r=r) -> str:  # noqa: ANN001
            v = r.get(m)
            return "–" if v is None or v != v else f"{v:.2f}"
        delta = r.get("correct_vs_closed")
        df1 = r.get("token_f1_vs_closed")
        cell = r.cell if r.get("runs", "greedy") == "greedy" else f"{r.cell} ({r.runs})"
        lines.append(f"| {r.dataset} | {r.split} | {cell} | {r.n} | {f('searched')} | "
                     f"{f('searches')} | {f('retrieval_iterations')} | {f('correct')} {r.get('correct_ci', '')} | "
                     f"{delta if isinstance(delta, str) else '–'} | {f('token_f1')} | "
                     f"{df1 if isinstance(df1, str) else '–'} | {f('gold_served')} | "
                     f"{f('hallucinated')} | {f('citation_valid')} | {f('cites_served')} | "
                     f"{f('abstained')} | {f('latency_p50_s')} |")
    return "\n".join([*lines, "", *trajectory_markdown(summary)]) + \
        f"\n\nReproduce: `{command}`\n"


TRAJECTORY_HEAD = {"repeated_queries": "repeated queries", "first_search_gold":
                   "first search served a gold doc", "llm_turns": "LLM turns",
                   "served_doc_precision": "served-doc precision",
                   "served_doc_recall": "served-doc recall"}


def trajectory_markdown(summary: pd.DataFrame) -> list[str]:
    """The trajectory metrics (`evaluation.trajectory`), mean [95% CI] per dataset × cell,
    and each one's paired difference vs closed-book where there is one."""
    present = [m for m in TRAJECTORY_HEAD if m in summary]
    if not present:
        return []
    lines = ["Trajectory (no LLM; `evaluation/trajectory.py`): mean [95% CI]", "",
             "| dataset | split | policy:mode | " + " | ".join(TRAJECTORY_HEAD[m] for m in present)
             + " |", "|---|---|---|" + "---|" * len(present)]
    for _, r in summary.iterrows():
        cell = r.cell if r.get("runs", "greedy") == "greedy" else f"{r.cell} ({r.runs})"
        vals = ["–" if r[m] != r[m] else f"{r[m]:.2f} {r.get(f'{m}_ci', '')}" for m in present]
        lines.append(f"| {r.dataset} | {r.split} | {cell} | " + " | ".join(vals) + " |")
    return lines
