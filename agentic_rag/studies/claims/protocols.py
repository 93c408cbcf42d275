"""Running the claims: `run_claims` runs each selected claim's protocol on every deployment
it applies to — a sweep (`runner.run_sweep`), the tiers benchmark (`coldstart.run_cold_start`)
or the agent evaluation (`run_agent_claim`, in-process) — reads a ledger row from each run
folder and writes the report. Also the support judge's validation and the LLM budget."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.config import RAGConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.experiments.llm_cost import COMPLETION_TOKENS_PER_S, PROMPT_TOKENS_PER_S
from agentic_rag.experiments.runfolder import mark_complete, new_run_dir, write_meta
from agentic_rag.experiments.spec import DatasetSpec
from agentic_rag.jsonl import read_rows
from agentic_rag.llm.calls import CallMeter
from agentic_rag.studies.claims.ledger import (
    RETIRED_JUDGE,
    detector_fields,
    ledger_row,
    not_run_row,
    previous_rows,
    redecided,
    same_protocol,
    session_detector_fields,
    with_provenance,
)
from agentic_rag.studies.claims.ppi import ppi_fields
from agentic_rag.studies.claims.registry import (
    AGENT_CELLS,
    AGENT_EVAL,
    AGENT_RUN,
    CLAIMS,
    COLD_START_REPEATS,
    DATASETS,
    LLM_SAMPLE,
    NOT_RUN,
    SESSION_CAVEAT,
    SESSION_COLLECTIONS,
    SESSIONS,
    SESSIONS_POOL,
    Claim,
    claim_spec,
    for_deployment,
    select,
)
from agentic_rag.studies.claims.report import write_report
from agentic_rag.studies.claims.rows import export_rows, rows_path

AGENT_RUNS = "experiments/agent-runs"  # the agent evaluation's folders (committed)


def run_claims(out_dir: str | Path = "experiments/claims", smoke: bool = False,
               runs_dir: str | Path = "experiments/runs", cache_dir: str | Path = "experiments/cache",
               base: RAGConfig | None = None, log=print,  # noqa: ANN001
               only: Sequence[str] | None = None,
               agent_runs: str | Path = AGENT_RUNS, max_concurrency: int | None = None,
               meter: CallMeter | None = None, llm_sample: int | None = None) -> pd.DataFrame:
    """Run the selected claims' protocols (all by default) on every deployment they apply
    to; keep the other claims' rows from the existing claims.json; write REPORT.md and
    claims.json. `smoke`: tiny samples, LLM-bound protocols recorded as not run.
    LLM protocols run up to `max_concurrency` calls at once (default `llm.slots`:
    `llm.max_concurrency` per endpoint) and share one `meter`: with a cap, `llm.LLMCallCap`
    stops the claims there (the run folders stay resumable; a rerun continues). The expected LLM cost is logged first.
    `llm_sample`: questions per arm of the answer-level protocols (b-answers, c-boundaries;
    default `LLM_SAMPLE`); the rows carry their n."""
    base = base or RAGConfig()
    claims = sampled(llm_sample)
    only, where = split_only(only)
    chosen = {c.id for c in select(only)}
    previous = previous_rows(Path(out_dir) / "claims.json", smoke)
    kept = {} if llm_sample is not None else _decided_at_larger_n(claims, chosen, previous)
    for (cid, deployment), row in kept.items():
        log(f"{cid} / {deployment}: kept the ledger's row at n = {row['n_queries']} (run "
            f"{row['run']}); the default sample would re-measure it at n = {LLM_SAMPLE}. "
            f"Rerun it with `--llm-sample {row['n_queries']}`")
    session = _Session(base, runs_dir, cache_dir, agent_runs, smoke, log,
                       max_concurrency or base.llm.slots, meter or CallMeter())
    if not smoke:
        _announce_llm(base, chosen - {cid for cid, _ in kept}, cache_dir,
                      session.max_concurrency, log, llm_sample)
    rows = {}
    for general in sorted(claims, key=_run_first):
        for deployment, ds in DATASETS.items():
            claim = for_deployment(general, deployment)
            if not claim.applies_to(deployment):
                reason = claim.skipped.get(deployment, "not applicable: not a protocol of "
                                           "MTRAG's sessions" if deployment in SESSIONS
                                           else "not in this protocol")
                row = not_run_row(claim, deployment, "not applicable" if reason.startswith(
                    "not applicable") else "not run", reason)
            elif smoke and claim.needs_llm:
                row = not_run_row(claim, deployment, "not run (smoke)",
                                  "LLM-bound: the smoke run starts no LLM")
            elif claim.id not in chosen or (claim.id, deployment) in kept or not any(
                    deployment.startswith(w) for w in where.get(claim.id, [""])) \
                    or _sessions_not_named(claim, deployment, where):
                old = previous.get((claim.id, deployment))
                row = redecided(old, claim) if same_protocol(old, claim) else not_run_row(
                    claim, deployment, "not run",
                    f"not run yet: `agentic-rag claims --only {claim.id}`")
            else:
                row = session.measure(claim, deployment, ds)
                if isinstance(row.get("run"), str) and not smoke:  # its per-question rows
                    export_rows(claim, deployment, Path(runs_dir) / row["run"], out_dir)
            row = with_provenance(row, claim, runs_dir, agent_runs)
            if row.get("verdict") not in NOT_RUN:
                path = rows_path(claim.id, deployment, out_dir)
                row["rows_file"] = path.name if path.exists() else None
                if not smoke:  # rates with the detector's error, from the committed rows
                    row.update(ppi_fields(row, claim, out_dir=out_dir))
            rows[claim.id, deployment] = row
    ledger = pd.DataFrame([rows[c.id, d] for c in claims for d in DATASETS])
    sample = llm_sample or max([LLM_SAMPLE, *(int(r["n_queries"]) for r in kept.values())])
    write_report(ledger, out_dir, smoke, budget=llm_budget(base, sample))
    return ledger


def _sessions_not_named(claim: Claim, deployment: str, where: dict[str, list[str]]) -> bool:
    """An LLM-bound claim on MTRAG's sessions runs only when named with a prefix of the
    deployment (`b-answers@sessions`): its calls (an agent turn per session and arm, ~1-3 min
    each on the shared 2 cores) are outside a plain run's budget (`llm_budget`)."""
    return claim.needs_llm and deployment in SESSIONS and not any(
        w and deployment.startswith(w) for w in where.get(claim.id, []))


