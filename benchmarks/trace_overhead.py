"""What tracing costs an agent-eval run: `tracing.export` off vs file, on the same run.

    .venv/bin/python benchmarks/trace_overhead.py [--n 10] [--pairs 3] [--uncached-pairs 1]

The real agent-eval (`studies/agent_eval/run.py`: the local llama-server with SmolLM2-135M,
the MiniLM embedder, the Python FAQ dev questions over its 80-document corpus, cells
retrieve_first:native and tool_required:native, one question at a time, no judges):

1. a first run (export off) builds the index and fills the reply cache;
2. `--pairs` pairs of runs, off and file in alternating order (off-file, file-off, ...), each a
   fresh run folder on the same home: every reply comes from the reply cache (the meter's new
   calls must be 0), so the LLM does not dominate and what is left is retrieval, the agent's
   own work and the cache reads; the worst case for tracing's share;
3. `--uncached-pairs` pairs with the reply cache emptied before each run: every reply from
   the server, as a first run pays it.

Two times per run: the agent pass (the sum of the rows' `wall_s`: `run_agent` per question,
where the spans are made and exported) and the whole `run()` (the server's start, the
dataset, the index opened, the agent pass, the trace file flushed). The overhead is the
median over pairs of (file − off) / off. Writes benchmarks/TRACE_OVERHEAD.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from agentic_rag import trace_reading, tracing
from agentic_rag.config import RAGConfig
from agentic_rag.jsonl import read_rows
from agentic_rag.llm.binary import processor_info
from agentic_rag.llm.calls import CallMeter
from agentic_rag.studies.agent_eval.options import AgentEvalOptions
from agentic_rag.studies.agent_eval.run import run

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "experiments" / "cache" / "trace-overhead"
CELLS = ("retrieve_first:native", "tool_required:native")


def one_run(work: Path, name: str, export: str, n: int, port: int) -> dict:
    cfg = work / f"{export}.yaml"
    cfg.write_text(yaml.safe_dump({"llm": {"server": {"model": "smollm2-135m"}},
                                   "tracing": {"export": export}}))
    opts = AgentEvalOptions(run=name, runs_dir=str(work / "runs"), home=str(HOME),
                            datasets=("python-faq",), split="dev", n=n, cells=CELLS,
                            config=str(cfg), no_judge=True, max_concurrency=1, port=port)
    meter = CallMeter()
    t0 = time.perf_counter()
    run(opts, meter, RAGConfig.load(cfg).llm)
    total = time.perf_counter() - t0
    run_dir = work / "runs" / name
    rows = read_rows(run_dir / "rows.jsonl")
    trace = run_dir / tracing.FILE_NAME
    spans = trace_reading.read_spans(trace) if trace.exists() else []
    return {"run": name, "export": export, "rows": len(rows),
            "agent_pass_s": round(sum(r["wall_s"] for r in rows), 3),
            "run_s": round(total, 3), "new_llm_calls": meter.calls,
            "cached_llm_calls": meter.cached, "spans": len(spans),
            "searches": sum(r["searches"] for r in rows),
            "trace_bytes": trace.stat().st_size if trace.exists() else 0}


def pairs(work: Path, label: str, k: int, n: int, port: int, uncached: bool) -> list[dict]:
    out = []
    for i in range(k):
        order = ("off", "file") if i % 2 == 0 else ("file", "off")
        pair = {}
        for export in order:
            if uncached:
                (HOME / "llm.sqlite").unlink(missing_ok=True)
            r = one_run(work, f"{label}-{i}-{export}", export, n, port)
            print(json.dumps(r), flush=True)
            pair[export] = r
        out.append(pair)
    return out


def overhead(ps: list[dict], key: str) -> dict:
    rel = [(p["file"][key] - p["off"][key]) / p["off"][key] for p in ps]
    return {"median": round(statistics.median(rel), 4), "per_pair": [round(x, 4) for x in rel],
            "off_s": [p["off"][key] for p in ps], "file_s": [p["file"][key] for p in ps]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10, help="questions (× 2 cells)")
    ap.add_argument("--pairs", type=int, default=3, help="off/file pairs, replies cached")
    ap.add_argument("--uncached-pairs", type=int, default=1, help="pairs, reply cache emptied")
    ap.add_argument("--port", type=int, default=8853)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "TRACE_OVERHEAD.json"))
    args = ap.parse_args()
    HOME.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fill = one_run(work, "fill", "off", args.n, args.port)
        print(json.dumps(fill), flush=True)
        cached = pairs(work, "cached", args.pairs, args.n, args.port, uncached=False)
        assert all(p[e]["new_llm_calls"] == 0 for p in cached for e in p), "a reply not cached"
        fresh = pairs(work, "uncached", args.uncached_pairs, args.n, args.port, uncached=True)
    result = {
        "command": "python benchmarks/trace_overhead.py " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out"),
        "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, shared: 2 cores "
        "with other jobs running (load average 7-10), timings noisy", "processor": processor_info(),
        "setup": {"dataset": "python-faq dev", "questions": args.n, "cells": list(CELLS),
                  "model": "smollm2-135m (local llama-server)", "embedder": "all-MiniLM-L6-v2",
                  "max_concurrency": 1, "judges": "off"},
        "fill_run": fill,
        "cached": {"agent_pass": overhead(cached, "agent_pass_s"),
                   "run": overhead(cached, "run_s"), "runs": cached},
    }
    if fresh:
        result["uncached"] = {"agent_pass": overhead(fresh, "agent_pass_s"),
                              "run": overhead(fresh, "run_s"), "runs": fresh}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("cached", "uncached") if k in result}, indent=1)[:3000])


if __name__ == "__main__":
    main()
