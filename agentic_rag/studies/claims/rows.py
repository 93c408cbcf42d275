"""The per-question rows behind a ledger row, committed so anyone can recompute its effect,
CI and verdict from the repository alone: `experiments/claims/rows/<claim>--<deployment>
.jsonl.gz`, one line per (question, arm) with `query_id`, `arm` (baseline / treatment),
the claim's metric and the columns shown beside it (repeats averaged per question; the tiers
benchmark's rows are its paired repetitions, `query_id` = the repetition); a
hallucination claim's rows also keep the `answer` judged (its first repeat's).

`export_rows` writes them from a run folder (`results.parquet` + `summary.csv`'s baseline
flag); `recompute` turns them back into the row's figures with the ledger's own functions
(`stats.paired_effect`, `ledger.decide`). gzip with a zero timestamp: the same rows give the
same bytes."""

from __future__ import annotations

import gzip
import io
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.experiments.stats import paired_effect
from agentic_rag.jsonl import read_records
from agentic_rag.studies.claims.ledger import decide
from agentic_rag.studies.claims.registry import Claim

ROWS_DIR = "rows"  # under the report's folder (experiments/claims)


def rows_path(claim_id: str, deployment: str, out_dir: str | Path = "experiments/claims",
              ) -> Path:
    return Path(out_dir) / ROWS_DIR / f"{claim_id}--{deployment.replace(' ', '-')}.jsonl.gz"


def export_rows(claim: Claim, deployment: str, run_dir: Path,
                out_dir: str | Path = "experiments/claims") -> Path | None:
    """The run folder's per-question values of the claim's metric and beside columns, per
    arm, into `rows_path` (None when the run has no per-question results with query ids)."""
    path = run_dir / "results.parquet"
    if not path.exists():
        return None
    res = pd.read_parquet(path)
    summary = pd.read_csv(run_dir / "summary.csv")
    if "config_id" not in res.columns and {"arm", "query_kind", "repeat"} <= set(res.columns):
        res = repetitions(res, summary)
    if not {"config_id", "query_id", claim.metric} <= set(res.columns):
        return None
    base_id = summary.loc[summary["baseline"], "config_id"].iloc[0]
    cols = [c for c in dict.fromkeys([claim.metric, *claim.beside]) if c in res.columns
            and pd.api.types.is_numeric_dtype(res[c])]
    per = res.groupby(["config_id", "query_id"])[cols].mean().reset_index()
    if claim.metric == "hallucinated" and "answer" in res.columns:
        # the answer judged: labels are matched to rows by question and answer (claims.ppi)
        first = res.groupby(["config_id", "query_id"])["answer"].first().reset_index()
        per = per.merge(first, on=["config_id", "query_id"], how="left")
    per.insert(1, "arm", ["baseline" if c == base_id else "treatment" for c in per.config_id])
    per = per.drop(columns="config_id").sort_values(["arm", "query_id"], kind="stable")
    return write_rows(per, rows_path(claim.id, deployment, out_dir))


def repetitions(res: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """The tiers benchmark's results (`coldstart.measure_cold_start`: one line per arm,
    query kind and repetition) in the sweeps' shape: the repetition is the pairing key
    (`query_id`, as `coldstart.paired_summary` pairs them), one `<kind>.<metric>` column per
    query kind and metric, `config_id` from the summary's `arm=<arm>` configs."""
    metrics = [c for c in res.columns if c not in ("arm", "query_kind", "query", "repeat", "order")
               and pd.api.types.is_numeric_dtype(res[c])]
    wide = res.pivot_table(index=["arm", "repeat"], columns="query_kind", values=metrics,
                           aggfunc="mean")
    wide.columns = [f"{kind}.{m}" for m, kind in wide.columns]
    wide = wide.reset_index()
    arm_of = dict(zip(summary["config"].str.removeprefix("arm="), summary["config_id"]))
    wide.insert(0, "config_id", wide.pop("arm").map(arm_of))
    return wide.rename(columns={"repeat": "query_id"})


def write_rows(per: pd.DataFrame, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v)
                                for k, v in r.items()}) + "\n"
                    for r in per.to_dict(orient="records"))
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as f:
        f.write(lines.encode())
    out.write_bytes(buf.getvalue())
    return out


def read_rows(path: Path) -> pd.DataFrame:
    return pd.DataFrame(read_records(path))


def recompute(claim: Claim, path: Path) -> dict[str, Any]:
    """The ledger row's figures from its committed rows: arm means, n (questions with a value
    in both arms), the paired relative and absolute effect with their CIs, the verdict."""
    rows = read_rows(path)
    m = claim.metric
    wide = rows.pivot(index="query_id", columns="arm", values=m).astype(float)
    eff = paired_effect(wide["treatment"].to_list(), wide["baseline"].to_list(), m)
    rel = (eff[f"{m}_rel_vs_base_ci_low"], eff[f"{m}_rel_vs_base_ci_high"])
    absolute = (eff[f"{m}_diff_vs_base_ci_low"], eff[f"{m}_diff_vs_base_ci_high"])
    return {"n_queries": int(wide.notna().all(axis=1).sum()),
            "baseline_value": float(wide["baseline"].mean()),
            "treatment_value": float(wide["treatment"].mean()),
            "relative_effect": eff[f"{m}_rel_vs_base"], "ci_low": rel[0], "ci_high": rel[1],
            "absolute_effect": eff[f"{m}_diff_vs_base"], "abs_ci_low": absolute[0],
            "abs_ci_high": absolute[1], "verdict": decide(claim, rel, absolute)}
