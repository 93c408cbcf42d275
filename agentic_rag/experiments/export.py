"""Export the chosen config of a run: best by a metric, under constraints, with provenance.

    agentic-rag export RUN_DIR --metric ndcg@10 --constraint "latency_p50_ms<50"

writes a YAML `RAGConfig` with a `provenance:` block (run, dataset, metric values with
CIs). `RAGConfig.load` ignores that block, so `Pipeline.from_config(path)` rebuilds the
pipeline from the file alone.

Choose on dev, report on test: with `test=True` (CLI `--test`) the chosen config is run
once more on the *test* split of the same dataset (same sample size and seed) and the
provenance records both figures — the dev figure is optimistic, having been selected.
"""

from __future__ import annotations

import json
import operator
import re
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from agentic_rag.config import RAGConfig
from agentic_rag.evaluation.metrics import metric as declaration

_OPS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
        "<": operator.lt, ">": operator.gt}
_CONSTRAINT = re.compile(r"^\s*([\w@.]+)\s*(<=|>=|==|!=|<|>)\s*(-?[\d.]+(?:e-?\d+)?)\s*$")


def parse_constraint(text: str) -> tuple[str, str, float]:
    m = _CONSTRAINT.match(text)
    if not m:
        raise ValueError(f"constraint {text!r}: expected FIELD OP NUMBER, e.g. 'latency_p50_ms<50'")
    return m.group(1), m.group(2), float(m.group(3))


def choose_config(run_dir: str | Path, metric: str = "ndcg@10",
                  constraints: list[str] | None = None, maximize: bool | None = None) -> pd.Series:
    """The best config of the run by `metric` among those meeting `constraints` (ties: lower
    median latency). Best is the higher value unless the metric's declaration says lower is
    better (`evaluation/metrics.py`: `hallucinated`); `maximize` overrides it, and must be given
    for a summary column that is not a declared metric (an undeclared name is an error)."""
    if maximize is None:
        try:
            maximize = declaration(metric).direction == "higher"
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
    run_dir = Path(run_dir)
    summary_path = run_dir / "summary.csv"
    if not summary_path.exists():
        raise FileNotFoundError(f"{summary_path}: no summary (is the run finished?)")
    summary = pd.read_csv(summary_path)
    if metric not in summary.columns:
        raise ValueError(f"metric {metric!r} not in {summary_path}; have "
                         f"{[c for c in summary.columns if not c.endswith(('_low', '_high'))]}")
    keep = pd.Series(True, index=summary.index)
    for c in constraints or []:
        field, op, value = parse_constraint(c)
        if field not in summary.columns:
            raise ValueError(f"constraint {c!r}: no column {field!r} in {summary_path}")
        keep &= _OPS[op](summary[field], value)
    cands = summary[keep]
    if cands.empty:
        raise ValueError(f"no config of {run_dir.name} satisfies {constraints}")
    return cands.sort_values([metric, "latency_p50_ms"],
                             ascending=[not maximize, True]).iloc[0]


def _values(row: pd.Series) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for col in row.index:
        if col in ("config_id", "config") or col.endswith(("_ci_low", "_ci_high")):
            continue
        low, high = row.get(f"{col}_ci_low"), row.get(f"{col}_ci_high")
        if isinstance(row[col], (int, float)) and not isinstance(row[col], bool):
            entry: Any = float(row[col])
            if low is not None and high is not None and pd.notna(low):
                entry = {"mean": float(row[col]), "ci95": [float(low), float(high)]}
            values[col] = entry
    return values


def score_on_test(run_dir: Path, cfg: RAGConfig, cache_dir: str | Path = "experiments/cache",
                  log=print) -> tuple[str, pd.Series]:  # noqa: ANN001
    """Run `cfg` alone on the test split of the run's dataset; (run name, summary row)."""
    from agentic_rag.experiments.runner import run_sweep
    from agentic_rag.experiments.spec import SweepSpec

    spec = SweepSpec.load(run_dir / "spec.yaml")
    if spec.dataset.split != "dev":
        raise ValueError(f"{run_dir.name}: chosen on split {spec.dataset.split!r}; "
                         "choose on dev to report on test")
    test_spec = spec.model_copy(update={
        "name": f"{spec.name}-test", "base": cfg, "grid": {}, "random": None, "baseline": None,
        "dataset": spec.dataset.model_copy(update={"split": "test"})})
    res = run_sweep(test_spec, run_dir.parent, cache_dir, progress=False, log=log)
    return res.run_dir.name, res.summary.iloc[0]


def export_config(run_dir: str | Path, out: str | Path | None = None, metric: str = "ndcg@10",
                  constraints: list[str] | None = None, test: bool = False,
                  cache_dir: str | Path = "experiments/cache") -> Path:
    run_dir = Path(run_dir)
    row = choose_config(run_dir, metric, constraints)
    cfg = RAGConfig.load(run_dir / "configs" / f"{row['config_id']}.yaml")
    meta = json.loads((run_dir / "meta.json").read_text())
    values = _values(row)
    provenance = {"run": run_dir.name, "config_id": row["config_id"], "config": row["config"],
                  "chosen_by": metric, "constraints": constraints or [],
                  "dataset": meta.get("dataset"),
                  "dataset_fingerprint": meta.get("dataset_fingerprint"),
                  "git_commit": meta.get("git_commit"), "split": "dev", "metrics": values}
    if test:
        test_run, test_row = score_on_test(run_dir, cfg, cache_dir)
        provenance["test"] = {"run": test_run, "split": "test", "metrics": _values(test_row)}
    out = Path(out) if out else run_dir / "best-config.yaml"
    text = yaml.safe_dump(cfg.to_dict(), sort_keys=False)
    text += yaml.safe_dump({"provenance": provenance}, sort_keys=False)
    out.write_text(text, encoding="utf-8")
    return out
