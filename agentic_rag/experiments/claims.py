"""The claims ledger: one protocol per design claim, turned into `experiments/claims/REPORT.md`
and `claims.json` with a verdict per claim and deployment.

A protocol names a baseline arm and a treatment arm, the metric the claim is about and the
direction the design claims. Retrieval and LLM protocols are ordinary sweeps (config
overrides, `runner.run_sweep`); the tiers protocol is a fresh-process benchmark
(`coldstart.run_cold_start`); the agent protocol runs the repository's agent evaluation
(`experiments/agent_eval.py`) and turns its paired rows into a run folder
(`agent_run_folder`). Either way a run folder holds `summary.csv` in the runner's
format, and the measured effect is the paired relative change treatment vs baseline over
the same queries (for the tiers protocol: the same repetitions) with its 95 % bootstrap CI.
The verdict rule is code (`verdict`):

- the CI contains 0 → **inconclusive**;
- the CI lies entirely on the side opposite to the claim → **contradicted**;
- the design gives a figure and the whole CI is short of it → **smaller than claimed**;
- otherwise → **confirmed**.

A protocol that was not run on a deployment gets a row that says so and why (`not run`,
`not run (smoke)`, `not applicable`), with no numbers. `run_claims(only=...)` reruns the
selected claims and keeps the other claims' rows from the existing `claims.json` (each
row names its own run folder and commit). Every number in the report is read from a run
folder; the report names the run folders, config hashes, commits, date, machine and models.
"""

from __future__ import annotations

import json
import math
import platform
import subprocess
import sys
from collections.abc import Sequence
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
VERDICTS = ("confirmed", "smaller than claimed", "contradicted", "inconclusive")
NOT_RUN = ("not run", "not run (smoke)", "not applicable")

# LLM budget: a full `make claims` must finish in ≤ 2 h on a 2-core CPU with the local
# Qwen2.5-Coder-1.5B. Rates of that setup, llama.cpp's own timings over the first 23 calls
# of the b-answers run of 2026-11-30 18:21 (2 threads, machine otherwise idle): 58 prompt
# tokens/s, 14 generated tokens/s; rounded down. (Earlier figure, 40/10, was measured with
# the machine shared with benchmarks.)
PROMPT_TOKENS_PER_S = 55.0
COMPLETION_TOKENS_PER_S = 13.0
# The protocols without an LLM took ~45 min: retrieval (a, b-fusion) ~25 min in the run of
# 2026-11-30 12:24-12:49, the LLM protocols' own retrieval (2 × 200 queries × 2 arms) ~5 min,
# the tiers benchmark ~13 min the first time (5 min building both homes). LLM_SAMPLE is the
# largest sample whose `llm_budget` ceiling fits in the remaining 75 min.
NON_LLM_MINUTES = 45
LLM_SAMPLE = 14  # queries per arm that get LLM metrics
JUDGE_VALIDATION = {"n": 30, "seed": 0}  # HaluEval dev questions × (right, hallucinated)
# judge prompt + HaluEval knowledge paragraph + answer: at most 246 tokens (tiktoken) over the
# 60 prompts of the validation sample, mean 145
JUDGE_VALIDATION_TOKENS_PER_CALL = 250
COLD_START_REPEATS = 10
# The agent protocol (a-agent-tool-calls): τ²-banking tasks per arm (the largest sample
# whose ceiling fits what is left of the 2 h: 2 arms × 10 tasks × ~1.1 min), and the agent
# evaluation that runs it (a script of the repository checkout, run from its root).
AGENT_SAMPLE = 10
AGENT_EVAL = Path("experiments/agent_eval.py")
AGENT_RUN = "claim-a-agent"
AGENT_CELLS = {"baseline": "retrieve_first:native:static", "treatment": "retrieve_first:native"}
# per task and arm, from agent-v4 (30 banking tasks, retrieve_first): 2,033 prompt tokens for
# the agent's turns; the judges read ~1,200 more when the answer is not an abstention
AGENT_TOKENS_PER_TASK = 3300

