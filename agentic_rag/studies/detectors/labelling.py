"""Labels a user adds in the notebook: which answers to label, the labels file, the view.

`to_label` picks the answers to label next, stratified by detector score (equal numbers
from each score band, seeded) so that 50-100 labels cover confident and borderline scores
alike, and skips the answers already labelled (labelling resumes where it stopped).
`add_label` appends one label to the JSONL file in the rubric's format
(`experiments/detectors/RUBRIC.md`: qid, supported 1/0, note, labeller, pass), fsync'd row
by row; "unsure" is recorded as `supported: null` with `unsure` in the note, so the answer
is not asked again and `own.read_labels` leaves it out (it is no label). `labelling_view` is the
JupyterLab view: each answer with its question and the context it was given, buttons
supported / unsupported / unsure, a note, and the next answer; the threshold
(`decisions.decision_table`) and the PPI estimate (`stats.ppi_mean`) read the same file, so
they use the labels as soon as they exist.

    from agentic_rag.studies.detectors.labelling import labelling_view
    labelling_view("experiments/detectors/halueval-own", labeller="Ada Lovelace")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentic_rag.jsonl import append_rows, read_rows

VERDICTS = {"supported": 1, "unsupported": 0, "unsure": None}


def labelled_qids(path: Path) -> set[str]:
    return {r["qid"] for r in read_rows(path)} if path.exists() else set()


def to_label(answers: pd.DataFrame, score: str, path: Path, n: int, bands: int = 4,
             seed: int = 0) -> pd.DataFrame:
    """Up to `n` answers not yet labelled in `path`, stratified by `score` into `bands`
    quantile bands (about n / bands from each; a short band gives its rest to the others;
    answers without a score form a band of their own), shuffled (seeded)."""
    done = labelled_qids(path)
    todo = answers[~answers["qid"].isin(done)].reset_index(drop=True)
    if todo.empty or n <= 0:
        return todo.iloc[:0]
    rng = np.random.default_rng(seed)
    s = todo[score].astype(float)
    band = pd.Series(-1, index=todo.index)
    if s.notna().any():
        band[s.notna()] = pd.qcut(s[s.notna()].rank(method="first"), min(bands, int(s.notna().sum())),
                                  labels=False)
    groups = [rng.permutation(todo.index[band == b].to_numpy()) for b in sorted(band.unique())]
    picked: list[int] = []
    while len(picked) < min(n, len(todo)):  # round robin over the bands
        for g in groups:
            taken = [i for i in g if i not in picked]
            if taken and len(picked) < n:
                picked.append(int(taken[0]))
    return todo.loc[picked].reset_index(drop=True)


def add_label(path: Path, qid: str, verdict: str, labeller: str, note: str = "",
              labelling_pass: int = 1, adjudicated: bool = False) -> dict[str, Any]:
    """Append one label in the rubric's format. `verdict`: supported, unsupported or unsure
    (`supported: null`, `unsure` in the note). `labeller`: a person's name or
    `llm:<model>`; an empty one is refused. `adjudicated`: a re-decision of a qid labelled
    earlier in the same file, which it replaces (readers keep a qid's last label)."""
    if verdict not in VERDICTS:
        raise ValueError(f"label for {qid}: verdict {verdict!r} is not one of {list(VERDICTS)}")
    if not labeller.strip():
        raise ValueError(f"label for {qid}: `labeller` is empty (a person's name or "
                         "llm:<model>)")
    supported = VERDICTS[verdict]
    if supported is None:
        note = "unsure; " + note if note else "unsure"
    row = {"qid": qid, "supported": supported, "note": note, "labeller": labeller.strip(),
           "pass": labelling_pass}
    if adjudicated:
        row["adjudicated"] = True
    path.parent.mkdir(parents=True, exist_ok=True)
    append_rows(path, [row])
    return row


def labelling_view(folder: str | Path, labeller: str, score: str = "graded_judge_q",
                   n: int = 100, labelling_pass: int | None = None, seed: int = 0) -> Any:
    """The JupyterLab view over `folder`'s answers (`answers.jsonl`, scores in
    `scored.jsonl`): one answer at a time, its question and context, supported / unsupported
    / unsure and a note; labels go to `labels-pass<N>.jsonl` (N: 1, or 2 for an LLM's or a
    second person's independent pass when given)."""
    import ipywidgets as w
    from IPython.display import display

    folder = Path(folder)
    answers = pd.DataFrame(read_rows(folder / "answers.jsonl"))
    scores = pd.DataFrame({r["qid"]: r for r in read_rows(folder / "scored.jsonl")}.values())
    if score in scores:
        answers = answers.merge(scores[["qid", score]], on="qid", how="left")
    else:
        answers[score] = np.nan
    path = folder / f"labels-pass{labelling_pass or 1}.jsonl"
    queue = to_label(answers[answers["answer"].notna()], score, path, n, seed=seed)
    state = {"i": 0}
    html, note, status = w.HTML(), w.Textarea(placeholder="note (optional)"), w.HTML()
    buttons = [w.Button(description=v, button_style=s) for v, s in
               (("supported", "success"), ("unsupported", "danger"), ("unsure", "warning"))]

    def show() -> None:
        if state["i"] >= len(queue):
            html.value = f"<b>Done</b>: {len(labelled_qids(path))} labels in <code>{path}</code>"
            for b in buttons:
                b.disabled = True
            return
        r = queue.iloc[state["i"]]
        html.value = (f"<p><b>{state['i'] + 1}/{len(queue)}</b> · {r['qid']} · {score} "
                      f"{r[score]:.2f}</p><p><b>Question</b>: {_esc(r['question'])}</p>"
                      f"<p><b>Answer</b>: {_esc(r['answer'])}</p><details open><summary>"
                      f"Context</summary><pre style='white-space:pre-wrap'>"
                      f"{_esc(r['context'])}</pre></details>")
        note.value = ""

    def on_click(b: Any) -> None:
        r = queue.iloc[state["i"]]
        add_label(path, r["qid"], b.description, labeller, note.value, labelling_pass or 1)
        status.value = f"{r['qid']}: {b.description} → {path.name}"
        state["i"] += 1
        show()

    for b in buttons:
        b.on_click(on_click)
    show()
    box = w.VBox([html, note, w.HBox(buttons), status])
    display(box)
    return box


def _esc(text: Any) -> str:
    import html

    return html.escape(str(text))
