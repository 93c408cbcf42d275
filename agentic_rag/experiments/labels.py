"""Labelled answers a sweep's hallucination rate uses (issue 37): prediction-powered inference
over a config's rows whose answers someone labelled.

A label folder (written by `studies.detectors.labelling`, e.g.
`experiments/detectors/halueval-own`) holds `answers.jsonl` (qid, answer, ...) and
`labels-pass1.jsonl` (qid, supported 1 / 0 / null for unsure, labeller). A sweep row is
labelled when its question id and its answer text (whitespace normalised) are a labelled pair:
the same model, prompt and context gave the same answer, so the label is about that row's
answer. A config with at least `MIN_LABELS` labelled rows gets `hallucinated_ppi` with its
95 % CI (`stats.ppi_mean`: the detector's flags on all its rows, corrected by its errors on the
labelled ones, so the interval carries the detector's error) and `hallucinated_labelled`;
its note names the labellers (`llm:<model>` labels stay LLM-made). A config without enough
labelled rows says so."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.experiments.stats import ppi_mean
from agentic_rag.jsonl import read_rows

MIN_LABELS = 10  # fewer labelled rows give a rectifier too noisy to report
FILES = ("answers.jsonl", "labels-pass1.jsonl")


def normalised(answer: Any) -> str:
    return " ".join(str(answer).split())


def _files(folder: str | Path) -> list[Path]:
    paths = [Path(folder) / f for f in FILES]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"hallucination_labels: {folder}: no {', '.join(missing)} (a "
                                "folder written by studies.detectors.labelling.labelling_view)")
    return paths


def read_labels(folders: Sequence[str | Path]) -> dict[tuple[str, str], tuple[float, str]]:
    """(question id, normalised answer) → (1.0 unsupported / 0.0 supported, labeller), from
    every folder's pass-1 labels; an unsure label (`supported: null`) is no label."""
    out: dict[tuple[str, str], tuple[float, str]] = {}
    for folder in folders:
        answers_file, labels_file = _files(folder)
        answers = {r["qid"]: r.get("answer") for r in read_rows(answers_file)}
        for r in read_rows(labels_file):
            answer = answers.get(r["qid"])
            if r.get("supported") is None or answer is None:
                continue
            out[str(r["qid"]), normalised(answer)] = (1.0 - float(r["supported"]),
                                                 str(r.get("labeller") or "unnamed"))
    return out


def fingerprint(folders: Sequence[str | Path]) -> str:
    """The label files' contents, hashed: a cached summary is stale once labels are added."""
    h = hashlib.sha256()
    for folder in folders:
        for path in _files(folder):
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def ppi_columns(rows: pd.DataFrame, labels: dict[tuple[str, str], tuple[float, str]]
                ) -> dict[str, Any]:
    """One config's PPI columns from its rows (`query_id`, `answer`, `hallucinated`; failed
    calls already NaN) and `read_labels`' pairs."""
    judged = rows[rows["hallucinated"].notna() & rows["answer"].notna()]
    keys = zip(judged["query_id"].astype(str), judged["answer"].map(normalised))
    matched = [(float(f), labels[k]) for f, k in zip(judged["hallucinated"], keys) if k in labels]
    out: dict[str, Any] = {"hallucinated_labelled": len(matched)}
    if len(matched) < MIN_LABELS:
        return out
    res = ppi_mean(judged["hallucinated"].astype(float).to_list(), [f for f, _ in matched],
                   [y for _, (y, _) in matched])
    who = ", ".join(sorted({w for _, (_, w) in matched}))
    out.update({"hallucinated_ppi": res["estimate"], "hallucinated_ppi_ci_low": res["ci_low"],
                "hallucinated_ppi_ci_high": res["ci_high"],
                "hallucinated_ci_note": (
                    f"PPI: the detector's flags on {res['n_all']} answers + {len(matched)} "
                    f"labelled ones ({who}; rectifier {res['rectifier']:+.3f}): the "
                    "hallucinated_ppi CI carries the detector's error, hallucinated's does not")})
    return out
