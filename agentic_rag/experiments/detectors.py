"""Validate hallucination detectors on labelled answers: AUROC with a bootstrap CI, on scores.

Set (i) is HaluEval QA: per question, its right answer (label 0) and its hallucinated
answer (label 1), each checked against the question's knowledge paragraph. Every detector
scores every answer (`support.py`: the graded LLM judge, the lexical baseline); the rows go
to a JSONL file one by one (fsync'd), so a killed run resumes where it stopped and a
finished one is re-read, not re-run. Failures (an LLM call that failed after its retries)
are rows with an `error`, counted and never scored. The no-LLM scores (`LEXICAL_SCORES`) are
cheap and pure: every pass recomputes them on the rows already written and rewrites the file
when they changed, so a change to them reaches the tables without re-asking the judge
(`--no-llm` on a finished folder does exactly that).

    agentic-rag validate-detectors --n 200 --out experiments/detectors/halueval-dev

AUROC's CI resamples questions (both answers of a question together), 2,000 draws.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..evaluation.detection import auroc
from ..evaluation.support import (
    JUDGE_VERSIONS,
    JUDGES,
    LEXICAL_SCORES,
    SUPPORT_DETECTORS,
    combine_support,
    detector_inputs,
    graded_support,
)
from ..llm import ChatModel, LLMError, map_calls
from .stats import resample_index

DETECTORS = SUPPORT_DETECTORS  # the table's rows, where their scores are present


def halueval_pairs(n: int, seed: int = 0, split: str = "dev") -> list[dict[str, str]]:
    """`n` seeded HaluEval QA questions of `split` as (context, right, hallucinated) items."""
    from ..datasets import load_dataset

    ds = load_dataset("halueval-qa").split(split).sample(n, seed)
    return [{"qid": q.id, "question": q.text, "context": q.metadata["knowledge"],
             "right": q.answers[0],
             "hallucinated": q.metadata["hallucinated_answer"]} for q in ds.queries]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete rows of a JSONL file; a torn last line (kill -9 mid-write) is cut off
    the file, so rows appended after it stay readable."""
    if not path.exists():
        return []
    raw, good, rows = path.read_bytes(), 0, []
    for line in raw.splitlines(keepends=True):
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            break
        if not line.endswith(b"\n"):
            break
        rows.append(r)
        good += len(line)
    if good != len(raw):
        with path.open("r+b") as f:
            f.truncate(good)
    return rows


def _read_rows(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["qid"], r["label"]): r for r in _read_jsonl(path)}


def lexical_scores(context: str, answer: str) -> dict[str, float]:
    """Every no-LLM primitive score of one answer (`LEXICAL_SCORES`)."""
    return {name: f(context, answer) for name, f in LEXICAL_SCORES.items()}


def refresh_lexical(path: Path, rows: Sequence[dict[str, Any]],
                    context_answer: Callable[[dict[str, Any]], tuple[str, str] | None]) -> int:
    """Recompute the no-LLM scores of `rows` (those `context_answer` gives a (context,
    answer) for), in place; when any changed, rewrite `path` with every row of it (written
    to a temporary file, then renamed). Returns how many rows changed."""
    changed = 0
    for r in rows:
        ca = context_answer(r)
        if ca is None:
            continue
        new = lexical_scores(*ca)
        if any(r.get(k) != v for k, v in new.items()):
            r.update(new)
            changed += 1
    if changed:
        _rewrite(path, rows)
    return changed


