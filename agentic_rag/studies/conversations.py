"""Conversation retrieval evaluation on MTRAG-UN: each task's final-turn search query built
by each query mode from the conversation's real history, scored by nDCG@10 / recall@5 over its
collection's pooled passages with paired CIs vs the last turn alone (chosen on dev, reported
on test), and the gate's retrieval iterations per session (gated vs always_expand / static).

Query modes (`MODES`): `last_turn` (the final user turn alone), `carry` and `llm_rewrite` (the
library's `ConversationQueryBuilder`, fed the dataset's user turns and the agent turns as
written, as `retrieve.query.conversation_queries` replays a transcript), `conversation` (every
user turn, one a line: a baseline of MTRAG's paper) and `rewrite` (a person's standalone rewrite,
MTRAG's, on the 15 of 507 tasks that join one: the ceiling, on 15 tasks only).

The corpus of a collection is the pooled reference passages of its tasks (clapnq 312, ibmcloud
248, fiqa 157, govt 435): other tasks' gold passages are the only distractors, so every figure
here is easier than MTRAG's own setting and not comparable with its published nDCG.

Statistics: one task per conversation in MTRAG-UN, so resampling tasks resamples whole
conversations (MEASURE.md). A failed LLM rewrite is a failure row (no score), never carry's.

    from agentic_rag.studies.conversations import run_conversation_eval
    run_dir = run_conversation_eval(modes=("last_turn", "carry", "conversation", "rewrite"))
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentic_rag.config import RAGConfig
from agentic_rag.config_agent import SessionConfig
from agentic_rag.datasets.mtrag import Mtrag, MtragTask, load_mtrag
from agentic_rag.evaluation.retrieval import doc_run, ir_metrics
from agentic_rag.experiments.plan import open_index
from agentic_rag.experiments.runfolder import mark_complete, new_run_dir, write_meta
from agentic_rag.experiments.stats import bootstrap_ci, paired_bootstrap
from agentic_rag.jsonl import append_rows, read_rows
from agentic_rag.llm.types import ChatModel
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.retrieve.query import conversation_queries

MODES = ("last_turn", "carry", "conversation", "rewrite", "llm_rewrite")
HISTORY_MODES = ("carry", "conversation", "llm_rewrite")  # the candidates chosen on dev
METRICS = ("ndcg@10", "recall@5")
GATE_ARMS = ("static", "always_expand", "gated")
K = 10  # hits asked for and scored, the same for every mode (equal budget)
CORPUS_NOTE = ("corpus = each collection's pooled reference passages (clapnq 312, ibmcloud 248, "
               "fiqa 157, govt 435), not MTRAG's full collections")


class ConversationEvalError(ValueError):
    """Bad input to the conversation evaluation (an unknown mode, split or collection)."""


def transcript(task: MtragTask) -> tuple[list[str], list[str]]:
    """The task's user messages (the final turn last) and, for each earlier one, the agent's
    reply as written (`MtragTask.transcript`)."""
    return task.transcript()


def final_query(task: MtragTask, mode: str, chat: ChatModel | None = None,
                session: SessionConfig | None = None) -> str | None:
    """The final turn's search query under `mode` (module doc); None: the task has no human
    rewrite. `llm_rewrite` needs `chat` and raises `LLMError` when its call fails (the
    builder's own fallback to carry is not taken here: a failure is not a score)."""
    if mode in ("last_turn", "conversation", "rewrite"):
        return task.query(mode)  # type: ignore[arg-type]
    if mode not in ("carry", "llm_rewrite"):
        raise ConversationEvalError(f"query mode {mode!r}: choose from {MODES}")
    users, answers = transcript(task)
    cfg = (session or SessionConfig()).model_copy(update={"query_mode": mode})
    if mode == "llm_rewrite":
        from agentic_rag.retrieve.query import ConversationQueryBuilder, ConversationState
        state = ConversationState(messages=users[:-1], answers=answers,
                                  titles=[""] * len(answers), clarifying=[False] * len(answers))
        b = ConversationQueryBuilder(cfg, chat)
        if not state.messages:
            return users[-1]
        return b.rewrite(" ".join(users[-1].split()), state)
    return conversation_queries(users, answers, cfg)[-1].query


def _tasks(m: Mtrag, split: str, collections: Sequence[str] | None, qrels_only: bool
           ) -> list[MtragTask]:
    if split not in ("dev", "test", "all"):
        raise ConversationEvalError(f"split {split!r}: dev, test or all")
    for c in collections or ():
        if c not in m.corpus:
            raise ConversationEvalError(f"collection {c!r}: one of {sorted(m.corpus)}")
    return [t for t in m.split(split).tasks  # type: ignore[arg-type]
            if (not collections or t.collection in collections)
            and (not qrels_only or t.id in m.qrels)]


def pipelines(m: Mtrag, cfg: RAGConfig, cache_dir: str | Path, collections: Iterable[str],
              log: Callable[[str], Any] = print) -> dict[str, Pipeline]:
    """One pipeline per collection over its pooled passages (the shared index cache)."""
    out = {}
    for c in collections:
        ccfg, index = open_index(cfg, m.collection(c).dataset("last_turn", False), cache_dir,
                                 log=log)
        out[c] = Pipeline(ccfg, index=index)
    return out


def score(pipe: Pipeline, qrels: dict[str, int], query: str, task_id: str) -> dict[str, Any]:
    """One search of `query` (k = K, the pipeline's gate) scored against `qrels`."""
    t0 = time.perf_counter()
    _, result = pipe.retrieve(query, k=K)
    hits = result.hits[:K]
    out: dict[str, Any] = {"iterations": result.iterations, "stop_reason": result.stop_reason,
                           "latency_ms": round(1000 * (time.perf_counter() - t0), 1),
                           "top": [h.chunk.doc_id for h in hits[:3]]}
    if qrels:
        out.update(ir_metrics({task_id: qrels}, {task_id: doc_run(hits)})[task_id])
    return out


def _key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["task"], row["mode"], row.get("gate", "")


def retrieval_rows(m: Mtrag, tasks: Sequence[MtragTask], modes: Sequence[str],
                   pipes: dict[str, Pipeline], rows_path: Path, chat: ChatModel | None = None,
                   gates: Sequence[str] = ("",), retries: int = 2,
                   log: Callable[[str], Any] = print) -> list[dict[str, Any]]:
    """Rows (task × mode × gate arm) appended to `rows_path` as they finish; a rerun skips the
    rows already there and retries the failed ones (resumable; `latest`). `gates` "": the
    pipelines' own gate; else `gate.mode`."""
    for mode in modes:
        if mode not in MODES:
            raise ConversationEvalError(f"query mode {mode!r}: choose from {MODES}")
    done = {_key(r) for r in latest(read_rows(rows_path)) if not r.get("failed")}
    gated = {g: {c: (p if not g else Pipeline(p.config.with_overrides({"gate.mode": g}),
                                              index=p.index)) for c, p in pipes.items()}
             for g in gates}
    n_new = 0
    for i, t in enumerate(tasks):
        for mode in modes:
            if all((t.id, mode, g) in done for g in gates):
                continue
            base = {"task": t.id, "conversation": t.conversation_id, "collection": t.collection,
                    "split": t.split, "multi_turn": t.multi_turn, "answerability": t.answerability,
                    "turn": t.turn, "has_qrels": t.id in m.qrels, "mode": mode}
            query, error = None, None
            for _attempt in range(retries + 1):
                try:
                    query = final_query(t, mode, chat)
                    break
                except Exception as exc:  # noqa: BLE001 - an LLM call: recorded, not scored
                    error = f"{type(exc).__name__}: {exc}"[:300]
            if query is None and error is None:
                continue  # no human rewrite for this task
            out = []
            for g in gates:
                if (t.id, mode, g) in done:
                    continue
                row = {**base, "gate": g, "query": query}
                if query is None:
                    row.update(failed=True, error=error)
                else:
                    row.update(failed=False, **score(gated[g][t.collection],
                                                     m.qrels.get(t.id, {}), query, t.id))
                out.append(row)
            append_rows(rows_path, out)
            n_new += len(out)
        if (i + 1) % 50 == 0:
            log(f"{i + 1}/{len(tasks)} tasks ({n_new} new rows)")
    return latest(read_rows(rows_path))


def latest(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last row of each (task, mode, gate) key: a failed row a rerun retried is replaced
    by the retry's (a failure is retried on every rerun, and counted only if it fails again)."""
    out = {_key(r): r for r in rows}
    return list(out.values())


def _group_masks(df: pd.DataFrame) -> dict[str, pd.Series]:
    out = {"all": pd.Series(True, index=df.index),
           "Follow-up": df["multi_turn"] == "Follow-up"}
    for c in sorted(df["collection"].unique()):
        out[c] = df["collection"] == c
    return out


def summarize(rows: Sequence[dict[str, Any]], base: str = "last_turn",
              metrics: Sequence[str] = METRICS, gate: str = "") -> pd.DataFrame:
    """One row per (split, group, mode): n, each metric's mean with its bootstrap CI and the
    paired difference vs `base` on the same tasks (paired bootstrap over tasks = conversations),
    failures counted apart. Groups: all, Follow-up, each collection. `rewrite` (15 tasks)
    is paired with `base` on its own tasks only."""
    df = pd.DataFrame([r for r in rows if r.get("gate", "") == gate and r.get("has_qrels")])
    if df.empty:
        return pd.DataFrame()
    out = []
    for split in ("dev", "test"):
        s = df[df["split"] == split]
        if s.empty:
            continue
        for group, mask in _group_masks(s).items():
            g = s[mask]
            ok = g[~g["failed"].astype(bool)]
            for mode in [x for x in MODES if x in set(g["mode"])]:
                mine = ok[ok["mode"] == mode].set_index("task")
                b = ok[ok["mode"] == base].set_index("task")
                common = mine.index.intersection(b.index)
                rec: dict[str, Any] = {"split": split, "group": group, "mode": mode,
                                       "n": len(mine), "failures": int(
                                           (g[g["mode"] == mode]["failed"].astype(bool)).sum())}
                for col in metrics:
                    lo, hi = bootstrap_ci(mine[col].tolist())
                    rec.update({col: mine[col].mean(), f"{col}_ci_low": lo, f"{col}_ci_high": hi})
                    pb = paired_bootstrap(mine.loc[common, col].tolist(),
                                          b.loc[common, col].tolist())
                    rec.update({f"{col}_diff_vs_base": pb["diff"],
                                f"{col}_diff_ci_low": pb["ci_low"],
                                f"{col}_diff_ci_high": pb["ci_high"], "n_paired": pb["n"]})
                out.append(rec)
    return pd.DataFrame(out)


def choose(summary: pd.DataFrame, metric: str = "ndcg@10", group: str = "Follow-up",
           candidates: Sequence[str] = HISTORY_MODES) -> str:
    """The history-aware mode with the best dev `metric` on `group`."""
    dev = summary[(summary["split"] == "dev") & (summary["group"] == group)
                  & summary["mode"].isin(candidates)]
    if dev.empty:
        raise ConversationEvalError(f"no dev rows of {list(candidates)} on {group}")
    return str(dev.sort_values(metric, ascending=False).iloc[0]["mode"])


def ceiling(rows: Sequence[dict[str, Any]], mode: str, metric: str = "ndcg@10"
            ) -> dict[str, Any]:
    """`mode` vs the human rewrite on the tasks that have one (every split): both means, the
    ratio, and the paired difference."""
    df = pd.DataFrame([r for r in rows if r.get("gate", "") == "" and r.get("has_qrels")
                       and not r.get("failed")])
    rw = df[df["mode"] == "rewrite"].set_index("task")
    me = df[df["mode"] == mode].set_index("task")
    common = rw.index.intersection(me.index)
    a, b = me.loc[common, metric], rw.loc[common, metric]
    pb = paired_bootstrap(a.tolist(), b.tolist())
    return {"mode": mode, "n": len(common), "mode_mean": float(a.mean()),
            "rewrite_mean": float(b.mean()),
            "ratio": float(a.mean() / b.mean()) if b.mean() else float("nan"),
            "diff": pb["diff"], "diff_ci_low": pb["ci_low"], "diff_ci_high": pb["ci_high"],
            "splits": {str(k): int(v) for k, v in
                       df[df["mode"] == "rewrite"].set_index("task").loc[common, "split"]
                       .value_counts().items()}}


def gating_summary(rows: Sequence[dict[str, Any]], mode: str = "carry") -> pd.DataFrame:
    """Per (group, arm): sessions, mean retrieval iterations per final turn with CI, and the
    relative change of gated vs each other arm (paired bootstrap over sessions; the CI of the
    difference divided by the baseline arm's mean), nDCG@10 beside it on the tasks with qrels.
    Groups: all and each collection (the 'deployments'). All splits: no choice is made."""
    df = pd.DataFrame([r for r in rows if r.get("gate") and r["mode"] == mode
                       and not r.get("failed")])
    if df.empty:
        return pd.DataFrame()
    out = []
    for group, mask in _group_masks(df).items():
        g = df[mask]
        wide = g.pivot(index="task", columns="gate", values="iterations")
        nd = g[g["has_qrels"]].pivot(index="task", columns="gate", values="ndcg@10")
        for arm in [a for a in GATE_ARMS if a in wide]:
            lo, hi = bootstrap_ci(wide[arm].tolist())
            rec: dict[str, Any] = {"group": group, "arm": arm, "sessions": int(wide[arm].notna().sum()),
                                   "iterations": wide[arm].mean(), "iterations_ci_low": lo,
                                   "iterations_ci_high": hi,
                                   "ndcg@10": nd[arm].mean() if arm in nd else float("nan"),
                                   "n_qrels": int(nd[arm].notna().sum()) if arm in nd else 0}
            if arm != "gated" and "gated" in wide:
                pb = paired_bootstrap(wide["gated"].tolist(), wide[arm].tolist())
                ref = wide[arm].mean()
                rec.update({"gated_rel_vs_arm": pb["diff"] / ref,
                            "gated_rel_ci_low": pb["ci_low"] / ref,
                            "gated_rel_ci_high": pb["ci_high"] / ref})
                if arm in nd and "gated" in nd:
                    q = paired_bootstrap(nd["gated"].tolist(), nd[arm].tolist())
                    rec.update({"gated_ndcg_diff": q["diff"], "gated_ndcg_ci_low": q["ci_low"],
                                "gated_ndcg_ci_high": q["ci_high"]})
            out.append(rec)
    return pd.DataFrame(out)


def run_conversation_eval(modes: Sequence[str] = ("last_turn", "carry", "conversation",
                                                  "rewrite"),
                          split: str = "all", collections: Sequence[str] | None = None,
                          gates: Sequence[str] = (), config: RAGConfig | None = None,
                          runs_dir: str | Path = "experiments/runs",
                          cache_dir: str | Path = "experiments/cache",
                          run_dir: str | Path | None = None, chat: ChatModel | None = None,
                          mtrag: Mtrag | None = None, pipes: dict[str, Pipeline] | None = None,
                          log: Callable[[str], Any] = print) -> Path:
    """The whole study into a run folder (`run_dir` to continue one): `rows.jsonl` (query
    modes on the tasks with qrels, then, with `gates`, the carry query under each gate arm on
    every task), `summary.csv` (paired CIs vs last_turn), `gating.csv`, `chosen.json`
    (the mode chosen on dev and its test figures, the rewrite ceiling), `meta.json`. `pipes`:
    a pipeline per collection built already (tests); default: `pipelines`."""
    cfg = config or RAGConfig()
    m = mtrag or load_mtrag()
    if "llm_rewrite" in modes and chat is None:
        raise ConversationEvalError("mode llm_rewrite needs a chat model")
    out = Path(run_dir) if run_dir else new_run_dir(runs_dir, "conversations")
    out.mkdir(parents=True, exist_ok=True)
    write_meta(out, {"modes": list(modes), "split": split, "gates": list(gates),
                     "collections": list(collections or sorted(m.corpus)), "k": K,
                     "config": json.loads(cfg.model_dump_json()), "corpus": CORPUS_NOTE,
                     "dataset": m.stats()})
    tasks = _tasks(m, split, collections, qrels_only=True)
    pipes = pipes or pipelines(m, cfg, cache_dir, sorted(
        {t.collection for t in _tasks(m, split, collections, False)}), log)
    rows_path = out / "rows.jsonl"
    rows = retrieval_rows(m, tasks, modes, pipes, rows_path, chat, log=log)
    if gates:
        rows = retrieval_rows(m, _tasks(m, split, collections, False), ["carry"], pipes,
                              rows_path, chat, gates=gates, log=log)
    summary = summarize(rows)
    summary.to_csv(out / "summary.csv", index=False, float_format="%.4f")
    chosen: dict[str, Any] = {}
    if not summary.empty and (summary["split"] == "dev").any() and \
            set(HISTORY_MODES) & set(summary["mode"]):
        best = choose(summary)
        test = summary[(summary["split"] == "test") & (summary["mode"] == best)]
        chosen = {"chosen_on": "dev, Follow-up, ndcg@10", "mode": best,
                  "test": test.to_dict(orient="records")}
        if "rewrite" in modes:
            chosen["ceiling"] = ceiling(rows, best)
    (out / "chosen.json").write_text(json.dumps(chosen, indent=1, default=_plain) + "\n")
    if gates:
        gating_summary(rows).to_csv(out / "gating.csv", index=False, float_format="%.4f")
    mark_complete(out, rows=len(rows))
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(type(v).__name__)