HYBRID_STATIC = {"fusion.retrievers": ["dense", "bm25"], "gate.mode": "static"}
_HALUEVAL_ONLY = ("document analysis",)
_JUDGE_ONLY_HALUEVAL = ("not run: the support judge is validated on HaluEval only, and the "
                        "2-h LLM budget goes to one deployment")


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
    kind: str = "sweep"  # "sweep" (runner) | "cold_start" (coldstart.run_cold_start) | "agent"
    llm_sample: int = 0  # queries per arm that get LLM metrics (LLM-bound protocols)
    deployments: tuple[str, ...] | None = None  # None: all of DATASETS
    skipped: dict[str, str] = field(default_factory=dict)  # deployment → why not run

    @property
    def needs_llm(self) -> bool:
        return bool({"answers", "hallucination", "ragas", "agent"} & set(self.metrics))

    def applies_to(self, deployment: str) -> bool:
        return self.deployments is None or deployment in self.deployments


_TIERS_SKIPPED = {
    "document analysis": "not applicable: HaluEval's Wikipedia paragraphs carry no dates, so "
                         "every document routes to the warm tier and tiered = flat",
    "code": "not applicable on its own: the Python docs are one release (one date); they are "
            "the archive of the support-automation layout",
}
_TIERS_PROTOCOL = (
    "τ²-banking policies (recent, warm tier: Chroma + BM25) + Python 3.11 docs stamped with "
    "the 3.11.0 release date (older than `tiers.cold_after_days` → cold tier: a gzip JSONL "
    "of chunks and vectors read only when a query's warm confidence is below "
    "`tiers.cold_below_confidence`; hot tier empty) vs the same documents in one flat warm "
    "index. Both arms search dense only. Each repetition: a fresh `python -c` process per "
    "arm (order alternating) that imports the library and the store client, loads the "
    "embedding model (`model_load_s`), opens the index and prints the top hit of a banking "
    f"question (retrieval only, no LLM); {COLD_START_REPEATS} paired repetitions after one "
    "untimed process per arm; n = repetitions. Beside: the same for a Python question that "
    "only the archive answers (`archived.*`; `cold_loaded` = share of runs that read it). "
    "Code: `agentic_rag/experiments/coldstart.py`")

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
    Claim("a-agent-tool-calls", "... and cuts the agent's tool calls per task (gated vs a "
          "static retrieval tool)", metric="searches", direction=-1,
          baseline={"gate.mode": "static"}, treatment={"gate.mode": "gated"},
          # no latency beside it: a task whose static and gated passages coincide is
          # answered from the LLM cache in the second arm
          beside=("retrieval_iterations", "model_searches", "correct", "abstained"),
          metrics=("agent",), kind="agent", llm_sample=AGENT_SAMPLE,
          deployments=("support automation",),
          skipped={"document analysis": "not applicable: the design's agent deployment is "
                                        "support automation (τ²-banking tasks)",
                   "code": "not applicable: the design's agent deployment is support "
                           "automation; the agent on the Python FAQ is measured in "
                           "experiments/agent-runs/ (issue 11)"},
          protocol=f"the default agent (`retrieve_first` policy, native tool calls, "
                   f"Qwen2.5-Coder-1.5B, temperature 0, max_steps 3, 800-token passages per "
                   f"search) on the first {AGENT_SAMPLE} sampled τ²-banking test tasks "
                   "(seeded; corpus = their required documents + seeded distractors, 250 "
                   "documents), once with the default gated tool and once with a static one "
                   "(`gate.mode=static`), everything else equal; tool calls = searches per "
                   "task, the policy's own first search included. Beside: retrieval "
                   "iterations inside the tool, the model's own searches, judge-graded "
                   "correctness, abstentions. Run by "
                   f"`{AGENT_EVAL} --run {AGENT_RUN} --datasets tau2-banking --n "
                   f"{AGENT_SAMPLE} --cells {AGENT_CELLS['treatment']} "
                   f"{AGENT_CELLS['baseline']}` (every LLM call cached, resumable); rows in "
                   f"`experiments/agent-runs/{AGENT_RUN}/`"),
    Claim("b-fusion", "BM25 + dense fusion (RRF) beats dense-only retrieval",
          metric="ndcg@10", direction=+1,
          baseline={"fusion.retrievers": ["dense"], "gate.mode": "static"},
          treatment=HYBRID_STATIC,
          beside=("recall@10", "latency_p50_ms"),
          protocol="static retrieval, no intent filter, k = 10 for both arms"),
    Claim("b-answers", "... and gives more accurate answers than dense-only retrieval",
          metric="token_f1", direction=+1,
          baseline={"fusion.retrievers": ["dense"], "gate.mode": "static"},
          treatment=HYBRID_STATIC, beside=("exact_match", "context_tokens"),
          metrics=("answers",), llm_sample=LLM_SAMPLE, deployments=_HALUEVAL_ONLY,
          skipped={"code": "not run: the FAQ's reference answers are whole paragraphs, so "
                           "EM/F1 of a few-word answer measures length; the 2-h LLM budget "
                           "goes to HaluEval",
                   "support automation": "not applicable: τ²-banking tasks have no "
                                         "reference answers"},
          protocol=f"the b-fusion arms; the local LLM answers the first {LLM_SAMPLE} sampled "
                   "questions (seeded) from each arm's context (`generate_answer`, "
                   "temperature 0, calls cached); token F1 and exact match against "
                   "HaluEval's reference answer; n = questions answered in both arms"),
    Claim("c-boundaries", "Document boundaries in the context reduce hallucination",
          metric="hallucinated", direction=-1,
          baseline={"context.boundaries": False, **HYBRID_STATIC},
          treatment={"context.boundaries": True, **HYBRID_STATIC},
          beside=("token_f1", "exact_match", "context_tokens"),
          metrics=("hallucination",), llm_sample=LLM_SAMPLE, deployments=_HALUEVAL_ONLY,
          skipped={"code": _JUDGE_ONLY_HALUEVAL, "support automation": _JUDGE_ONLY_HALUEVAL},
          protocol=f"same hits in both arms (hybrid, static, k = 10), attribution on in both "
                   "(a separate switch); only the numbered boundaries differ. The local LLM "
                   f"answers the first {LLM_SAMPLE} sampled questions from each arm's context; "
                   "the support judge (`judge_support`, same LLM) reads one canonical "
                   "rendering of the served chunks whatever the arm and says whether the "
                   "answer is supported; hallucinated = not supported. The judge's own "
                   "validation (accuracy, AUROC on HaluEval dev: right vs hallucinated "
                   f"answers, {JUDGE_VALIDATION['n']} pairs) is reported beside the effect, "
                   "or 'not validated' when no validation run exists. The boundaries-on arm "
                   "is b-answers' hybrid arm: its answers come from the LLM cache"),
    Claim("d-cold-start", "A tiered index (recent documents warm, the archive cold and lazily "
          "loaded) cuts process start → first answer vs a flat index",
          metric="recent.process_start_to_first_answer_s", direction=-1,
          baseline={"layout": "flat"}, treatment={"layout": "tiered"},
          beside=("recent.imports_s", "recent.model_load_s", "recent.first_query_ms",
                  "archived.process_start_to_first_answer_s"),
          kind="cold_start", deployments=("support automation",), skipped=_TIERS_SKIPPED,
          protocol=_TIERS_PROTOCOL),
    Claim("d-first-query", "... and cuts first-query latency with the embedding model "
          "already loaded", metric="recent.first_query_ms", direction=-1,
          baseline={"layout": "flat"}, treatment={"layout": "tiered"},
          beside=("recent.cold_loaded", "archived.first_query_ms", "archived.cold_loaded"),
          kind="cold_start", deployments=("support automation",), skipped=_TIERS_SKIPPED,
          protocol="same runs as d-cold-start; first_query_ms = opening the index, embedding "
                   "the query and searching it (tiered: hot, warm, and the cold archive only "
                   "when the warm confidence is low), in the fresh process after the model "
                   "load"),
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


