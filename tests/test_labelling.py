"""Labelling in the notebook: the sample is stratified by detector score and resumes where
labelling stopped; labels are written in the rubric's format and read back by the detector
tables; an unsure answer is no label; the view runs in a kernel-less widget test."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from agentic_rag.studies.detectors import labelling as lab
from agentic_rag.studies.detectors.own import labels_description, read_labels


def _answers(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"qid": [f"q{i:02d}" for i in range(n)],
                         "score": np.linspace(0, 1, n), "question": "Q?", "answer": "A b",
                         "context": "C"})


def test_sample_is_stratified_by_score_and_resumes(tmp_path):
    path = tmp_path / "labels-pass1.jsonl"
    first = lab.to_label(_answers(), "score", path, 8, bands=4)
    assert len(first) == 8
    bands = pd.cut(first["score"], [-0.01, 0.25, 0.5, 0.75, 1.0]).value_counts()
    assert (bands == 2).all()  # two from each quarter of the scores
    for q in first["qid"][:5]:
        lab.add_label(path, q, "supported", "Ada")
    again = lab.to_label(_answers(), "score", path, 8, bands=4)
    assert not set(again["qid"]) & set(first["qid"][:5])  # resumes: nothing asked twice
    assert len(lab.to_label(_answers(3), "score", path, 10)) == 3


def test_labels_in_the_rubric_format_read_back(tmp_path):
    path = tmp_path / "labels-pass1.jsonl"
    lab.add_label(path, "q1", "supported", "Ada", "Doc1 says so")
    lab.add_label(path, "q2", "unsupported", "llm:qwen2.5-coder-1.5b")
    lab.add_label(path, "q3", "unsure", "Ada", "context ambiguous")
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert rows[0] == {"qid": "q1", "supported": 1, "note": "Doc1 says so", "labeller": "Ada",
                       "pass": 1}
    assert rows[2]["supported"] is None and rows[2]["note"].startswith("unsure")
    got = read_labels(tmp_path, 1)
    assert got.set_index("qid")["label"].to_dict() == {"q1": 0, "q2": 1}  # unsure: no label
    assert labels_description(tmp_path) == \
        "LLM-labelled (`llm:qwen2.5-coder-1.5b`); labelled by Ada"
    with pytest.raises(ValueError, match="labeller"):
        lab.add_label(path, "q4", "supported", " ")
    with pytest.raises(ValueError, match="verdict"):
        lab.add_label(path, "q4", "maybe", "Ada")


def test_the_view_writes_a_label_per_click(tmp_path):
    pytest.importorskip("ipywidgets")
    answers = _answers(6)
    with (tmp_path / "answers.jsonl").open("w") as f:
        for r in answers.drop(columns="score").to_dict(orient="records"):
            f.write(json.dumps(r) + "\n")
    with (tmp_path / "scored.jsonl").open("w") as f:
        for r in answers.to_dict(orient="records"):
            f.write(json.dumps({"qid": r["qid"], "graded_judge_q": r["score"]}) + "\n")
    box = lab.labelling_view(tmp_path, labeller="Ada", n=3)
    html, note, buttons = box.children[0], box.children[1], box.children[2].children
    assert "Question" in html.value and "Context" in html.value
    note.value = "checked"
    buttons[1].click()  # unsupported
    buttons[0].click()  # supported
    buttons[2].click()  # unsure
    rows = [json.loads(x) for x in (tmp_path / "labels-pass1.jsonl").read_text().splitlines()]
    assert [r["supported"] for r in rows] == [0, 1, None]
    assert rows[0]["note"] == "checked" and all(r["labeller"] == "Ada" for r in rows)
    assert "Done" in html.value and all(b.disabled for b in buttons)


def test_an_adjudicated_label_replaces_the_first_for_the_sweep_and_ledger_reader(tmp_path):
    """A re-decision is appended (nothing is rewritten) and marked; `experiments.labels
    .read_labels`, which the sweeps and the ledger's PPI use, keeps a qid's last label."""
    from agentic_rag.experiments.labels import read_labels as pairs

    path = tmp_path / "labels-pass1.jsonl"
    (tmp_path / "answers.jsonl").write_text(json.dumps({"qid": "q1", "answer": "Katharine "
                                                        "Graham"}) + "\n")
    lab.add_label(path, "q1", "supported", "llm:test", "names the author")
    lab.add_label(path, "q1", "unsupported", "llm:test", "adjudicated, rule 2", adjudicated=True)
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert [r.get("adjudicated") for r in rows] == [None, True]
    assert pairs([tmp_path]) == {("q1", "Katharine Graham"): (1.0, "llm:test")}