def split_only(only: Sequence[str] | None
               ) -> tuple[list[str] | None, dict[str, list[str]]]:
    """`--only` entries as claim ids and, for an entry `CLAIM@PREFIX` ("b-answers@sessions"),
    the deployments it runs on (those whose name starts with PREFIX; its other deployments keep
    their ledger rows): (ids for `select`, claim id → prefixes). A claim named without a
    prefix runs on every deployment."""
    if only is None:
        return None, {}
    ids: list[str] = []
    where: dict[str, list[str]] = {}
    for entry in only:
        cid, _, prefix = entry.partition("@")
        ids.append(cid)
        for c in select([cid]):
            where.setdefault(c.id, []).append(prefix)
    return ids, where


def _decided_at_larger_n(claims: Sequence[Claim], chosen: set[str],
                         previous: dict[tuple[str, str], dict[str, Any]],
                         ) -> dict[tuple[str, str], dict[str, Any]]:
    """The ledger's rows of the chosen answer-level claims (b-answers, c-boundaries) that
    were measured, by the same protocol, on more questions than the default sample: a plain
    `agentic-rag claims` keeps them rather than replace a 200-question verdict by a
    14-question one (an explicit `--llm-sample` re-measures them)."""
    return {key: row for c in claims if c.id in chosen and c.needs_llm and c.kind != "agent"
            for key, row in previous.items()
            if key[0] == c.id and same_protocol(row, c)
            and int(row.get("n_queries") or 0) > c.llm_sample}


def sampled(llm_sample: int | None) -> tuple[Claim, ...]:
    """The claims, the answer-level sweeps (not the agent protocol) at `llm_sample`
    questions per arm when given."""
    if llm_sample is None:
        return CLAIMS
    if llm_sample < 1:
        raise ValueError(f"llm_sample: {llm_sample} is not >= 1")
    return tuple(replace(c, llm_sample=llm_sample) if c.needs_llm and c.kind != "agent" else c
                 for c in CLAIMS)


def _run_first(claim: Claim) -> bool:
    """Run order (the ledger keeps the registry's): the protocols that judge answers run
    before those that only answer. c-boundaries' boundaries-on arm is b-answers' hybrid arm;
    run first, its answer call comes right before its judge call on the same context, which
    then re-uses the server's processed prefix (`llm_judge.answer_messages`), and b-answers
    reads that answer from the cache."""
    return "hallucination" not in claim.metrics