def select(only: Sequence[str] | None) -> list[Claim]:
    """Claims named by id or id prefix ("d" → d-cold-start, d-first-query); None = all,
    [] = none (`run_claims(only=[])` rebuilds the report from the kept rows)."""
    if only is None:
        return list(CLAIMS)
    picked = [c for c in CLAIMS if any(c.id == o or c.id.startswith(f"{o}-") for o in only)]
    unknown = [o for o in only if not any(c.id == o or c.id.startswith(f"{o}-") for c in CLAIMS)]
    if unknown:
        raise ValueError(f"unknown claim(s) {unknown}; ids: {[c.id for c in CLAIMS]}")
    return picked


def claim_spec(claim: Claim, dataset: DatasetSpec, base: RAGConfig,
               smoke: bool = False) -> SweepSpec:
    ds = dataset
    if smoke:
        ds = ds.model_copy(update={"n": 5, "corpus_size": 12})
    keys = sorted(set(claim.baseline) | set(claim.treatment))
    grid = {k: [claim.baseline.get(k), claim.treatment.get(k)] for k in keys}
    name = f"claim-{claim.id}-{ds.name}" + ("-smoke" if smoke else "")
    return SweepSpec(name=name, dataset=ds, base=base, grid=grid, metrics=list(claim.metrics),
                     k=10, baseline=claim.baseline, llm_sample=claim.llm_sample)


