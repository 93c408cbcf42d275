"""Reliability: LLM faults, injected by a proxy in front of the REAL llama.cpp server
(SmolLM2-135M). Every fault is retried with backoff; when the retries run out a typed
`LLMError` is raised; a sweep with LLM metrics finishes, records each failure and its
summary has no NaN."""

from __future__ import annotations

import json
import math

import pytest

from agentic_rag.config_llm import LLMConfig
from agentic_rag.llm.client import OpenAIChatModel, schema_errors
from agentic_rag.llm.types import LLMError

from .faultproxy import FaultProxy

pytestmark = [pytest.mark.reliability, pytest.mark.slow, pytest.mark.llm]

SCHEMA = {"type": "object", "properties": {"intent": {"type": "string", "enum": ["fact", "code"]}},
          "required": ["intent"]}
MESSAGES = [{"role": "user", "content": "Is 'show me a python loop' about code or a fact? "
             "Answer in JSON."}]

# fault → the LLMError kind once retries are exhausted
FAULT_KINDS = {"timeout": "transport", "429": "transport", "500": "transport",
               "503": "transport", "reset": "transport", "truncated": "transport",
               "malformed_json": "malformed", "not_completion": "malformed",
               "ignore_schema": "malformed"}


@pytest.fixture(scope="module")
def proxy(llm_upstream_url):
    with FaultProxy(llm_upstream_url.removesuffix("/v1"), hang_s=30) as p:
        yield p


def chat_model(proxy: FaultProxy, sleeps: list, retries: int = 2,
               timeout_s: float = 60.0) -> OpenAIChatModel:
    cfg = LLMConfig(max_retries=retries, timeout_s=timeout_s, max_tokens=16, cache=False)
    return OpenAIChatModel(cfg, base_url=proxy.url, sleep=sleeps.append)


@pytest.mark.parametrize("fault", list(FAULT_KINDS))
def test_fault_once_is_retried_then_succeeds(proxy, fault, record_property):
    sleeps: list[float] = []
    proxy.plan([fault])
    n0 = proxy.injected
    # the injected hang (30 s) must outlast the client's timeout, and the retry must still
    # reach the real server within it: 4 s failed once with the machine busy (a second LLM
    # job on the 2 cores), 15 s leaves room and stays under the hang
    timeout = 15.0 if fault == "timeout" else 60.0
    reply = chat_model(proxy, sleeps, timeout_s=timeout).chat(MESSAGES, json_schema=SCHEMA)
    assert reply.attempts == 2 and sleeps == [1.0]
    assert schema_errors(json.loads(reply.content), SCHEMA) == []
    record_property("llm_faults_injected", proxy.injected - n0)


@pytest.mark.parametrize("fault", list(FAULT_KINDS))
def test_persistent_fault_raises_typed_error_after_backoff(proxy, fault, record_property):
    sleeps: list[float] = []
    proxy.plan([fault] * 3)
    n0 = proxy.injected
    with pytest.raises(LLMError) as exc:
        chat_model(proxy, sleeps, timeout_s=2.0 if fault == "timeout" else 60.0).chat(
            MESSAGES, json_schema=SCHEMA)
    assert exc.value.kind == FAULT_KINDS[fault] and exc.value.attempts == 3, str(exc.value)
    assert sleeps == [1.0, 2.0]  # exponential backoff between the attempts
    assert "failed after 3 attempts" in str(exc.value)
    record_property("llm_faults_injected", proxy.injected - n0)


@pytest.mark.parametrize("fault", ["400", "401"])
def test_refused_request_is_not_retried(proxy, fault, record_property):
    sleeps: list[float] = []
    proxy.plan([fault, "pass"])
    with pytest.raises(LLMError) as exc:
        chat_model(proxy, sleeps).chat(MESSAGES)
    assert exc.value.kind == "refused" and exc.value.attempts == 1 and sleeps == []
    assert f"HTTP {fault}" in str(exc.value)
    proxy.plan([])
    record_property("llm_faults_injected", 1)