class _Session:
    """The runs of one `run_claims` call: claims sharing a protocol share its run folder
    (a-iterations and a-iterations-quality, d-cold-start and d-first-query), and the judge
    validation runs once."""

    def __init__(self, base: RAGConfig, runs_dir: str | Path, cache_dir: str | Path,
                 agent_runs: str | Path, smoke: bool, log: Callable[[str], Any],
                 max_concurrency: int = 1, meter: CallMeter | None = None) -> None:
        self.base, self.runs_dir, self.cache_dir = base, runs_dir, cache_dir
        self.agent_runs, self.smoke, self.log = agent_runs, smoke, log
        self.max_concurrency, self.meter = max_concurrency, meter or CallMeter()
        self.done: dict[str, Path] = {}

    def measure(self, claim: Claim, deployment: str, ds: DatasetSpec) -> dict[str, Any]:
        try:
            run_dir = self._pool(claim) if deployment == SESSIONS_POOL else \
                self.run(claim, ds)
        except FileNotFoundError as exc:  # the agent evaluation left no rows
            if claim.kind != "agent":
                raise
            return not_run_row(claim, deployment, "not run", str(exc))
        row = ledger_row(claim, deployment, run_dir)
        if deployment in SESSIONS:
            row["corpus_caveat"] = SESSION_CAVEAT
        if claim.id == "c-boundaries":
            row.update(judge_fields(run_dir, self.base.agent.support.threshold))
            if deployment in SESSIONS:  # the detector judged against people on MTRAG itself
                row.update(session_detector_fields())
        return row

    def run(self, claim: Claim, ds: DatasetSpec) -> Path:
        """The claim's run folder, run now unless an earlier claim ran the same protocol."""
        if claim.kind == "cold_start":
            key, run = f"cold_start:{self.smoke}", self._cold_start
        elif claim.kind == "agent":
            key = f"agent:{claim.id}"

            def run() -> Path:
                return run_agent_claim(claim, self.runs_dir, self.agent_runs, log=self.log,
                                       max_concurrency=self.max_concurrency, meter=self.meter,
                                       llm=self.base.llm)
        else:
            from agentic_rag.experiments.runner import run_sweep

            spec = claim_spec(claim, ds, self.base, self.smoke)
            key = json.dumps(spec.model_dump(mode="json", exclude={"name"}), sort_keys=True)

            def run() -> Path:
                return run_sweep(spec, self.runs_dir, self.cache_dir, progress=False,
                                 log=self.log, max_concurrency=self.max_concurrency,
                                 meter=self.meter).run_dir
        if key not in self.done:
            self.done[key] = run()
        return self.done[key]

    def _pool(self, claim: Claim) -> Path:
        """The sessions' pool: the four collections' runs (run once each) pooled
        (`pool.pool_runs`)."""
        from agentic_rag.studies.claims.pool import pool_runs

        dirs = [self.run(claim, DATASETS[d]) for d in SESSION_COLLECTIONS]
        spec = claim_spec(claim, DATASETS[SESSIONS_POOL], self.base, self.smoke)
        return pool_runs(dirs, spec, self.runs_dir)

    def _cold_start(self) -> Path:
        from agentic_rag.studies.coldstart import QUERIES, run_cold_start

        smoke = self.smoke
        return run_cold_start(
            self.runs_dir, repeats=2 if smoke else COLD_START_REPEATS,
            root=Path(self.cache_dir) / "cold-start",
            name="claim-d-tiers" + ("-smoke" if smoke else ""), n_banking=8 if smoke else None,
            n_python=2 if smoke else None,
            queries={"recent": QUERIES["recent"]} if smoke else None, warmup=not smoke,
            log=self.log)


def run_agent_claim(claim: Claim, runs_dir: str | Path = "experiments/runs",
                    agent_runs: str | Path = AGENT_RUNS, log=print,  # noqa: ANN001
                    max_concurrency: int = 1, meter: CallMeter | None = None,
                    llm: LLMConfig | None = None) -> Path:
    """Run (or resume: rows and LLM calls are kept) the agent evaluation of both arms in this
    process (`agent_eval.run.evaluate`, what `agentic-rag agent-eval` runs), then
    `agent_run_folder`. Its LLM calls go through `meter` (`LLMCallCap` propagates), to
    `llm.base_url` / `llm.endpoints` when `llm` sets them (else the agent evaluation's own
    local server)."""
    from agentic_rag.studies.agent_eval import run as agent_eval
    from agentic_rag.studies.agent_eval.options import AgentEvalOptions, command_line

    opts = AgentEvalOptions(run=AGENT_RUN, runs_dir=str(agent_runs), datasets=("tau2-banking",),
                            split="test", n=claim.llm_sample,
                            cells=(AGENT_CELLS["treatment"], AGENT_CELLS["baseline"]),
                            max_concurrency=max_concurrency if max_concurrency > 1 else None)
    log(f"agent protocol {claim.id}: {command_line(opts, AGENT_EVAL)}")
    agent_eval.evaluate(opts, meter=meter or CallMeter(), llm=llm, out=log)
    return agent_run_folder(Path(agent_runs) / AGENT_RUN, runs_dir, claim,
                            name=f"claim-{claim.id}-tau2-banking")


