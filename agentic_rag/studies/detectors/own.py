"""Set (ii) of the detector validation: the local model's own answers in the (b)/(c)
protocols' shared arm (`own_answers`), every detector on them (`score_own`), and the table
against the labels with the labellers' agreement (`own_table`). The files live in one
folder (`answers.jsonl`, `scored.jsonl`, `labels-pass1.jsonl`, `labels-pass2.jsonl`), written
row by row and resumable as set (i)'s (`detectors`).

    agentic-rag validate-detectors --own-answers 150 --out experiments/detectors/halueval-own
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.jsonl import append_rows, read_rows
from agentic_rag.llm.calls import map_calls
from agentic_rag.llm.types import ChatModel, LLMError
from agentic_rag.studies.detectors.scoring import (
    _rewrite,
    missing_judges,
    refresh_lexical,
    score_answer,
    with_combined,
)
from agentic_rag.studies.detectors.stats import cohens_kappa, detector_table


def own_answers(chat: ChatModel, out: str | Path, n: int = 150, seed: int = 0,
                cache_dir: str | Path = "experiments/cache", log: Callable[..., Any] = print,
                max_calls: int | None = None) -> pd.DataFrame:
    """Set (ii): the local model's own answers in the (b)/(c) protocols' shared arm (HaluEval
    test, the claims' sample of 200 over 2,000 paragraphs, hybrid static retrieval, k = 10,
    default context), the first `n` questions. Each row keeps the question, reference, the
    answer and the judge's view of the served chunks (what a labeller reads), in
    `out/answers.jsonl` (resumable, committed so labels and detectors can be rerun anywhere)."""
    from agentic_rag.config import RAGConfig
    from agentic_rag.datasets.qa import load_dataset
    from agentic_rag.evaluation.llm_judge import ANSWER_PROMPT, generate_answer
    from agentic_rag.experiments.plan import open_index
    from agentic_rag.retrieve.context import judge_view
    from agentic_rag.retrieve.pipeline import Pipeline

    ds = load_dataset("halueval-qa").split("test").sample(200, seed, 2000)
    cfg = RAGConfig().with_overrides({"fusion.retrievers": ["dense", "bm25"],
                                      "gate.mode": "static"})
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "answers.jsonl"
    done = {r["qid"]: r for r in read_rows(path)}
    todo = [q for q in ds.queries[:n] if q.id not in done][:max_calls]
    log(f"own answers: {len(done)} done, {len(todo)} to answer → {path}")
    if todo:
        first, index = open_index(cfg, ds, cache_dir, log=log)
        pipe = Pipeline(first, index=index)
        for q in todo:
            intent, result = pipe.retrieve(q.text, k=10)
            hits = result.hits[:10]
            ctx = pipe.format(hits, intent)
            row = {"qid": q.id, "question": q.text, "reference": q.answers[0],
                   "context": judge_view(hits, ctx.included), "served_tokens": ctx.tokens,
                   "answer_prompt": ANSWER_PROMPT}
            try:
                reply = generate_answer(chat, q.text, ctx.text,  # the labelled layout
                                        layout="instructions-first")
                row.update(answer=reply.content.strip(), cached=reply.cached)
            except LLMError as exc:
                row.update(answer=None, error=f"{exc.kind}: {exc}")
            append_rows(path, [row])
            done[q.id] = row
    return pd.DataFrame([done[q.id] for q in ds.queries[:n] if q.id in done])


def score_own(chat: ChatModel | None, out: str | Path, log: Callable[..., Any] = print,
              max_concurrency: int = 1) -> pd.DataFrame:
    """Every detector on every own answer of `out/answers.jsonl` (the context the judge
    reads, the answer) into `out/scored.jsonl` (resumable, same order at any concurrency)."""
    out = Path(out)
    answers = [r for r in read_rows(out / "answers.jsonl") if r.get("answer") is not None]
    path = out / "scored.jsonl"
    by_qid = {r["qid"]: r for r in answers}
    if n := refresh_lexical(path, read_rows(path), lambda r: (
            (by_qid[r["qid"]]["context"], by_qid[r["qid"]]["answer"]) if r["qid"] in by_qid
            else None)):
        log(f"own answers: no-LLM scores recomputed on {n} answers → {path}")
    done = {r["qid"]: r for r in read_rows(path)}  # a later row of a qid replaces it
    todo = [r for r in answers if r["qid"] not in done
            or (chat is not None and missing_judges(done[r["qid"]], r.get("question")))]
    log(f"own answers: {len(done)} scored, {len(todo)} to score → {path}")

    def score(r: dict[str, Any]) -> dict[str, Any]:
        old = done.get(r["qid"], {})
        q = r.get("question")
        return {**old, "qid": r["qid"], **score_answer(chat, r["context"], r["answer"], q,
                                                        missing_judges(old or None, q))}

    for _, row in map_calls(score, todo, max_concurrency):
        append_rows(path, [row])
        done[row["qid"]] = row
    if todo and len(read_rows(path)) > len(done):  # replaced rows: one row per answer again
        _rewrite(path, [done[r["qid"]] for r in answers if r["qid"] in done])
    return pd.DataFrame([done[r["qid"]] for r in answers if r["qid"] in done])


def read_labels(out: str | Path, labelling_pass: int = 1) -> pd.DataFrame:
    """The labels of one pass (`labels-pass<N>.jsonl`: qid, supported 1/0, note, labeller —
    a person's name or `llm:<model>`), with `label` = 1 for an unsupported (hallucinated)
    answer. Rows with `supported: null` (unsure) are left out."""
    path = Path(out) / f"labels-pass{labelling_pass}.jsonl"
    rows = pd.DataFrame(read_rows(path))
    if rows.empty:
        raise FileNotFoundError(f"{path}: no labels")
    rows = rows[rows["supported"].notna()]  # "unsure" from the labelling view: no label
    bad = rows[~rows["supported"].isin([0, 1])]
    if not bad.empty:
        raise ValueError(f"{path}: 'supported' must be 0 or 1, got {bad['supported'].tolist()[:5]} "
                         f"(qids {bad['qid'].tolist()[:5]})")
    return rows.assign(label=1 - rows["supported"].astype(int))


def labelled_as(labellers: Any) -> str:
    """Who made a set of labels, in the words a report uses: "LLM-labelled (`llm:x`)" for
    `llm:` labellers, "labelled by <name>" for people, both when mixed: an LLM's
    labels are never passed off as a person's."""
    names = sorted({str(x) for x in labellers if isinstance(x, str) and x})
    llm = [n for n in names if n.startswith("llm:")]
    people = [n for n in names if not n.startswith("llm:")]
    parts = ([f"LLM-labelled ({', '.join(f'`{n}`' for n in llm)})"] if llm else []) + \
        ([f"labelled by {', '.join(people)}"] if people else [])
    return "; ".join(parts) or "labeller not recorded"


def labels_description(out: str | Path) -> str:
    """`labelled_as` for the labels of every pass in `out` (empty when there are none)."""
    names: list[str] = []
    for path in sorted(Path(out).glob("labels-pass*.jsonl")):
        names += [r.get("labeller") for r in read_rows(path)]
    return labelled_as(names) if names else ""


def own_rows(out: str | Path) -> pd.DataFrame:
    """Set (ii)'s scored answers (the latest row of each) with their `answer`, the first
    pass's `label` and a column per combined detector."""
    out = Path(out)
    scored = pd.DataFrame({r["qid"]: r for r in read_rows(out / "scored.jsonl")}.values())
    answers = pd.DataFrame(read_rows(out / "answers.jsonl"))[["qid", "answer"]]
    scored = scored.drop(columns=["answer"], errors="ignore").merge(answers, on="qid",
                                                                   how="left")
    return with_combined(scored.merge(read_labels(out, 1)[["qid", "label"]], on="qid",
                                      how="inner"))


def own_table(out: str | Path, threshold: float = 0.5) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Set (ii): detectors against the first pass's labels, plus the labellers' agreement
    (κ and raw agreement over the answers both passes labelled)."""
    out = Path(out)
    first = read_labels(out, 1)
    rows = own_rows(out)
    table = detector_table(rows, threshold)
    info: dict[str, Any] = {"labelled": len(first), "scored_and_labelled": len(rows),
                            "unsupported": int(first["label"].sum()),
                            "labellers": labels_description(out)}
    if (out / "labels-pass2.jsonl").exists():
        both = first.merge(read_labels(out, 2), on="qid", suffixes=("_1", "_2"))
        info.update(double_labelled=len(both),
                    kappa=cohens_kappa(both["supported_1"], both["supported_2"]),
                    agreement=float((both["supported_1"] == both["supported_2"]).mean()))
    return table, info


def arm_answers(run_dir: str | Path, config_id: str, out: str | Path,
                cache_dir: str | Path = "experiments/cache",
                labelled: tuple[str | Path, ...] = (), n: int | None = None,
                carry: bool = False, log: Callable[..., Any] = print) -> pd.DataFrame:
    """One arm of a sweep run (a claims run's baseline or treatment), as a labeller reads it:
    the run's own answers (`rows.jsonl`), with the chunks that arm served rebuilt from the
    run's spec and config (the run's cached index, retrieval at the spec's `k`, the arm's
    context settings) and rendered as the judge reads them, into `out/answers.jsonl` (`arm`
    = the config id, `run` = the folder's name). The rebuilt context must have the token
    count the run recorded, or it is not what the model read: a `ValueError` names the
    question. Answers a folder in `labelled` has labelled already are left out (same
    question id, answer text and context: the arm without boundaries often serves more
    chunks in the same 800 tokens, and a label is about the answer given what was served):
    only what needs a label is written. With `carry`, those are written too, each with a copy
    of its label in `out/labels-pass1.jsonl` (`carried_from` names the folder; the labeller
    stays the original's): the folder then holds every answer of the arm and its labels.
    Resumable: questions in `answers.jsonl` are kept."""
    from agentic_rag.experiments.labels import normalised, read_labels
    from agentic_rag.experiments.plan import load_spec_dataset, open_index
    from agentic_rag.retrieve.context import judge_view
    from agentic_rag.retrieve.pipeline import Pipeline

    run_dir, out = Path(run_dir), Path(out)
    spec, cfg, rows = _run_arm(run_dir, config_id)
    labels = read_labels(labelled) if labelled else {}
    firsts = {str(folder): {r["qid"]: r for r in read_rows(Path(folder) / "labels-pass1.jsonl")}
              for folder in labelled}
    known = {(r["qid"], normalised(r.get("answer"))): (r.get("context"), firsts[str(folder)]
                                                      .get(r["qid"]), str(folder))
             for folder in labelled for r in read_rows(Path(folder) / "answers.jsonl")
             if (r["qid"], normalised(r.get("answer"))) in labels}
    ds = load_spec_dataset(spec)
    queries = [q for q in ds.queries if q.id in rows][:n]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "answers.jsonl"
    done = {r["qid"]: r for r in read_rows(path)}
    todo = [q for q in queries if q.id not in done]
    log(f"{run_dir.name} {config_id}: {len(queries)} answers, {len(done)} written, "
        f"{len(todo)} to look at → {path}")
    if todo:
        first, index = open_index(cfg, ds, cache_dir, log=log)
        pipe = Pipeline(first, index=index)
        for q in todo:
            row = rows[q.id]
            intent, result = pipe.retrieve(q.text, k=spec.k)
            hits = result.hits[:spec.k]
            ctx = pipe.format(hits, intent)
            if ctx.tokens != row.get("context_tokens"):
                raise ValueError(
                    f"{run_dir.name} {config_id} {q.id}: the rebuilt context has "
                    f"{ctx.tokens} tokens, the run served {row.get('context_tokens')}: "
                    "not the context the model read (index or config changed?)")
            view = judge_view(hits, ctx.included)
            context, label, source = known.get((q.id, normalised(row["answer"])),
                                               (None, None, None))
            carried = context == view and label is not None
            if carried and not carry:
                continue  # labelled already: same answer, same served chunks
            rec = {"qid": q.id, "question": q.text, "reference": q.answers[0],
                   "context": view, "served_tokens": ctx.tokens,
                   "answer": row["answer"].strip(), "arm": config_id, "run": run_dir.name,
                   "config": row.get("config")}
            if carried:
                rec["label_from"] = source
                append_rows(out / "labels-pass1.jsonl", [{**label, "carried_from": source}])
            append_rows(path, [rec])
            done[q.id] = rec
    return pd.DataFrame([done[q.id] for q in queries if q.id in done])


def _run_arm(run_dir: Path, config_id: str) -> tuple[Any, Any, dict[str, dict[str, Any]]]:
    """A sweep run's spec, one config of it, and that config's answered rows by question id."""
    import yaml

    from agentic_rag.config import RAGConfig
    from agentic_rag.experiments.spec import SweepSpec

    spec = SweepSpec.model_validate(yaml.safe_load((run_dir / "spec.yaml").read_text()))
    cfg_path = run_dir / "configs" / f"{config_id}.yaml"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{cfg_path}: no such config in run {run_dir.name}")
    cfg = RAGConfig.model_validate(yaml.safe_load(cfg_path.read_text()))
    rows = {r["query_id"]: r for r in read_rows(run_dir / "rows.jsonl")
            if r.get("config_id") == config_id and r.get("answer") is not None}
    return spec, cfg, rows
