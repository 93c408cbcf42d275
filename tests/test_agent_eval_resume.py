"""agent-eval killed with SIGKILL mid-run, then rerun: no row lost, none duplicated.

The command runs in a child process (`agentic-rag agent-eval`, closed-book cells, so no
index) against an OpenAI-compatible stub that answers slowly enough to kill the child after
a few rows. A torn last line is then added to both files, as a kill in the middle of a
write leaves it. The rerun resumes: `rows.jsonl` and `judgements.jsonl` end with exactly one
row per (dataset, split, cell, question), each row judged, and the rows written before the
kill are kept as they were (not rerun)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from agentic_rag.jsonl import read_rows

from .test_endpoints import CountingStub

ROOT = Path(__file__).resolve().parents[1]
N = 8  # questions
CELLS = ["closed_book:native", "closed_book:json"]


class SlowStub(CountingStub):
    """Each reply after 0.25 s: the child writes a row about every half second."""

    def reply(self, req: dict) -> tuple[int, dict]:
        time.sleep(0.25)
        return super().reply(req)


def _key(r: dict) -> tuple:
    return r["dataset"], r["split"], r["cell"], r["qid"]


def test_agent_eval_resumes_after_kill_9_with_no_row_lost_or_duplicated(tmp_path):
    stub = SlowStub().start()
    try:
        cfg = tmp_path / "llm.yaml"
        cfg.write_text(yaml.safe_dump({"llm": {
            "base_url": stub.base_url, "model": "echo-1", "max_retries": 1,
            "timeout_s": 30.0, "max_tokens": 24}}))
        run_dir = tmp_path / "runs" / "r"
        cmd = [sys.executable, "-m", "agentic_rag.cli.main", "agent-eval", "--run", "r",
               "--runs-dir", str(tmp_path / "runs"), "--home", str(tmp_path / "home"),
               "--datasets", "python-faq", "--split", "dev", "--n", str(N),
               "--cells", *CELLS, "--config", str(cfg)]
        env = {**os.environ, "HF_HUB_OFFLINE": "1",
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        deadline, rows_path = time.time() + 300, run_dir / "rows.jsonl"
        while time.time() < deadline and proc.poll() is None:
            if rows_path.exists() and rows_path.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the child ended first: {proc.stderr.read()[-2000:]!r}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        before = read_rows(rows_path, repair=False)
        assert 3 <= len(before) < N * len(CELLS), "killed too late to test a resume"
        judged_before = read_rows(run_dir / "judgements.jsonl", repair=False)
        for name in ("rows.jsonl", "judgements.jsonl"):  # as a kill mid-write leaves them
            with (run_dir / name).open("a") as f:
                f.write('{"dataset": "python-faq", "split": "dev", "cell": "closed_')
        requests_before = stub.requests

        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    finally:
        stub.stop()
    rows, judged = read_rows(rows_path), read_rows(run_dir / "judgements.jsonl")
    for name in ("rows.jsonl", "judgements.jsonl"):  # every line whole: the torn one is gone
        lines = (run_dir / name).read_text().splitlines()
        assert all(json.loads(x) for x in lines) and len(lines) == N * len(CELLS)
    keys = [_key(r) for r in rows]
    assert len(set(keys)) == len(keys) == N * len(CELLS)  # none lost, none twice
    assert sorted(_key(j) for j in judged) == sorted(keys)  # every row judged, once
    assert {c for _, _, c, _ in keys} == set(CELLS)
    assert rows[:len(before)] == before  # the rows before the kill kept, not rerun
    assert judged[:len(judged_before)] == judged_before
    # the rerun asked the model only for what was missing: one agent turn per new row and
    # one correctness judgement per row not judged before the kill
    new_rows, new_judged = len(rows) - len(before), len(judged) - len(judged_before)
    assert stub.requests - requests_before <= new_rows + new_judged
    assert json.loads((run_dir / "meta-dev.json").read_text())["history"][-1]["command"] \
        .startswith("agentic-rag agent-eval --run r")