def llm_budget(base: RAGConfig | None = None) -> pd.DataFrame:
    """The LLM cost of a full run, from `runner.estimate_llm_cost` (its ceiling: every
    context at its token budget, no cache hits), converted to minutes at this machine's
    rates; one row per LLM protocol run, plus the judge validation."""
    from .runner import estimate_llm_cost

    base = base or RAGConfig()
    rows = []
    for claim in CLAIMS:
        for deployment, ds in DATASETS.items():
            if not (claim.needs_llm and claim.applies_to(deployment)):
                continue
            if claim.kind == "agent":
                tasks = 2 * claim.llm_sample  # two arms
                rows.append({"protocol": claim.id, "deployment": deployment,
                             "llm_calls": tasks * 4,  # ≤ 3 agent turns + judges
                             "prompt_tokens_est": tasks * AGENT_TOKENS_PER_TASK,
                             "completion_tokens_est": tasks * 80})
                continue
            spec = claim_spec(claim, ds, base)
            est = estimate_llm_cost(spec, len(spec.configs()), ds.n or 10**6)
            rows.append({"protocol": claim.id, "deployment": deployment, **est})
    calls = 2 * JUDGE_VALIDATION["n"]
    rows.append({"protocol": "judge validation", "deployment": "HaluEval dev", "llm_calls": calls,
                 "prompt_tokens_est": calls * JUDGE_VALIDATION_TOKENS_PER_CALL,
                 "completion_tokens_est": calls * 16})
    df = pd.DataFrame(rows)
    df["minutes_est"] = (df["prompt_tokens_est"] / PROMPT_TOKENS_PER_S
                         + df["completion_tokens_est"] / COMPLETION_TOKENS_PER_S) / 60
    return df


def run_claims(out_dir: str | Path = "experiments/claims", smoke: bool = False,
               runs_dir: str | Path = "experiments/runs", cache_dir: str | Path = "experiments/cache",
               base: RAGConfig | None = None, log=print,  # noqa: ANN001
               only: Sequence[str] | None = None) -> pd.DataFrame:
    """Run the selected claims' protocols (all by default) on every deployment they apply
    to; keep the other claims' rows from the existing claims.json; write REPORT.md and
    claims.json. `smoke`: tiny samples, LLM-bound protocols recorded as not run."""
    from .coldstart import QUERIES, run_cold_start
    from .runner import run_sweep

    base = base or RAGConfig()
    chosen = {c.id for c in select(only)}
    previous = _previous_rows(Path(out_dir) / "claims.json", smoke)
    rows = []
    done: dict[str, Path] = {}
    judge: dict[str, Any] | None = None
    for claim in CLAIMS:
        for deployment, ds in DATASETS.items():
            if not claim.applies_to(deployment):
                reason = claim.skipped.get(deployment, "not in this protocol")
                rows.append(not_run_row(claim, deployment, "not applicable" if reason.startswith(
                    "not applicable") else "not run", reason))
                continue
            if claim.id not in chosen:
                old = previous.get((claim.id, deployment))
                rows.append(old if _same_protocol(old, claim) else not_run_row(
                    claim, deployment, "not run",
                    f"not run yet: `agentic-rag claims --only {claim.id}`"))
                continue
            if smoke and claim.needs_llm:
                rows.append(not_run_row(claim, deployment, "not run (smoke)",
                                        "LLM-bound: the smoke run starts no LLM"))
                continue
            if claim.kind == "cold_start":
                key = f"cold_start:{smoke}"
                if key not in done:
                    done[key] = run_cold_start(
                        runs_dir, repeats=2 if smoke else COLD_START_REPEATS,
                        root=Path(cache_dir) / "cold-start", name="claim-d-tiers"
                        + ("-smoke" if smoke else ""), n_banking=8 if smoke else None,
                        n_python=2 if smoke else None,
                        queries={"recent": QUERIES["recent"]} if smoke else None,
                        warmup=not smoke, log=log)
            elif claim.kind == "agent":
                key = f"agent:{claim.id}"
                if key not in done:
                    try:
                        done[key] = run_agent_claim(claim, runs_dir, log=log)
                    except FileNotFoundError as exc:
                        rows.append(not_run_row(claim, deployment, "not run", str(exc)))
                        continue
            else:
                spec = claim_spec(claim, ds, base, smoke)
                key = json.dumps(spec.model_dump(mode="json", exclude={"name"}), sort_keys=True)
                if key not in done:  # claims sharing a protocol share its run
                    done[key] = run_sweep(spec, runs_dir, cache_dir, progress=False,
                                          log=log).run_dir
            row = ledger_row(claim, deployment, done[key])
            if claim.id == "c-boundaries":
                judge = judge or run_judge_validation(base, runs_dir, cache_dir, log)
                row.update(judge)
            rows.append(row)
    ledger = pd.DataFrame(rows)
    write_report(ledger, out_dir, smoke, budget=llm_budget(base))
    return ledger


