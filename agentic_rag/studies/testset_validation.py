"""Does a generated test set rank settings the way human questions do? (issue 21)

On one corpus, the same sweep runs twice: on questions people wrote, and on a set the
configured LLM generated from the documents those questions are about
(`datasets.testset.generate_testset`). The configs' mean scores are then compared by rank:
Kendall τ-b (tie-aware) with a bootstrap CI that resamples each set's questions, and
whether both sets pick the same best config.

    res = validate_testset("halueval", chat, n=150)     # generates (cached), sweeps, compares
    res["tau_b"], res["tau_b_ci"], res["same_best"]
    res = run_validation(config, "halueval")            # the same with the config's LLM
    agentic-rag validate-testset --corpus halueval      # the same from the shell

Corpora (`CORPORA`):
- `halueval`: the quick sweep's HaluEval-QA sample (100 dev questions written by people for
  HotpotQA, over their 2,000-paragraph corpus); questions are generated from the same 2,000
  paragraphs (their 178 gold paragraphs alone gave 38 questions past the filters).
- `python`: python-library-qa (66 questions written for this project from the Python 3.11
  library reference) with the FAQ files taken out of the corpus (the FAQ's questions are
  its own headings); questions are generated from the 52 gold pages.

The sweep is the quick sweep's grid: 2 chunk sizes × 3 gate modes × 3 retriever sets, 18
configs, retrieval metrics only (no LLM in the sweep).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentic_rag.experiments.spec import DatasetSpec, SweepSpec

OUT = Path("experiments/testset-validation")
GRID = {"chunking.max_tokens": [64, 256], "gate.mode": ["static", "gated", "always_expand"],
        "fusion.retrievers": [["dense"], ["bm25"], ["dense", "bm25"]]}
CORPORA: dict[str, DatasetSpec] = {
    "halueval": DatasetSpec(name="halueval-qa", split="dev", n=100, seed=0, corpus_size=2000),
    "python": DatasetSpec(name="python-library-qa", split="all", n=None,
                          exclude=["pydocs/faq/"]),
}


def human_spec(corpus: str) -> SweepSpec:
    return SweepSpec(name=f"testset-validation-{corpus}-human", dataset=_corpus(corpus),
                     grid=GRID, metrics=["retrieval"], k=10)


def generated_spec(corpus: str, questions: str | Path) -> SweepSpec:
    """The human spec's corpus (same split / n / seed / corpus_size) with the generated
    questions instead of the human ones; unanswerable ones left out (no gold)."""
    ds = _corpus(corpus).model_copy(update={"questions": str(questions), "unanswerable": False})
    return SweepSpec(name=f"testset-validation-{corpus}-generated", dataset=ds, grid=GRID,
                     metrics=["retrieval"], k=10)


def _corpus(corpus: str) -> DatasetSpec:
    if corpus not in CORPORA:
        raise ValueError(f"corpus {corpus!r}: use one of {sorted(CORPORA)}")
    return CORPORA[corpus]


# what the generator reads: the human questions' gold documents, or the whole corpus the
# sweep indexes (HaluEval's 178 gold paragraphs give too few usable questions, see the README)
SOURCE = {"halueval": "corpus", "python": "gold"}


def source_documents(corpus: str, source: str | None = None) -> list:
    """The documents the generator reads: `gold` (those the human questions are about) or
    `corpus` (every document the sweep indexes); default `SOURCE[corpus]`."""
    from agentic_rag.experiments.plan import load_spec_dataset

    source = source or SOURCE[corpus]
    ds = load_spec_dataset(human_spec(corpus))
    if source == "corpus":
        return list(ds.corpus)
    if source != "gold":
        raise ValueError(f"source {source!r}: use gold or corpus")
    gold = {d for rel in ds.qrels.values() for d in rel}
    return [d for d in ds.corpus if d.id in gold]


def rank_agreement(human: pd.DataFrame, generated: pd.DataFrame, metric: str = "ndcg@10",
                   n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Kendall τ-b between the configs' mean `metric` on two sets of rows (one row per
    config × query, repeat 0), with a percentile CI from `n_boot` bootstrap resamples of
    each set's queries (independently: the sets share no questions), and the best config
    of each."""
    from scipy.stats import kendalltau

    a, b = _table(human, metric), _table(generated, metric)
    configs = sorted(set(a.index) & set(b.index))
    if len(configs) < 3:
        raise ValueError(f"rank agreement needs >= 3 configs scored on both sets, got {configs}")
    a, b = a.loc[configs], b.loc[configs]
    ma, mb = a.mean(axis=1), b.mean(axis=1)
    tau = float(kendalltau(ma.to_numpy(), mb.to_numpy()).statistic)
    rng = np.random.default_rng(seed)
    va, vb = a.to_numpy(), b.to_numpy()
    taus = []
    for _ in range(n_boot):
        ia = rng.integers(0, va.shape[1], va.shape[1])
        ib = rng.integers(0, vb.shape[1], vb.shape[1])
        t = kendalltau(va[:, ia].mean(axis=1), vb[:, ib].mean(axis=1)).statistic
        if t == t:  # NaN when a resample ties every config
            taus.append(t)
    # the noise floor of the ceiling: two random halves of the human questions ranked against
    # each other (halves are noisier than the whole set, so this understates its reliability)
    halves = []
    for _ in range(n_boot):
        idx = rng.permutation(va.shape[1])
        t = kendalltau(va[:, idx[: len(idx) // 2]].mean(axis=1),
                       va[:, idx[len(idx) // 2:]].mean(axis=1)).statistic
        if t == t:
            halves.append(t)
    best_a, best_b = ma.idxmax(), mb.idxmax()
    return {"metric": metric, "configs": len(configs), "human_queries": va.shape[1],
            "generated_queries": vb.shape[1], "tau_b": round(tau, 3),
            "tau_b_ci": [round(float(np.percentile(taus, 2.5)), 3),
                         round(float(np.percentile(taus, 97.5)), 3)],
            "human_split_half_tau_b": round(float(np.median(halves)), 3),
            "human_split_half_tau_b_ci": [round(float(np.percentile(halves, 2.5)), 3),
                                          round(float(np.percentile(halves, 97.5)), 3)],
            "main_effects": main_effects(ma, mb),
            "best_human": best_a, "best_generated": best_b, "same_best": best_a == best_b,
            "best_human_on_generated_rank": int((mb > mb[best_a]).sum()) + 1,
            "means": {c: {"human": round(float(ma[c]), 4), "generated": round(float(mb[c]), 4)}
                      for c in configs}}


def main_effects(human: pd.Series, generated: pd.Series) -> dict[str, Any]:
    """Per swept setting, the mean over configs of each of its values on both sets, and
    whether both sets order the values alike (a coarser agreement than the full ranking).
    Config labels are `key=value,key=value` (the runner's)."""
    out: dict[str, Any] = {}
    params = _params(human.index)
    for key in sorted({k for p in params.values() for k in p}):
        levels: dict[str, dict[str, float]] = {}
        for name, m in (("human", human), ("generated", generated)):
            by: dict[str, list[float]] = {}
            for c, v in m.items():
                by.setdefault(params[c].get(key, "?"), []).append(float(v))
            levels[name] = {lv: round(float(np.mean(vs)), 4) for lv, vs in by.items()}
        order = {name: sorted(lv, key=lambda x, d=lv: -d[x]) for name, lv in levels.items()}
        out[key] = {**levels, "same_order": order["human"] == order["generated"]}
    return out


def _params(labels: Any) -> dict[str, dict[str, str]]:
    import re

    return {c: dict(re.findall(r"([\w.]+)=(\[[^\]]*\]|[^,]+)", c)) for c in labels}


def _table(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """config × query means of `metric` (queries with no score, e.g. no gold, left out)."""
    r = rows[(rows.get("repeat", 0) == 0) & rows[metric].notna()]
    if "error" in r:
        r = r[r["error"].isna()]
    t = r.pivot_table(index="config", columns="query_id", values=metric, aggfunc="mean")
    return t.dropna(axis=1)


def validate_testset(corpus: str, chat: Any, n: int = 150, seed: int = 0,
                     out_dir: str | Path = OUT, runs_dir: str | Path = "experiments/runs",
                     cache_dir: str | Path = "experiments/cache", max_concurrency: int = 1,
                     log: Callable[[str], Any] = print, progress: Any = None) -> dict[str, Any]:
    """Generate `n` questions from `corpus`'s gold documents (skipped when
    `<out_dir>/<corpus>/generated.jsonl` exists: delete it to regenerate), run the human
    and the generated sweep, and write `agreement.json` beside the set."""
    from agentic_rag.datasets.testset import generate_testset
    from agentic_rag.experiments.runner import run_sweep

    folder = Path(out_dir) / corpus
    path = folder / "generated.jsonl"
    if not path.exists():
        docs = source_documents(corpus)
        log(f"{corpus}: generating {n} questions from {len(docs)} documents "
            f"({SOURCE[corpus]})")
        # 4 draws per question: about a quarter of Qwen 1.5B's questions pass the filters
        res = generate_testset(docs, chat, n=n, seed=seed, max_concurrency=max_concurrency,
                               max_draws=4 * n, progress=progress)
        res.write(path)
        log(f"  {res.summary['accepted']} accepted, rejected {res.summary['rejected']}")
    runs = {}
    for arm, spec in (("human", human_spec(corpus)), ("generated", generated_spec(corpus, path))):
        log(f"{corpus}: the {arm} sweep ({len(spec.configs())} configs)")
        runs[arm] = run_sweep(spec, runs_dir, cache_dir, progress=False, log=log)
    result = rank_agreement(runs["human"].results, runs["generated"].results)
    result.update({"corpus": corpus, "dataset": CORPORA[corpus].model_dump(mode="json"),
                   "generated_from": SOURCE[corpus],
                   "runs": {k: str(v.run_dir) for k, v in runs.items()},
                   "generated_set": str(path),
                   "generation": json.loads(path.with_name("generated.summary.json").read_text())})
    (folder / "agreement.json").write_text(json.dumps(result, indent=2))
    return result


def run_validation(cfg: Any, corpus: str, n: int = 150, seed: int = 0,
                   out_dir: str | Path = OUT, max_concurrency: int | None = None,
                   meter: Any = None, log: Callable[[str], Any] = print) -> dict[str, Any]:
    """`validate_testset` through `cfg.llm` (a `RAGConfig`; the local server started when it
    names no endpoint), every call through `meter` (`llm.LLMCallCap` at its cap propagates),
    up to `max_concurrency` (default `llm.max_concurrency`) in flight. The set is committed
    and its LLM replies travel with it (`<out_dir>/<corpus>/llm-replies.jsonl`, a reply
    pack), so a fresh machine regenerates the same set from the pack instead of asking the
    model again. ValueError for an unknown corpus; `ServerError` if the server does not
    start."""
    from agentic_rag.experiments.llm_cost import Progress
    from agentic_rag.llm.calls import CallMeter, MeteredChatModel
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.server import serve_local

    if corpus not in CORPORA:
        raise ValueError(f"--corpus {corpus!r}: use one of {sorted(CORPORA)}")
    meter = meter if meter is not None else CallMeter()
    pack = Path(out_dir) / corpus / "llm-replies.jsonl"
    with serve_local(cfg.llm, cfg.home):
        chat = MeteredChatModel(make_chat_model(cfg.llm, cfg.home, pack=pack), meter)
        return validate_testset(corpus, chat, n=n, seed=seed, out_dir=out_dir,
                                max_concurrency=max_concurrency or cfg.llm.max_concurrency,
                                log=log, progress=Progress(n, log, "testset", meter))


def result_lines(res: dict[str, Any]) -> list[str]:
    """`validate_testset`'s result in words: τ-b with its CI, and the best configs."""
    return [f"{res['corpus']}: Kendall tau-b {res['tau_b']} [{res['tau_b_ci'][0]}, "
            f"{res['tau_b_ci'][1]}] over {res['configs']} configs "
            f"({res['human_queries']} human, {res['generated_queries']} generated questions)",
            f"best on human: {res['best_human']}; on generated: {res['best_generated']} "
            f"(same: {res['same_best']}; the human best ranks "
            f"{res['best_human_on_generated_rank']} on the generated set)"]