def agent_run_folder(agent_dir: Path, runs_dir: str | Path, claim: Claim, name: str,
                     dataset: str = "tau2-banking", split: str = "test") -> Path:
    """An agent-evaluation folder (`rows.jsonl` + `judgements.jsonl`, one row per task and
    cell) as a run folder in the runner's format: `results.parquet` (config_id, query_id,
    metrics), `summary.csv` (per arm: means; treatment: the paired difference vs the
    baseline arm over the tasks both ran, its 95 % CI, and the relative change),
    `configs/c00.yaml` (baseline) and `c01.yaml`, `meta.json`."""
    arms = {"c00": AGENT_CELLS["baseline"], "c01": AGENT_CELLS["treatment"]}
    results = _agent_results(agent_dir, dataset, split, arms, [claim.metric, *claim.beside])
    run_dir = new_run_dir(runs_dir, name)
    (run_dir / "configs").mkdir()
    RAGConfig().with_overrides(claim.baseline).save(run_dir / "configs" / "c00.yaml")
    RAGConfig().with_overrides(claim.treatment).save(run_dir / "configs" / "c01.yaml")
    results.to_parquet(run_dir / "results.parquet", index=False)
    pd.DataFrame(_agent_summary(results, arms, [claim.metric, *claim.beside])).to_csv(
        run_dir / "summary.csv", index=False)
    meta_path = agent_dir / f"meta-{split}.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    corpus = (meta.get("corpora") or {}).get(dataset, {})
    write_meta(run_dir, {
        "git_commit": meta.get("git_commit"),  # the agent evaluation's commit, not today's
        "dataset": corpus.get("name", f"{dataset}:{split}"), "agent_run": str(agent_dir),
        "agent_command": meta.get("command"), "embedding_model": RAGConfig().embedding.model,
        "llm": {"model": meta.get("model"), "server": meta.get("server"),
                **(meta.get("llm") or {})},  # identity, reply-cache key, calls in flight
        "configs": {"c00": arms["c00"], "c01": arms["c01"]}})
    mark_complete(run_dir)
    return run_dir


def _agent_results(agent_dir: Path, dataset: str, split: str, arms: dict[str, str],
                   metrics: list[str]) -> pd.DataFrame:
    """One row per (arm, task): config_id, query_id and the metrics (judge verdicts merged)."""
    def read(p: Path) -> pd.DataFrame:  # the evaluation's own files: a torn last line
        return pd.DataFrame(read_rows(p, repair=False))  # skipped, the file left alone

    rows, judged = read(agent_dir / "rows.jsonl"), read(agent_dir / "judgements.jsonl")
    if rows.empty:
        raise FileNotFoundError(f"{agent_dir / 'rows.jsonl'}: no agent rows")
    keys = ["dataset", "split", "cell", "qid"]
    if not judged.empty:
        rows = rows.merge(judged, on=keys, how="left", suffixes=("", "_judge"))
    rows = rows[(rows["dataset"] == dataset) & (rows["split"] == split)]
    parts = []
    for cid, cell in arms.items():
        r = rows[rows["cell"] == cell]
        part = pd.DataFrame({"config_id": cid, "query_id": r["qid"].to_numpy()})
        for m in metrics:
            part[m] = pd.to_numeric(r[m], errors="coerce").to_numpy() if m in r else math.nan
        parts.append(part)
    results = pd.concat(parts, ignore_index=True)
    if set(results["config_id"]) != set(arms):
        raise ValueError(f"{agent_dir}: rows for {sorted(arms.values())} needed, found "
                         f"{sorted(rows['cell'].unique())}")
    return results


def _agent_summary(results: pd.DataFrame, arms: dict[str, str],
                   metrics: list[str]) -> list[dict[str, Any]]:
    """The runner's summary rows over the tasks both arms ran: means and CIs per arm, the
    treatment's paired effect vs the baseline (`stats.paired_effect`)."""
    from agentic_rag.experiments.stats import bootstrap_ci, paired_effect

    per = {cid: g.set_index("query_id") for cid, g in results.groupby("config_id")}
    shared = per["c00"].index.intersection(per["c01"].index)
    out = []
    for cid, cell in arms.items():
        g = per[cid]
        s: dict[str, Any] = {"config_id": cid, "config": f"cell={cell}", "baseline": cid == "c00",
                             "n": len(g), "n_queries": len(shared)}
        for m in metrics:
            s[m] = float(g.loc[shared, m].mean())
            s[f"{m}_ci_low"], s[f"{m}_ci_high"] = bootstrap_ci(g.loc[shared, m].tolist())
            if cid != "c00":
                s.update(paired_effect(g.loc[shared, m].tolist(),
                                       per["c00"].loc[shared, m].tolist(), m))
        out.append(s)
    return out


