"""The evaluation commands on the `agentic-rag` app: `sweep`, `calibrate`, `claims`,
`agent-eval`, `validate-detectors`, `containment-agreement`, `export`, `validate-judge`.
Like `cli`, they only call the library."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.cli.app import (
    ConfigOpt,
    HomeOpt,
    MaxConcurrencyOpt,
    MaxLLMCallsOpt,
    _config,
    _fail,
    _stopped_at_cap,
    app,
)


@app.command()
def sweep(spec: Path,
          runs_dir: Annotated[Path, typer.Option(help="where run folders go")] = Path("experiments/runs"),
          cache_dir: Annotated[Path, typer.Option(help="shared indexes and embeddings")] = Path(
              "experiments/cache"),
          plots: Annotated[bool, typer.Option(help="write PNG plots into the run folder")] = True,
          export_metric: Annotated[str | None, typer.Option(
              "--export", help="also export the best config by this metric")] = None,
          test: Annotated[bool, typer.Option(
              help="with --export: score the chosen config on the test split too")] = False,
          cache: Annotated[bool, typer.Option(
              help="read finished rows from the row cache (--no-cache: recompute every row; "
                   "the fresh rows replace the stored ones)")] = True,
          row_cache: Annotated[Path | None, typer.Option(
              help="the row cache file; default <cache-dir>/rows.sqlite")] = None,
          max_concurrency: MaxConcurrencyOpt = None,
          max_llm_calls: MaxLLMCallsOpt = None,
          executor: Annotated[str | None, typer.Option(
              help="local or ray (default: the spec's `executor`, else local)")] = None,
          ray_address: Annotated[str | None, typer.Option(
              help="with ray: a running cluster (host:port, ray://host:port, auto); default "
                   "RAY_ADDRESS, else a cluster on this machine, else a local one")] = None,
          ) -> None:
    """Run a sweep spec (YAML); rerunning the same spec resumes an unfinished run, and rows
    finished by any earlier run are read from the row cache, not recomputed. `--executor ray`
    runs it on a Ray cluster (docs/cluster.md): the same rows, the same run folder."""
    from agentic_rag.config_base import ConfigError
    from agentic_rag.experiments.export import export_config
    from agentic_rag.experiments.runner import run_sweep
    from agentic_rag.experiments.spec import SweepSpec
    from agentic_rag.experiments.summary import print_chosen, print_summary
    from agentic_rag.llm.calls import CallMeter, LLMCallCap

    try:
        spec_obj = SweepSpec.load(spec)
        spec_obj = spec_obj.with_executor(executor, ray_address)
    except ConfigError as exc:
        _fail(str(exc))
    t0 = time.perf_counter()
    try:
        res = run_sweep(spec_obj, runs_dir, cache_dir, progress=sys.stderr.isatty(),
                        log=typer.echo, use_cache=cache, row_cache=row_cache,
                        max_concurrency=max_concurrency, meter=CallMeter(max_llm_calls))
    except LLMCallCap as stop:
        _stopped_at_cap(stop, "the sweep's run folder is unfinished")
    except (RuntimeError, ValueError) as exc:
        _fail(str(exc))
    typer.echo(f"finished in {time.perf_counter() - t0:.0f}s")
    files = ["summary.csv (every column)", "results.parquet (a row per config × query)",
             "rows.jsonl", "meta.json", "configs/"]
    if plots and not res.summary.empty and "ndcg@10" in res.summary:
        res.plot_tradeoff(path=res.run_dir / "tradeoff.png")
        files.append("tradeoff.png")
    out = None
    if export_metric:  # with --test this runs the chosen config on the test split (it logs)
        out = export_config(res.run_dir, metric=export_metric, test=test, cache_dir=cache_dir)
    typer.echo("")
    print_summary(res.summary, typer.echo, metric=export_metric)
    if out is not None:
        typer.echo("")
        print_chosen(out, typer.echo)
    typer.echo(f"\nfiles in {res.run_dir}/:\n  " + ", ".join(files))


@app.command()
def calibrate(
        dataset: Annotated[list[str] | None, typer.Option(
            help="dataset names (repeatable); default: halueval-qa, python-faq, tau2-banking")] = None,
        n: Annotated[int, typer.Option(help="queries per dataset and split")] = 100,
        config: ConfigOpt = None,
        cache_dir: Annotated[Path, typer.Option(help="shared indexes and embeddings")] = Path(
            "experiments/cache"),
        out: Annotated[Path, typer.Option(help="calibrator JSON")] = Path("calibration.json"),
) -> None:
    """Fit the gate's calibrated confidence on dev qrels; print the held-out reliability."""
    from agentic_rag.studies.calibrate import fit_on_datasets, threshold_table

    base = _config(config, None)
    names = dataset or ["halueval-qa", "python-faq", "tau2-banking"]
    cal, test = fit_on_datasets(names, n, base, cache_dir, out, log=typer.echo)
    typer.echo(threshold_table(test).pivot_table(index=["dataset", "retrievers"],
                                                 columns="threshold", values="expand_share")
               .round(2).to_string())
    typer.echo(f"set gate.calibration: {out} and gate.calibration_sha256 to use it")


