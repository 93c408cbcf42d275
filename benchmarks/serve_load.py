"""`agentic-rag serve` under load: many clients for minutes on loopback, every reply checked,
then memory pressure against a 1 GiB cap.

    nice .venv/bin/python benchmarks/serve_load.py                   # 32 HTTP + 4 MCP, 120 s
    .venv/bin/python benchmarks/serve_load.py --seconds 20 --no-write   # a quick look

The index: the τ²-banking corpus (698 policy documents) under the default config, built once
into `experiments/cache` (`open_index`, as sweeps and `serve_latency.py` do) with the real
embedding model; the config is written with that home and served, never rebuilt. The calls:
the 124 questions of `datasets/banking-products` (dev + test; what a customer asks about a
product), each with `max_results` 3, 5 or 10 (by position), `focus_area` "any".

1. **Solo.** `agentic-rag serve --http --memory-limit-mb CAP` in a subprocess; each distinct
   call is made alone, one after the other, by `POST /search`: the reference reply. The same
   calls over MCP stdio (one client, one after the other) must return the same replies.
2. **Load.** For `--seconds`: `--http-clients` threads, each its own `httpx` client, call
   `POST /search` back to back; `--mcp-clients` threads, each the official MCP client over
   stdio to its own `agentic-rag serve` process (a stdio server has one client), call
   `search_documents` with a fresh session handle per call (no history penalty, so a reply
   depends on the call only). Each picks calls at random (seeded per client). Every reply is
   compared with the solo reply of the same call (the whole `ToolOutput`: content, chunk
   ids, intent, confidence, …): a difference is a mismatch; any status but 200, an MCP error
   result or an exception is an error. Latency is per call, client side, p50 / p99 per
   transport; throughput is calls answered per second of the load window. The servers'
   resident size (`VmRSS`) is sampled every second: this is what a memory cap must leave
   room for. Every server runs with the guard at CAP (1 GiB): under ordinary load it must
   refuse nothing.
3. **Memory pressure.** A server (`ServedPipeline` + `HttpServer`, the same ASGI app as the
   CLI's) in this process, guard at CAP. Pressure is real resident memory in the server's
   process: a ballast array (every page written) takes the process over CAP, as a leak or a
   co-resident cache would; `--pressure-clients` threads keep calling `POST /search` and
   MCP (streamable HTTP) during each phase of `--pressure-seconds`: before (all answered),
   under pressure (every search refused: HTTP 503 with Retry-After, an MCP error result;
   `GET /index` still answers; the process lives), after the ballast is freed (all answered
   again, equal to the solo replies). An address-space rlimit (RLIMIT_AS) is not used as the
   cap: the server's virtual size (reported) is far above its resident size, so 1 GiB of
   address space would stop it from starting; the guard caps what the kernel's OOM killer
   counts, the resident size.

Writes its section into benchmarks/RELIABILITY.md (between serve-load markers; the
reliability report keeps it) and the figures into benchmarks/SERVE_LOAD.json, unless
--no-write. A benchmark, not a test: it asserts nothing about time; the exit code is 1 when
an error, a mismatch, a refusal under ordinary load or a wrong pressure outcome was seen.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# one OpenMP thread per process (the servers inherit it), as serve_latency.py: five torch
# processes share the cores
os.environ.setdefault("OMP_NUM_THREADS", "1")

import httpx  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402

from agentic_rag.config import RAGConfig  # noqa: E402
from agentic_rag.datasets.qa import load_dataset  # noqa: E402
from agentic_rag.experiments.runfolder import git_commit, git_dirty  # noqa: E402
from agentic_rag.jsonl import read_records  # noqa: E402
from agentic_rag.serve.client import MCPSearchTool  # noqa: E402
from agentic_rag.serve.guard import resident_bytes  # noqa: E402
from agentic_rag.serve.http import HttpServer  # noqa: E402
from agentic_rag.serve.mcp import SearchError, ServedPipeline  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
QUESTIONS = [ROOT / "datasets" / "banking-products" / f"{s}.jsonl" for s in ("dev", "test")]
BEGIN, END = "<!-- serve-load:begin -->", "<!-- serve-load:end -->"
CLI = [sys.executable, "-c", "from agentic_rag.cli.main import main; main()"]
K_CYCLE = (3, 5, 10)
Call = tuple[str, int]  # (query, max_results)


# ---- set-up --------------------------------------------------------------------------------
def load_calls() -> list[Call]:
    questions = [r["question"] for p in QUESTIONS for r in read_records(p)]
    return [(q, K_CYCLE[i % len(K_CYCLE)]) for i, q in enumerate(dict.fromkeys(questions))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM / VmSize / VmPeak of a process, in MiB (empty once it has gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM", "VmSize", "VmPeak"):
            out[key] = int(rest.split()[0]) // 1024
    return out


def children() -> list[int]:
    """Pids whose parent is this process (the stdio servers the MCP clients started)."""
    me, out = os.getpid(), []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me:
                    out.append(int(d.name))
            except (OSError, IndexError, ValueError):
                pass
    return out


def start_http(config: Path, port: int, cap_mb: float, log: Path) -> subprocess.Popen:
    proc = subprocess.Popen([*CLI, "serve", "--config", str(config), "--http", "--port", str(port),
                             "--memory-limit-mb", str(cap_mb)],
                            stdout=subprocess.DEVNULL, stderr=log.open("w"))
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}); see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/index", timeout=10).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"the server did not answer in 600 s; see {log}")


def cached_index(cache_dir: str) -> tuple[RAGConfig, int]:
    """The default config on the cached τ²-banking index (`open_index`), opened (and built the
    first time) in a subprocess: this process stays as small as a server for the pressure
    phase, with no second copy of the index or the model."""
    code = ("import sys, json; from agentic_rag.config import RAGConfig; "
            "from agentic_rag.datasets.qa import load_dataset; "
            "from agentic_rag.experiments.plan import open_index; "
            "cfg, idx = open_index(RAGConfig(), load_dataset('tau2-banking'), sys.argv[1], "
            "log=lambda m: print(m, file=sys.stderr)); "
            "print(json.dumps([cfg.to_dict(), idx.count()]))")
    out = subprocess.run([sys.executable, "-c", code, cache_dir], check=True,
                         capture_output=True, text=True).stdout
    data, n = json.loads(out.strip().splitlines()[-1])
    return RAGConfig.from_dict(data), n


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


# ---- load ------------------------------------------------------------------------------------
class Tally:
    """Per-transport outcomes of the calls, shared by the client threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ms: dict[str, list[float]] = {}
        self.errors: dict[str, list[str]] = {}
        self.mismatches: dict[str, int] = {}
        self.status: dict[str, dict[str, int]] = {}

    def add(self, arm: str, ms: float | None, outcome: str, error: str | None = None) -> None:
        with self.lock:
            self.status.setdefault(arm, {}).setdefault(outcome, 0)
            self.status[arm][outcome] += 1
            if ms is not None:
                self.ms.setdefault(arm, []).append(ms)
            if outcome == "mismatch":
                self.mismatches[arm] = self.mismatches.get(arm, 0) + 1
            if error is not None:
                errs = self.errors.setdefault(arm, [])
                if len(errs) < 20:
                    errs.append(error)