def _rewrite(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Replace `path` by `rows` (written to a temporary file, fsync'd, then renamed)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def with_combined(rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` plus a column per combined detector (`mean`, ...) whose scores are all there
    (`combine_support`; a failed judge call gives NaN, counted as a failure)."""
    rows = rows.copy()
    for det in SUPPORT_DETECTORS:
        inputs = detector_inputs(det)
        if det not in rows and all(i in rows for i in inputs):
            rows[det] = combine_support(det, {i: rows[i].astype(float) for i in inputs})
    return rows


def _judge_fields(name: str) -> tuple[str, str]:
    """A judge's row fields: its version and the prefix of its cost fields."""
    prefix = "judge" if name == "graded_judge" else name.replace("graded_", "")
    return f"{prefix}_version", prefix


def missing_judges(row: dict[str, Any] | None, question: str | None) -> list[str]:
    """The LLM judges (`JUDGES`) whose score `row` lacks (all for no row); the question-aware
    ones only when there is a question."""
    return [j for j, needs_q in JUDGES.items()
            if (question or not needs_q) and (row is None or j not in row)]


def score_answer(chat: ChatModel | None, context: str, answer: str, question: str | None = None,
                 judges: Sequence[str] = tuple(JUDGES)) -> dict[str, Any]:
    """Every no-LLM score of one answer, and each of `judges` when `chat` (the `_q` judge
    only with `question`); each judge is asked directly, as its reply's token counts, time and
    version go in the row too. A failed call: the judge's score None and an `error`."""
    out: dict[str, Any] = lexical_scores(context, answer)
    if chat is None:
        return out
    for name in judges:
        if JUDGES[name] and not question:
            continue
        version, prefix = _judge_fields(name)
        t0 = time.perf_counter()
        out[version] = JUDGE_VERSIONS[name]
        try:
            p, reply = graded_support(chat, context, answer, question if JUDGES[name] else None)
            out.update({name: p, f"{prefix}_prompt_tokens": reply.prompt_tokens,
                        f"{prefix}_cached": reply.cached})
        except LLMError as exc:
            out.update({name: None, "error": f"{exc.kind}: {exc}"})
        out[f"{prefix}_s"] = round(time.perf_counter() - t0, 3)
    return out


def run_validation(chat: ChatModel | None, items: Sequence[dict[str, str]], out: str | Path,
                   log: Callable[..., Any] = print, max_calls: int | None = None,
                   max_concurrency: int = 1) -> pd.DataFrame:
    """Score the right and the hallucinated answer of each item into `out/rows.jsonl`
    (resuming); returns every row. `max_calls` stops cleanly after that many new answers;
    up to `max_concurrency` judge calls run at once, rows are written in the same order."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "rows.jsonl"
    done = _read_rows(path)
    contexts = {it["qid"]: it["context"] for it in items}
    if n := refresh_lexical(path, _read_jsonl(path), lambda r: (
            (contexts[r["qid"]], r["answer"]) if r["qid"] in contexts else None)):
        log(f"detectors: no-LLM scores recomputed on {n} answers → {path}")
        done = _read_rows(path)
    todo = [(it, label) for it in items for label in (0, 1)
            if (it["qid"], label) not in done
            or (chat is not None
                and missing_judges(done[(it["qid"], label)], it.get("question")))]
    if max_calls is not None:
        todo = todo[:max_calls]
    log(f"detectors: {len(done)} answers scored, {len(todo)} to score → {path}")
    t0 = time.perf_counter()

    def score(task: tuple[dict[str, str], int]) -> dict[str, Any]:
        # a row scored before has only its missing judges asked; the new row replaces it
        it, label = task
        answer = it["hallucinated" if label else "right"]
        old = done.get((it["qid"], label), {})
        return {**old, "qid": it["qid"], "label": label, "answer": answer,
                **score_answer(chat, it["context"], answer, it.get("question"),
                               missing_judges(old or None, it.get("question")))}

    with path.open("a", encoding="utf-8") as f:
        for i, row in ((n + 1, r) for n, r in map_calls(score, todo, max_concurrency)):
            it, label = todo[i - 1]
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())
            done[(it["qid"], label)] = row
            if i % 20 == 0 or i == len(todo):
                rate = i / (time.perf_counter() - t0)
                log(f"  {i}/{len(todo)} answers, {rate * 3600:.0f}/h, ETA "
                    f"{(len(todo) - i) / rate / 60:.1f} min")
    if todo and len(_read_jsonl(path)) > len(done):  # replaced rows: one row per answer again
        _rewrite(path, list(done.values()))
    wanted = {(it["qid"], label) for it in items for label in (0, 1)}
    return pd.DataFrame([r for k, r in done.items() if k in wanted])


def _group_draws(groups: np.ndarray, n_boot: int, seed: int):
    """Bootstrap draws of row positions that resample whole groups (questions)."""
    uniq, inv = np.unique(groups, return_inverse=True)
    members = [np.flatnonzero(inv == g) for g in range(len(uniq))]
    for draw in resample_index(len(uniq), n_boot, seed):
        yield np.concatenate([members[g] for g in draw])


def auroc_ci(labels: np.ndarray, scores: np.ndarray, groups: np.ndarray, n_boot: int = 2000,
             seed: int = 0) -> tuple[float, float, float]:
    """AUROC and its 95 % CI, resampling whole groups (questions)."""
    point = auroc(labels, scores)
    boots = [a for idx in _group_draws(groups, n_boot, seed)
             if (a := auroc(labels[idx], scores[idx])) == a]
    lo, hi = (np.quantile(boots, [0.025, 0.975]) if boots else (float("nan"),) * 2)
    return point, float(lo), float(hi)


def auroc_diff_ci(labels: np.ndarray, a: np.ndarray, b: np.ndarray, groups: np.ndarray,
                  n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """AUROC(a) − AUROC(b) on the same answers and its 95 % CI: paired, both detectors
    scored on each resample of whole groups (questions)."""
    point = auroc(labels, a) - auroc(labels, b)
    boots = [d for idx in _group_draws(groups, n_boot, seed)
             if (d := auroc(labels[idx], a[idx]) - auroc(labels[idx], b[idx])) == d]
    lo, hi = (np.quantile(boots, [0.025, 0.975]) if boots else (float("nan"),) * 2)
    return point, float(lo), float(hi)


# Each question-aware detector against its question-blind twin.
PAIRED = (("graded_judge_q", "graded_judge"), ("mean_numbers_q", "mean_numbers"))


def paired_table(rows: pd.DataFrame, pairs: Sequence[tuple[str, str]] = PAIRED) -> pd.DataFrame:
    """Per (detector, baseline) pair with both scores present: AUROC difference on the
    answers both scored, with its paired CI."""
    out = []
    for det, base in pairs:
        if det not in rows or base not in rows:
            continue
        ok = rows[rows[det].notna() & rows[base].notna()]
        y = ok["label"].to_numpy(int)
        d, lo, hi = auroc_diff_ci(y, 1.0 - ok[det].to_numpy(float),
                                  1.0 - ok[base].to_numpy(float), ok["qid"].to_numpy())
        out.append({"detector": det, "baseline": base, "n": len(ok), "auroc_diff": d,
                    "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(out)


def detector_table(rows: pd.DataFrame, threshold: float = 0.5,
                   detectors: Sequence[str] = DETECTORS) -> pd.DataFrame:
    """Per detector: n answers scored, failures, AUROC of the hallucination score (1 −
    support) with its CI, and accuracy when "hallucinated" means support < `threshold`."""
    out = []
    for det in detectors:
        if det not in rows:
            continue
        ok = rows[rows[det].notna()]
        y = ok["label"].to_numpy(int)
        s = 1.0 - ok[det].to_numpy(float)
        a, lo, hi = auroc_ci(y, s, ok["qid"].to_numpy())
        out.append({"detector": det, "n": len(ok), "failures": int(rows[det].isna().sum()),
                    "auroc": a, "auroc_ci_low": lo, "auroc_ci_high": hi,
                    "accuracy": float(((s > 1 - threshold).astype(int) == y).mean()),
                    "threshold": threshold})
    return pd.DataFrame(out)


def own_answers(chat: ChatModel, out: str | Path, n: int = 150, seed: int = 0,
                cache_dir: str | Path = "experiments/cache", log: Callable[..., Any] = print,
                max_calls: int | None = None) -> pd.DataFrame:
    """Set (ii): the local model's own answers in the (b)/(c) protocols' shared arm (HaluEval
    test, the claims' sample of 200 over 2,000 paragraphs, hybrid static retrieval, k = 10,
    default context), the first `n` questions. Each row keeps the question, reference, the
    answer and the judge's view of the served chunks (what a labeller reads), in
    `out/answers.jsonl` (resumable, committed so labels and detectors can be rerun anywhere)."""
    from ..config import RAGConfig
    from ..datasets import load_dataset
    from ..evaluation.llm_judge import ANSWER_PROMPT, generate_answer
    from ..pipeline import Pipeline
    from .evaluate import judge_view
    from .execute import open_index

    ds = load_dataset("halueval-qa").split("test").sample(200, seed, 2000)
    cfg = RAGConfig().with_overrides({"fusion.retrievers": ["dense", "bm25"],
                                      "gate.mode": "static"})
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "answers.jsonl"
    done = {r["qid"]: r for r in _read_jsonl(path)}
    todo = [q for q in ds.queries[:n] if q.id not in done][:max_calls]
    log(f"own answers: {len(done)} done, {len(todo)} to answer → {path}")
    if todo:
        first, index = open_index(cfg, ds, cache_dir, log=log)
        pipe = Pipeline(first, index=index)
        with path.open("a", encoding="utf-8") as f:
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
                f.write(json.dumps(row) + "\n")
                f.flush()
                os.fsync(f.fileno())
                done[q.id] = row
    return pd.DataFrame([done[q.id] for q in ds.queries[:n] if q.id in done])


def score_own(chat: ChatModel | None, out: str | Path, log: Callable[..., Any] = print,
              max_concurrency: int = 1) -> pd.DataFrame:
    """Every detector on every own answer of `out/answers.jsonl` (the context the judge
    reads, the answer) into `out/scored.jsonl` (resumable, same order at any concurrency)."""
    out = Path(out)
    answers = [r for r in _read_jsonl(out / "answers.jsonl") if r.get("answer") is not None]
    path = out / "scored.jsonl"
    by_qid = {r["qid"]: r for r in answers}
    if n := refresh_lexical(path, _read_jsonl(path), lambda r: (
            (by_qid[r["qid"]]["context"], by_qid[r["qid"]]["answer"]) if r["qid"] in by_qid
            else None)):
        log(f"own answers: no-LLM scores recomputed on {n} answers → {path}")
    done = {r["qid"]: r for r in _read_jsonl(path)}  # a later row of a qid replaces it
    todo = [r for r in answers if r["qid"] not in done
            or (chat is not None and missing_judges(done[r["qid"]], r.get("question")))]
    log(f"own answers: {len(done)} scored, {len(todo)} to score → {path}")

    def score(r: dict[str, Any]) -> dict[str, Any]:
        old = done.get(r["qid"], {})
        q = r.get("question")
        return {**old, "qid": r["qid"], **score_answer(chat, r["context"], r["answer"], q,
                                                        missing_judges(old or None, q))}

    with path.open("a", encoding="utf-8") as f:
        for _, row in map_calls(score, todo, max_concurrency):
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())
            done[row["qid"]] = row
    if todo and len(_read_jsonl(path)) > len(done):  # replaced rows: one row per answer again
        _rewrite(path, [done[r["qid"]] for r in answers if r["qid"] in done])
    return pd.DataFrame([done[r["qid"]] for r in answers if r["qid"] in done])


def read_labels(out: str | Path, labelling_pass: int = 1) -> pd.DataFrame:
    """The hand labels of one pass (`labels-pass<N>.jsonl`: qid, supported 1/0, note,
    labeller), with `label` = 1 for an unsupported (hallucinated) answer."""
    path = Path(out) / f"labels-pass{labelling_pass}.jsonl"
    rows = pd.DataFrame(_read_jsonl(path))
    if rows.empty:
        raise FileNotFoundError(f"{path}: no labels")
    bad = rows[~rows["supported"].isin([0, 1])]
    if not bad.empty:
        raise ValueError(f"{path}: 'supported' must be 0 or 1, got {bad['supported'].tolist()[:5]} "
                         f"(qids {bad['qid'].tolist()[:5]})")
    return rows.assign(label=1 - rows["supported"].astype(int))


def cohens_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Cohen's κ of two labellings of the same items (sklearn)."""
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(list(a), list(b)))


def own_rows(out: str | Path) -> pd.DataFrame:
    """Set (ii)'s scored answers (the latest row of each) with the first pass's `label` and a
    column per combined detector."""
    out = Path(out)
    scored = pd.DataFrame({r["qid"]: r for r in _read_jsonl(out / "scored.jsonl")}.values())
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
                            "unsupported": int(first["label"].sum())}
    if (out / "labels-pass2.jsonl").exists():
        both = first.merge(read_labels(out, 2), on="qid", suffixes=("_1", "_2"))
        info.update(double_labelled=len(both),
                    kappa=cohens_kappa(both["supported_1"], both["supported_2"]),
                    agreement=float((both["supported_1"] == both["supported_2"]).mean()))
    return table, info


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> None:
    """`agentic-rag validate-detectors --n 200 --out DIR [--no-llm]`: HaluEval pairs."""
    import argparse

    from ..config import RAGConfig
    from ..llm import make_chat_model
    from ..server import serve_local

    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="HaluEval questions (2 answers each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--out", default="experiments/detectors/halueval-dev")
    ap.add_argument("--home", default="experiments/cache", help="reply cache and server logs")
    ap.add_argument("--config", default=None, metavar="YAML",
                    help="a config file whose llm section is used (llm.base_url / llm.endpoints: "
                         "the calls go there and no local server is started)")
    ap.add_argument("--no-llm", action="store_true", help="lexical baseline only")
    ap.add_argument("--max-llm-calls", type=int, default=None)
    ap.add_argument("--max-concurrency", type=int, default=None,
                    help="judge calls in flight (default: llm.max_concurrency per endpoint)")
    ap.add_argument("--own-answers", type=int, default=0, metavar="N",
                    help="set (ii) instead: the local model's own answers to the first N "
                         "HaluEval test questions of the (b)/(c) protocols' hybrid arm, then "
                         "every detector on them, then the table against the hand labels "
                         "(labels-pass1.jsonl, labels-pass2.jsonl in --out) when present")
    ap.add_argument("--ragas", type=int, default=0, metavar="N",
                    help="with --own-answers: also ragas Faithfulness on a balanced, seeded "
                         "subsample of N labelled answers (slow: minutes per answer), its AUROC "
                         "and cost beside the other detectors' on the same answers → ragas.json")
    ap.add_argument("--answers-only", action="store_true",
                    help="with --own-answers: only generate the answers (for labelling)")
    args = ap.parse_args(argv)
    cfg = RAGConfig()
    if args.config:
        try:
            cfg = cfg.model_copy(update={"llm": RAGConfig.load(args.config).llm})
        except ValueError as exc:  # a ConfigError, naming the file and field
            ap.exit(2, f"{exc}\n")
    conc = args.max_concurrency or cfg.llm.slots
    if args.own_answers:
        _own_main(args, cfg, conc)
        return
    items = halueval_pairs(args.n, args.seed, args.split)
    if args.no_llm:
        rows = run_validation(None, items, args.out, max_calls=args.max_llm_calls)
    else:
        with serve_local(cfg.llm, args.home) as srv:
            chat = make_chat_model(cfg.llm, args.home, base_url=srv and srv.base_url)
            rows = run_validation(chat, items, args.out, max_calls=args.max_llm_calls,
                                  max_concurrency=conc)
    table = detector_table(with_combined(rows))
    table.to_csv(Path(args.out) / "detectors.csv", index=False)
    print(table.to_string(index=False))
    _write_paired(with_combined(rows), Path(args.out))


