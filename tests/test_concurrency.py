"""Concurrent LLM evaluation (`llm.max_concurrency`, `llm.map_calls`), the call meter and the
`--max-llm-calls` cap.

Fast tests run a real sweep (real index, pipeline, HTTP client, retries, reply cache) on a
few Markdown files with the hashing embedder, against a local OpenAI-compatible stub whose
replies depend on the request and arrive after random delays, so calls in flight finish out
of order. The `llm` tests run the same against the real llama.cpp server with SmolLM2.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from argparse import Namespace
from pathlib import Path

import pandas as pd
import pytest

from agentic_rag.config_llm import LLMConfig
from agentic_rag.experiments import plan as execute
from agentic_rag.experiments.llm_cost import CONSTANTS, Progress, measured_rates, speed_factor
from agentic_rag.experiments.runner import run_sweep
from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.calls import CallMeter, LLMCallCap, MeteredChatModel, map_calls
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.llm.types import ChatReply, LLMError
from agentic_rag.studies.agent_eval.run import _agent_pass

from .fakes import HashingEmbedder, local_corpus
from .faultproxy import StubChatServer

DOCS = {
    "fees.md": "# Fees\n\nThe monthly maintenance fee of the Blue account is $20.",
    "cards.md": "# Cards\n\nA locked card is unlocked in the app under Card settings.",
    "wires.md": "# Wires\n\nAn international wire transfer costs $45 per transfer.",
    "hours.md": "# Hours\n\nBranches open at 9 am and close at 5 pm on weekdays.",
    "loans.md": "# Loans\n\nPersonal loans run from 12 to 60 months at a fixed rate.",
}
QUESTIONS = [("q1", "What is the monthly maintenance fee of the Blue account?", "fees.md", "$20"),
             ("q2", "How do I unlock a locked card?", "cards.md", "in the app"),
             ("q3", "How much does an international wire cost?", "wires.md", "$45"),
             ("q4", "When do branches open?", "hours.md", "9 am")]
GRID = {"fusion.retrievers": [["dense"], ["dense", "bm25"]]}


class EchoStub(StubChatServer):
    """Replies that depend on the request (a digest of its messages; for a JSON schema, its
    booleans from the digest's parity), after a random 0-60 ms delay; a request naming
    `always_429` is refused with 429 every time, one naming `once_429` the first time only.
    `requests` counts the requests served."""

    def __init__(self, always_429: str | None = None, once_429: str | None = None) -> None:
        super().__init__()
        self.always_429, self.once_429 = always_429, once_429
        self.requests = 0
        self.seen: set[str] = set()
        self.lock = threading.Lock()
        self.rng = random.Random(0)

    def reply(self, req: dict) -> tuple[int, dict]:
        text = json.dumps(req.get("messages"), sort_keys=True)
        with self.lock:
            self.requests += 1
            delay = self.rng.uniform(0, 0.06)
            first = text not in self.seen
            self.seen.add(text)
        time.sleep(delay)
        if (self.always_429 and self.always_429 in text) or \
                (self.once_429 and self.once_429 in text and first):
            return 429, {"error": {"message": "rate limited", "type": "rate_limit"}}
        h = int(hashlib.sha256(text.encode()).hexdigest(), 16)
        schema = (req.get("response_format") or {}).get("schema")
        if req.get("response_format"):
            props = (schema or {}).get("properties", {})
            value = {k: bool(h % 2) if v.get("type") == "boolean" else self.sample(v)
                     for k, v in props.items()}
            content = json.dumps(value)
        else:
            # 7 x 100,000 answers: two prompts of a sweep (their paths change run to run)
            # collided once in ~250 runs with 7 x 1,000 (test_sweep_rows_...: 7 == 8)
            content = f"It is {h % 100_000} ({h % 7} days)."
        choice = {"index": 0, "finish_reason": "stop",
                  "message": {"role": "assistant", "content": content}}
        if req.get("logprobs"):  # the graded judge: yes/no with P(yes) from the digest
            p_yes = (h % 97 + 1) / 99
            top = [{"token": "yes", "logprob": math.log(p_yes), "bytes": None},
                   {"token": "no", "logprob": math.log(1 - p_yes), "bytes": None}]
            content = "yes" if p_yes >= 0.5 else "no"
            choice["message"]["content"] = content
            choice["logprobs"] = {"content": [{**top[content == "no"], "top_logprobs": top}]}
        return 200, {"id": "stub", "object": "chat.completion", "created": 0, "model": "local",
                     "choices": [choice],
                     "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": 8,
                               "total_tokens": len(text) // 4 + 8}}


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    docs, qs = local_corpus(tmp_path, DOCS, QUESTIONS)
    monkeypatch.setattr(execute, "make_embedder", lambda config, cache_dir=None: HashingEmbedder())
    return docs, qs


def make_spec(corpus, base_url: str, grid: dict | None = None, n: int | None = None,
              context_tokens: int = 120, **llm) -> SweepSpec:
    docs, qs = corpus
    return SweepSpec.model_validate({
        "name": "conc", "grid": GRID if grid is None else grid, "k": 5,
        "llm_sample": len(QUESTIONS), "metrics": ["retrieval", "answers", "hallucination"],
        "dataset": {"name": "local", "docs": str(docs), "questions": str(qs), "split": "all",
                    "n": n},
        "base": {"llm": {"base_url": base_url, "max_retries": 1, "timeout_s": 120.0,
                         "max_tokens": 24, **llm}, "context": {"max_tokens": context_tokens},
                 # the stub's answers share no words with the documents: judge alone
                 "agent": {"support": {"detector": "graded_judge"}}}})


def sweep(spec: SweepSpec, where: Path, conc: int, meter: CallMeter | None = None,
          use_cache: bool = True, logs: list | None = None):
    return run_sweep(spec, where / "runs", where / "cache", progress=False,
                     log=(logs.append if logs is not None else lambda *_: None),
                     max_concurrency=conc, meter=meter, use_cache=use_cache)


def rows_without_latency(run_dir: Path) -> list[str]:
    """rows.jsonl, line by line in file order, each row re-serialised (key order kept)
    without its latency columns: what must be byte-identical at any concurrency."""
    out = []
    for line in (run_dir / "rows.jsonl").read_text().splitlines():
        row = json.loads(line)
        out.append(json.dumps({k: v for k, v in row.items() if not k.startswith("latency_")}))
    return out


# ---- map_calls, the meter -----------------------------------------------------------------
def test_map_calls_draws_a_generator_in_the_callers_thread_and_keeps_order():
    main, drawn = threading.get_ident(), []

    def items():
        for i in range(12):
            drawn.append(threading.get_ident())
            yield i

    def slow(i: int) -> int:
        time.sleep(0.003 * ((7 * i) % 5))  # finish out of order
        return i * i

    assert list(map_calls(slow, items(), 4)) == [(i, i * i) for i in range(12)]
    assert set(drawn) == {main}


def test_map_calls_cancels_what_has_not_started_when_a_call_raises():
    started = []

    def fn(i: int) -> int:
        started.append(i)
        if i == 1:
            raise LLMCallCap("cap")
        time.sleep(0.05)
        return i

    with pytest.raises(LLMCallCap):
        list(map_calls(fn, range(100), 2))
    assert len(started) <= 4  # the read-ahead window (2 × 2), not the 100 items


class _Scripted:
    """A chat model: replies from `cached` keys come back as cache hits."""

    model_id = "scripted"

    def __init__(self, cached: set[str] = frozenset()) -> None:
        self.cached = cached

    def chat(self, messages, **kw) -> ChatReply:  # noqa: ANN001, ANN003
        text = messages[-1]["content"]
        if text == "fail":
            raise LLMError("HTTP 429", "transport", 2)
        time.sleep(0.01)
        return ChatReply(content=text, prompt_tokens=10, completion_tokens=2, latency_s=0.01,
                         cached=text in self.cached)


def test_meter_counts_new_calls_and_cache_hits_in_one_place():
    meter = CallMeter()
    chat = MeteredChatModel(_Scripted({"old"}), meter)
    for text in ("new", "old", "new2"):
        chat.chat([{"role": "user", "content": text}])
    with pytest.raises(LLMError):
        chat.chat([{"role": "user", "content": "fail"}])
    assert (meter.calls, meter.cached, meter.prompt_tokens) == (3, 1, 20)
    assert chat.model_id == "scripted"


def test_cap_holds_with_calls_in_flight_and_spares_nothing_made():
    meter = CallMeter(cap=5)
    chat = MeteredChatModel(_Scripted(), meter)
    made, refused = [], []

    def call(i: int) -> None:
        try:
            made.append(chat.chat([{"role": "user", "content": f"q{i}"}]))
        except LLMCallCap:
            refused.append(i)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == meter.calls == 5 and len(refused) == 11
    with pytest.raises(LLMCallCap, match="cap of 5 new LLM calls"):
        chat.chat([{"role": "user", "content": "one more"}])


def test_metered_model_is_made_on_first_use_only():
    made = []
    chat = MeteredChatModel(lambda: made.append(1) or _Scripted(), CallMeter())
    assert made == []
    chat.chat([{"role": "user", "content": "x"}])
    chat.chat([{"role": "user", "content": "y"}])
    assert made == [1]


# ---- rates, estimate, progress ------------------------------------------------------------
def test_rates_are_measured_in_the_reply_cache_else_the_constants(tmp_path):
    cache = ChatCache(tmp_path / "llm.sqlite")
    assert measured_rates([tmp_path / "llm.sqlite", tmp_path / "absent.sqlite"]) is CONSTANTS
    rng = random.Random(1)
    for n in range(40):  # every reply took 2.5 times the constants' time
        p, c = rng.randint(100, 900), rng.choice([1, 1, 30])
        cache.put(f"k{n}", ChatReply(content="x", prompt_tokens=p, completion_tokens=c,
                                     latency_s=2.5 * CONSTANTS.seconds(p, c)))
    rates = measured_rates([tmp_path / "llm.sqlite"])
    assert rates.prompt_per_s == pytest.approx(CONSTANTS.prompt_per_s / 2.5)
    assert rates.completion_per_s == pytest.approx(CONSTANTS.completion_per_s / 2.5)
    assert "40 latest replies" in rates.source and "2.50×" in rates.source
    assert speed_factor([(100, 10, 1.0)] * 5) is None  # too few replies to say


def test_rates_are_measured_on_the_replies_of_the_model_about_to_run(tmp_path):
    """A cache holds replies of several builds and CPU variants: the estimate for one reads
    its own (a fast AMX variant is not charged the time of the zen4 replies before it)."""
    cache = ChatCache(tmp_path / "llm.sqlite")
    zen4, amx = "qwen@abc|build=llama-server 1/zen4|n_ctx=8192", \
        "qwen@abc|build=llama-server 1/sapphirerapids|n_ctx=8192"
    for n in range(30):
        p, c = 400 + n, 20
        cache.put(f"a{n}", ChatReply(content="x", prompt_tokens=p, completion_tokens=c,
                                     latency_s=0.5 * CONSTANTS.seconds(p, c)), amx)
        cache.put(f"z{n}", ChatReply(content="x", prompt_tokens=p, completion_tokens=c,
                                     latency_s=3.0 * CONSTANTS.seconds(p, c)), zen4)
    path = [tmp_path / "llm.sqlite"]
    fast = measured_rates(path, model=amx)
    assert fast.prompt_per_s == pytest.approx(CONSTANTS.prompt_per_s / 0.5)
    assert "30 latest replies of qwen, llama-server 1/sapphirerapids" in fast.source
    assert measured_rates(path, model=zen4).prompt_per_s == pytest.approx(
        CONSTANTS.prompt_per_s / 3.0)
    # without a model: the newest replies of any (the zen4 ones, stored last, and the AMX ones)
    assert measured_rates(path).prompt_per_s < fast.prompt_per_s
    # a model with no replies yet: the constants, saying why
    none = measured_rates(path, model="qwen@abc|build=llama-server 1/icelake")
    assert none.prompt_per_s == CONSTANTS.prompt_per_s and "fewer than 20 replies" in none.source
    # a reply without a model (a cache-only put) is stored but measures nothing
    cache.put("x", ChatReply(content="x", prompt_tokens=9, latency_s=1.0))
    assert len(cache.recent(100, amx)) == 30 and cache.get("x") is not None


def test_progress_reports_done_total_and_eta():
    lines: list[str] = []
    p = Progress(20, lines.append, "rows")
    for _ in range(20):
        p.advance()
    assert len(lines) == 10 and lines[-1].startswith("rows: 20/20") and "ETA 0 s" in lines[-1]


# ---- a sweep over HTTP, concurrent --------------------------------------------------------
@pytest.fixture
def stub():
    s = EchoStub().start()
    yield s
    s.stop()


def test_sweep_rows_are_identical_at_concurrency_1_and_4(corpus, stub, tmp_path):
    spec = make_spec(corpus, stub.base_url)
    m1, m4 = CallMeter(), CallMeter()
    one = sweep(spec, tmp_path / "c1", 1, m1)
    n1 = stub.requests
    four = sweep(spec, tmp_path / "c4", 4, m4)  # its own reply and row caches: every call made
    assert rows_without_latency(one.run_dir) == rows_without_latency(four.run_dir)
    assert m1.calls == m4.calls == n1 == stub.requests - n1 == 2 * 2 * len(QUESTIONS)
    # the replies differ row by row (so equal rows are no accident): the answers, a digest of
    # each prompt; the judge's verdicts are scored, not missing (both verdicts are not certain:
    # P(yes) is a digest too, and 8 rows on one side happen about 1 run in 130)
    assert one.results["answer"].nunique() == len(one.results)
    assert one.results["hallucinated"].notna().all()
    meta = json.loads((four.run_dir / "meta.json").read_text())
    assert meta["llm"]["max_concurrency"] == 4 and meta["llm"]["identity"]


def test_rate_limits_under_concurrency_are_retried_then_recorded_never_scored(corpus, tmp_path):
    """q4's answer call is refused with 429 on every attempt, q2's once: at 4 calls in
    flight, q2 is retried and scored, q4 is a failure in every config, with no score."""
    s = EchoStub(always_429="branches open", once_429="unlock a locked card").start()
    try:
        spec = make_spec(corpus, s.base_url, cache=False)
        four = sweep(spec, tmp_path / "c4", 4)
        s.seen.clear()
        one = sweep(spec, tmp_path / "c1", 1)
    finally:
        s.stop()
    assert rows_without_latency(one.run_dir) == rows_without_latency(four.run_dir)
    df = four.results.set_index(["config_id", "query_id"])
    for cid in ("c00", "c01"):
        err = df.loc[(cid, "q4"), "error"]
        assert err.startswith("llm transport:") and "HTTP 429" in err
        for col in ("answer", "token_f1", "exact_match", "hallucinated"):
            assert df.loc[(cid, "q4"), col] != df.loc[(cid, "q4"), col]  # NaN: not scored
        assert pd.isna(df.loc[(cid, "q2"), "error"]) and df.loc[(cid, "q2"), "answer"]
    s0 = four.summary.set_index("config_id")
    assert (s0["failures"] == 1).all() and (s0["n"] == len(QUESTIONS)).all()


def test_cap_stops_cleanly_and_a_rerun_continues_without_repeating_a_call(corpus, stub,
                                                                          tmp_path):
    spec = make_spec(corpus, stub.base_url)
    full = CallMeter()
    whole = sweep(spec, tmp_path / "whole", 4, full)
    n0 = stub.requests
    logs: list[str] = []
    capped = CallMeter(cap=5)
    with pytest.raises(LLMCallCap, match="cap of 5"):
        sweep(spec, tmp_path / "cut", 4, capped, logs=logs)
    assert capped.calls == 5 == stub.requests - n0
    assert any("unfinished: a rerun resumes it" in line for line in logs)
    assert any(line.startswith("LLM metrics") and "LLM estimate: about 16 calls" in line
               and "the rate constants" in line for line in logs), logs
    [run_dir] = (tmp_path / "cut" / "runs").iterdir()
    written = len((run_dir / "rows.jsonl").read_text().splitlines())
    assert written < 8
    rest = CallMeter()
    res = sweep(spec, tmp_path / "cut", 4, rest)
    assert res.run_dir == run_dir  # resumed the same run folder
    assert capped.calls + rest.calls == full.calls  # no call made twice
    assert rows_without_latency(res.run_dir) == rows_without_latency(whole.run_dir)


def test_a_fresh_machine_resumes_from_the_committed_reply_pack(corpus, stub, tmp_path):
    """A run cut at its cap leaves its replies in the pack; another machine (empty reply and
    row caches, another run folder) finishes the sweep asking only for the calls not made."""
    spec = make_spec(corpus, stub.base_url)
    whole = sweep(spec, tmp_path / "whole", 4, CallMeter())
    packed = spec.model_copy(update={"reply_pack": str(tmp_path / "repo" / "replies.jsonl")})
    with pytest.raises(LLMCallCap):
        sweep(packed, tmp_path / "machine-a", 4, CallMeter(cap=5))
    assert len((tmp_path / "repo" / "replies.jsonl").read_text().splitlines()) == 5
    rest = CallMeter()
    res = sweep(packed, tmp_path / "machine-b", 4, rest)
    assert rest.calls == 2 * 2 * len(QUESTIONS) - 5  # the 5 packed replies are not asked again
    assert rows_without_latency(res.run_dir) == rows_without_latency(whole.run_dir)


def test_a_replay_capped_at_zero_new_calls_reads_the_whole_pack_and_sends_nothing(
        corpus, stub, tmp_path):
    """`--max-llm-calls 0` is a replay: every reply in the pack is read (the cap counts only
    new calls), nothing reaches the endpoint, the rows are the original run's; with part of
    the pack gone it stops cleanly at the first reply it would have to ask for."""
    spec = make_spec(corpus, stub.base_url)
    pack = tmp_path / "repo" / "replies.jsonl"
    packed = spec.model_copy(update={"reply_pack": str(pack)})
    # made one call at a time, so the pack's lines are in the order a sequential run asks
    # (a concurrent run appends them as they finish: its first five lines need not hold the
    # first reply a sequential replay asks for, which made the last assertion flaky)
    whole = sweep(packed, tmp_path / "machine-a", 1, CallMeter())
    n0, calls = stub.requests, 2 * 2 * len(QUESTIONS)
    replay = CallMeter(cap=0)
    res = sweep(packed, tmp_path / "machine-b", 4, replay)
    assert stub.requests == n0 and (replay.calls, replay.cached) == (0, calls)
    assert rows_without_latency(res.run_dir) == rows_without_latency(whole.run_dir)
    pack.write_text("".join(pack.read_text().splitlines(keepends=True)[:5]))
    short = CallMeter(cap=0)
    with pytest.raises(LLMCallCap, match="cap of 0 new LLM calls"):
        sweep(packed, tmp_path / "machine-c", 1, short)
    assert stub.requests == n0 and (short.calls, short.cached) == (0, 5)


def test_claims_llm_protocols_commit_their_replies():
    from agentic_rag.config import RAGConfig
    from agentic_rag.studies.claims.registry import DATASETS, REPLY_PACK, claim_spec, select

    ds = DATASETS["document analysis"]
    for claim in select(["b-answers", "c-boundaries", "b-fusion"]):
        spec = claim_spec(claim, ds, RAGConfig())
        assert spec.reply_pack == (REPLY_PACK if claim.needs_llm else None)
        assert claim_spec(claim, ds, RAGConfig(), smoke=True).reply_pack is None


def test_cli_flags_cap_and_concurrency(corpus, stub, tmp_path):
    from typer.testing import CliRunner

    from agentic_rag.cli.main import app

    path = tmp_path / "conc.yaml"
    make_spec(corpus, stub.base_url).save(path)
    args = ["sweep", str(path), "--runs-dir", str(tmp_path / "runs"), "--cache-dir",
            str(tmp_path / "cache"), "--no-plots", "--max-concurrency", "4"]
    res = CliRunner().invoke(app, [*args, "--max-llm-calls", "3"])
    assert res.exit_code == 0, res.output
    assert "stopped at the cap of 3 new LLM calls" in res.output and "to continue" in res.output
    assert stub.requests == 3
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert stub.requests == 16
    [run_dir] = (tmp_path / "runs").iterdir()
    keys = [(r["config_id"], r["query_id"]) for r in map(
        json.loads, (run_dir / "rows.jsonl").read_text().splitlines())]
    assert len(keys) == len(set(keys)) == 8
    assert json.loads((run_dir / "status.json").read_text())["complete"]


def test_row_cache_key_ignores_the_concurrency(corpus, stub, tmp_path):
    spec = make_spec(corpus, stub.base_url)
    sweep(spec, tmp_path, 1)
    again = sweep(make_spec(corpus, stub.base_url, max_concurrency=4), tmp_path, 4)
    assert again.rows_from_cache == 8


# ---- the agent evaluation's pass ------------------------------------------------------------
def _agent_items() -> dict:
    return {"faq": [{"qid": f"f{i}", "question": q, "judge_question": q, "reference": a,
                     "answers": [a]} for i, (_, q, _, a) in enumerate(QUESTIONS)]}


def _agent_args(tmp_path: Path) -> Namespace:
    return Namespace(datasets=["faq"], split="test", budget_min=None, max_steps=2,
                     no_judge=False, home=str(tmp_path / "home"))


def _lines(path: Path, drop: tuple[str, ...] = ("latency_s", "wall_s", "cached_calls")
           ) -> list[str]:
    """The rows without their timing and cache bookkeeping: `cached_calls` depends on whether
    an identical call (the same question's first turn in another cell) finished first."""
    return [json.dumps({k: v for k, v in json.loads(x).items() if k not in drop})
            for x in path.read_text().splitlines()]


def test_agent_pass_is_identical_at_concurrency_1_and_4_and_stops_at_the_cap(stub, tmp_path):
    cells = ["closed_book:native", "closed_book:json"]

    def run(where: Path, conc: int, meter: CallMeter) -> Path:
        where.mkdir(parents=True, exist_ok=True)
        chat = MeteredChatModel(OpenAIChatModel(
            LLMConfig(base_url=stub.base_url, max_retries=1, max_tokens=24),
            cache=ChatCache(where / "llm.sqlite")), meter)
        _agent_pass(_agent_args(where), cells, _agent_items(), {}, chat, where / "rows.jsonl",
                    where / "judgements.jsonl", conc, meter)
        return where

    one, four = run(tmp_path / "a1", 1, CallMeter()), run(tmp_path / "a4", 4, CallMeter())
    for name in ("rows.jsonl", "judgements.jsonl"):
        assert _lines(one / name) == _lines(four / name)
    assert len(_lines(one / "rows.jsonl")) == 8
    capped = CallMeter(cap=3)
    with pytest.raises(LLMCallCap):
        run(tmp_path / "cut", 4, capped)
    rest = CallMeter()
    run(tmp_path / "cut", 4, rest)
    for name in ("rows.jsonl", "judgements.jsonl"):
        assert _lines(tmp_path / "cut" / name) == _lines(one / name)


# ---- the real llama.cpp server (SmolLM2) ------------------------------------------------------
@pytest.fixture(scope="module")
def smol_one_thread(tmp_path_factory):
    """The real llama.cpp server with SmolLM2-135M on a free port, one thread: with two, each
    token waits on thread barriers, which cost seconds per token when other jobs share the
    CPU (a 16-token reply took 12 min that way while this test was written)."""
    from agentic_rag.config_llm import ServerConfig
    from agentic_rag.llm.server import LlamaServer

    from .fakes import free_port

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("N_UBATCH", "1")  # as conftest.smol_server: this build's batched decoding
        # binary=None: llama-cpp-python's server with one-token micro-batches, whose replies do
        # not depend on which prompt came before. The default C++ llama-server reuses the
        # previous prompt's cached prefix and evaluates only the rest in one batch, so a
        # logprob-derived score depends on request order (llama.cpp documents this for
        # `cache_prompt`); seen in CI as support 0.5675 vs 0.5739 for one answer at 1 vs 4
        # calls in flight. docs/experiments.md ("Same rows at any concurrency") says so.
        srv = LlamaServer(ServerConfig(model="smollm2-135m", port=free_port(), n_ctx=2048,
                                       n_threads=1, binary=None),
                          home=tmp_path_factory.mktemp("smol1"))
        srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.mark.llm
def test_real_server_rows_identical_at_any_concurrency_resumable_and_cached(
        corpus, smol_one_thread, tmp_path, monkeypatch, record_property):
    """(a) concurrency 1 and 4, each with its own reply cache (every call reaches the server):
    identical rows; (b) a run interrupted from inside an LLM call resumes from the calls it
    made, no row lost or duplicated, no call made twice; (c) a rerun is identical through
    the reply cache, with no call to the server. Small: one config, 3 questions, 6 calls
    per run (a generous client timeout: the server may share the CPU with other jobs)."""
    spec = make_spec(corpus, smol_one_thread.base_url, grid={}, n=3, context_tokens=60,
                     timeout_s=900.0)
    calls = 2 * 3
    m1, m4 = CallMeter(), CallMeter()
    one = sweep(spec, tmp_path / "c1", 1, m1)
    four = sweep(spec, tmp_path / "c4", 4, m4)
    assert m1.calls == m4.calls == calls and m1.cached == m4.cached == 0
    assert rows_without_latency(one.run_dir) == rows_without_latency(four.run_dir)
    assert one.results["answer"].notna().all()

    # (b) KeyboardInterrupt from inside the first judge call (its row's answer is made); the
    # judge is the graded one (it asks for log-probabilities)
    real_chat = OpenAIChatModel.chat

    def interrupted(self, messages, **kw):  # noqa: ANN001, ANN003
        if kw.get("top_logprobs") or kw.get("json_schema") is not None:
            raise KeyboardInterrupt
        return real_chat(self, messages, **kw)

    monkeypatch.setattr(OpenAIChatModel, "chat", interrupted)
    first = CallMeter()
    with pytest.raises(KeyboardInterrupt):
        sweep(spec, tmp_path / "cut", 4, first)
    monkeypatch.setattr(OpenAIChatModel, "chat", real_chat)
    rest = CallMeter()
    resumed = sweep(spec, tmp_path / "cut", 4, rest)
    assert first.calls + rest.calls == calls and rest.cached >= 1
    assert rows_without_latency(resumed.run_dir) == rows_without_latency(one.run_dir)

    # (c) rows recomputed (row cache off), every reply read from the reply cache
    again = CallMeter()
    rerun = sweep(spec, tmp_path / "c4", 4, again, use_cache=False)
    assert again.calls == 0 and again.cached == calls
    assert rows_without_latency(rerun.run_dir) == rows_without_latency(one.run_dir)
    record_property("llm_calls_per_run", calls)
