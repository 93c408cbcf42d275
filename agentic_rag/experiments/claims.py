"""The claims ledger: one protocol per design claim, run as ordinary sweeps, turned into
`experiments/claims/REPORT.md` and `claims.json` with a verdict per claim and dataset.

A protocol names a baseline arm and a treatment arm (config overrides), the metric the
claim is about, and the direction the design claims. The measured effect is the paired
relative change treatment vs baseline over the same queries with its 95 % bootstrap CI
(`runner.summarize`). The verdict rule is code (`verdict`):

- the CI contains 0 → **inconclusive**;
- the CI lies entirely on the side opposite to the claim → **contradicted**;
- the design gives a figure and the whole CI is short of it → **smaller than claimed**;
- otherwise → **confirmed**.

Every number in the report is read from a run folder's `summary.csv`; the report names
the run folders, config hashes, commit, date, machine and model ids.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from ..config import RAGConfig
from .spec import DatasetSpec, SweepSpec

DATASETS = {  # the three deployments the design names
    "document analysis": DatasetSpec(name="halueval-qa", split="test", n=200, seed=0,
                                     corpus_size=2000),
    "code": DatasetSpec(name="python-faq", split="test", n=None, seed=0),
    "support automation": DatasetSpec(name="tau2-banking", split="test", n=None, seed=0),
}


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    metric: str
    direction: int  # +1: the treatment raises the metric, -1: lowers it
    baseline: dict[str, Any]
    treatment: dict[str, Any]
    design_figure: float | None = None  # claimed relative change, when the design states one
    beside: tuple[str, ...] = ()  # reported next to the effect (quality, cost)
    metrics: tuple[str, ...] = ("retrieval",)
    protocol: str = ""
    grid_extra: dict[str, list] = field(default_factory=dict)


CLAIMS: tuple[Claim, ...] = (
    Claim("a-iterations", "Confidence gating cuts retrieval iterations (vs expanding always)",
          metric="iterations", direction=-1,
          baseline={"gate.mode": "always_expand"}, treatment={"gate.mode": "gated"},
          beside=("ndcg@10", "recall@10", "context_tokens"),
          protocol="hybrid retrieval, intent filters per the default, k = 10 for both arms "
                   "(equal hit budget); iterations = searches made; quality beside it"),
    Claim("a-iterations-quality", "... without losing retrieval quality (nDCG@10)",
          metric="ndcg@10", direction=+1,
          baseline={"gate.mode": "always_expand"}, treatment={"gate.mode": "gated"},
          protocol="same runs as a-iterations: a 'confirmed' needs nDCG@10 to rise; a CI "
                   "spanning 0 means no measurable loss or gain"),
    Claim("b-fusion", "BM25 + dense fusion (RRF) beats dense-only retrieval",
          metric="ndcg@10", direction=+1,
          baseline={"fusion.retrievers": ["dense"], "gate.mode": "static"},
          treatment={"fusion.retrievers": ["dense", "bm25"], "gate.mode": "static"},
          beside=("recall@10", "latency_p50_ms"),
          protocol="static retrieval, no intent filter, k = 10 for both arms"),
)


def verdict(lo: float, hi: float, direction: int, design_figure: float | None = None) -> str:
    """The ledger's rule, on the CI [lo, hi] of the relative change (see module doc)."""
    if lo != lo or hi != hi:  # NaN: nothing measured
        return "inconclusive"
    if lo <= 0 <= hi:
        return "inconclusive"
    if (hi < 0 < direction) or (lo > 0 > direction):
        return "contradicted"
    if design_figure is not None:
        best = hi if direction > 0 else -lo  # the most favourable end of the CI
        if best < abs(design_figure):
            return "smaller than claimed"
    return "confirmed"


def claim_spec(claim: Claim, dataset: DatasetSpec, base: RAGConfig,
               smoke: bool = False) -> SweepSpec:
    ds = dataset
    if smoke:
        ds = ds.model_copy(update={"n": 5, "corpus_size": 12})
    keys = sorted(set(claim.baseline) | set(claim.treatment))
    grid = {k: [claim.baseline.get(k), claim.treatment.get(k)] for k in keys}
    name = f"claim-{claim.id}-{ds.name}" + ("-smoke" if smoke else "")
    return SweepSpec(name=name, dataset=ds, base=base, grid=grid, metrics=list(claim.metrics),
                     k=10, baseline=claim.baseline)


def run_claims(out_dir: str | Path = "experiments/claims", smoke: bool = False,
               runs_dir: str | Path = "experiments/runs", cache_dir: str | Path = "experiments/cache",
               base: RAGConfig | None = None, log=print) -> pd.DataFrame:  # noqa: ANN001
    """Run every claim's protocol on every deployment; write REPORT.md and claims.json."""
    from .runner import run_sweep

    base = base or RAGConfig()
    rows = []
    done: dict[str, Path] = {}
    for claim in CLAIMS:
        for deployment, ds in DATASETS.items():
            spec = claim_spec(claim, ds, base, smoke)
            key = json.dumps(spec.model_dump(mode="json", exclude={"name"}), sort_keys=True)
            if key not in done:  # claims sharing a protocol share its run
                done[key] = run_sweep(spec, runs_dir, cache_dir, progress=False, log=log).run_dir
            rows.append(ledger_row(claim, deployment, done[key]))
    ledger = pd.DataFrame(rows)
    write_report(ledger, out_dir, smoke)
    return ledger