def _write_paired(rows: pd.DataFrame, out: Path) -> None:
    """`paired.csv`: each question-aware detector against its question-blind twin."""
    paired = paired_table(rows)
    if not paired.empty:
        paired.to_csv(out / "paired.csv", index=False)
        print(paired.to_string(index=False))


def _own_main(args: Any, cfg: Any, conc: int) -> None:
    from ..llm import make_chat_model
    from ..server import serve_local

    with serve_local(cfg.llm, args.home) as srv:
        chat = make_chat_model(cfg.llm, args.home, base_url=srv and srv.base_url)
        own_answers(chat, args.out, args.own_answers, args.seed, args.home,
                    max_calls=args.max_llm_calls)
        if not args.answers_only:
            score_own(None if args.no_llm else chat, args.out, max_concurrency=conc)
        if args.ragas and not args.no_llm:
            from .detectors_ragas import score_ragas

            score_ragas(cfg.llm, args.out, args.ragas, args.seed)
    if not args.answers_only and (Path(args.out) / "labels-pass1.jsonl").exists():
        table, info = own_table(args.out)
        table.to_csv(Path(args.out) / "detectors.csv", index=False)
        (Path(args.out) / "labelling.json").write_text(json.dumps(info, indent=2))
        print(table.to_string(index=False))
        print(info)
        _write_paired(own_rows(args.out), Path(args.out))
    if args.ragas and (Path(args.out) / "ragas.jsonl").exists():
        from .detectors_ragas import ragas_summary

        summary = ragas_summary(args.out)
        (Path(args.out) / "ragas.json").write_text(json.dumps(summary, indent=2))
        print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
