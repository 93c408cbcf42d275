"""The cold-start run folder: written through runfolder (name, meta.json, status.json), the
measurement itself replaced by fixed repetitions (the real one spawns ~40 processes)."""

from __future__ import annotations

import json

import pandas as pd

from agentic_rag.experiments import runfolder
from agentic_rag.studies import coldstart


def test_run_cold_start_writes_a_complete_run_folder(tmp_path, monkeypatch):
    info = {"flat": str(tmp_path / "flat"), "tiered": str(tmp_path / "tiered"),
            "banking_docs": 2, "python_docs": 3, "flat_chunks": 9, "warm_chunks": 4,
            "cold_chunks": 5, "cold_archive_bytes": 100, "archive_date": coldstart.ARCHIVE_DATE}
    rows = [{"arm": arm, "query_kind": "recent", "query": "q", "repeat": r, "order": 0,
             **{m: float(1 + r + (arm == "tiered")) for m in coldstart.METRICS}}
            for r in range(3) for arm in coldstart.ARMS]
    monkeypatch.setattr(coldstart, "prepare_homes", lambda *a, **kw: info)
    monkeypatch.setattr(coldstart, "measure_cold_start", lambda *a, **kw: pd.DataFrame(rows))
    first = coldstart.run_cold_start(tmp_path / "runs", repeats=3, root=tmp_path, log=print)
    second = coldstart.run_cold_start(tmp_path / "runs", repeats=3, root=tmp_path, log=print)
    assert first != second and first.name.endswith("-cold-start")  # same second: two folders
    meta = json.loads((first / "meta.json").read_text())
    assert meta["git_commit"] == runfolder.git_commit()
    assert meta["packages"] == runfolder.versions() and "pandas" in meta["packages"]
    assert {"python", "platform", "layout", "repeats", "queries", "tiers"} <= set(meta)
    assert meta["layout"] == info and meta["configs"] == {"c00": "arm=flat", "c01": "arm=tiered"}
    assert json.loads((first / "status.json").read_text()) == {"complete": True}
    summary = pd.read_csv(first / "summary.csv").set_index("config")
    # tiered is flat + 1 on every repetition: the paired difference is exactly 1
    assert summary.loc["arm=tiered", "recent.first_query_ms_diff_vs_base"] == 1.0
    assert sorted(p.name for p in (first / "configs").iterdir()) == ["c00.yaml", "c01.yaml"]
