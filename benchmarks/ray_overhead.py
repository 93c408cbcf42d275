"""What running a sweep on Ray costs on one machine (`executor: ray` vs `local`, same cores),
and a projection of its wall time on N machines from measured per-unit costs.

    nice .venv/bin/python benchmarks/ray_overhead.py [--rounds 2] [--n48 100]

Sweeps (retrieval metrics only, no LLM):
- `quick`: `experiments/quick.yaml` (`make run`): 18 configs, 2 indexes, 100 HaluEval-QA dev
  questions, corpus 2,000 documents;
- `grid48`: 48 configs = chunk size {64, 128, 256, 512} (4 indexes) × gate {static, gated}
  × retrievers {dense, bm25, dense+bm25} × rrf_k {20, 60}, on `--n48` HaluEval-QA dev
  questions and a corpus of `--corpus48` documents (their gold paragraphs + seeded
  distractors, as quick's).

Each arm is the CLI a user runs, `agentic-rag sweep SPEC --executor local|ray`, in a fresh
subprocess with its own temp `--cache-dir` and `--runs-dir`: no index and no row cache, so
every arm chunks and indexes the corpus (store, BM25) and computes every row. The embedding
cache is the one thing an arm starts with: its own copy of one snapshot of
`experiments/cache/embeddings` (taken once, before the first arm), so every arm starts from
the same vectors and none reads what another arm embedded (`--empty-embeddings`: none at
all, every arm embeds the corpus). The ray arm starts its own local cluster (this machine's
CPUs, one worker actor per CPU) and stops it: its wall includes Ray's start. Arms are
interleaved (local, ray, local, ray, ...) so background load falls on both alike; the load
average is recorded at every arm's start. Both arms' rows.jsonl are compared (every
non-latency column). Ratio = ray wall / local wall, per round and over the sum of rounds.

Projection (`projection()`): from the local arms of `grid48` (else `quick`), the index
build seconds per index (the runner's log lines: chunk + embed + store + BM25) and the
compute seconds per row (the rows' `latency_ms`), Ray's fixed start cost (a cluster and 2 actors, measured here),
and the LLM seconds per call measured by `benchmarks/llm_throughput.py` (LLM_THROUGHPUT.json,
one local server), for N machines of w cores (w workers each) and one LLM endpoint each:

    T(N) = t_start + ceil(I / (N·w)) · b + R · t_row / (N·w) + C · t_call / N

I indexes of b seconds each (built in parallel, one worker per index), R rows, C LLM calls.
It assumes the index is reachable by every worker (a Chroma server: docs/cluster.md) and
ignores network time: a lower bound, not a measurement. Writes its section into
benchmarks/RESULTS.md (between ray-overhead markers) unless --no-write. A benchmark, not a
test: nothing asserts a time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BEGIN, END = "<!-- ray-overhead:begin -->", "<!-- ray-overhead:end -->"
CLI = ROOT / ".venv" / "bin" / "agentic-rag"
INDEX_LINE = re.compile(r"index (\w+): (\d+) chunks \((\d+) new\) in ([\d.]+)s")


def grid48(n: int, corpus_size: int) -> dict:
    quick = yaml.safe_load((ROOT / "experiments" / "quick.yaml").read_text())
    return {"name": "grid48", "dataset": {**quick["dataset"], "n": n, "corpus_size": corpus_size},
            "grid": {"chunking.max_tokens": [64, 128, 256, 512],
                     "gate.mode": ["static", "gated"],
                     "fusion.retrievers": [["dense"], ["bm25"], ["dense", "bm25"]],
                     "fusion.rrf_k": [20, 60]},
            "metrics": ["retrieval"], "k": 10}


def load() -> float:
    return os.getloadavg()[0]


def run_arm(spec: Path, executor: str, work: Path, embeddings: Path | None) -> dict:
    """One sweep by the CLI in a fresh process, from empty index and row caches (with a copy
    of `embeddings`, the embedding cache snapshot, if given): wall, log, rows."""
    cache, runs = work / "cache", work / "runs"
    if embeddings is not None:
        shutil.copytree(embeddings, cache / "embeddings")
    cmd = [str(CLI), "sweep", str(spec), "--executor", executor, "--cache-dir", str(cache),
           "--runs-dir", str(runs), "--no-plots"]
    load0 = load()
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    run_dir = next(runs.iterdir())
    rows = [json.loads(x) for x in (run_dir / "rows.jsonl").read_text().splitlines()]
    builds = [(int(m[1]), float(m[3])) for m in INDEX_LINE.findall(out.stdout)]
    return {"executor": executor, "wall_s": wall, "load_start": load0, "rows": rows,
            "builds": builds}


def ray_start_cost() -> float:
    """Seconds to start a local cluster, have 2 actors answer, and stop it (a fresh process)."""
    code = ("import time; t=time.perf_counter(); import ray; "
            "ray.init(include_dashboard=False, log_to_driver=False)\n"
            "@ray.remote(num_cpus=1)\nclass A:\n    def ok(self): return 1\n"
            "ray.get([a.ok.remote() for a in [A.remote(), A.remote()]]); ray.shutdown(); "
            "print(time.perf_counter()-t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def row_differences(a: list[dict], b: list[dict]) -> str:
    """"yes" when both rows.jsonl are equal in order and in every non-latency column, else
    "NO" with the row count and the columns that differ (and in how many rows)."""
    if len(a) != len(b):
        return f"NO ({len(a)} vs {len(b)} rows)"
    cols: dict[str, int] = {}
    for x, y in zip(a, b, strict=True):
        for k in sorted(set(x) | set(y)):
            if not k.startswith("latency_") and x.get(k) != y.get(k):
                cols[k] = cols.get(k, 0) + 1
    return "yes" if not cols else "NO (" + ", ".join(f"{k}: {n} rows" for k, n in cols.items()) + ")"


def llm_seconds_per_call() -> tuple[float, str]:
    """Seconds per LLM call on one local server: the default build's arm (`installed`) of
    benchmarks/LLM_THROUGHPUT.json (answer + judge calls, measured by llm_throughput.py)."""
    data = json.loads((HERE / "LLM_THROUGHPUT.json").read_text())
    arm = next(a for a in data["arms"] if a["name"] == "installed")
    per_hour = arm["protocol"]["llm_calls_per_hour"]
    return 3600 / per_hour, (f"{per_hour:.0f} calls/h, the default build's arm of "
                             f"LLM_THROUGHPUT.json, {data['stamp']['date']}")


def projection(local_arms: list[dict], t_start: float, n_docs: int, embeddings: str,
               source: str, workers: int = 2) -> list[str]:
    builds = [s for arm in local_arms for _, s in arm["builds"]]
    b = sum(builds) / max(1, len(builds))
    rows = [r for arm in local_arms for r in arm["rows"]]
    t_row = sum(r["latency_ms"] for r in rows) / len(rows) / 1000
    t_call, call_src = llm_seconds_per_call()
    n_idx, n_cfg, q = 4, 48, 1000
    R = n_cfg * q
    L = ["", f"Projection for N machines of w = {workers} cores (one worker per core, one LLM "
         "endpoint per machine), from the measured per-unit costs: index build b = "
         f"{b:.1f} s (mean of {len(builds)} builds of `{source}`'s local arms on its "
         f"{n_docs:,}-document corpus: chunk, embed ({embeddings}), store, BM25), t_row = "
         f"{1000 * t_row:.1f} ms per row (mean `latency_ms`, retrieval + context), t_start = "
         f"{t_start:.1f} s (a local Ray cluster and 2 actors, started and stopped), t_call = "
         f"{t_call:.0f} s per LLM call ({call_src}). Formula: "
         "T(N) = t_start + ceil(I / (N·w))·b + R·t_row/(N·w) + C·t_call/N, here for the "
         f"issue's example: {n_cfg} configs ({n_idx} indexes) × {q:,} questions "
         f"(R = {R:,} rows), retrieval only (C = 0) and with an answer + a judge call on "
         f"every row (C = {2 * R:,}). A lower bound: no network, no stragglers.", "",
         "| machines N | retrieval only | + answer & judge (h) |", "|---|---|---|"]
    for n in (1, 2, 4, 8, 16):
        base = t_start + math.ceil(n_idx / (n * workers)) * b + R * t_row / (n * workers)
        llm = 2 * R * t_call / n
        L.append(f"| {n} | {base / 60:.1f} min | {(base + llm) / 3600:.0f} |")
    return L


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="local, ray pairs per sweep")
    ap.add_argument("--n48", type=int, default=100, help="questions of the 48-config sweep")
    ap.add_argument("--corpus48", type=int, default=2000, help="its corpus size (documents)")
    ap.add_argument("--sweeps", nargs="+", default=["quick", "grid48"])
    ap.add_argument("--rounds48", type=int, default=None,
                    help="rounds of grid48 (default --rounds); rounds run one after another, "
                         "each sweep's pair in turn")
    ap.add_argument("--render", metavar="RAW", default=None,
                    help="write the section from the arms saved in RAW (an earlier --out), "
                         "measuring only Ray's start cost")
    ap.add_argument("--empty-embeddings", action="store_true",
                    help="no embedding cache either: every arm embeds the corpus")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--note", default="",
                    help="what else ran on the machine, stated in the section (e.g. 'a build at nice 19')")
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "ray_overhead.json"),
                    help="every arm, rows included (written after each arm)")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, cwd=ROOT).stdout.strip())
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "python benchmarks/ray_overhead.py " + " ".join(sys.argv[1:])
    results: dict[str, list[dict]] = {}
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        results, cmd, stamp = saved["results"], saved["command"], saved["stamp"]
        commit, dirty = saved["commit"], saved["dirty"]
        args.corpus48 = saved.get("corpus48", args.corpus48)
        args.empty_embeddings = saved.get("empty_embeddings", args.empty_embeddings)
    else:
        results = measure(args, {"command": cmd, "stamp": stamp, "commit": commit,
                                 "dirty": dirty, "corpus48": args.corpus48,
                                 "empty_embeddings": args.empty_embeddings})
    t_start = ray_start_cost()
    render(results, args, cmd, stamp, commit, dirty, t_start)


def measure(args: argparse.Namespace, stamp: dict) -> dict[str, list[dict]]:
    """Run the arms, round after round (each sweep's local, ray pair in turn), saving every
    arm (rows included) to `args.out` as it ends."""
    results: dict[str, list[dict]] = {name: [] for name in args.sweeps}
    rounds = {name: args.rounds for name in args.sweeps}
    if args.rounds48 is not None and "grid48" in rounds:
        rounds["grid48"] = args.rounds48
    with tempfile.TemporaryDirectory(prefix="ray-overhead-") as tmp:
        specs = {"quick": ROOT / "experiments" / "quick.yaml",
                 "grid48": Path(tmp) / "grid48.yaml"}
        specs["grid48"].write_text(yaml.safe_dump(grid48(args.n48, args.corpus48)))
        snapshot = None
        if not args.empty_embeddings:
            snapshot = Path(tmp) / "embeddings-snapshot"
            snapshot.mkdir()
            # SQLite's backup API: a consistent copy even while another process writes it
            src = sqlite3.connect(ROOT / "experiments" / "cache" / "embeddings" / "embeddings.sqlite")
            with sqlite3.connect(snapshot / "embeddings.sqlite") as dst:
                src.backup(dst)
            src.close()
        for r in range(max(rounds.values())):
            for name in [n for n in args.sweeps if r < rounds[n]]:
                for executor in ("local", "ray"):
                    arm = run_arm(specs[name], executor, Path(tmp) / f"{name}-{r}-{executor}",
                                  snapshot)
                    arm["round"] = r
                    results[name].append(arm)
                    print(f"{name} round {r} {executor}: {arm['wall_s']:.1f} s, "
                          f"{len(arm['rows'])} rows, load {arm['load_start']:.1f}", flush=True)
                    Path(args.out).write_text(json.dumps({**stamp, "results": results}))
    return results


def render(results: dict[str, list[dict]], args: argparse.Namespace, cmd: str, stamp: str,
           commit: str, dirty: bool, t_start: float) -> None:
    L = [BEGIN, "## Ray overhead on one machine (`executor: ray` vs `local`)", "",
         f"Measured {stamp} at commit {commit}{' + uncommitted changes' if dirty else ''} by "
         f"`{cmd}` on {platform.machine()} {os.cpu_count()} CPUs, Python "
         f"{platform.python_version()}, ray 2.60.0"
         + (f", {args.note}" if args.note else "")
         + " (the load average at each arm's start is in the table). Method in "
         "`benchmarks/ray_overhead.py`'s docstring: each arm is `agentic-rag sweep` in a fresh "
         "process from empty index and row caches ("
         + ("and no embedding cache" if args.empty_embeddings else
            "each with its own copy of one snapshot of the embedding cache, so no arm embeds "
            "what another did")
         + "), arms interleaved local, ray, local, ray; the ray arm starts and stops its own "
         "local cluster (2 worker actors) inside its wall time. Target: ray ≤ 1.2× local.", "",
         "| sweep | configs × questions | round | local s (load) | ray s (load) | ray / local |"
         " rows equal |", "|---|---|---|---|---|---|---|"]
    for name, arms in results.items():
        if not arms:
            continue
        n_cfg = len({r["config_id"] for r in arms[0]["rows"]})
        n_q = len({r["query_id"] for r in arms[0]["rows"]})
        tot = {"local": 0.0, "ray": 0.0}
        for r in sorted({a["round"] for a in arms}):
            pair = {a["executor"]: a for a in arms if a["round"] == r}
            if len(pair) < 2:
                continue
            lo, ra = pair["local"], pair["ray"]
            tot["local"] += lo["wall_s"]
            tot["ray"] += ra["wall_s"]
            L.append(f"| {name} | {n_cfg} × {n_q} | {r + 1} | {lo['wall_s']:.0f} "
                     f"({lo['load_start']:.1f}) | {ra['wall_s']:.0f} ({ra['load_start']:.1f}) | "
                     f"{ra['wall_s'] / lo['wall_s']:.2f} | "
                     f"{row_differences(lo['rows'], ra['rows'])} |")
        if tot["local"]:
            L.append(f"| {name} | {n_cfg} × {n_q} | all | {tot['local']:.0f} | "
                     f"{tot['ray']:.0f} | **{tot['ray'] / tot['local']:.2f}** | |")
    source = "grid48" if any(a["executor"] == "local" for a in results.get("grid48", [])) \
        else "quick"
    local = [a for a in results.get(source, []) if a["executor"] == "local"]
    if local:
        L += projection(local, t_start, args.corpus48 if source == "grid48" else 2000,
                        "every chunk" if args.empty_embeddings else "what the snapshot lacks",
                        source)
    L += ["", END]
    section = "\n".join(L) + "\n"
    print(section)
    if not args.no_write:
        sys.path.insert(0, str(HERE))
        from sections import write_section

        write_section(HERE / "RESULTS.md", section)
        print(f"wrote {HERE / 'RESULTS.md'}")


if __name__ == "__main__":
    main()