@app.command()
def claims(smoke: Annotated[bool, typer.Option(help="tiny samples (CI): checks the machinery, "
                                              "not the claims")] = False,
           out: Annotated[Path, typer.Option(help="report folder")] = Path("experiments/claims"),
           only: Annotated[list[str] | None, typer.Option(
               help="rerun these claims (id or prefix, e.g. 'd'; repeatable) and keep the "
                    "others' rows from the existing claims.json")] = None,
           config: ConfigOpt = None,
           max_concurrency: MaxConcurrencyOpt = None,
           max_llm_calls: MaxLLMCallsOpt = None,
           llm_sample: Annotated[int | None, typer.Option(
               min=1, help="questions per arm of the answer-level claims (b-answers, "
                           "c-boundaries); default: the registry's LLM_SAMPLE")] = None,
           rebuild: Annotated[bool, typer.Option(
               help="run nothing: re-apply the verdict rule and the stated figures to the "
                    "existing claims.json rows and rewrite REPORT.md + claims.json")] = False,
           ) -> None:
    """Run one protocol per design claim on the three deployments; write REPORT.md + claims.json."""
    from agentic_rag.llm.calls import CallMeter, LLMCallCap
    from agentic_rag.studies.claims.protocols import run_claims

    if rebuild and only:
        _fail("--rebuild runs nothing; it cannot be combined with --only")
    try:
        ledger = run_claims(out, smoke=smoke, base=_config(config, None), log=typer.echo,
                            only=[] if rebuild else only or None,
                            max_concurrency=max_concurrency,
                            meter=CallMeter(max_llm_calls), llm_sample=llm_sample)
    except LLMCallCap as stop:
        _stopped_at_cap(stop, "REPORT.md and claims.json are not rewritten until the claims "
                              "finish")
    except ValueError as exc:
        _fail(str(exc))
    typer.echo(ledger[["claim", "dataset", "n_queries", "relative_effect", "ci_low", "ci_high",
                       "verdict"]].to_string(index=False))
    typer.echo(f"report: {out / 'REPORT.md'}")


@app.command("agent-eval", add_help_option=False,
             context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def agent_eval_cmd(ctx: typer.Context) -> None:
    """Agent retrieval policies × tool modes vs closed-book on τ²-banking and the Python FAQ
    (rows in experiments/agent-runs/<run>/; options: agentic-rag agent-eval --help)."""
    from agentic_rag.studies.agent_eval.run import main as agent_eval

    agent_eval(ctx.args, prog="agentic-rag agent-eval")


@app.command("validate-detectors", add_help_option=False,
             context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def validate_detectors_cmd(ctx: typer.Context) -> None:
    """Hallucination detectors (graded LLM judge, lexical baseline) on HaluEval right vs
    hallucinated answers: AUROC with CIs (options: agentic-rag validate-detectors --help)."""
    from agentic_rag.studies.detectors.run import main as detectors

    detectors(ctx.args, prog="agentic-rag validate-detectors")


@app.command("containment-agreement", add_help_option=False,
             context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def containment_agreement_cmd(ctx: typer.Context) -> None:
    """answer_in_context (no LLM) vs the LLM's token F1 where both exist: own answers and
    claims runs (options: agentic-rag containment-agreement --help)."""
    from agentic_rag.studies.containment_agreement import main as containment_agreement

    containment_agreement(ctx.args, prog="agentic-rag containment-agreement")


@app.command()
def export(run_dir: Path,
           metric: Annotated[str, typer.Option(help="summary column to maximise")] = "ndcg@10",
           constraint: Annotated[list[str] | None, typer.Option(
               help="e.g. 'latency_p50_ms<50' (repeatable)")] = None,
           out: Annotated[Path | None, typer.Option(help="output YAML")] = None,
           test: Annotated[bool, typer.Option(
               help="score the chosen config on the test split and record it")] = False) -> None:
    """Write the best config of a run (YAML with a provenance block): chosen on dev, and with
    --test also scored on the test split."""
    from agentic_rag.experiments.export import choose_config, export_config

    try:
        row = choose_config(run_dir, metric, constraint)
        path = export_config(run_dir, out, metric, constraint, test=test)
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    typer.echo(f"{row['config_id']} ({row['config']}): {metric}={row[metric]:.4f}, "
               f"latency_p50_ms={row['latency_p50_ms']:.1f} -> {path}")


@app.command("validate-judge")
def validate_judge_cmd(
    n: Annotated[int, typer.Option(help="HaluEval questions (2 answers each)")] = 30,
    seed: Annotated[int, typer.Option()] = 0,
    metric: Annotated[str, typer.Option(help="judge or ragas-faithfulness")] = "judge",
    out: Annotated[Path, typer.Option()] = Path("experiments/hallucination-validation.json"),
    config: ConfigOpt = None, home: HomeOpt = None, max_concurrency: MaxConcurrencyOpt = None,
) -> None:
    """Check a hallucination metric on HaluEval: does it tell right from hallucinated answers?
    The judge calls `llm.base_url` / `llm.endpoints` when set (no local server is started),
    up to `llm.max_concurrency` calls in flight per endpoint."""
    from agentic_rag.studies.detectors.run import validate_on_pairs

    cfg = _config(config, home)
    if metric not in ("judge", "ragas-faithfulness"):
        _fail(f"--metric {metric!r}: use judge or ragas-faithfulness")
    res = validate_on_pairs(cfg.llm, cfg.home, n, seed, metric, max_concurrency or cfg.llm.slots)
    out.parent.mkdir(parents=True, exist_ok=True)
    results = json.loads(out.read_text()) if out.exists() else {}
    results[metric] = res
    out.write_text(json.dumps(results, indent=2))
    typer.echo(json.dumps(res, indent=2))
    if res.get("auroc") == res.get("auroc") and res.get("auroc", 0.5) <= 0.6:
        typer.secho(f"{metric} cannot tell right from hallucinated answers here "
                    f"(AUROC {res['auroc']:.2f})", fg=typer.colors.YELLOW)