def test_server_side_error_on_a_bad_request_is_typed(proxy):
    """llama.cpp answers a request it cannot handle (unknown role) with a 500: retried, then
    a typed transport error, never an exception from inside the client."""
    sleeps: list[float] = []
    proxy.plan([])
    with pytest.raises(LLMError) as exc:
        chat_model(proxy, sleeps, retries=1).chat([{"role": "wizard", "content": "hi"}])
    assert exc.value.attempts == 2 and sleeps == [1.0]


def test_schema_errors_subset():
    assert schema_errors({"intent": "code"}, SCHEMA) == []
    assert schema_errors({"intent": "poem"}, SCHEMA) == ["$.intent: 'poem' not one of ['fact', 'code']"]
    assert schema_errors({}, SCHEMA) == ["$: missing 'intent'"]
    assert schema_errors([1], SCHEMA) == ["$: expected object, got list"]
    assert schema_errors(True, {"type": "integer"}) == ["$: expected integer, got bool"]
    assert schema_errors({"a": [1, "x"]}, {"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "integer"}}}}) == ["$.a[1]: expected integer, got str"]


# ---- a sweep through the faulty proxy ---------------------------------------------------------
SENTINEL = "sk-reliability-SENTINEL-7f3a9c1e"
KEY_ENV = "AGENTIC_RAG_RELIABILITY_KEY"


def local_dataset(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    facts = {"fees.md": "# Fees\n\nThe monthly maintenance fee of the Blue account is $20.\n",
             "cards.md": "# Cards\n\nA locked card is unlocked in the app under Card settings.\n",
             "wires.md": "# Wires\n\nAn international wire transfer costs $45 per transfer.\n",
             "hours.md": "# Hours\n\nBranches open at 9 am and close at 5 pm on weekdays.\n"}
    for name, text in facts.items():
        (docs / name).write_text(text)
    qs = [("q1", "What is the monthly maintenance fee of the Blue account?", "$20", "fees.md"),
          ("q2", "How do I unlock a locked card?", "in the app", "cards.md"),
          ("q3", "How much does an international wire cost?", "$45", "wires.md"),
          ("q4", "When do branches open?", "9 am", "hours.md"),
          ("q5", "When do branches close?", "5 pm", "hours.md")]
    q = tmp_path / "questions.jsonl"
    q.write_text("".join(json.dumps({"id": i, "question": t, "answer": a, "doc_ids": [f"docs/{d}"]})
                         + "\n" for i, t, a, d in qs))
    return docs, q


@pytest.fixture(scope="module")
def faulty_sweep(tmp_path_factory, proxy, minilm):
    """One config × 5 queries, LLM answers for all 5, through the proxy: q1 fails twice (500,
    reset → recorded failure), q2 once (429 → retried), q3 twice (truncated, 503 →
    failure), q4 once (malformed JSON → retried), q5 clean. (Timeouts are covered above:
    a client timeout leaves the single-slot local server busy with the abandoned request.)"""
    from agentic_rag.experiments.runner import run_sweep
    from agentic_rag.experiments.spec import SweepSpec

    tmp = tmp_path_factory.mktemp("faulty-sweep")
    docs, questions = local_dataset(tmp)
    spec = SweepSpec.model_validate({
        "name": "faults", "dataset": {"name": "local", "docs": str(docs),
                                      "questions": str(questions), "split": "all", "n": None},
        "base": {"llm": {"base_url": proxy.url, "api_key_env": KEY_ENV, "max_retries": 1,
                         "timeout_s": 120.0, "max_tokens": 12, "cache": True},
                 "context": {"max_tokens": 100}},
        "metrics": ["retrieval", "answers"], "llm_sample": 5})
    proxy.plan(["500", "reset", "429", "pass", "truncated", "503", "malformed_json", "pass",
                "pass"])
    n0 = proxy.injected
    logs: list[str] = []
    mp = pytest.MonkeyPatch()
    mp.setenv(KEY_ENV, SENTINEL)
    try:
        res = run_sweep(spec, tmp / "runs", tmp / "cache", progress=False, log=logs.append)
    finally:
        mp.undo()
    return {"res": res, "logs": logs, "injected": proxy.injected - n0, "tmp": tmp,
            "auth": list(proxy.auth)}


def test_sweep_finishes_and_records_llm_failures(faulty_sweep, record_property):
    res = faulty_sweep["res"]
    df = res.results
    assert len(df) == 5
    failed = df[df["error"].notna()]
    assert sorted(failed["query_id"]) == ["q1", "q3"], failed["error"].tolist()
    assert all(e.startswith("llm transport:") for e in failed["error"])
    ok = df[df["error"].isna()]
    assert ok["answer"].notna().all() and (ok["llm_prompt_tokens"] > 0).all()
    s = res.summary.iloc[0]
    assert s["failures"] == 2 and s["n"] == 5
    record_property("llm_faults_injected", faulty_sweep["injected"])
    record_property("sweep_llm_failures_recorded", int(s["failures"]))
    csv = (res.run_dir / "summary.csv").read_text()
    assert "failures" in csv.splitlines()[0]


def test_sweep_summary_has_no_nan(faulty_sweep):
    summary = faulty_sweep["res"].summary
    numeric = summary.select_dtypes("number")
    nan_cols = [c for c in numeric.columns if numeric[c].isna().any()]
    assert not nan_cols, nan_cols
    for m in ("ndcg@10", "token_f1", "exact_match"):
        assert not math.isnan(float(summary.iloc[0][m]))


def test_all_llm_calls_failing_sweep_still_finishes(tmp_path, proxy, minilm):
    from agentic_rag.experiments.runner import run_sweep
    from agentic_rag.experiments.spec import SweepSpec

    docs, questions = local_dataset(tmp_path)
    spec = SweepSpec.model_validate({
        "name": "down", "dataset": {"name": "local", "docs": str(docs),
                                    "questions": str(questions), "split": "all", "n": 3},
        "base": {"llm": {"base_url": proxy.url, "max_retries": 1, "timeout_s": 120.0,
                         "max_tokens": 8, "cache": False}},
        "metrics": ["retrieval", "answers"], "llm_sample": 3})
    proxy.plan([])
    proxy.default = "503"
    try:
        res = run_sweep(spec, tmp_path / "runs", tmp_path / "cache", progress=False,
                        log=lambda *_: None)
    finally:
        proxy.default = "pass"
    s = res.summary.iloc[0]
    assert s["failures"] == 3
    numeric = res.summary.select_dtypes("number")
    assert not [c for c in numeric.columns if numeric[c].isna().any()]


def test_api_key_value_never_written(faulty_sweep, record_property):
    """The sentinel key was sent to the server (so it was live), yet no run folder, exported
    config, cache, index or log line contains it."""
    from agentic_rag.experiments.export import export_config

    assert any(SENTINEL in a for a in faulty_sweep["auth"])
    tmp = faulty_sweep["tmp"]
    export_config(faulty_sweep["res"].run_dir, tmp / "exported.yaml", metric="ndcg@10")
    faulty_sweep["res"].spec.base.save(tmp / "pipeline.yaml")
    leaks, scanned = [], 0
    for path in tmp.rglob("*"):
        if path.is_file():
            scanned += 1
            if SENTINEL.encode() in path.read_bytes():
                leaks.append(str(path.relative_to(tmp)))
    assert scanned > 10 and not leaks, leaks
    assert not [ln for ln in faulty_sweep["logs"] if SENTINEL in ln]
    assert KEY_ENV in (tmp / "pipeline.yaml").read_text()  # the env var NAME is what is stored
    record_property("files_scanned_for_key", scanned)
