"""Does tuning on generated questions help on human ones? (issue 38, item 2)

    PYTHONPATH=. python experiments/tune/evidence.py SET LABEL [--corpus python|python-full|halueval|tau2]
        [--same-index] [--rule noninferiority|sign]

SET: a set generated from the corpus's documents only, e.g. experiments/tune/python/span.jsonl:
- python (default): python-library-qa, the 52 pages its 66 human questions are about
  (`testset_validation.source_documents("python")`); human test split: its 33 test questions;
- python-full: the same questions over the whole 363-page reference (the set is still one
  generated from the 52 pages: its questions are about them, the other pages are distractors);
- halueval: HaluEval-QA's 2,000-paragraph sample with its 100 dev questions
  (`testset_validation.CORPORA["halueval"]`, the documents `source_documents("halueval")`);
  all 100 are the human questions (no test split of its own);
- tau2: τ²-banking's 698 policy documents; the human "questions" are its 97 tasks, scored by
  nDCG against the documents each task requires (no answers: answer@5 is not defined there);
  human test split: its 82 test tasks.
Its questions are split half dev, half test by id (seeded) when the set has another dev share.
Then `tune` runs on it as on a folder (the quick search space chosen from those documents, the
rule on the generated dev half, the generated test half scored once), over that corpus, and the
same search space is swept on the human questions, which tuning never saw. Written to
experiments/tune/<corpus>/LABEL/: the tune outputs, human.json (the tuned config vs the default
on the human questions, paired Δ with 95 % CIs, and Kendall τ-b between the configs' ranking on
generated dev and on the human questions). No LLM call: retrieval metrics only (the set is
generated already). `--rule`: tune's choice rule (`tune_space.RULES`; the default
`noninferiority`, issue 63; `sign`, the rule the studies up to 2026-12-06 ran under)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.testset_sampling import split_of
from agentic_rag.experiments.runner import run_sweep
from agentic_rag.experiments.spec import DatasetSpec
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.jsonl import read_records
from agentic_rag.studies.testset_validation import rank_agreement, source_documents
from agentic_rag.studies.tune_run import TuneRun
from agentic_rag.studies.tune_space import (
    DEFAULT_RULE,
    DEV_SHARE,
    choose_by_rule,
    profile,
    rule_table,
    search_space,
    spec_for,
)

# per corpus: the dataset both sweeps index (its questions are the human ones; the tune sweeps
# replace them with the generated set) and the dataset whose test split is reported on its own.
# python: the 52 pages the 66 human questions are about (the set was generated from them too);
# python-full: the whole 363-page reference (the corpus of the 0.636 / 0.818; it did not
# index in the time there was on the shared machine of 2026-12-03, it does on a quiet one)
CORPORA = {
    "python": (DatasetSpec(name="python-library-qa", split="all", n=None, corpus_size=52),
               "python-library-qa"),
    "python-full": (DatasetSpec(name="python-library-qa", split="all", n=None),
                    "python-library-qa"),
    "halueval": (DatasetSpec(name="halueval-qa", split="dev", n=100, seed=0, corpus_size=2000),
                 None),
    "tau2": (DatasetSpec(name="tau2-banking", split="all", n=None), "tau2-banking"),
}
SOURCE = {"python": "python", "halueval": "halueval"}  # `source_documents`; tau2: every document
# where a corpus's committed sets were generated from, when that is fewer documents than the
# sweep searches (the set's summary counts fewer chunks): the report says so
GENERATED_ELSEWHERE = {"python-full": "the 52 pages the human questions are about (the sweep "
                                      "searches all 363)"}


def note_source(report: Path, source: str) -> None:
    """`report`'s "Questions generated from them" line, told where the questions came from."""
    text = report.read_text()
    report.write_text(text.replace("Questions generated from them:",
                                   f"Questions generated from {source}:", 1))


def resplit(src: Path, dst: Path) -> Path:
    """`src` with each question's split redrawn at `DEV_SHARE` (seed 0, by id), summary copied."""
    rows = read_records(src)
    for r in rows:
        r["split"] = split_of(r["id"], 0, DEV_SHARE)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = json.loads(src.with_name(f"{src.stem}.summary.json").read_text())
    dst.with_name(f"{dst.stem}.summary.json").write_text(json.dumps(summary, indent=2))
    return dst