def http_client(url: str, calls: list[Call], refs: dict[Call, dict], seed: int, stop: float,
                tally: Tally, arm: str = "post-search") -> None:
    rng = random.Random(seed)
    with httpx.Client(timeout=300) as client:
        while time.monotonic() < stop:
            call = rng.choice(calls)
            t0 = time.perf_counter()
            try:
                r = client.post(url + "/search", json={"query": call[0], "max_results": call[1]})
            except httpx.HTTPError as exc:
                tally.add(arm, None, "exception", f"{type(exc).__name__}: {exc}")
                continue
            ms = (time.perf_counter() - t0) * 1000
            if r.status_code != 200:
                tally.add(arm, ms, str(r.status_code), r.text[:200])
            elif r.json() != refs[call]:
                tally.add(arm, ms, "mismatch")
            else:
                tally.add(arm, ms, "ok")


def mcp_client(tool: MCPSearchTool, calls: list[Call], refs: dict[Call, dict], seed: int,
               stop: float, tally: Tally, arm: str) -> None:
    rng = random.Random(seed)
    while time.monotonic() < stop:
        call = rng.choice(calls)
        tool.reset()  # a fresh session handle per call
        t0 = time.perf_counter()
        try:
            out = tool.search(call[0], call[1]).model_dump(mode="json")
        except SearchError as exc:  # an MCP error result
            tally.add(arm, (time.perf_counter() - t0) * 1000, "mcp error result", str(exc)[:200])
            continue
        except Exception as exc:  # noqa: BLE001 - counted, the load goes on
            tally.add(arm, None, "exception", f"{type(exc).__name__}: {exc}"[:200])
            continue
        ms = (time.perf_counter() - t0) * 1000
        tally.add(arm, ms, "ok" if out == refs[call] else "mismatch")


