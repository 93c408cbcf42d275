"""Scoring answers with every support detector, resumably: `score_answer` (one answer: the judges
and the LLM-free scores), `run_validation` (a labelled set into `rows.jsonl`, resuming), and the
combined detectors (`with_combined`)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.evaluation.support import (
    JUDGE_VERSIONS,
    JUDGES,
    LEXICAL_SCORES,
    SUPPORT_DETECTORS,
    blind_parts_undefined,
    checkable,
    combine_support,
    detector_inputs,
    graded_support,
)
from agentic_rag.jsonl import append_rows, read_rows
from agentic_rag.llm.calls import map_calls
from agentic_rag.llm.types import ChatModel, LLMError


def _read_rows(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["qid"], r["label"]): r for r in read_rows(path)}


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
        if any(not _same(r.get(k), v) for k, v in new.items()):
            r.update(new)
            changed += 1
    if changed:
        _rewrite(path, rows)
    return changed


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN (an undefined score) equal to NaN."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)


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
    (`combine_support`; a failed judge call gives NaN, counted as a failure). With an
    `answer` column, the question-blind scores of answers without checkable words are
    undefined first (`blind_parts_undefined`) and `checkable` says which answers have them."""
    rows = rows.copy()
    if "answer" in rows:
        rows = blind_parts_undefined(rows, rows["answer"])
        rows["checkable"] = [checkable(str(a)) for a in rows["answer"]]
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
    if n := refresh_lexical(path, read_rows(path), lambda r: (
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

    for i, row in ((n + 1, r) for n, r in map_calls(score, todo, max_concurrency)):
        it, label = todo[i - 1]
        append_rows(path, [row])
        done[(it["qid"], label)] = row
        if i % 20 == 0 or i == len(todo):
            rate = i / (time.perf_counter() - t0)
            log(f"  {i}/{len(todo)} answers, {rate * 3600:.0f}/h, ETA "
                f"{(len(todo) - i) / rate / 60:.1f} min")
    if todo and len(read_rows(path)) > len(done):  # replaced rows: one row per answer again
        _rewrite(path, list(done.values()))
    wanted = {(it["qid"], label) for it in items for label in (0, 1)}
    return pd.DataFrame([r for k, r in done.items() if k in wanted])