def judge_fields(run_dir: Path, threshold: float, root: str | Path = ".") -> dict[str, Any]:
    """What validates a hallucination row: the run's detector (`detector_fields`), its
    threshold (the PPI rates come later, from the exported rows: `claims.ppi`); for a run
    judged by the yes/no JSON judge (no `support_detector` in its rows), which is gone,
    `RETIRED_JUDGE`: nothing validates it, and nothing is borrowed from another detector."""
    detector = run_detector(run_dir)
    if detector is None:
        return dict(RETIRED_JUDGE)
    return {**detector_fields(detector, root), "support_threshold": threshold,
            "support_detector": detector}


def run_detector(run_dir: Path) -> str | None:
    """The support detector a sweep's `hallucinated` came from (rows' `support_detector`),
    None for a run judged by the binary JSON judge."""
    path = Path(run_dir) / "results.parquet"
    if not path.exists():
        return None
    df = pd.read_parquet(path)
    col = next((c for c in ("support_detector", "agent_support_detector") if c in df.columns),
               None)  # a single answer's, or a session turn's (experiments/sessions.py)
    if col is None:
        return None
    found = df[col].dropna().unique().tolist()
    return str(found[0]) if len(found) == 1 else None


def _announce_llm(base: RAGConfig, chosen: set[str], cache_dir: str | Path, concurrency: int,
                  log: Callable[[str], Any], llm_sample: int | None = None) -> None:
    """The chosen LLM protocols' ceiling (`llm_budget`: calls, tokens), and its wall time at
    the rates measured in the protocols' reply caches, else the rate constants."""
    from agentic_rag.experiments.llm_cost import (
        estimate_line,
        measured_rates,
        planned_model,
        serves_in_parallel,
    )
    from agentic_rag.studies.agent_eval.options import HOME

    budget = llm_budget(base, llm_sample)
    ids = {c.id for c in CLAIMS if c.id in chosen and c.needs_llm}
    mine = budget[budget["protocol"].isin(ids)]
    if mine.empty:
        return
    est = {k: int(mine[k].sum()) for k in ("llm_calls", "prompt_tokens_est",
                                           "completion_tokens_est")}
    caches = [*sorted(Path(cache_dir).glob("index-*/cache/llm.sqlite")), Path(HOME) / "llm.sqlite",
              Path(cache_dir) / "cache" / "llm.sqlite"]  # validate-detectors' replies
    log(f"LLM protocols {sorted(ids)}: " + estimate_line(
        est, measured_rates(caches, model=planned_model(base.llm)), concurrency,
        serves_in_parallel(base.llm)))


def llm_budget(base: RAGConfig | None = None, llm_sample: int | None = None) -> pd.DataFrame:
    """The LLM cost of a full run, from `runner.estimate_llm_cost` (its ceiling: every
    context at its token budget, no cache hits), converted to minutes at this machine's
    rates; one row per LLM protocol run."""
    from agentic_rag.experiments.llm_cost import agent_cost
    from agentic_rag.experiments.plan import estimate_llm_cost

    base = base or RAGConfig()
    rows = []
    for general in sampled(llm_sample):
        for deployment, ds in DATASETS.items():
            claim = for_deployment(general, deployment)
            if not (claim.needs_llm and claim.applies_to(deployment)) \
                    or deployment in SESSIONS:  # run only when named (`_sessions_not_named`)
                continue
            if claim.kind == "agent":
                tasks = 2 * claim.llm_sample  # two arms
                rows.append({"protocol": claim.id, "deployment": deployment,
                             **agent_cost(tasks)})  # ≤ 3 agent turns + judges
                continue
            spec = claim_spec(claim, ds, base)
            est = estimate_llm_cost(spec, len(spec.configs()), ds.n or 10**6)
            rows.append({"protocol": claim.id, "deployment": deployment, **est})
    df = pd.DataFrame(rows)
    df["minutes_est"] = (df["prompt_tokens_est"] / PROMPT_TOKENS_PER_S
                         + df["completion_tokens_est"] / COMPLETION_TOKENS_PER_S) / 60
    return df