def run_agent_claim(claim: Claim, runs_dir: str | Path = "experiments/runs",
                    agent_runs: str | Path = "experiments/agent-runs", script: Path = AGENT_EVAL,
                    log=print) -> Path:  # noqa: ANN001
    """Run (or resume: rows and LLM calls are kept) the agent evaluation of both arms, then
    `agent_run_folder`. The script belongs to the repository checkout, not the package."""
    if not Path(script).exists():
        raise FileNotFoundError(f"{script} not found: the agent protocol runs from the "
                                "repository's root (`experiments/agent_eval.py`)")
    cmd = [sys.executable, str(script), "--run", AGENT_RUN, "--datasets", "tau2-banking",
           "--split", "test", "--n", str(claim.llm_sample),
           "--cells", AGENT_CELLS["treatment"], AGENT_CELLS["baseline"]]
    log(f"agent protocol {claim.id}: {' '.join(cmd)}")
    subprocess.run(cmd, check=True)
    return agent_run_folder(Path(agent_runs) / AGENT_RUN, runs_dir, claim,
                            name=f"claim-{claim.id}-tau2-banking")


def agent_run_folder(agent_dir: Path, runs_dir: str | Path, claim: Claim, name: str,
                     dataset: str = "tau2-banking", split: str = "test") -> Path:
    """An agent-evaluation folder (`rows.jsonl` + `judgements.jsonl`, one row per task and
    cell) as a run folder in the runner's format: `results.parquet` (config_id, query_id,
    metrics), `summary.csv` (per arm: means; treatment: the paired difference vs the
    baseline arm over the tasks both ran, its 95 % CI, and the relative change),
    `configs/c00.yaml` (baseline) and `c01.yaml`, `meta.json`."""
    from .runner import _versions
    from .stats import bootstrap_ci, paired_effect

    def read(p: Path) -> pd.DataFrame:
        return pd.DataFrame([json.loads(x) for x in p.read_text().splitlines()]) \
            if p.exists() else pd.DataFrame()

    rows, judged = read(agent_dir / "rows.jsonl"), read(agent_dir / "judgements.jsonl")
    if rows.empty:
        raise FileNotFoundError(f"{agent_dir / 'rows.jsonl'}: no agent rows")
    keys = ["dataset", "split", "cell", "qid"]
    if not judged.empty:
        rows = rows.merge(judged, on=keys, how="left", suffixes=("", "_judge"))
    rows = rows[(rows["dataset"] == dataset) & (rows["split"] == split)]
    metrics = [claim.metric, *claim.beside]
    arms = {"c00": AGENT_CELLS["baseline"], "c01": AGENT_CELLS["treatment"]}
    parts = []
    for cid, cell in arms.items():
        r = rows[rows["cell"] == cell]
        part = pd.DataFrame({"config_id": cid, "query_id": r["qid"].to_numpy()})
        for m in metrics:
            part[m] = pd.to_numeric(r[m], errors="coerce").to_numpy() if m in r else math.nan
        parts.append(part)
    results = pd.concat(parts, ignore_index=True)
    per = {cid: g.set_index("query_id") for cid, g in results.groupby("config_id")}
    if set(per) != set(arms):
        raise ValueError(f"{agent_dir}: rows for {sorted(arms.values())} needed, found "
                         f"{sorted(rows['cell'].unique())}")
    shared = per["c00"].index.intersection(per["c01"].index)
    out = []
    for cid, cell in arms.items():
        g = per[cid]
        s: dict[str, Any] = {"config_id": cid, "config": f"cell={cell}", "baseline": cid == "c00",
                             "n": len(g), "n_queries": len(shared)}
        for m in metrics:
            s[m] = float(g.loc[shared, m].mean())
            s[f"{m}_ci_low"], s[f"{m}_ci_high"] = bootstrap_ci(g.loc[shared, m].tolist())
            if cid == "c00":
                continue
            s.update(paired_effect(g.loc[shared, m].tolist(),
                                   per["c00"].loc[shared, m].tolist(), m))
        out.append(s)
    run_dir = Path(runs_dir) / f"{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{name}"
    (run_dir / "configs").mkdir(parents=True)
    RAGConfig().with_overrides(claim.baseline).save(run_dir / "configs" / "c00.yaml")
    RAGConfig().with_overrides(claim.treatment).save(run_dir / "configs" / "c01.yaml")
    results.to_parquet(run_dir / "results.parquet", index=False)
    pd.DataFrame(out).to_csv(run_dir / "summary.csv", index=False)
    meta_path = agent_dir / f"meta-{split}.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    corpus = (meta.get("corpora") or {}).get(dataset, {})
    (run_dir / "meta.json").write_text(json.dumps({
        "git_commit": meta.get("git_commit"), "python": sys.version,
        "platform": platform.platform(), "packages": _versions(),
        "dataset": corpus.get("name", f"{dataset}:{split}"), "agent_run": str(agent_dir),
        "agent_command": meta.get("command"), "embedding_model": RAGConfig().embedding.model,
        "llm": {"model": meta.get("model"), "server": meta.get("server")},
        "configs": {"c00": arms["c00"], "c01": arms["c01"]}}, indent=2))
    (run_dir / "status.json").write_text(json.dumps({"complete": True}))
    return run_dir


