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

AUROC's CI resamples questions (both answers of a question together), 2,000 draws
(`detectors_stats`). Set (ii), the model's own hand-labelled answers, is `detectors_own`;
both share this module's scoring (`score_answer`) and its resumable JSONL rows.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

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
    from .detectors_stats import detector_table

    table = detector_table(with_combined(rows))
    table.to_csv(Path(args.out) / "detectors.csv", index=False)
    print(table.to_string(index=False))
    _write_paired(with_combined(rows), Path(args.out))


def _write_paired(rows: pd.DataFrame, out: Path) -> None:
    """`paired.csv`: each question-aware detector against its question-blind twin."""
    from .detectors_stats import paired_table

    paired = paired_table(rows)
    if not paired.empty:
        paired.to_csv(out / "paired.csv", index=False)
        print(paired.to_string(index=False))


def _own_main(args: Any, cfg: Any, conc: int) -> None:
    from ..llm import make_chat_model
    from ..server import serve_local
    from .detectors_own import own_answers, own_rows, own_table, score_own

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
