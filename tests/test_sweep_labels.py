"""A sweep's hallucination rate with labels (issue 37): rows whose answers were labelled give
the rate by prediction-powered inference, its CI carrying the detector's error; without
labels the rate says it has none."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentic_rag.experiments import labels as labels_mod
from agentic_rag.experiments.labels import fingerprint, ppi_columns, read_labels
from agentic_rag.experiments.stats import ppi_mean

from .test_concurrency import corpus, make_spec, stub, sweep  # noqa: F401 - fixtures


def _folder(where: Path, answers: dict[str, str], supported: dict[str, int | None],
            labeller: str = "llm:test-labeller") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "answers.jsonl").write_text("".join(
        json.dumps({"qid": q, "question": f"question {q}", "answer": a, "context": "c"}) + "\n"
        for q, a in answers.items()))
    (where / "labels-pass1.jsonl").write_text("".join(
        json.dumps({"qid": q, "supported": s, "note": "", "labeller": labeller, "pass": 1})
        + "\n" for q, s in supported.items()))
    return where


def test_ppi_columns_match_ppi_mean_on_the_labelled_rows_only(tmp_path):
    rng = np.random.default_rng(3)
    n = 60
    rows = pd.DataFrame({"query_id": [f"q{i}" for i in range(n)],
                         "answer": [f"answer {i}" for i in range(n)],
                         "hallucinated": rng.integers(0, 2, n).astype(float)})
    rows.loc[5, "hallucinated"] = np.nan  # a failed judge: not a prediction
    rows.loc[6:9, "hallucinated"] = 0.0  # the detector misses these four (labelled below)
    # 14 labelled answers: the detector is wrong on 4 of them; q0 labelled with extra spaces
    # (the same answer), q1 unsure (no label), q2's label is about another answer text
    labelled = {f"q{i}": f"answer {i}" for i in range(16)}
    labelled["q0"] = "  answer   0 "
    labelled["q2"] = "a different answer"
    truth = {q: int(rows.loc[int(q[1:]), "hallucinated"] == 0) for q in labelled}
    for q in ("q6", "q7", "q8", "q9"):
        truth[q] = 0  # unsupported: the detector's misses, a rectifier of +4/13
    truth["q1"] = None
    folder = _folder(tmp_path / "labels", labelled, truth)
    got = ppi_columns(rows, read_labels([folder]))
    used = [i for i in range(16) if i not in (1, 2, 5)]  # unsure, other answer, failed
    assert got["hallucinated_labelled"] == len(used) == 13
    f_all = rows["hallucinated"].dropna().to_list()
    want = ppi_mean(f_all, [rows.loc[i, "hallucinated"] for i in used],
                    [1.0 - truth[f"q{i}"] for i in used])
    assert got["hallucinated_ppi"] == pytest.approx(want["estimate"])
    assert (got["hallucinated_ppi_ci_low"], got["hallucinated_ppi_ci_high"]) == pytest.approx(
        (want["ci_low"], want["ci_high"]))
    assert want["rectifier"] == pytest.approx(4 / 13) and "llm:test-labeller" in got["hallucinated_ci_note"]
    # too few labelled rows: the count, no estimate
    few = ppi_columns(rows.iloc[:8], read_labels([folder]))
    assert few == {"hallucinated_labelled": 5}


def test_a_missing_label_folder_is_an_error_naming_the_field_and_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"hallucination_labels: .*labels-pass1.jsonl"):
        read_labels([_folder(tmp_path / "x", {"q1": "a"}, {}).parent / "nowhere"])
    (tmp_path / "x" / "labels-pass1.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="labels-pass1.jsonl"):
        fingerprint([tmp_path / "x"])


def test_a_sweep_with_labels_reports_ppi_where_answers_match_and_says_so_elsewhere(
        corpus, stub, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(labels_mod, "MIN_LABELS", 2)  # 4 questions in this corpus
    spec = make_spec(corpus, stub.base_url)
    plain = sweep(spec, tmp_path / "m", 1)
    assert (plain.summary["hallucinated_ci_note"].str.startswith("no labels")).all()
    rows = plain.results
    base = rows[rows.config_id == "c00"]
    folder = _folder(tmp_path / "labels", dict(zip(base.query_id, base.answer)),
                     {q: 1 for q in base.query_id}, labeller="Ada Lovelace")
    labelled = spec.model_copy(update={"hallucination_labels": [str(folder)]})
    assert labelled.spec_hash() == spec.spec_hash()  # labels change no row
    again = sweep(labelled, tmp_path / "m", 1)
    assert again.rows_from_cache == len(rows)  # no row computed again: only the summary
    s = again.summary.set_index("config_id")
    assert s.loc["c00", "hallucinated_labelled"] == 4
    assert "Ada Lovelace" in s.loc["c00", "hallucinated_ci_note"]
    # every answer of c00 labelled supported: the labels correct every flag away, so the PPI
    # rate is 0 whatever the detector flagged (its flags' rate is the plain column)
    assert s.loc["c00", "hallucinated_ppi"] == pytest.approx(0.0)
    other = rows[rows.config_id == "c01"]
    matched = sum((q, a) in set(zip(base.query_id, base.answer))
                  for q, a in zip(other.query_id, other.answer))
    assert s.loc["c01", "hallucinated_labelled"] == matched
    if matched < 2:
        assert s.loc["c01", "hallucinated_ci_note"].startswith("no labels")
