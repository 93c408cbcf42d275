"""A pooled deployment's run folder: the rows of several claim runs (MTRAG's four collections)
together, summarised as one run, so the ledger reads it like any sweep's (`ledger_row`).

The runs share one sweep spec but for the dataset (the same configs, `c00`, `c01`, ...); query
ids are distinct across them (MTRAG's task ids), so the pool pairs each session's arms as its
own run did, and resampling queries resamples whole sessions (one task per conversation)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from agentic_rag.experiments.runfolder import mark_complete, new_run_dir, write_meta
from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.experiments.summary import results_frame, summarize
from agentic_rag.jsonl import read_rows


def pool_runs(run_dirs: Sequence[Path], spec: SweepSpec, runs_dir: str | Path) -> Path:
    """A new run folder `<stamp>-<spec.name>` holding the rows of `run_dirs` (each run's
    `rows.jsonl`), their results and summary, a `meta.json` naming the pooled runs, and the
    first run's configs. The runs must hold the same configs."""
    if not run_dirs:
        raise ValueError("pool_runs: no run folder to pool")
    configs = spec.configs()
    labels = {f"c{i:02d}": label for i, (label, _, _) in enumerate(configs)}
    rows, metas = [], []
    for d in run_dirs:
        meta = json.loads((Path(d) / "meta.json").read_text())
        if meta.get("configs") != labels:
            raise ValueError(f"pool_runs: {d} holds configs {meta.get('configs')}, not "
                             f"{labels}")
        metas.append(meta)
        rows += list(read_rows(Path(d) / "rows.jsonl"))
    out = new_run_dir(runs_dir, spec.name)
    shutil.copytree(Path(run_dirs[0]) / "configs", out / "configs")
    spec.save(out / "spec.yaml")
    results = results_frame(rows, configs)
    summary = summarize(results, spec, configs)
    results.to_parquet(out / "results.parquet", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    write_meta(out, {"dataset": f"{len(metas)} runs pooled: " + ", ".join(
                         m["dataset"] for m in metas),
                     "pooled_from": [Path(d).name for d in run_dirs],
                     "embedding_model": metas[0].get("embedding_model"),
                     "llm": metas[0].get("llm"), "configs": labels,
                     "spec_hash": spec.spec_hash()})
    mark_complete(out, spec_hash=spec.spec_hash())
    return out
