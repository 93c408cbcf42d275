"""Ledger rows: one per claim × deployment, read from a run folder (`ledger_row`), or saying
why there is no measurement (`not_run_row`); the rows kept from an earlier claims.json; and
where each row's figures are kept (`with_provenance`: is its run folder committed?)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.config import RAGConfig
from agentic_rag.studies.claims.registry import (
    AGENT_RUN,
    DATASETS,
    SESSION_DETECTOR,
    SESSIONS,
    VERDICTS,
    Claim,
    verdict,
)
from agentic_rag.studies.detectors.own import labels_description


def ledger_row(claim: Claim, deployment: str, run_dir: Path) -> dict[str, Any]:
    summary = pd.read_csv(run_dir / "summary.csv")
    configs = {p.stem: RAGConfig.load(p) for p in sorted((run_dir / "configs").glob("*.yaml"))}
    base_row = summary[summary["baseline"]].iloc[0]
    treat_row = summary[~summary["baseline"]].iloc[0]
    m = claim.metric
    meta = json.loads((run_dir / "meta.json").read_text())
    if _col(summary, m) not in summary.columns or f"{m}_rel_vs_base" not in summary.columns:
        fails = int(summary["failures"].sum()) if "failures" in summary.columns else 0
        row = not_run_row(claim, deployment, "not run", f"no `{m}` value in run {run_dir.name} "
                          f"({fails} failures recorded)")
        row.update({"dataset": meta["dataset"], "run": run_dir.name})
        return row
    rel = float(treat_row[f"{m}_rel_vs_base"])
    lo, hi = float(treat_row[f"{m}_rel_vs_base_ci_low"]), float(treat_row[f"{m}_rel_vs_base_ci_high"])
    diff = {k: float(treat_row.get(f"{m}_diff_vs_base{s}", math.nan))
            for k, s in (("absolute_effect", ""), ("abs_ci_low", "_ci_low"),
                         ("abs_ci_high", "_ci_high"))}
    signs = (diff["abs_ci_low"], diff["abs_ci_high"])
    row = {"claim": claim.id, "statement": claim.statement, "deployment": deployment,
           "dataset": meta["dataset"], "metric": m, "direction": claim.direction,
           **figure_fields(claim), "protocol": claim.protocol,
           "n_queries": _paired_n(run_dir, summary, m),
           "baseline": json.dumps(claim.baseline), "treatment": json.dumps(claim.treatment),
           "baseline_value": float(base_row[_col(summary, m)]),
           "treatment_value": float(treat_row[_col(summary, m)]),
           "relative_effect": rel, "ci_low": lo, "ci_high": hi, **diff,
           "verdict": decide(claim, (lo, hi), signs),
           "reason": "", "run": run_dir.name,
           "config_hashes": json.dumps({k: c.config_hash() for k, c in configs.items()}),
           "git_commit": meta.get("git_commit"), "embedding_model": meta.get("embedding_model"),
           "llm": json.dumps(meta.get("llm"))}
    if meta.get("agent_run"):
        row["agent_run"] = meta["agent_run"]
    if "failures" in summary.columns:
        row["failures"] = int(summary["failures"].sum())
    for b in claim.beside:
        col = b if b in summary.columns else f"{b}_mean"
        if col in summary.columns:
            row[f"{b}_baseline"] = float(base_row[col])
            row[f"{b}_treatment"] = float(treat_row[col])
    return row


def decide(claim: Claim, rel_ci: tuple[float, float], abs_ci: tuple[float, float]) -> str:
    """The verdict of a measured row: the rule (`registry.verdict`) on the CI of the relative
    change, against the design's figure when it states one. A baseline mean of 0 leaves the
    relative change undefined; the CI of the absolute difference then decides by its sign
    alone (the same side of 0 whenever both are defined; no figure can be compared)."""
    lo, hi = rel_ci
    if lo == lo and hi == hi:
        return verdict(lo, hi, claim.direction, claim.design_figure)
    return verdict(*abs_ci, claim.direction)


def figure_fields(claim: Claim) -> dict[str, Any]:
    """The design's stated figure as ledger fields: its words with the range as relative
    changes (`design_figure`), the range (`design_low`, `design_high`) and where the design
    measured it (`design_deployment`); None where the design states none."""
    f = claim.design_figure
    if f is None:
        return {"design_figure": None, "design_low": None, "design_high": None,
                "design_deployment": None}
    lo, hi = f.signed(claim.direction)
    return {"design_figure": f.label(claim.direction), "design_low": lo, "design_high": hi,
            "design_deployment": f.deployment}


def redecided(row: dict[str, Any], claim: Claim, root: str | Path = ".") -> dict[str, Any]:
    """A kept row (from an earlier claims.json) with today's figure and verdict: the rule is
    re-applied to the row's own CIs, nothing is re-measured. Rows without a measurement
    are returned with the figure fields only."""
    row = {**row, **figure_fields(claim)}
    judged = row.get("judge_validation")
    if row.get("claim") == "c-boundaries" and row.get("deployment") in SESSIONS:
        # judged against people on MTRAG itself, not on the HaluEval tables
        row.update(session_detector_fields(root))
    elif row.get("judge_tables") and isinstance(judged, str) and judged.startswith("detector "):
        # the validation tables are committed files: re-read them (their wording included)
        row.update(detector_fields(judged.split()[1].rstrip(":"), root))
    if row.get("verdict") in VERDICTS:
        num = {k: math.nan if row.get(k) is None else float(row[k])
               for k in ("ci_low", "ci_high", "abs_ci_low", "abs_ci_high")}
        row["verdict"] = decide(claim, (num["ci_low"], num["ci_high"]),
                                (num["abs_ci_low"], num["abs_ci_high"]))
    return row


def _col(summary: pd.DataFrame, metric: str) -> str:
    """The summary column holding a metric's mean (quality metrics by name, costs as *_mean)."""
    return metric if metric in summary.columns else f"{metric}_mean"


