"""The extension points as registries: a retriever and a metric added here, in this test
module only (one registration line each, `register_retriever` / `register_metric`), are swept
by the real sweep runner and summarised with paired CIs; names the registries do not hold are
errors. Small and fast: a local corpus of a few Markdown files and a deterministic hashing
embedder, the real index, pipeline, measurement and summary otherwise."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from agentic_rag.config import RETRIEVER_NAMES, FusionConfig, RAGConfig, ranking_names
from agentic_rag.config_base import ConfigError
from agentic_rag.documents import Hit
from agentic_rag.evaluation import metrics
from agentic_rag.evaluation.metrics import Metric, RowInputs, register_metric, unregister_metric
from agentic_rag.experiments import plan
from agentic_rag.experiments.runner import run_sweep
from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.experiments.summary import print_summary
from agentic_rag.retrieve.retrievers import (
    RETRIEVERS,
    FusionRetriever,
    register_retriever,
    unregister_retriever,
)

from .fakes import BANK_DOCS, BANK_QUESTIONS, HashingEmbedder, local_corpus

DOCS = BANK_DOCS
QUESTIONS = BANK_QUESTIONS


# --- the toy retriever: its own "module" ---------------------------------------------------
class LongestWord:
    """The chunks holding the query's longest word (case-folded), in the index's chunk order,
    all scored 1.0: a retriever that shares nothing with dense or BM25."""

    def search(self, on, query, depth, where):  # noqa: ANN001, ANN201
        assert where is None, "the toy does not filter"
        word = max(query.lower().rstrip("?").split(), key=len)
        found = [c for c in on.index.lexical.chunks if word in c.text.lower()][:depth]
        return [Hit(chunk=c, score=1.0, raw_score=1.0, rank=r, retriever="longest")
                for r, c in enumerate(found, 1)]

    def variant(self, config):  # noqa: ANN001, ANN201
        return ""


# --- the toy metric: its own "module" ------------------------------------------------------
def top_doc(r: RowInputs) -> float | None:
    """1.0 when the first hit is from a relevant document (success@1); None without qrels."""
    if not r.qrels:
        return None
    return float(bool(r.hits) and r.qrels.get(r.hits[0].chunk.doc_id, 0) > 0)


@pytest.fixture(scope="module")
def toys():
    register_retriever("longest", LongestWord(), "the chunks holding the query's longest word")
    register_metric(Metric("top_doc", "retrieval", compute=top_doc))
    yield
    unregister_retriever("longest")
    unregister_metric("top_doc")


@pytest.fixture(scope="module")
def swept(toys, tmp_path_factory):
    root = tmp_path_factory.mktemp("registries")
    docs, qs = local_corpus(root, DOCS, QUESTIONS)
    mp = pytest.MonkeyPatch()
    mp.setattr(plan, "make_embedder", lambda config, cache_dir=None: HashingEmbedder())
    spec = SweepSpec.model_validate({
        "name": "toys", "metrics": ["retrieval"], "k": 5,
        "grid": {"fusion.retrievers": [["dense"], ["longest"], ["dense", "longest"]]},
        "base": {"gate": {"mode": "static"}},
        "dataset": {"name": "local", "docs": str(docs), "questions": str(qs), "split": "all",
                    "n": None}})
    try:
        yield run_sweep(spec, root / "runs", root / "cache", progress=False,
                        log=lambda *_: None)
    finally:
        mp.undo()


def test_the_config_names_are_the_registered_retrievers():
    assert list(RETRIEVER_NAMES) == list(RETRIEVERS)  # one name list, in step
    assert list(RETRIEVERS)[:3] == ["dense", "bm25", "title"]  # the package's own
    for name in RETRIEVERS:  # each may stand wherever a retriever is named
        cfg = RAGConfig.from_dict({"fusion": {"retrievers": [name], "named_retrievers": [name],
                                              "weights": {name: 1.0}},
                                   "gate": {"add_retrievers": [name]}})
        assert cfg.fusion.retrievers == (name,) and cfg.gate.add_retrievers == (name,)
    assert set(ranking_names()) >= {"dense", "bm25", "title", "filtered", "named",
                                    "named_bm25", "named_title"}


def test_unregistered_names_are_config_errors_naming_field_and_value():
    for data, field in (({"fusion": {"retrievers": ["dense", "nowhere"]}}, "fusion.retrievers"),
                        ({"fusion": {"named_retrievers": ["nowhere"]}}, "fusion.named_retrievers"),
                        ({"gate": {"add_retrievers": ["nowhere"]}}, "gate.add_retrievers"),
                        ({"fusion": {"weights": {"nowhere": 1.0}}}, "fusion.weights")):
        with pytest.raises(ConfigError, match=rf"(?s){field}.*'nowhere'"):
            RAGConfig.from_dict(data)


def test_registered_retriever_is_a_config_name_until_removed():
    register_retriever("longest2", LongestWord(), "test")
    try:
        cfg = FusionConfig(retrievers=("dense", "longest2"), weights={"named_longest2": 2.0})
        assert cfg.retrievers == ("dense", "longest2")
        with pytest.raises(ValueError, match="already registered"):
            register_retriever("longest2", LongestWord(), "again")
        with pytest.raises(ValueError, match="already registered"):
            register_retriever("dense", LongestWord(), "a built-in")
    finally:
        unregister_retriever("longest2")
    with pytest.raises(ValueError, match="unknown retriever 'longest2'"):
        FusionConfig(retrievers=("longest2",))


def test_metric_declarations_are_checked_and_unique():
    with pytest.raises(ValueError, match="already declared"):
        register_metric(Metric("ndcg@10", "retrieval"))
    with pytest.raises(ValueError, match="unknown group"):
        Metric("x", "retreival")
    with pytest.raises(ValueError, match="direction"):
        Metric("x", "retrieval", direction="up")  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="not declared"):
        metrics.metric("ndcg@11")
    # what the hand-kept lists said, now read from the declarations
    assert metrics.names(headline=True) == ["ndcg@10", "recall@10", "recall@5", "mrr@10",
                                            "precision@5"]
    assert set(metrics.names(paired=True)) - set(metrics.names(mean=True)) == {
        "span_recall@5", "iterations", "context_tokens"}
    assert metrics.metric("hallucinated").direction == "lower"
    assert metrics.metric("ndcg@10").direction == "higher"


def test_toy_retriever_and_metric_are_swept(swept):
    df = swept.results
    by_cfg = {cid: g for cid, g in df.groupby("config_id")}
    labels = {cid: g["config"].iloc[0] for cid, g in by_cfg.items()}
    toy = next(cid for cid, label in labels.items() if label.endswith("['longest']"))
    # the toy's own ranking, recomputed here from the corpus, is what the sweep served
    for r in by_cfg[toy].itertuples():
        q = next(t for i, t, _, _ in QUESTIONS if i == r.query_id)
        word = max(q.lower().rstrip("?").split(), key=len)
        want = list(dict.fromkeys(f"docs/{name}" for name, text in DOCS.items()
                                  if word in text.lower()))
        assert json.loads(r.retrieved_docs) == want, (r.query_id, word)
    # the toy metric is a column of every row, and is what its definition says
    assert df["top_doc"].notna().all()
    for r in df.itertuples():
        docs = json.loads(r.retrieved_docs)
        gold = f"docs/{QUESTIONS[int(r.query_id[1:]) - 1][2]}"
        assert r.top_doc == float(bool(docs) and docs[0] == gold)
    assert set(df["top_doc"]) == {0.0, 1.0}  # the toy retriever misses where dense finds


def test_toy_metric_is_summarised_with_a_paired_ci(swept):
    summ, df = swept.summary, swept.results
    for col in ("top_doc", "top_doc_ci_low", "top_doc_ci_high", "top_doc_diff_vs_base",
                "top_doc_diff_vs_base_ci_low", "top_doc_diff_vs_base_ci_high"):
        assert col in summ.columns, col
    means = df.groupby("config_id")["top_doc"].mean()
    base = summ.loc[summ["baseline"], "config_id"].item()
    for s in summ.itertuples():
        assert s.top_doc == pytest.approx(means[s.config_id])
        if s.config_id != base:
            diff = summ.loc[summ.config_id == s.config_id, "top_doc_diff_vs_base"].item()
            assert diff == pytest.approx(means[s.config_id] - means[base])
            lo = summ.loc[summ.config_id == s.config_id, "top_doc_diff_vs_base_ci_low"].item()
            hi = summ.loc[summ.config_id == s.config_id, "top_doc_diff_vs_base_ci_high"].item()
            assert lo <= diff <= hi
    # the printout reads it by name, best first; an undeclared name is an error
    lines: list[str] = []
    print_summary(summ, lines.append, metric="top_doc")
    assert "top_doc [95% CI]" in lines[0]
    with pytest.raises(KeyError, match="not declared"):
        print_summary(summ, lines.append, metric="top_docs")


def test_declared_retrieval_metrics_are_measured_by_a_sweep(swept):
    """Every declared retrieval metric the sweep's k gives (k = 5: no @10 span metric) is a
    row column, and every declared metric with a mean that is a row column is summarised."""
    df, summ = swept.results, swept.summary
    k5 = [n for n in metrics.in_groups("retrieval", "row")
          if not n.startswith("span_") and n not in ("answer@10",)]
    assert [n for n in k5 if n not in df.columns] == []
    assert [n for n in metrics.names(mean=True) if n in df.columns and n not in summ.columns] == []
    assert isinstance(summ, pd.DataFrame) and len(summ) == 3


def test_the_fusion_runs_a_retriever_by_its_registered_name():
    """`FusionRetriever.run` looks the name up in RETRIEVERS; an unknown name is an error."""
    class Index:
        def search_lexical(self, query, k, where):  # noqa: ANN001, ANN201
            return []

    fr = FusionRetriever(FusionConfig(retrievers=("bm25",)), Index())  # type: ignore[arg-type]
    assert fr.run("bm25", "q", None) == []
    with pytest.raises(ValueError, match="unknown retriever 'nope'"):
        fr.run("nope", "q", None)


def test_export_chooses_by_the_declared_direction(tmp_path):
    """`hallucinated` is declared lower-is-better: export picks the lowest rate; ndcg@10 the
    highest; an undeclared column needs `maximize` said outright."""
    from agentic_rag.experiments.export import choose_config

    pd.DataFrame({"config_id": ["c00", "c01", "c02"], "config": ["a", "b", "c"],
                  "hallucinated": [0.30, 0.10, 0.20], "ndcg@10": [0.5, 0.7, 0.9],
                  "latency_p50_ms": [1.0, 2.0, 3.0]}).to_csv(tmp_path / "summary.csv")
    assert choose_config(tmp_path, "hallucinated")["config_id"] == "c01"
    assert choose_config(tmp_path, "ndcg@10")["config_id"] == "c02"
    with pytest.raises(ValueError, match="not declared"):
        choose_config(tmp_path, "latency_p50_ms")
    assert choose_config(tmp_path, "latency_p50_ms", maximize=False)["config_id"] == "c00"


def test_metric_groups_are_the_sweep_spec_groups():
    """A declaration's group is a `metrics` entry of a sweep spec (or `row`), and the ragas
    declarations are the columns the ragas scorer writes."""
    from typing import get_args

    from agentic_rag.evaluation.ragas_metrics import LLM_METRICS
    from agentic_rag.experiments.spec import MetricGroup

    assert set(metrics.GROUPS) == {"row", *get_args(MetricGroup)}
    assert set(metrics.in_groups("ragas")) == {f"ragas_{n}" for n in LLM_METRICS}
    assert all(metrics.metric(n).llm for n in metrics.in_groups("answers", "hallucination",
                                                                "agent", "ragas"))
