"""`make bench`, LLM section, part 2 (issue 39): what the default server's speed-up is worth on
two user workloads, old default vs new default, each arm with a COLD reply cache (a fresh
`--home`, so every call reaches its server):

- `agentic-rag testset DOCS --n 20` on ten Python library reference pages (the user's
  command as documented, defaults otherwise): kept questions per minute and LLM calls per
  minute (wall time of the whole command: chunking, the server's start and every call);
- one agent-eval cell (`agentic-rag agent-eval --datasets tau2-banking --cells
  retrieve_first:native --n N`): seconds per question, the mean of the rows' `latency_s`
  (the agent loop's time per question; indexing excluded).

    PYTHONPATH=. .venv/bin/python benchmarks/llm_workloads.py [--testset-n 20] [--agent-n 10]

Arms: `old-default` = llama-cpp-python's portable server (`AGENTIC_RAG_LLAMA_SERVER=none`, the
default before issue 39, `make portable` builds it); `new-default` = the C++ llama-server
`make install` builds, as the default config runs it. The arms run one after the other in
the order old, new, new, old (testset first, then agent-eval), so a slow drift in background
load falls on both alike. Figures go to benchmarks/LLM_WORKLOADS.json and are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLI = str(Path(sys.executable).with_name("agentic-rag"))
PAGES = ["json", "csv", "datetime", "pathlib", "re", "collections", "itertools", "functools",
         "shutil", "argparse"]
ARMS = {"old-default": {"AGENTIC_RAG_LLAMA_SERVER": "none"}, "new-default": {}}


def python_pages(dest: Path) -> Path:
    """The ten library pages as a documents folder (the Python docs of `make datasets`)."""
    from agentic_rag.datasets.corpora import pydocs_root  # the loaders' own lookup

    src = pydocs_root() / "library"
    dest.mkdir(parents=True, exist_ok=True)
    for name in PAGES:
        shutil.copy(src / f"{name}.rst.txt", dest / f"{name}.rst")
    return dest


def run(cmd: list[str], env_extra: dict[str, str], log: Path) -> float:
    """`cmd` with the arm's environment; its wall time; its output in `log`; fails loudly."""
    env = {**os.environ, **env_extra, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    t0 = time.perf_counter()
    with log.open("w") as out:
        rc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    wall = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)} exited with {rc}: see {log}")
    return wall


def testset_arm(arm: str, docs: Path, work: Path, n: int) -> dict:
    home, out = work / f"testset-{arm}", work / f"testset-{arm}.jsonl"
    wall = run([CLI, "testset", str(docs), "--n", str(n), "--out", str(out), "--home", str(home)],
               ARMS[arm], work / f"testset-{arm}.log")
    summary = json.loads(out.with_name(f"{out.stem}.summary.json").read_text())
    kept, calls = summary["accepted"], summary["llm_calls"]
    return {"wall_s": round(wall, 1), "kept": kept, "llm_calls": calls,
            "questions_per_min": round(kept / wall * 60, 2),
            "calls_per_min": round(calls / wall * 60, 2)}


def agent_arm(arm: str, work: Path, n: int) -> dict:
    runs = work / "agent-runs"
    wall = run([CLI, "agent-eval", "--run", arm, "--runs-dir", str(runs), "--datasets",
                "tau2-banking", "--cells", "retrieve_first:native", "--n", str(n),
                "--home", str(work / f"agent-{arm}")], ARMS[arm], work / f"agent-{arm}.log")
    rows = [json.loads(line) for line in (runs / arm / "rows.jsonl").read_text().splitlines()]
    lat = [r["latency_s"] for r in rows if not r.get("failed")]
    return {"wall_s": round(wall, 1), "questions": len(rows), "failed": len(rows) - len(lat),
            "s_per_question": round(statistics.mean(lat), 1) if lat else None,
            "answers": {r["qid"]: r["answer"] for r in rows}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--testset-n", type=int, default=20)
    ap.add_argument("--agent-n", type=int, default=10)
    ap.add_argument("--json", default=str(HERE / "LLM_WORKLOADS.json"))
    args = ap.parse_args()
    from agentic_rag.experiments.runfolder import git_commit, git_dirty

    res: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                 "commit": git_commit(), "dirty": git_dirty(), "load_start": os.getloadavg()[0],
                 "testset": {}, "agent_eval": {}}
    with tempfile.TemporaryDirectory(prefix="llm-workloads-") as tmp:
        work = Path(tmp)
        docs = python_pages(work / "docs")
        for arm in ("old-default", "new-default"):
            res["testset"][arm] = testset_arm(arm, docs, work, args.testset_n)
            print("testset", arm, res["testset"][arm], flush=True)
        for arm in ("new-default", "old-default"):
            res["agent_eval"][arm] = agent_arm(arm, work, args.agent_n)
            print("agent-eval", arm, {k: v for k, v in res["agent_eval"][arm].items()
                                      if k != "answers"}, flush=True)
    old, new = res["testset"]["old-default"], res["testset"]["new-default"]
    res["testset_ratio"] = round(new["questions_per_min"] / old["questions_per_min"], 2)
    res["testset_calls_ratio"] = round(new["calls_per_min"] / old["calls_per_min"], 2)
    a_old, a_new = res["agent_eval"]["old-default"], res["agent_eval"]["new-default"]
    res["agent_ratio"] = round(a_old["s_per_question"] / a_new["s_per_question"], 2)
    same = sum(a_old["answers"].get(q) == a for q, a in a_new["answers"].items())
    res["agent_answers_identical"] = f"{same}/{len(a_new['answers'])}"
    res["load_end"] = os.getloadavg()[0]
    Path(args.json).write_text(json.dumps(res, indent=2) + "\n")
    print(f"testset: {old['questions_per_min']} → {new['questions_per_min']} questions/min "
          f"({res['testset_ratio']}×; calls/min {res['testset_calls_ratio']}×); agent-eval: "
          f"{a_old['s_per_question']} → {a_new['s_per_question']} s/question "
          f"({res['agent_ratio']}×), answers identical {res['agent_answers_identical']}")


if __name__ == "__main__":
    main()