def ledger_row(claim: Claim, deployment: str, run_dir: Path) -> dict[str, Any]:
    summary = pd.read_csv(run_dir / "summary.csv")
    configs = {p.stem: RAGConfig.load(p) for p in sorted((run_dir / "configs").glob("*.yaml"))}
    base_row = summary[summary["baseline"]].iloc[0]
    treat_row = summary[~summary["baseline"]].iloc[0]
    m = claim.metric
    lo, hi = treat_row[f"{m}_rel_vs_base_ci_low"], treat_row[f"{m}_rel_vs_base_ci_high"]
    meta = json.loads((run_dir / "meta.json").read_text())
    row = {"claim": claim.id, "statement": claim.statement, "deployment": deployment,
           "dataset": meta["dataset"], "metric": m, "direction": claim.direction,
           "design_figure": claim.design_figure, "protocol": claim.protocol,
           "n_queries": int(treat_row["n_queries"]),
           "baseline": json.dumps(claim.baseline), "treatment": json.dumps(claim.treatment),
           "baseline_value": float(base_row[_col(summary, m)]),
           "treatment_value": float(treat_row[_col(summary, m)]),
           "relative_effect": float(treat_row[f"{m}_rel_vs_base"]),
           "ci_low": float(lo), "ci_high": float(hi),
           "verdict": verdict(float(lo), float(hi), claim.direction, claim.design_figure),
           "run": run_dir.name,
           "config_hashes": json.dumps({k: c.config_hash() for k, c in configs.items()}),
           "git_commit": meta.get("git_commit"), "embedding_model": meta.get("embedding_model"),
           "llm": json.dumps(meta.get("llm"))}
    for b in claim.beside:
        col = b if b in summary.columns else f"{b}_mean"
        if col in summary.columns:
            row[f"{b}_baseline"] = float(base_row[col])
            row[f"{b}_treatment"] = float(treat_row[col])
    return row


def _col(summary: pd.DataFrame, metric: str) -> str:
    """The summary column holding a metric's mean (quality metrics by name, costs as *_mean)."""
    return metric if metric in summary.columns else f"{metric}_mean"


def write_report(ledger: pd.DataFrame, out_dir: str | Path, smoke: bool = False) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    records = ledger.to_dict(orient="records")
    (out_dir / "claims.json").write_text(json.dumps(
        {"date": stamp, "machine": platform.platform(), "smoke": smoke,
         "claims": [asdict(c) for c in CLAIMS], "ledger": records}, indent=1, default=str))
    lines = [f"# Claims ledger{' (smoke run: tiny samples, not evidence)' if smoke else ''}",
             "", f"Generated {stamp} on `{platform.platform()}` by `agentic-rag claims`. "
             "Every number below is read from the run folder named in its row "
             "(`experiments/runs/<run>/summary.csv`).", "",
             "Verdict rule (code: `agentic_rag.experiments.claims.verdict`), on the 95 % "
             "paired bootstrap CI of the relative change treatment vs baseline over the same "
             "queries: CI contains 0 → inconclusive; CI entirely opposite to the claimed "
             "direction → contradicted; the design states a figure and the whole CI is short "
             "of it → smaller than claimed; otherwise confirmed. The design documents in this "
             "repository state directions, not figures, so no claim can be 'smaller than "
             "claimed' here.", "",
             "| claim | deployment (dataset) | n | metric | baseline → treatment | relative "
             "effect [95 % CI] | verdict | run |", "|---|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(
            f"| {r['claim']} | {r['deployment']} ({r['dataset']}) | {r['n_queries']} | "
            f"{r['metric']} | {r['baseline_value']:.3f} → {r['treatment_value']:.3f} | "
            f"{r['relative_effect']:+.1%} [{r['ci_low']:+.1%}, {r['ci_high']:+.1%}] | "
            f"**{r['verdict']}** | `{r['run']}` |")
    lines += ["", "## Protocols", ""]
    for c in CLAIMS:
        lines.append(f"- **{c.id}** — {c.statement}. Baseline `{json.dumps(c.baseline)}`, "
                     f"treatment `{json.dumps(c.treatment)}`, metric `{c.metric}` "
                     f"({'higher' if c.direction > 0 else 'lower'} is the claim). {c.protocol}.")
    lines += ["", "## Beside the effect (quality and cost of each arm)", ""]
    for r in records:
        extra = ", ".join(f"{k[:-9]} {r[k]:.3f} → {r[k.replace('_baseline', '_treatment')]:.3f}"
                          for k in r if k.endswith("_baseline") and r.get(k) == r.get(k)
                          and k != "baseline")
        if extra:
            lines.append(f"- {r['claim']} / {r['dataset']}: {extra}")
    lines += ["", "## Not measured in this report", "",
              "- (b) answer accuracy (EM/F1 or judge-graded) hybrid vs dense, (c) hallucination "
              "with boundaries on vs off, (a) agent tool calls per banking task gated vs "
              "static tool, and (d) tiers cold start: LLM-bound or benchmark-bound protocols "
              "not yet run by `agentic-rag claims`; no verdict is given for them.",
              "", f"Commit: `{records[0]['git_commit'] if records else '?'}`; embedding model "
              f"`{records[0]['embedding_model'] if records else '?'}`."]
    path = out_dir / "REPORT.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
