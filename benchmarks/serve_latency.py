"""Latency one `search_documents` call adds when the pipeline is served (`agentic-rag serve`)
instead of called in-process (`AgenticRAGTool`), on the τ²-banking corpus.

    nice .venv/bin/python benchmarks/serve_latency.py --queries 20 --rounds 3

Arms, all on the same config and index (the default config; the corpus indexed once into
`experiments/cache` by `open_index`, as sweeps do), on the 20 short banking searches of
`QUERIES` (an agent's queries: a few words):

- `in-process`: `AgenticRAGTool(pipeline).search(q)` in this process;
- `mcp-http`: the official MCP client (`MCPSearchTool`) → `agentic-rag serve --http` in a
  subprocess (streamable HTTP, 2026-07-28 protocol: one POST per call);
- `post-search`: `httpx` `POST /search` → the same server;
- `mcp-stdio`: the MCP client → `agentic-rag serve` over stdio (another subprocess).

Every call starts a fresh search session (no history penalty), so every arm computes the
same retrieval. Calls are interleaved: for each round and query, every arm in turn (order
rotated), so background load falls on all arms alike. The added latency of an arm is the
median (and p95) over calls of `arm time − in-process time for the same query and round`.
Answers are compared with the in-process ones (content and chunk ids); mismatches are
counted. Writes its section into benchmarks/RESULTS.md (between serve-latency markers)
unless --no-write. A benchmark, not a test: nothing asserts a time.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# one OpenMP thread per process (the servers inherit it): with three torch processes on a small
# box, threads left spin-waiting after one process's encode slow the next process's (a first
# 4-call trial with the default threads: in-process 144 ms p50, the served arms ~50 ms)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import httpx  # noqa: E402
import yaml  # noqa: E402

from agentic_rag.agent.tool import AgenticRAGTool, ToolOutput  # noqa: E402
from agentic_rag.config import RAGConfig  # noqa: E402
from agentic_rag.datasets.qa import load_dataset  # noqa: E402
from agentic_rag.experiments.plan import open_index  # noqa: E402
from agentic_rag.experiments.runfolder import git_commit, git_dirty  # noqa: E402
from agentic_rag.retrieve.pipeline import Pipeline  # noqa: E402
from agentic_rag.serve.client import MCPSearchTool  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BEGIN, END = "<!-- serve-latency:begin -->", "<!-- serve-latency:end -->"
CLI = [sys.executable, "-c", "from agentic_rag.cli.main import main; main()"]
# what an agent sends: a few words (the schema's maxLength is 200; τ²-banking's own task texts
# are customer personas of ~3,000 characters, not searches)
QUERIES = ["wire transfer fee", "unlock a debit card", "monthly maintenance fee Blue account",
           "overdraft protection", "open a business checking account", "replace a lost card",
           "minimum balance to waive the fee", "international wire transfer limit",
           "dispute a transaction", "close an account", "credit card late payment fee",
           "ATM withdrawal limit", "change my address", "stop a payment on a check",
           "savings account interest rate", "report a stolen card", "mobile deposit limit",
           "account verification documents", "foreign transaction fee", "PIN locked card steps"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http(config: Path, port: int, log: Path) -> subprocess.Popen:
    proc = subprocess.Popen([*CLI, "serve", "--config", str(config), "--http", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=log.open("w"))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}); see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/index", timeout=5).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"the server did not answer in 300 s; see {log}")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache-dir", default=str(ROOT / "experiments" / "cache"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    cmd = " ".join(["python benchmarks/serve_latency.py", *sys.argv[1:]])
    load = os.getloadavg()[0]
    stamp = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
             "commit": git_commit(short=True) + (" + uncommitted changes" if git_dirty() else ""),
             "machine": f"{platform.machine()} {os.cpu_count()} CPUs, Python "
                        f"{platform.python_version()}, OMP_NUM_THREADS="
                        f"{os.environ['OMP_NUM_THREADS']}", "load": f"{load:.1f}"}

    ds = load_dataset("tau2-banking")
    queries = (QUERIES * (1 + args.queries // len(QUERIES)))[:args.queries]
    cfg, index = open_index(RAGConfig(), ds, args.cache_dir)
    work = Path(tempfile.mkdtemp(prefix="serve-latency-"))
    config = work / "best-config.yaml"
    config.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    pipe = Pipeline.from_config(config, index=index)
    local = AgenticRAGTool(pipe)
    local.search("warm up")

    port = free_port()
    server = start_http(config, port, work / "http.log")
    from mcp import StdioServerParameters

    stdio = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "serve", "--config", str(config)],
                                  env=dict(os.environ))
    arms: dict[str, list[float]] = {"in-process": [], "mcp-http": [], "post-search": [],
                                    "mcp-stdio": []}
    mismatches = {a: 0 for a in arms}
    try:
        with MCPSearchTool(f"http://127.0.0.1:{port}/mcp") as mcp_http, \
                MCPSearchTool(stdio) as mcp_stdio, httpx.Client(timeout=60) as http:

            def post(q: str) -> ToolOutput:
                r = http.post(f"http://127.0.0.1:{port}/search", json={"query": q})
                r.raise_for_status()
                return ToolOutput.model_validate(r.json())

            def fresh(tool):  # noqa: ANN001, ANN202
                def call(q: str) -> ToolOutput:
                    tool.reset()  # a new session per call
                    return tool.search(q)
                return call

            calls = {"in-process": fresh(local), "mcp-http": fresh(mcp_http),
                     "post-search": post, "mcp-stdio": fresh(mcp_stdio)}
            for call in calls.values():  # warm every path once
                call(queries[0])
            order = list(calls)
            n = 0
            for _ in range(args.rounds):
                for q in queries:
                    n += 1
                    rotated = order[n % len(order):] + order[:n % len(order)]
                    outs = {}
                    for name in rotated:
                        t0 = time.perf_counter()
                        outs[name] = calls[name](q)
                        arms[name].append(time.perf_counter() - t0)
                    ref = outs["in-process"]
                    for name, out in outs.items():
                        if (out.content, out.chunk_ids) != (ref.content, ref.chunk_ids):
                            mismatches[name] += 1
    finally:
        server.terminate()
        server.wait(timeout=30)

    base = arms["in-process"]
    rows = []
    for name, times in arms.items():
        added = [(t - b) * 1000 for t, b in zip(times, base, strict=True)]
        rows.append((name, statistics.median(times) * 1000, pct(times, 0.95) * 1000,
                     statistics.median(added), pct(added, 0.95), mismatches[name]))
    n_calls = len(base)
    L = [BEGIN, "## Serving overhead (`agentic-rag serve`, per `search_documents` call)", "",
         f"Measured {stamp['date']} at commit {stamp['commit']} by `{cmd}` on "
         f"{stamp['machine']} (load {stamp['load']} at start). Method in "
         "`benchmarks/serve_latency.py`'s docstring: τ²-banking corpus "
         f"({len(ds.corpus)} documents, {index.count()} chunks), default config, "
         f"{len(queries)} banking searches (`QUERIES`) × {args.rounds} rounds = {n_calls} calls per arm, "
         "a fresh search session per call, arms interleaved; servers on 127.0.0.1 in "
         "subprocesses. Added = arm − in-process, paired per call.", "",
         "| arm | p50 ms | p95 ms | added p50 ms | added p95 ms | answers ≠ in-process |",
         "|---|---|---|---|---|---|"]
    for name, p50, p95, a50, a95, bad in rows:
        added = ("–", "–") if name == "in-process" else (f"{a50:+.1f}", f"{a95:+.1f}")
        L.append(f"| {name} | {p50:.1f} | {p95:.1f} | {added[0]} | {added[1]} | {bad} |")
    L += ["", END]
    section = "\n".join(L) + "\n"
    print(section)
    if not args.no_write:
        md = HERE / "RESULTS.md"
        sys.path.insert(0, str(HERE))
        from sections import write_section

        write_section(md, section)
        print(f"wrote {md}")


if __name__ == "__main__":
    main()