def _paired_n(run_dir: Path, summary: pd.DataFrame, metric: str) -> int:
    """Queries with a value in both arms (LLM metrics exist only on the sampled queries);
    a run without per-query results (the tiers benchmark) pairs its repetitions."""
    path = run_dir / "results.parquet"
    if path.exists():
        res = pd.read_parquet(path)
        if {"config_id", "query_id", metric} <= set(res.columns):
            per = res.groupby(["config_id", "query_id"])[metric].mean().unstack("config_id")
            return int(per.notna().all(axis=1).sum())
    return int(summary[~summary["baseline"]].iloc[0]["n_queries"])


def not_run_row(claim: Claim, deployment: str, status: str, reason: str) -> dict[str, Any]:
    ds = DATASETS[deployment]
    nan = float("nan")
    return {"claim": claim.id, "statement": claim.statement, "deployment": deployment,
            "dataset": f"{ds.name}:{ds.split}", "metric": claim.metric,
            "direction": claim.direction, **figure_fields(claim),
            "protocol": claim.protocol, "n_queries": 0, "baseline": json.dumps(claim.baseline),
            "treatment": json.dumps(claim.treatment), "baseline_value": nan,
            "treatment_value": nan, "relative_effect": nan, "ci_low": nan, "ci_high": nan,
            "verdict": status, "reason": reason, "run": None}


# a c-boundaries run whose `hallucinated` came from the yes/no JSON judge (before the graded
# detectors; rows without `support_detector`): that judge is gone, so no validation applies
RETIRED_JUDGE = {"judge_validation": "judged by the retired yes/no JSON judge: no validation "
                                     "applies; rebuild the claim (`agentic-rag claims --rebuild "
                                     "--only c-boundaries`)",
                 "judge_auroc": float("nan"), "judge_accuracy": float("nan"), "judge_run": None}


DETECTOR_SETS = {"set (i), HaluEval dev right vs hallucinated answers":
                 "experiments/detectors/halueval-dev/detectors.csv",
                 "set (ii), the model's own answers":
                 "experiments/detectors/halueval-own/detectors.csv"}


def detector_fields(detector: str, root: str | Path = ".") -> dict[str, Any]:
    """The ledger's judge_* fields for a run whose `hallucinated` came from the support
    `detector`: its AUROC (bootstrap CI) on each committed validation set
    (`agentic-rag validate-detectors`); judge_auroc is set (ii)'s, the one that decides."""
    parts, auroc, files = [], float("nan"), []
    for name, rel in DETECTOR_SETS.items():
        path = Path(root) / rel
        if not path.exists():
            continue
        table = pd.read_csv(path).set_index("detector")
        if detector not in table.index:
            continue
        r = table.loc[detector]
        who = labels_description(path.parent)  # who labelled them, from the labels' own files
        parts.append(f"AUROC {r['auroc']:.2f} [{r['auroc_ci_low']:.2f}, {r['auroc_ci_high']:.2f}]"
                     f" on {int(r['n'])} answers of {name}" + (f", {who}" if who else ""))
        files.append(rel)
        auroc = float(r["auroc"]) if "own" in rel else auroc
    if not parts:
        return {"judge_validation": f"detector {detector!r}: not validated (no table in "
                                    f"{', '.join(DETECTOR_SETS.values())})",
                "judge_auroc": float("nan"), "judge_accuracy": float("nan"), "judge_run": None}
    return {"judge_validation": f"detector {detector}: " + "; ".join(parts),
            "judge_auroc": auroc, "judge_accuracy": float("nan"), "judge_run": None,
            "judge_tables": files}