def human_test_split(human, names: list[str], chosen: str, dataset: str) -> dict:  # noqa: ANN001
    """The chosen config vs the default on the human *test* questions alone: means and the
    paired difference with a 95 % bootstrap CI (queries resampled, 2,000 times, seed 0)."""
    import numpy as np

    from agentic_rag.datasets.qa import load_dataset

    test = {q.id for q in load_dataset(dataset).split("test").queries}
    r = human.results[human.results.query_id.isin(test)]
    labels = dict(zip(names, human.summary["config"]))
    out = {"n_queries": int(r.query_id.nunique())}
    rng = np.random.default_rng(0)
    for m in ("ndcg@10", "answer@5"):
        if m not in r.columns or r[m].isna().all():
            continue  # no answers (tau2's tasks)
        t = r.pivot_table(index="query_id", columns="config", values=m)
        a, b = t[labels["default"]].to_numpy(), t[labels[chosen]].to_numpy()
        d = b - a
        boots = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)]
        out[m] = {"default": round(float(a.mean()), 4), "tuned": round(float(b.mean()), 4),
                  "diff": round(float(d.mean()), 4),
                  "ci95": [round(float(np.percentile(boots, 2.5)), 4),
                           round(float(np.percentile(boots, 97.5)), 4)]}
    return out


def same_index(overrides: dict) -> bool:
    """The configs that search the default config's index (no chunking change): the cut of
    the search space that fit the time there was (one index of the 52 pages took ~45 min to
    embed on the shared machine; the 128-token one would have taken another hour)."""
    return not any(k.startswith("chunking.") for k in overrides)


def documents(corpus: str) -> list:
    if corpus in SOURCE:
        return source_documents(SOURCE[corpus])
    from agentic_rag.datasets.qa import load_dataset

    return list(load_dataset(CORPORA[corpus][0].name).corpus)


def main(set_path: str, label: str, corpus: str = "python",
         cut: Annotated[bool, typer.Option("--same-index")] = False,
         rule: str = DEFAULT_RULE) -> None:
    spec, test_dataset = CORPORA[corpus]
    out = Path("experiments/tune") / corpus / label
    src = Path(set_path)
    rows = read_records(src)
    made = json.loads(src.with_name(f"{src.stem}.summary.json").read_text())
    qpath = src if made.get("settings", {}).get("dev_share") == DEV_SHARE \
        else resplit(src, out / "questions.jsonl")
    docs = documents(corpus)
    cfg = RAGConfig()
    run = TuneRun(folder=None, n=len(rows), budget="quick", llm_strategies=False, out=out,
                  max_llm_calls=0, config=cfg, docs=docs, corpus=spec, questions=qpath,
                  runs_dir="experiments/runs", cache_dir="experiments/cache",
                  keep=same_index if cut else None, rule=rule)
    res = run.run()
    chunks = [c for d in docs for c in AgenticChunker(cfg.chunking).chunk(d)]
    if corpus in GENERATED_ELSEWHERE and made.get("chunks", len(chunks)) < len(chunks):
        note_source(out / "report.md", GENERATED_ELSEWHERE[corpus])
    space = search_space(profile(docs, chunks), "quick")
    if cut:
        space = {k: v for k, v in space.items() if k == "default" or same_index(v)}
    names = list(space)
    human = run_sweep(spec_for(f"tune-{corpus}-human", spec, cfg, space, names),
                      "experiments/runs", "experiments/cache", progress=False)
    human_table = rule_table(human.summary, names, rule)
    import pandas as pd

    dev_rows = pd.read_parquet(Path(res.paths["dev_run"]) / "results.parquet")
    agreement = {m: rank_agreement(human.results, dev_rows, metric=m)
                 for m in ("ndcg@10", "answer@5")
                 if len(names) >= 3 and m in human.results.columns
                 and human.results[m].notna().any()}
    h = human_table.set_index("config")
    result = {
        "set": str(src), "questions": len(rows), "chosen": res.chosen,
        "human_run": str(human.run_dir), "dev_run": str(res.paths["dev_run"]),
        "test_run": str(res.paths["test_run"]),
        "human_test": json.loads(human_table.to_json(orient="records")),
        "tuned_on_human": json.loads(h.loc[res.chosen].to_json()),
        "default_on_human": json.loads(h.loc["default"].to_json()),
        "rule": rule, "human_best_by_rule": choose_by_rule(human_table, rule),
        "tau_b": {m: {k: a[k] for k in ("tau_b", "tau_b_ci", "configs", "best_human",
                                          "best_generated", "human_split_half_tau_b")}
                  for m, a in agreement.items()}
        or f"not measurable: {len(names)} configs in the search space (τ-b needs >= 3)"}
    result["human_test_split"] = (human_test_split(human, names, res.chosen, test_dataset)
                                  if test_dataset else None)
    (out / "human.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: result[k] for k in ("chosen", "tuned_on_human", "default_on_human",
                                              "human_best_by_rule", "tau_b",
                                              "human_test_split")}, indent=1))


if __name__ == "__main__":
    typer.run(main)