def _previous_rows(path: Path, smoke: bool) -> dict[tuple[str, str], dict[str, Any]]:
    """Measured rows of the existing claims.json, when it is of the same kind (smoke or not)."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    if bool(data.get("smoke")) != smoke:
        return {}
    return {(r["claim"], r["deployment"]): r for r in data.get("ledger", [])
            if r.get("verdict") in VERDICTS and r.get("run")}


def _same_protocol(row: dict[str, Any] | None, claim: Claim) -> bool:
    return row is not None and row.get("metric") == claim.metric and \
        json.loads(row["baseline"]) == claim.baseline and \
        json.loads(row["treatment"]) == claim.treatment


def not_run_row(claim: Claim, deployment: str, status: str, reason: str) -> dict[str, Any]:
    ds = DATASETS[deployment]
    nan = float("nan")
    return {"claim": claim.id, "statement": claim.statement, "deployment": deployment,
            "dataset": f"{ds.name}:{ds.split}", "metric": claim.metric,
            "direction": claim.direction, "design_figure": claim.design_figure,
            "protocol": claim.protocol, "n_queries": 0, "baseline": json.dumps(claim.baseline),
            "treatment": json.dumps(claim.treatment), "baseline_value": nan,
            "treatment_value": nan, "relative_effect": nan, "ci_low": nan, "ci_high": nan,
            "verdict": status, "reason": reason, "run": None}


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
    # a baseline mean of 0 leaves the relative change undefined; the CI's sign is then
    # read from the absolute difference (the same side of 0 whenever both are defined)
    signs = (lo, hi) if lo == lo and hi == hi else (diff["abs_ci_low"], diff["abs_ci_high"])
    row = {"claim": claim.id, "statement": claim.statement, "deployment": deployment,
           "dataset": meta["dataset"], "metric": m, "direction": claim.direction,
           "design_figure": claim.design_figure, "protocol": claim.protocol,
           "n_queries": _paired_n(run_dir, summary, m),
           "baseline": json.dumps(claim.baseline), "treatment": json.dumps(claim.treatment),
           "baseline_value": float(base_row[_col(summary, m)]),
           "treatment_value": float(treat_row[_col(summary, m)]),
           "relative_effect": rel, "ci_low": lo, "ci_high": hi, **diff,
           "verdict": verdict(lo, hi, claim.direction, claim.design_figure)
           if claim.design_figure is not None else verdict(*signs, claim.direction),
           "reason": "", "run": run_dir.name,
           "config_hashes": json.dumps({k: c.config_hash() for k, c in configs.items()}),
           "git_commit": meta.get("git_commit"), "embedding_model": meta.get("embedding_model"),
           "llm": json.dumps(meta.get("llm"))}
    if "failures" in summary.columns:
        row["failures"] = int(summary["failures"].sum())
    for b in claim.beside:
        col = b if b in summary.columns else f"{b}_mean"
        if col in summary.columns:
            row[f"{b}_baseline"] = float(base_row[col])
            row[f"{b}_treatment"] = float(treat_row[col])
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


def run_judge_validation(base: RAGConfig, runs_dir: str | Path, cache_dir: str | Path,
                         log=print) -> dict[str, Any]:  # noqa: ANN001
    """The support judge on HaluEval dev (right vs hallucinated answers, `validate_judge`),
    in a run folder `<stamp>-judge-validation`; an earlier run with the same model and
    sample is reused. Returns the ledger's judge_* fields."""
    from ..datasets import load_dataset
    from ..evaluation.llm_judge import validate_judge
    from ..llm import make_chat_model
    from ..server import LlamaServer
    from .runner import _git_commit

    model = base.llm.server.model if base.llm.base_url is None else base.llm.model
    want = {"model": model, "n_questions": JUDGE_VALIDATION["n"], "seed": JUDGE_VALIDATION["seed"]}
    for d in sorted(Path(runs_dir).glob("*-judge-validation"), reverse=True):
        res = json.loads((d / "validation.json").read_text()) if (d / "validation.json").exists() \
            else {}
        if all(res.get(k) == v for k, v in want.items()):
            return _judge_fields(res, d.name)
    ds = load_dataset("halueval-qa").split("dev").sample(JUDGE_VALIDATION["n"],
                                                          JUDGE_VALIDATION["seed"])
    items = [(q.metadata["knowledge"], q.answers[0], q.metadata["hallucinated_answer"])
             for q in ds.queries]
    server = LlamaServer(base.llm.server, home=cache_dir)
    started = base.llm.base_url is None and not server.running()
    if started:
        log(f"starting the local LLM server ({base.llm.server.model}) for the judge validation")
        server.start()
    try:
        res = validate_judge(make_chat_model(base.llm, Path(cache_dir) / "judge-validation"),
                             items)
    finally:
        if started:
            server.stop()
    res.update({**want, "split": "dev", "git_commit": _git_commit()})
    run_dir = Path(runs_dir) / f"{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-judge-validation"
    run_dir.mkdir(parents=True)
    (run_dir / "validation.json").write_text(json.dumps(res, indent=2))
    return _judge_fields(res, run_dir.name)


