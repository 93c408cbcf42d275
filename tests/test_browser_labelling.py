"""The labelling view in a real browser: `make lab`'s JupyterLab, driven in headless Chromium.

A user labels answers in the notebook (`studies.detectors.labelling.labelling_view`, notebook
05's labelling cell): each answer with its question and context, a note, the buttons
supported / unsupported / unsure. This test starts JupyterLab as `make lab` does, opens a
notebook that shows the view over a three-answer folder, types a note, clicks the buttons as
a user would, and reads the labels file the clicks wrote (the rubric's format, the labeller
named); a second view over the same folder resumes with nothing left to label. The notebook
is written for the test beside the committed ones (JupyterLab serves `notebooks/` only) and
removed after it, with its checkpoints."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import nbformat
import pytest

from .test_browser_tuner import ROOT, _kernel_ready, lab_page

ANSWERS = [
    {"qid": "q1", "question": "Which band recorded Master of Puppets?", "answer": "Metallica",
     "context": "Master of Puppets is the third studio album by Metallica."},
    {"qid": "q2", "question": "Where was the album recorded?", "answer": "In Oslo",
     "context": "It was recorded at Sweet Silence Studios in Copenhagen."},
    {"qid": "q3", "question": "When was it released?", "answer": "1986",
     "context": "It was released on 3 March 1986."},
]


def _folder(where: Path) -> Path:
    where.mkdir(parents=True)
    (where / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in ANSWERS))
    scores = {"q1": 0.9, "q2": 0.2, "q3": 0.6}
    (where / "scored.jsonl").write_text("".join(
        json.dumps({"qid": q, "graded_judge_q": s}) + "\n" for q, s in scores.items()))
    return where


def _notebook(path: Path, folder: Path) -> None:
    code = ("from agentic_rag.studies.detectors.labelling import labelling_view\n"
            f"view = labelling_view({str(folder)!r}, labeller='Browser Test', n=3)")
    nbformat.write(nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(code)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}}), path)


@pytest.mark.slow
def test_labels_clicked_in_jupyterlab_land_in_the_labels_file(tmp_path):
    folder = _folder(tmp_path / "answers")
    notebook = ROOT / "notebooks" / f"_browser-labelling-{os.urandom(4).hex()}.ipynb"
    _notebook(notebook, folder)
    try:
        with lab_page(tmp_path, notebook.name) as (page, url):
            _label_three(page, url, folder / "labels-pass1.jsonl")
    finally:
        notebook.unlink(missing_ok=True)
        shutil.rmtree(notebook.parent / ".ipynb_checkpoints", ignore_errors=True)

    labels = [json.loads(x) for x in (folder / "labels-pass1.jsonl").read_text().splitlines()]
    assert sorted(r["qid"] for r in labels) == ["q1", "q2", "q3"]
    assert all(r["labeller"] == "Browser Test" and r["pass"] == 1 for r in labels)
    first = labels[0]
    assert first["supported"] == 0 and first["note"] == "the context says Copenhagen"
    assert [r["supported"] for r in labels[1:]] == [1, None]  # supported, then unsure
    assert labels[2]["note"] == "unsure"
    # labelling resumes where it stopped: nothing is left to ask
    import pandas as pd

    from agentic_rag.studies.detectors.labelling import labelled_qids, to_label
    answers = pd.DataFrame(ANSWERS).assign(graded_judge_q=[0.9, 0.2, 0.6])
    path = folder / "labels-pass1.jsonl"
    assert labelled_qids(path) == {"q1", "q2", "q3"}
    assert to_label(answers, "graded_judge_q", path, n=3).empty


def _label_three(page, url: str, labels: Path) -> None:  # noqa: ANN001 - a Playwright page
    page.goto(url)
    nb = page.locator(".jp-NotebookPanel .jp-Notebook").first
    nb.wait_for(timeout=120_000)
    _kernel_ready(page)
    nb.locator(".jp-CodeCell").first.click()
    page.keyboard.press("Shift+Enter")  # run the cell, as a user would
    view = nb.locator(".jp-OutputArea-output .widget-vbox").first
    view.wait_for(timeout=120_000)
    header = view.locator(".widget-html").first
    assert re.search(r"1/3 · q\d", header.inner_text()), header.inner_text()

    def shown_qid() -> str:
        return re.search(r"\d/3 · (q\d)", header.inner_text()).group(1)

    def click(verdict: str, expect_rows: int) -> None:
        """Click a verdict; wait for its label in the file and for the view to move on."""
        view.locator("button", has_text=re.compile(f"^{verdict}$")).click()
        deadline = time.monotonic() + 30
        while not labels.exists() or len(labels.read_text().splitlines()) < expect_rows:
            assert time.monotonic() < deadline, f"the {verdict!r} click wrote no label"
            time.sleep(0.2)
        shown = f"{expect_rows + 1}/3" if expect_rows < 3 else "Done"
        while shown not in header.inner_text():
            assert time.monotonic() < deadline, f"the view did not move on: {header.inner_text()}"
            time.sleep(0.2)

    # whichever answer the stratified, seeded queue shows first, the user labels it
    # unsupported with a note
    first = shown_qid()
    assert "Question" in header.inner_text() and "Context" in header.inner_text()
    view.locator("textarea").fill("the context says Copenhagen")
    click("unsupported", 1)
    assert shown_qid() != first and "2/3" in header.inner_text()
    click("supported", 2)
    click("unsure", 3)
    done = view.locator(".widget-html", has_text="Done").first
    done.wait_for(timeout=30_000)
    assert "3 labels" in done.inner_text()
    assert json.loads(labels.read_text().splitlines()[0])["qid"] == first
