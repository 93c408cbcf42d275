"""The row cache: a rerun of a finished sweep reads its rows instead of recomputing them.

Small and fast: a local corpus of a few Markdown files and a deterministic hashing
embedder (no model load); the real index, pipeline, metrics and summary otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import numpy as np
import pandas as pd
import pytest

from agentic_rag.experiments import measure as evaluate
from agentic_rag.experiments import plan as execute
from agentic_rag.experiments import row_cache, summary
from agentic_rag.experiments.row_cache import RowCache, code_version, source_digest
from agentic_rag.experiments.runner import run_sweep
from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.experiments.stats import bootstrap_ci
from agentic_rag.llm.types import ChatReply, LLMError

from .fakes import BANK_DOCS, BANK_QUESTIONS, HashingEmbedder, local_corpus

DOCS = BANK_DOCS
QUESTIONS = BANK_QUESTIONS[:5]
GRID = {"chunking.max_tokens": [64, 128], "fusion.retrievers": [["dense"], ["dense", "bm25"]]}


@pytest.fixture
def sweep(tmp_path, monkeypatch):
    """`sweep(**spec_fields)` runs a small sweep in `tmp_path` and returns the SweepResult;
    `sweep.opened` lists the configs an index was opened for, run after run."""
    docs, qs = local_corpus(tmp_path, DOCS, QUESTIONS)
    monkeypatch.setattr(execute, "make_embedder", lambda config, cache_dir=None: HashingEmbedder())
    opened: list = []
    real_open = execute.open_index

    def counting_open(cfg, *a, **kw):
        opened.append(cfg)
        return real_open(cfg, *a, **kw)

    monkeypatch.setattr(execute, "open_index", counting_open)

    def make_spec(**fields) -> SweepSpec:
        return SweepSpec.model_validate({
            "name": "tiny", "grid": GRID, "metrics": ["retrieval"], "k": 5,
            "dataset": {"name": "local", "docs": str(docs), "questions": str(qs),
                        "split": "all", "n": None}, **fields})

    def run(use_cache: bool = True, **fields):
        return run_sweep(make_spec(**fields), tmp_path / "runs", tmp_path / "cache",
                         progress=False, log=lambda *_: None,
                         **({} if use_cache else {"use_cache": False}))

    run.spec = make_spec
    run.opened = opened
    run.tmp = tmp_path
    return run


def _meta(res) -> dict:
    return json.loads((res.run_dir / "meta.json").read_text())


def test_rerun_reads_every_row_and_opens_no_index(sweep, monkeypatch):
    first = sweep()
    assert len(first.results) == 4 * 5 and first.rows_from_cache == 0
    assert len(sweep.opened) == 2  # two chunk sizes

    def forbidden(*_a, **_kw):
        raise AssertionError("called by a rerun of a finished sweep")

    monkeypatch.setattr(execute, "open_index", forbidden)
    monkeypatch.setattr(execute, "AgenticIndex", forbidden)
    monkeypatch.setattr(execute, "Pipeline", forbidden)
    monkeypatch.setattr(summary, "summarize", forbidden)  # the same rows: the summary is stored
    second = sweep()
    assert second.run_dir != first.run_dir  # a run folder of its own, written in full
    pd.testing.assert_frame_equal(first.results, second.results, check_exact=True)
    pd.testing.assert_frame_equal(first.summary, second.summary, check_exact=True)
    assert second.rows_from_cache == 20 and _meta(second)["rows_from_cache"] == 20
    assert _meta(first)["rows_from_cache"] == 0
    for name in ("results.parquet", "summary.csv", "rows.jsonl"):
        a, b = (r.run_dir / name for r in (first, second))
        assert a.read_bytes() == b.read_bytes(), name
    assert json.loads((second.run_dir / "status.json").read_text())["complete"] is True


def test_changed_config_value_recomputes_only_its_rows(sweep):
    first = sweep()
    sweep.opened.clear()
    second = sweep(grid={**GRID, "chunking.max_tokens": [64, 96]})
    # the two chunk-128 configs changed; the two chunk-64 ones did not
    assert [c.chunking.max_tokens for c in sweep.opened] == [96]
    assert second.rows_from_cache == 2 * 5
    same = second.results[second.results["chunking.max_tokens"] == 64]
    before = first.results[first.results["chunking.max_tokens"] == 64]
    pd.testing.assert_frame_equal(same.reset_index(drop=True), before.reset_index(drop=True),
                                  check_exact=True)  # recorded latencies included
    sweep.opened.clear()
    third = sweep(base={"fusion": {"rrf_k": 10}})  # a setting every config shares
    assert third.rows_from_cache == 0 and len(sweep.opened) == 2


def test_code_version_change_invalidates(sweep, monkeypatch):
    sweep()
    monkeypatch.setattr(row_cache, "code_version", lambda: "edited")
    assert sweep().rows_from_cache == 0


def test_code_version_is_a_digest_of_the_sources(tmp_path):
    assert code_version() == source_digest(row_cache.PACKAGE_ROOT)
    (tmp_path / "a.py").write_text("x = 1\n")
    before = source_digest(tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")
    assert source_digest(tmp_path) != before


def test_llm_model_identity_invalidates(sweep):
    gguf = sweep.tmp / "model.gguf"
    gguf.write_bytes(b"GGUF weights v1")
    base = {"llm": {"server": {"model": str(gguf)}}}
    sweep(base=base)
    assert sweep(base=base).rows_from_cache == 20
    gguf.write_bytes(b"GGUF weights v2, same path")  # the config does not change
    assert sweep(base=base).rows_from_cache == 0
    assert sweep(base={"llm": {"server": {"model": "smollm2-135m"}}}).rows_from_cache == 0
    assert sweep(base={"llm": {"model": "another"}}).rows_from_cache == 0


def test_failed_rows_are_recomputed(sweep, monkeypatch):
    calls: list[str] = []
    state = {"down": True, "fail": None}  # the first sampled query fails, in the first run

    def flaky(chat, question, context, max_tokens=64):
        calls.append(question)
        if state["down"]:
            state["fail"] = state["fail"] or question
            if question == state["fail"]:
                raise LLMError("connection reset", "transport", 1)
        return ChatReply(content="$20", prompt_tokens=3, completion_tokens=1)

    monkeypatch.setattr(evaluate, "generate_answer", flaky)
    llm = {"base": {"llm": {"base_url": "http://127.0.0.1:9/v1"}},
           "metrics": ["retrieval", "answers"], "llm_sample": 2}
    first = sweep(**llm)
    errors = first.results["error"].notna()
    assert errors.sum() == 4 and len(calls) == 4 * 2  # one query failed under every config
    state["down"] = False
    calls.clear()
    sweep.opened.clear()
    second = sweep(**llm)
    assert second.rows_from_cache == 20 - 4
    assert len(calls) == 4 and second.results["error"].isna().all()
    assert (second.summary["failures"] == 0).all()  # new rows: summarized afresh
    assert len(sweep.opened) == 2
    ok = ~errors
    pd.testing.assert_frame_equal(second.results[ok].drop(columns=["error"]),
                                  first.results[ok].drop(columns=["error"]), check_exact=True)
    assert sweep(**llm).rows_from_cache == 20


def test_no_cache_recomputes_and_refreshes(sweep):
    first = sweep()
    sweep.opened.clear()
    fresh = sweep(use_cache=False)
    assert fresh.rows_from_cache == 0 and len(sweep.opened) == 2
    quality = [c for c in first.results.columns if not c.startswith("latency_")]
    pd.testing.assert_frame_equal(fresh.results[quality], first.results[quality],
                                  check_exact=True)
    again = sweep()  # the fresh rows replaced the stored ones
    pd.testing.assert_frame_equal(again.results, fresh.results, check_exact=True)


def test_cli_sweep_cache_flags(sweep):
    from typer.testing import CliRunner

    from agentic_rag.cli.main import app

    path = sweep.tmp / "tiny.yaml"
    sweep.spec().save(path)
    base = ["sweep", str(path), "--runs-dir", str(sweep.tmp / "runs"), "--cache-dir",
            str(sweep.tmp / "cache"), "--no-plots"]

    def from_cache(*flags: str) -> int:
        res = CliRunner().invoke(app, base + list(flags))
        assert res.exit_code == 0, res.output
        run_dir = sorted((sweep.tmp / "runs").iterdir())[-1]
        return json.loads((run_dir / "meta.json").read_text())["rows_from_cache"]

    assert from_cache() == 0
    assert from_cache() == 20
    assert from_cache("--no-cache") == 0
    assert from_cache("--row-cache", str(sweep.tmp / "other.sqlite")) == 0
    assert (sweep.tmp / "cache" / "rows.sqlite").exists() and (sweep.tmp / "other.sqlite").exists()


def test_summary_shortcuts_equal_the_plain_computation():
    """The summary's speed-ups change no digit: bootstrap draws reused per (n, seed), one
    groupby for all numeric columns."""
    v = np.random.default_rng(3).random(37)
    means = v[np.random.default_rng(0).integers(0, 37, size=(2000, 37))].mean(axis=1)
    for _ in range(2):  # the second call reuses the draws
        assert bootstrap_ci(list(v)) == (float(np.quantile(means, 0.025)),
                                         float(np.quantile(means, 0.975)))
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"query_id": rng.choice(["q1", "q2", "q3"], 30),
                       "a": np.where(rng.random(30) < 0.2, np.nan, rng.random(30)),
                       "b": rng.integers(0, 5, 30), "c": [None] * 30})
    got = summary.per_query_means(df, ["a", "b", "c"])
    for c in ("a", "b", "c"):
        pd.testing.assert_series_equal(got[c], df.groupby("query_id")[c].mean().astype(float),
                                       check_exact=True)


def test_failed_detects_every_failure_field():
    assert not evaluate.failed({"error": None, "agent_error": None, "ndcg@10": 1.0})
    assert evaluate.failed({"error": "llm transport: reset"})
    assert evaluate.failed({"error": None, "agent_error": "invalid action"})
    assert evaluate.failed({"error": None, "ragas_faithfulness_error": "TimeoutError"})


WRITER = """
import sys
from agentic_rag.experiments.row_cache import RowCache
cache = RowCache(sys.argv[1])
for n in range(300):
    cache.put(f"{sys.argv[2]}-{n}", '{"n": %d, "who": "%s"}' % (n, sys.argv[2]))
    cache.put(f"shared-{n}", '{"n": %d}' % n)
    assert cache.get_many([f"shared-{n}"])[f"shared-{n}"] == {"n": n}
"""


def test_two_processes_and_threads_write_one_cache(tmp_path):
    path = tmp_path / "rows.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), who])
             for who in ("a", "b")]
    cache = RowCache(path)
    errors: list[BaseException] = []

    def write(who: str) -> None:
        try:
            for n in range(300):
                cache.put(f"{who}-{n}", json.dumps({"n": n, "who": who}))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in ("t1", "t2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.wait(timeout=120) for p in procs] == [0, 0] and not errors
    keys = [f"{w}-{n}" for w in ("a", "b", "t1", "t2") for n in range(300)]
    got = cache.get_many(keys + [f"shared-{n}" for n in range(300)])
    assert len(got) == 1500
    assert all(got[f"{w}-{n}"] == {"n": n, "who": w} for w in ("a", "t2") for n in range(300))
    cache.close()
    import sqlite3

    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