def _judge_fields(res: dict[str, Any], run: str) -> dict[str, Any]:
    return {"judge_validation": f"AUROC {res['auroc']:.2f}, accuracy {res['accuracy']:.2f} on "
                                f"{res['n']} HaluEval dev answers ({res['n_questions']} "
                                f"questions × right/hallucinated; {res['failures']} failures), "
                                f"run `{run}`",
            "judge_auroc": res["auroc"], "judge_accuracy": res["accuracy"], "judge_run": run}


def write_report(ledger: pd.DataFrame, out_dir: str | Path, smoke: bool = False,
                 budget: pd.DataFrame | None = None) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    records = [{k: None if isinstance(v, float) and v != v else v for k, v in r.items()}
               for r in ledger.to_dict(orient="records")]  # strict JSON: NaN → null
    (out_dir / "claims.json").write_text(json.dumps(
        {"date": stamp, "machine": platform.platform(), "smoke": smoke,
         "claims": [asdict(c) for c in CLAIMS], "ledger": records,
         "llm_budget": [] if budget is None else budget.to_dict(orient="records")},
        indent=1, default=str))
    lines = [f"# Claims ledger{' (smoke run: tiny samples, not evidence)' if smoke else ''}",
             "", f"Generated {stamp} on `{platform.platform()}` by `agentic-rag claims`. "
             "Every number below is read from the run folder named in its row "
             "(`experiments/runs/<run>/summary.csv`); rows of claims not rerun this time "
             "are kept from the previous report with their own run and commit.", "",
             "Verdict rule (code: `agentic_rag.experiments.claims.verdict`), on the 95 % "
             "paired bootstrap CI of the relative change treatment vs baseline over the same "
             "queries (tiers: the same repetitions): CI contains 0 → inconclusive; CI "
             "entirely opposite to the claimed direction → contradicted; the design states a "
             "figure and the whole CI is short of it → smaller than claimed; otherwise "
             "confirmed. When the baseline mean is 0 the relative change is undefined and the "
             "CI of the absolute difference decides (same sign). The design documents in this "
             "repository state directions, not figures, so no claim can be 'smaller than "
             "claimed' here. *not run* / *not applicable*: no measurement, no verdict; the "
             "reason is listed below the table.", "",
             "| claim | deployment (dataset) | n | metric | baseline → treatment | relative "
             "effect [95 % CI] | verdict | run |", "|---|---|---|---|---|---|---|---|"]
    for r in records:
        if r["verdict"] in NOT_RUN:
            lines.append(f"| {r['claim']} | {r['deployment']} ({r['dataset']}) | – | "
                         f"{r['metric']} | – | – | *{r['verdict']}* | "
                         f"{'`' + r['run'] + '`' if isinstance(r.get('run'), str) else '–'} |")
            continue
        lines.append(
            f"| {r['claim']} | {r['deployment']} ({r['dataset']}) | {r['n_queries']} | "
            f"{r['metric']} | {_num(r['baseline_value'])} → {_num(r['treatment_value'])} | "
            f"{r['relative_effect']:+.1%} [{r['ci_low']:+.1%}, {r['ci_high']:+.1%}] | "
            f"**{r['verdict']}** | `{r['run']}` |")
    lines += ["", "## Protocols", ""]
    for c in CLAIMS:
        lines.append(f"- **{c.id}** — {c.statement}. Baseline `{json.dumps(c.baseline)}`, "
                     f"treatment `{json.dumps(c.treatment)}`, metric `{c.metric}` "
                     f"({'higher' if c.direction > 0 else 'lower'} is the claim). {c.protocol}."
                     + (f" Deployments: {', '.join(c.deployments)}." if c.deployments else ""))
    lines += ["", "## Beside the effect (quality and cost of each arm)", ""]
    for r in records:
        parts = [", ".join(f"{k[:-9]} {_num(r[k])} → {_num(r[k.replace('_baseline', '_treatment')])}"
                           for k in r if k.endswith("_baseline") and r.get(k) is not None
                           and k != "baseline")]
        if r.get("failures") is not None:
            parts.append(f"failures (both arms) {int(r['failures'])}")
        if r["claim"] == "c-boundaries" and r["verdict"] not in NOT_RUN:
            judged = r.get("judge_validation")
            parts.append(f"judge: {judged if isinstance(judged, str) else 'not validated'}")
        if any(parts):
            lines.append(f"- {r['claim']} / {r['dataset']}: {'; '.join(p for p in parts if p)}")
    lines += ["", "## Not run, not applicable", ""]
    lines += [f"- {r['claim']} / {r['deployment']}: *{r['verdict']}* — {r.get('reason') or '?'}"
              for r in records if r["verdict"] in NOT_RUN]
    if budget is not None and len(budget):
        total = float(budget["minutes_est"].sum())
        lines += ["", "## LLM budget of a full run", "",
                  f"Ceiling from `runner.estimate_llm_cost` (every context at its "
                  f"{RAGConfig().context.max_tokens}-token budget + 150, 40 generated tokens a "
                  "call, no cache hits) at this machine's rates: "
                  f"{PROMPT_TOKENS_PER_S:.0f} prompt and {COMPLETION_TOKENS_PER_S:.0f} "
                  "generated tokens/s (Qwen2.5-Coder-1.5B, 2 CPU cores). Cached calls cost "
                  "nothing: c-boundaries' boundaries-on arm repeats b-answers' hybrid prompts, "
                  "and the judge reads the same evidence in both arms, so the real cost is "
                  "lower.", "", "| protocol | deployment | LLM calls | prompt tokens | "
                  "minutes |", "|---|---|---|---|---|"]
        lines += [f"| {b['protocol']} | {b['deployment']} | {b['llm_calls']} | "
                  f"{b['prompt_tokens_est']:,} | {b['minutes_est']:.0f} |"
                  for b in budget.to_dict(orient="records")]
        lines += [f"| total | | {int(budget['llm_calls'].sum())} | "
                  f"{int(budget['prompt_tokens_est'].sum()):,} | {total:.0f} |", "",
                  f"With the protocols that need no LLM (~{NON_LLM_MINUTES} min: retrieval "
                  "sweeps and the tiers benchmark), a full run's ceiling is "
                  f"{total + NON_LLM_MINUTES:.0f} min. Full run: `make claims`; the LLM "
                  "protocols alone: `agentic-rag claims --only b-answers --only c-boundaries "
                  "--only a-agent-tool-calls`."]
    commits = sorted({r["git_commit"] for r in records if isinstance(r.get("run"), str)
                      and isinstance(r.get("git_commit"), str)})
    models = sorted({r["embedding_model"] for r in records
                     if isinstance(r.get("embedding_model"), str)})
    lines += ["", f"Commits: {', '.join(f'`{c}`' for c in commits) or '?'}; embedding model "
              f"{', '.join(f'`{m}`' for m in models) or '?'}."]
    path = out_dir / "REPORT.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _num(x: float) -> str:
    return f"{x:.3f}" if abs(x) < 100 else f"{x:,.0f}"
