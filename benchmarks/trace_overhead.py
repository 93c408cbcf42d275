"""What tracing costs an agent-eval run: `tracing.export` off vs file, on the same run.

    .venv/bin/python benchmarks/trace_overhead.py [--n 10] [--pairs 3] [--uncached-pairs 1]

The real agent-eval (`studies/agent_eval/run.py`: the MiniLM embedder, the Python FAQ dev
questions over its 80-document corpus (4,416 chunks), cells retrieve_first:native and
tool_required:native, one question at a time, no judges). The replies come from a scripted
OpenAI-compatible stub (`Scripted`: a `search_documents` call while the prompt holds five
passages or fewer, then an answer citing the first passage), so every question searches
twice and calls the LLM two or three times, whatever a model would say:

1. a first run (export off) builds the index and fills the reply cache;
2. `--pairs` pairs of runs, off and file in alternating order (off-file, file-off, ...), each a
   fresh run folder on the same home: every reply comes from the reply cache (the meter's new
   calls must be 0), so no LLM time is in them and what is left is retrieval, the agent's
   own work and the cache reads: the worst case for tracing's share (a real model adds
   seconds a call, which tracing does not touch);
3. `--uncached-pairs` pairs with the reply cache emptied before each run: every reply from
   the stub over HTTP (no model time either).

Times per run: the agent pass (the sum of the rows' `wall_s`: `run_agent` per question,
where the spans are made and exported), the median question's `wall_s`, and the whole
`run()` (the embedder loaded, the dataset, the index opened, the agent pass, the trace file
flushed) in wall time and in the process's CPU time (`time.process_time`, the exporter's
thread included: less sensitive to other jobs on a shared machine than wall time). The
overhead is the median over pairs of (file − off) / off, with every pair's value.
Writes benchmarks/TRACE_OVERHEAD.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from agentic_rag import trace_reading, tracing
from agentic_rag.config import RAGConfig
from agentic_rag.experiments.runfolder import git_commit
from agentic_rag.jsonl import read_rows
from agentic_rag.llm.calls import CallMeter
from agentic_rag.llm.processor import processor_info
from agentic_rag.studies.agent_eval.options import AgentEvalOptions
from agentic_rag.studies.agent_eval.run import run

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/faultproxy.py's stub server
from tests.faultproxy import StubChatServer  # noqa: E402

HOME = ROOT / "experiments" / "cache" / "trace-overhead"
CELLS = ("retrieve_first:native", "tool_required:native")


class Scripted(StubChatServer):
    """A search while the prompt holds five passages or fewer, then an answer citing the
    first passage (decisions by rule: the same path for every arm)."""

    def reply(self, req: dict) -> tuple[int, dict]:
        status, data = super().reply(req)
        user = req["messages"][-1]["content"]
        ids = re.findall(r"--- Document \d+ \[(\w+)\]", user)
        message = data["choices"][0]["message"]
        if req.get("tools") and len(ids) <= 5:
            q = re.search(r"Question: (.*)", user)
            words = (q.group(1) if q else user).split()[:6]
            message["tool_calls"] = [{"id": "c0", "type": "function", "function": {
                "name": "search_documents",
                "arguments": json.dumps({"query": " ".join(words + ["example"])})}}]
            message["content"] = ""
        elif not req.get("response_format"):
            message["content"] = "See the passage." + (f" [{ids[0]}]" if ids else "")
        return status, data


def one_run(work: Path, name: str, export: str, n: int, base_url: str) -> dict:
    cfg = work / f"{export}.yaml"
    cfg.write_text(yaml.safe_dump({"llm": {"base_url": base_url, "model": "scripted"},
                                   "tracing": {"export": export}}))
    opts = AgentEvalOptions(run=name, runs_dir=str(work / "runs"), home=str(HOME),
                            datasets=("python-faq",), split="dev", n=n, cells=CELLS,
                            config=str(cfg), no_judge=True, max_concurrency=1)
    meter = CallMeter()
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    run(opts, meter, RAGConfig.load(cfg).llm)
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    run_dir = work / "runs" / name
    rows = read_rows(run_dir / "rows.jsonl")
    trace = run_dir / tracing.FILE_NAME
    spans = trace_reading.read_spans(trace) if trace.exists() else []
    return {"run": name, "export": export, "rows": len(rows),
            "agent_pass_s": round(sum(r["wall_s"] for r in rows), 3),
            "question_s_median": round(statistics.median(r["wall_s"] for r in rows), 4),
            "question_s": [round(r["wall_s"], 4) for r in rows],
            "run_s": round(total, 3), "run_cpu_s": round(cpu, 3),
            "load_1min_at_start": round(load, 1),
            "new_llm_calls": meter.calls,
            "cached_llm_calls": meter.cached, "spans": len(spans),
            "searches": sum(r["searches"] for r in rows),
            "trace_bytes": trace.stat().st_size if trace.exists() else 0}


def replay_cost(trace: Path, work: Path, repeats: int) -> dict:
    """Tracing's own cost, without the run around it: the spans of a recorded trace made again
    (same names, nesting, attributes and events) under `tracing.recording` (file export: the
    batch thread, encoding, the file write and its fsync included), in CPU seconds
    (`time.process_time`, every thread of the process) and wall seconds; the median of
    `repeats`, each flushed before it ends."""
    from agentic_rag.config_agent import TracingConfig

    spans = trace_reading.read_spans(trace)
    roots = [s for s in spans if s["parent_id"] is None]
    trees = [trace_reading.trace_spans(spans, r) for r in roots]

    def make(tree: list[dict], i: int = 0, depth: int = 0) -> int:
        while i < len(tree) and tree[i]["depth"] == depth:
            s = tree[i]
            with tracing.tracer().start_as_current_span(s["name"]) as span:
                span.set_attributes(s["attributes"])
                for e in s["events"]:
                    span.add_event(e["name"], e["attributes"])
                i = make(tree, i + 1, depth + 1)
        return i

    cpu, wall = [], []
    for k in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        with tracing.recording(TracingConfig(export="file"), work / f"replay-{k}"):
            for tree in trees:
                make(tree)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"spans": len(spans), "questions": len(roots), "repeats": repeats,
            "cpu_s_median": round(statistics.median(cpu), 4),
            "wall_s_median": round(statistics.median(wall), 4),
            "cpu_s": [round(x, 4) for x in cpu]}


def pairs(work: Path, label: str, k: int, n: int, base_url: str, uncached: bool,
          out: list[dict], save) -> list[dict]:  # noqa: ANN001 - save: writes the report
    for i in range(k):
        order = ("off", "file") if i % 2 == 0 else ("file", "off")
        pair = {}
        for export in order:
            if uncached:
                (HOME / "cache" / "llm.sqlite").unlink(missing_ok=True)
            r = one_run(work, f"{label}-{i}-{export}", export, n, base_url)
            print(json.dumps(r), flush=True)
            pair[export] = r
        out.append(pair)
        save()  # after every pair: a run cut short keeps what it measured
    return out


def overhead(ps: list[dict], key: str) -> dict:
    rel = [(p["file"][key] - p["off"][key]) / p["off"][key] for p in ps]
    return {"median": round(statistics.median(rel), 4), "per_pair": [round(x, 4) for x in rel],
            "off_s": [p["off"][key] for p in ps], "file_s": [p["file"][key] for p in ps]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10, help="questions (× 2 cells)")
    ap.add_argument("--pairs", type=int, default=5, help="off/file pairs, replies cached")
    ap.add_argument("--uncached-pairs", type=int, default=0, help="pairs, reply cache emptied")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "TRACE_OVERHEAD.json"))
    args = ap.parse_args()
    HOME.mkdir(parents=True, exist_ok=True)
    cached: list[dict] = []
    fresh: list[dict] = []
    replay: dict = {}
    stub = Scripted().start()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base_url = stub.base_url
        fill = one_run(work, "fill", "off", args.n, base_url)
        print(json.dumps(fill), flush=True)
        save = lambda: _save(args, fill, cached, fresh, replay)  # noqa: E731
        pairs(work, "cached", args.pairs, args.n, base_url, False, cached, save)
        assert all(p[e]["new_llm_calls"] == 0 for p in cached for e in p), "a reply not cached"
        last = work / "runs" / cached[-1]["file"]["run"] / tracing.FILE_NAME if cached else None
        if last is not None:
            replay.update(replay_cost(last, work, 30))
            save()
        pairs(work, "uncached", args.uncached_pairs, args.n, base_url, True, fresh, save)
    stub.stop()


def _save(args: argparse.Namespace, fill: dict, cached: list[dict], fresh: list[dict],
          replay: dict) -> None:
    result = {
        "command": "python benchmarks/trace_overhead.py " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out"),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": git_commit(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs (each "
        "run's load_1min_at_start): timings noisy", "processor": processor_info(),
        "setup": {"dataset": "python-faq dev", "questions": args.n, "cells": list(CELLS),
                  "replies": "scripted stub (benchmarks/trace_overhead.py Scripted), cached",
                  "embedder": "all-MiniLM-L6-v2",
                  "max_concurrency": 1, "judges": "off"},
        "fill_run": fill,
    }
    if cached:
        result["cached"] = {"agent_pass": overhead(cached, "agent_pass_s"),
                            "question_median": overhead(cached, "question_s_median"),
                            "run": overhead(cached, "run_s"),
                            "run_cpu": overhead(cached, "run_cpu_s"), "runs": cached}
    if replay:
        off = statistics.median(p["off"]["agent_pass_s"] for p in cached)
        off_cpu = statistics.median(p["off"]["run_cpu_s"] for p in cached)
        result["replay"] = {**replay, "share_of_off_agent_pass": round(
            replay["cpu_s_median"] / off, 4), "share_of_off_run_cpu": round(
            replay["cpu_s_median"] / off_cpu, 4)}
    if fresh:
        result["uncached"] = {"agent_pass": overhead(fresh, "agent_pass_s"),
                              "run": overhead(fresh, "run_s"), "runs": fresh}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("cached", "uncached") if k in result}, indent=1)[:3000])


if __name__ == "__main__":
    main()