def stdio_params(config: Path, cap_mb: float):  # noqa: ANN201
    from mcp import StdioServerParameters

    return StdioServerParameters(command=CLI[0], args=[*CLI[1:], "serve", "--config", str(config),
                                                       "--memory-limit-mb", str(cap_mb)],
                                 env=dict(os.environ))


def run_load(url: str, config: Path, calls: list[Call], refs: dict[Call, dict], args,  # noqa: ANN001
             server_pid: int) -> dict:
    tally = Tally()
    opened: list[MCPSearchTool] = []
    try:
        with ThreadPoolExecutor(args.mcp_clients or 1) as pool:  # stdio servers start at once
            opened = [t for t in pool.map(lambda _: MCPSearchTool(stdio_params(config, args.cap_mb)
                                                                  ).open(),
                                          range(args.mcp_clients))]
        stdio_pids = [p for p in children() if p != server_pid]
        for tool in opened:  # warm each stdio server once (first call)
            tool.search(calls[0][0], calls[0][1])
        samples: dict[str, list[dict[str, int]]] = {"http": [], "stdio": []}
        done = threading.Event()

        def sample() -> None:
            while not done.wait(1.0):
                samples["http"].append(proc_status(server_pid))
                samples["stdio"] += [proc_status(p) for p in stdio_pids]

        sampler = threading.Thread(target=sample, daemon=True)
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        stop = t0 + args.seconds
        sampler.start()
        threads = [threading.Thread(target=http_client, args=(url, calls, refs, 1000 + i, stop,
                                                              tally))
                   for i in range(args.http_clients)]
        threads += [threading.Thread(target=mcp_client, args=(tool, calls, refs, 2000 + i, stop,
                                                              tally, "mcp-stdio"))
                    for i, tool in enumerate(opened)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        done.set()
        sampler.join()
    finally:
        for tool in opened:
            tool.close()
    rss = {k: max((s.get("VmRSS", 0) for s in v), default=0) for k, v in samples.items()}
    return {"tally": tally, "wall_s": wall, "rss_peak_mb": rss, "load_start": load0,
            "load_end": os.getloadavg()[0], "stdio_servers": len(stdio_pids),
            "http_server": proc_status(server_pid)}


# ---- memory pressure -------------------------------------------------------------------------
def pressure(config: Path, calls: list[Call], refs: dict[Call, dict], args) -> dict:  # noqa: ANN001
    served = ServedPipeline.open(config, memory_limit_mb=args.cap_mb)
    out: dict = {"cap_mb": args.cap_mb}
    with HttpServer(served) as srv:

        def phase(name: str) -> dict:
            tally = Tally()
            stop = time.monotonic() + args.pressure_seconds
            tools = [MCPSearchTool(srv.url + "/mcp").open() for _ in range(2)]
            try:
                threads = [threading.Thread(target=http_client, args=(
                    srv.url, calls, refs, 3000 + i, stop, tally)) for i in range(args.pressure_clients)]
                threads += [threading.Thread(target=mcp_client, args=(
                    t, calls, refs, 4000 + i, stop, tally, "mcp-http")) for i, t in enumerate(tools)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                index_ok = httpx.get(srv.url + "/index", timeout=60).status_code == 200
            finally:
                for t in tools:
                    t.close()
            sample_error = next((e for errs in tally.errors.values() for e in errs), None)
            return {"phase": name, "rss_mb": round(resident_bytes() / 2**20),
                    "outcomes": {arm: dict(v) for arm, v in tally.status.items()},
                    "get_index_ok": index_ok, "sample_refusal": sample_error}

        base = resident_bytes() / 2**20
        out["rss_before_mb"] = round(base)
        out["phases"] = [phase("before")]
        size_mb = max(64, int(args.cap_mb - resident_bytes() / 2**20) + 128)
        ballast = np.ones(size_mb * 2**20 // 8)  # every page written: resident
        out["ballast_mb"] = size_mb
        out["phases"].append(phase("pressure"))
        del ballast
        gc.collect()
        t_free = time.perf_counter()
        first = None
        while first is None:  # the first answered call after the ballast is freed
            r = httpx.post(srv.url + "/search", json={"query": calls[0][0],
                                                      "max_results": calls[0][1]}, timeout=60)
            if r.status_code == 200:
                first = (time.perf_counter() - t_free) * 1000
        out["recovered_after_ms"] = round(first, 1)
        out["phases"].append(phase("after"))
        out["refused_total"] = served.guard.refused
    return out


def pressure_ok(p: dict) -> bool:
    before, under, after = p["phases"]

    def only(ph: dict, outcome: str) -> bool:
        return all(set(v) == {outcome} for v in ph["outcomes"].values()) and bool(ph["outcomes"])

    refused = all(set(v) <= {"503", "mcp error result"} for v in under["outcomes"].values())
    return (only(before, "ok") and refused and bool(under["outcomes"]) and under["get_index_ok"]
            and only(after, "ok"))


# ---- report ----------------------------------------------------------------------------------
def main() -> int:  # noqa: PLR0915
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--http-clients", type=int, default=32)
    ap.add_argument("--mcp-clients", type=int, default=4)
    ap.add_argument("--cap-mb", type=float, default=1024, help="the memory guard's limit (MiB)")
    ap.add_argument("--pressure-seconds", type=float, default=10)
    ap.add_argument("--pressure-clients", type=int, default=8)
    ap.add_argument("--cache-dir", default=str(ROOT / "experiments" / "cache"))
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--note", default="", help="run conditions to state in the report, e.g. "
                    "'2 cores shared with other jobs'")
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite the section from SERVE_LOAD.json (with --note), measure nothing")
    args = ap.parse_args()
    if args.render_only:
        figures = json.loads((HERE / "SERVE_LOAD.json").read_text())
        figures["note"] = args.note or figures.get("note", "")
        write(figures)
        return 0
    cmd = " ".join(["python benchmarks/serve_load.py", *sys.argv[1:]])
    started = datetime.now(UTC)
    commit = git_commit(short=True) + (" + uncommitted changes" if git_dirty() else "")

    calls = load_calls()
    ds = load_dataset("tau2-banking")
    cfg, n_chunks = cached_index(args.cache_dir)
    work = Path(tempfile.mkdtemp(prefix="serve-load-"))
    config = work / "best-config.yaml"
    config.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    print(f"serving {n_chunks} chunks on {url}; {len(calls)} distinct calls", flush=True)
    server = start_http(config, port, args.cap_mb, work / "http.log")
    try:
        idle = proc_status(server.pid)
        refs: dict[Call, dict] = {}
        with httpx.Client(timeout=300) as client:  # solo: one call at a time
            for call in calls:
                r = client.post(url + "/search", json={"query": call[0], "max_results": call[1]})
                r.raise_for_status()
                refs[call] = r.json()
        with MCPSearchTool(stdio_params(config, args.cap_mb)) as tool:
            stdio_solo_diff = 0
            for call in calls:
                tool.reset()
                stdio_solo_diff += tool.search(*call).model_dump(mode="json") != refs[call]
        warm = proc_status(server.pid)
        print(f"solo: {len(refs)} replies; stdio ≠ http: {stdio_solo_diff}; server at start "
              f"{idle}, after the solo calls {warm}", flush=True)
        load = run_load(url, config, calls, refs, args, server.pid)
        alive = server.poll() is None
    finally:
        server.terminate()
        server.wait(timeout=60)
    print("load done; memory pressure …", flush=True)
    press = pressure(config, calls, refs, args)

    tally: Tally = load["tally"]
    rows, total_ok, total_err, total_mis, refused_load = [], 0, 0, 0, 0
    for arm in ("post-search", "mcp-stdio"):
        st = tally.status.get(arm, {})
        ok = st.get("ok", 0)
        mis = st.get("mismatch", 0)
        err = sum(v for k, v in st.items() if k not in ("ok", "mismatch"))
        refused_load += st.get("503", 0) + st.get("mcp error result", 0)
        ms = tally.ms.get(arm, [])
        rows.append({"arm": arm, "calls": ok + mis + err, "ok": ok, "mismatches": mis,
                     "errors": err, "p50_ms": statistics.median(ms) if ms else float("nan"),
                     "p99_ms": pct(ms, 0.99), "max_ms": max(ms, default=float("nan")),
                     "per_s": (ok + mis) / load["wall_s"]})
        total_ok, total_err, total_mis = total_ok + ok, total_err + err, total_mis + mis
    all_ms = [m for v in tally.ms.values() for m in v]
    ok_pressure = pressure_ok(press)
    figures = {"date": f"{started:%Y-%m-%d %H:%M} UTC", "commit": commit, "command": cmd,
               "machine": f"{platform.machine()} {os.cpu_count()} CPUs ({cpu_name()}), Python "
                          f"{platform.python_version()}, OMP_NUM_THREADS="
                          f"{os.environ['OMP_NUM_THREADS']}",
               "corpus": {"documents": len(ds.corpus), "chunks": n_chunks},
               "distinct_calls": len(calls), "stdio_solo_vs_http_solo_diff": stdio_solo_diff,
               "seconds": round(load["wall_s"], 1), "http_clients": args.http_clients,
               "mcp_clients": args.mcp_clients, "pressure_clients": args.pressure_clients,
               "rows": rows,
               "all": {"calls": total_ok + total_mis + total_err, "errors": total_err,
                       "mismatches": total_mis, "p50_ms": statistics.median(all_ms),
                       "p99_ms": pct(all_ms, 0.99),
                       "per_s": (total_ok + total_mis) / load["wall_s"]},
               "refused_under_load": refused_load, "server_alive_after_load": alive,
               "rss_mb": {"http_idle": idle.get("VmRSS"), "http_after_solo": warm.get("VmRSS"),
                          "http_peak": load["rss_peak_mb"]["http"],
                          "http_hwm": load["http_server"].get("VmHWM"),
                          "http_vsz": load["http_server"].get("VmSize"),
                          "stdio_peak": load["rss_peak_mb"]["stdio"]},
               "load_avg": [round(load["load_start"], 1), round(load["load_end"], 1)],
               "errors_seen": {k: v for k, v in tally.errors.items()},
               "pressure": press, "pressure_ok": ok_pressure, "note": args.note}
    print(render(figures))
    if not args.no_write:
        write(figures)
    bad = total_err or total_mis or refused_load or stdio_solo_diff or not alive or not ok_pressure
    return 1 if bad else 0


def write(figures: dict) -> None:
    (HERE / "SERVE_LOAD.json").write_text(json.dumps(figures, indent=1) + "\n")
    sys.path.insert(0, str(HERE))
    from sections import write_section

    write_section(HERE / "RELIABILITY.md", render(figures))
    print("wrote benchmarks/RELIABILITY.md, benchmarks/SERVE_LOAD.json")


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def render(f: dict) -> str:
    rss = f["rss_mb"]
    p = f["pressure"]
    L = [BEGIN, "## Serve under load (`benchmarks/serve_load.py`)", "",
         f"Measured {f['date']} at commit {f['commit']} by `{f['command']}` on {f['machine']}"
         + (f" ({f['note']})" if f.get("note") else "") + "; "
         f"load average {f['load_avg'][0]} at the start of the load window, {f['load_avg'][1]} at "
         "its end. Method in the script's docstring: τ²-banking "
         f"({f['corpus']['documents']} documents, {f['corpus']['chunks']} chunks), default config, "
         "real embedding model; the "
         f"{f['distinct_calls']} banking-products questions × max_results 3/5/10; "
         f"{f['http_clients']} `POST /search` clients on one `agentic-rag serve --http` and "
         f"{f['mcp_clients']} MCP clients over stdio (a server process each) for "
         f"{f['seconds']:.0f} s, every server's memory guard at {p['cap_mb']:.0f} MiB; every reply "
         "compared with the same call made alone. Latency is per call at the client: it "
         "includes the wait for the one-at-a-time retrieval lock, so it grows with the clients.",
         "", "| transport | calls | errors | ≠ solo reply | p50 ms | p99 ms | max ms | calls/s |",
         "|---|---|---|---|---|---|---|---|"]
    for r in f["rows"]:
        L.append(f"| {r['arm']} | {r['calls']} | {r['errors']} | {r['mismatches']} | "
                 f"{r['p50_ms']:.0f} | {r['p99_ms']:.0f} | {r['max_ms']:.0f} | {r['per_s']:.1f} |")
    a = f["all"]
    L += [f"| all | {a['calls']} | {a['errors']} | {a['mismatches']} | {a['p50_ms']:.0f} | "
          f"{a['p99_ms']:.0f} | – | {a['per_s']:.1f} |", "",
          f"Solo replies over stdio ≠ over HTTP: {f['stdio_solo_vs_http_solo_diff']}. Refused "
          f"under ordinary load: {f['refused_under_load']}; HTTP server alive after: "
          f"{'yes' if f['server_alive_after_load'] else 'NO'}. Resident size (VmRSS) of the HTTP "
          f"server: {rss['http_idle']} MiB when it starts serving (warmed by one search), "
          f"{rss['http_after_solo']} MiB after the solo calls, {rss['http_peak']} MiB at most under load "
          f"(high-water mark {rss['http_hwm']} MiB; virtual size {rss['http_vsz']} MiB); a stdio "
          f"server: {rss['stdio_peak']} MiB at most.", "",
          f"**Memory pressure** (cap {p['cap_mb']:.0f} MiB, server in the benchmark's process at "
          f"{p['rss_before_mb']} MiB; a {p['ballast_mb']} MiB ballast written into it; "
          f"{f['pressure_clients']} + 2 clients per phase over `POST /search` and MCP streamable HTTP):", "",
          "| phase | resident MiB | outcomes | GET /index |", "|---|---|---|---|"]
    for ph in p["phases"]:
        outs = "; ".join(f"{arm}: " + ", ".join(f"{k} × {v}" for k, v in sorted(o.items()))
                         for arm, o in sorted(ph["outcomes"].items()))
        L.append(f"| {ph['phase']} | {ph['rss_mb']} | {outs} | "
                 f"{'200' if ph['get_index_ok'] else 'failed'} |")
    refusal = next((ph["sample_refusal"] for ph in p["phases"] if ph["sample_refusal"]), None)
    L += ["", f"First answer {p['recovered_after_ms']:.0f} ms after the ballast was freed; "
          f"searches refused in all: {p['refused_total']}; outcome as required (all answered, "
          f"all refused, all answered and equal): {'yes' if f['pressure_ok'] else 'NO'}."
          + (f" A refusal reads: `{refusal}`." if refusal else ""), "", END]
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