PEOPLE_TABLE = "experiments/detectors/mtrag-human/human.csv"  # detectors vs MTRAG's raters


def session_detector_fields(root: str | Path = ".") -> dict[str, Any]:
    """The judge_* fields of a hallucination row over MTRAG's sessions: the sessions' detector
    (`SESSION_DETECTOR`) against the three raters' majority (faithfulness >= 3) on MTRAG's
    human-rated responses, read from the committed table (`validate-detectors
    --mtrag-human`)."""
    detector = SESSION_DETECTOR["agent.support.detector"]
    at = SESSION_DETECTOR["agent.support.threshold"]
    path = Path(root) / PEOPLE_TABLE
    table = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["binarisation", "who"])
    hit = table[(table["binarisation"] == "majority>=3") & (table["who"] == detector)]
    if hit.empty:
        return {"judge_validation": f"detector {detector!r}: not validated (no row in "
                                    f"{PEOPLE_TABLE})", "judge_auroc": float("nan"),
                "judge_accuracy": float("nan"), "judge_run": None, "judge_tables": None}
    r = hit.iloc[0]

    def ci(name: str, digits: int = 3) -> str:
        return f"{r[name]:.{digits}f} [{r[name + '_ci_low']:.{digits}f}, " \
               f"{r[name + '_ci_high']:.{digits}f}]"

    text = (f"detector {detector} at {at} (no LLM): AUROC {ci('auroc')}, balanced accuracy "
            f"{ci('balanced_accuracy')}, κ {ci('kappa')} against the three raters' majority "
            f"(faithfulness ≥ 3) on {int(r['n'])} MTRAG responses "
            "(experiments/detectors/mtrag-human/)")
    return {"judge_validation": text, "judge_auroc": float(r["auroc"]),
            "judge_accuracy": float(r["accuracy"]), "judge_run": None,
            "judge_tables": [PEOPLE_TABLE]}


def previous_rows(path: Path, smoke: bool) -> dict[tuple[str, str], dict[str, Any]]:
    """Measured rows of the existing claims.json, when it is of the same kind (smoke or not)."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    if bool(data.get("smoke")) != smoke:
        return {}
    return {(r["claim"], r["deployment"]): r for r in data.get("ledger", [])
            if r.get("verdict") in VERDICTS and r.get("run")}


def same_protocol(row: dict[str, Any] | None, claim: Claim) -> bool:
    return row is not None and row.get("metric") == claim.metric and \
        json.loads(row["baseline"]) == claim.baseline and \
        json.loads(row["treatment"]) == claim.treatment


def with_provenance(row: dict[str, Any], claim: Claim, runs_dir: str | Path,
                    agent_runs: str | Path) -> dict[str, Any]:
    """The row with where its figures are kept: `run_committed` (is `runs_dir/<run>` in the
    repository? `experiments/runs/` is not), `judge_run_committed` likewise, and for the
    agent protocol `agent_run` (the agent evaluation's folder its run folder was built from;
    the protocol always writes it to `agent_runs/AGENT_RUN`) with `agent_run_committed`."""
    row = dict(row)
    if isinstance(row.get("run"), str):
        row["run_committed"] = committed(Path(runs_dir) / row["run"])
        if claim.kind == "agent":
            row.setdefault("agent_run", str(Path(agent_runs) / AGENT_RUN))
            row["agent_run_committed"] = committed(Path(row["agent_run"]))
    if isinstance(row.get("judge_run"), str):
        row["judge_run_committed"] = committed(Path(runs_dir) / row["judge_run"])
    return row


def committed(path: Path) -> bool:
    """True when git tracks a file at or under `path`; False for an untracked or ignored
    path and outside a git checkout (an installed package has no committed run folders)."""
    path = path.resolve()
    cwd = path
    while not cwd.is_dir():  # git needs an existing folder inside the checkout
        cwd = cwd.parent
    try:
        out = subprocess.run(["git", "ls-files", "--", str(path)], cwd=cwd, capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    return bool(out.strip())
