"""The evaluation commands on the `agentic-rag` app: `sweep`, `calibrate`, `claims`,
`agent-eval`, `question-eval`, `validate-detectors`, `containment-agreement`, `export`,
`validate-judge`.
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
    ManyValues,
    MaxConcurrencyOpt,
    MaxLLMCallsOpt,
    MlflowOpt,
    OptionalURI,
    _config,
    _fail,
    _stopped_at_cap,
    app,
    log_mlflow,
)
from agentic_rag.experiments.llm_cost import cap_message
from agentic_rag.studies.agent_eval.options import BANKING_QUESTIONS, SPLITS
from agentic_rag.studies.agent_eval.options import DEFAULTS as AGENT_EVAL_DEFAULTS


@app.command(cls=OptionalURI)
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
          mlflow: MlflowOpt = None,
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
    log_mlflow(mlflow, [res.run_dir])


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


@app.command(cls=OptionalURI)
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
           mlflow: MlflowOpt = None,
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
    # each claim's run folder (under experiments/runs), one experiment per spec
    log_mlflow(mlflow, [Path("experiments/runs") / r for r in dict.fromkeys(ledger.get("run", []))
                        if isinstance(r, str)])


AE = AGENT_EVAL_DEFAULTS
# agent-eval's longer options, named here to keep the command's signature readable
BankingQuestionOpt = Annotated[str, typer.Option(
    help=f"{' | '.join(BANKING_QUESTIONS)}. τ²-banking: the agent reads the framed "
         "role-play scenario, or the customer's opening message written from it by the "
         "LLM (use its own --run: the cells keep their names)")]
RepeatsOpt = Annotated[int, typer.Option(
    min=1, help="K > 1: the agent K times per question, sampling (--temperature), repeat "
    "r with the seed 1 + r, each repeat's replies cached apart; the summary adds pass@k, "
    "pass^k, the spread across repeats and the questions that flip (passk.csv, "
    "repeats.csv), beside the greedy run of the same questions (made too). The judges "
    "stay greedy")]
TemperatureOpt = Annotated[float | None, typer.Option(
    help="--repeats: the sampling temperature (default: a --config's llm.temperature "
         "when > 0, else 0.7)")]
# agent-eval's list defaults as the command shows and parses them (read only)
AE_DATASETS, AE_CELLS = list(AE.datasets), list(AE.cells)
AE_CORPUS_SIZE = [f"{k}={v}" for k, v in AE.corpus_size.items()]


@app.command("agent-eval", cls=ManyValues)
def agent_eval_cmd(
    run: Annotated[str, typer.Option(help="the run folder's name (under --runs-dir)")],
    runs_dir: Annotated[str, typer.Option(help="where the run folders are")] = AE.runs_dir,
    datasets: Annotated[list[str], typer.Option(
        help="one or more of python-faq, tau2-banking, banking-products (the product "
             "questions of datasets/banking-products over the τ²-banking documents)")] = AE_DATASETS,
    split: Annotated[str, typer.Option(help=" | ".join(SPLITS))] = AE.split,
    n: Annotated[int, typer.Option(help="questions per dataset")] = AE.n,
    seed: Annotated[int, typer.Option(help="which questions are drawn")] = AE.seed,
    cells: Annotated[list[str], typer.Option(
        help="one or more policy:mode[:gate] (policy: retrieve_first, tool_required, free, "
             "closed_book; mode: native or json; gate: gated, static, always_expand)")] = AE_CELLS,
    max_steps: Annotated[int, typer.Option(help="agent steps per question")] = AE.max_steps,
    context_tokens: Annotated[int, typer.Option(
        help="context.max_tokens: passages per search (cost: ~40 tokens/s reading)")] = (
        AE.context_tokens),
    port: Annotated[int, typer.Option(help="keep it fixed: the LLM cache key has it")] = AE.port,
    threads: Annotated[int, typer.Option(
        help="llama.cpp threads (1 is faster on an oversubscribed 2-core machine)")] = AE.threads,
    home: Annotated[str, typer.Option(help="the LLM cache and the indexes")] = AE.home,
    config: Annotated[str | None, typer.Option(
        metavar="YAML", help="a config file whose llm section is used when it sets "
        "llm.base_url or llm.endpoints: the calls go there (max_concurrency per endpoint) "
        "and no local server is started; otherwise the local server (--port, --threads)")] = None,
    corpus_size: Annotated[list[str], typer.Option(
        metavar="DATASET=N", help="one or more DATASET=N: index the sampled questions' gold "
        "documents plus seeded distractors up to N documents (the flag alone, or a dataset "
        "left out: the whole corpus)")] = AE_CORPUS_SIZE,
    budget_min: Annotated[float | None, typer.Option(
        help="stop the agent pass after this many minutes (rows so far are kept)")] = None,
    banking_question: BankingQuestionOpt = AE.banking_question,
    max_concurrency: Annotated[int | None, typer.Option(
        min=1, help="questions (their LLM calls) in flight at once (default: "
                    "llm.max_concurrency, 1; the local server has one slot, so more only "
                    "queue there)")] = None,
    max_llm_calls: MaxLLMCallsOpt = None,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="agent pass only")] = False,
    judge_only: Annotated[bool, typer.Option("--judge-only",
                                             help="judge the rows already run")] = False,
    summarize_only: Annotated[bool, typer.Option("--summarize-only",
                                                 help="only rewrite the summary")] = False,
    compare: Annotated[str | None, typer.Option(
        metavar="BEFORE_RUN", help="after summarizing, pair this run's rows with BEFORE_RUN's "
        "(same dataset × cell × question) into compare-<BEFORE_RUN>.csv")] = None,
    mlflow: MlflowOpt = None,
    repeats: RepeatsOpt = AE.repeats,
    temperature: TemperatureOpt = None,
) -> None:
    """Agent retrieval policies × tool modes vs closed-book on τ²-banking and the Python FAQ:
    one row per (dataset, split, cell, question) in <runs-dir>/<run>/rows.jsonl, judged into
    judgements.jsonl; a rerun resumes. List options take one or more values
    (`--cells retrieve_first:native closed_book:native`)."""
    from agentic_rag.jsonl import read_rows
    from agentic_rag.llm.calls import LLMCallCap
    from agentic_rag.studies.agent_eval.options import (
        AgentEvalOptions,
        command_line,
        parse_corpus_size,
    )
    from agentic_rag.studies.agent_eval.run import evaluate

    try:
        opts = AgentEvalOptions(
            run=run, runs_dir=runs_dir, datasets=datasets, split=split, n=n, seed=seed,
            cells=cells, max_steps=max_steps, context_tokens=context_tokens, port=port,
            threads=threads, home=home, config=config,
            corpus_size=parse_corpus_size([v for v in corpus_size if v]),
            budget_min=budget_min, banking_question=banking_question,
            max_concurrency=max_concurrency, max_llm_calls=max_llm_calls, no_judge=no_judge,
            judge_only=judge_only, summarize_only=summarize_only, compare=compare,
            repeats=repeats, temperature=temperature)
        evaluate(opts, out=typer.echo)
        log_mlflow(mlflow, [Path(runs_dir) / run], experiment="agent-eval")
    except LLMCallCap as stop:
        rows = len(read_rows(Path(runs_dir) / run / "rows.jsonl"))
        typer.echo(cap_message(stop, f"{rows} rows in {Path(runs_dir) / run}",
                               command_line(opts)))
        raise typer.Exit(0) from None
    except ValueError as exc:  # a bad cell, option or config file, before any LLM call
        _fail(str(exc))


@app.command("question-eval", cls=ManyValues)
def question_eval_cmd(
    questions: Annotated[str, typer.Argument(
        help="dev | test (datasets/banking-products) or a .jsonl of id, question, answer, "
             "doc_ids")],
    home: Annotated[str, typer.Option(help="the index home (the τ²-banking documents) and, "
                                           "with --agent, the LLM reply cache")],
    settings: Annotated[list[str] | None, typer.Option(
        help="one or more names: with --agent of studies.question_file.SETTINGS (default all; "
             "the first is the baseline), else of studies.strategies.STRATEGIES (default: the "
             "round's; `default` is the baseline)")] = None,
    agent: Annotated[bool, typer.Option(
        "--agent", help="the agent (LLM: the local server) instead of top-k retrieval")] = False,
    round_: Annotated[str, typer.Option(
        "--round", help="retrieval: an issue-40 round's settings, base and tag, coverage | "
                        "named | lexical | question | longest")] = "coverage",
    k: Annotated[int, typer.Option(min=1, help="retrieval: passages served")] = 5,
    base: Annotated[str | None, typer.Option(
        help="retrieval: the config the settings apply to, named-base | dense-named | "
             "before-longest | today (default: the round's; the agent: always named-base)")] = None,
    tag: Annotated[str | None, typer.Option(
        help="in the output names: agent-<set>[-n<N>]-<tag>.json, "
             "retrieval-top<k>-<tag>-<set>.json (default: none; retrieval: the round's)")] = None,
    n: Annotated[int | None, typer.Option(help="--agent: the first N questions only")] = None,
    out: Annotated[Path, typer.Option(help="where the outputs go")] = Path(
        "experiments/agent-support"),
    base_url: Annotated[str | None, typer.Option(
        envvar="LLM_BASE_URL", help="--agent: a llama.cpp server already answering there")] = None,
) -> None:
    """The agent or top-k retrieval on a question file, scored without an LLM (the gold
    figure among the answer's; a gold document or the answer among the top k), paired
    bootstrap CIs against the baseline setting (studies.question_file)."""
    from agentic_rag.studies.question_file import (
        BASES,
        ROUNDS,
        SETTINGS,
        agent_eval,
        retrieval_topk,
    )
    from agentic_rag.studies.strategies import STRATEGIES

    names = [s for s in settings or [] if s]
    known = SETTINGS if agent else STRATEGIES
    bad = [s for s in names if s not in known]
    if bad:
        _fail(f"unknown setting(s) {bad}: use {', '.join(known)}")
    if round_ not in ROUNDS or (base or "today") not in BASES:
        _fail(f"--round {round_!r} / --base {base!r}: use {', '.join(ROUNDS)} / "
              f"{', '.join(BASES)}")
    try:
        if agent:
            suffix = f"-{tag}" if tag else ""
            res = agent_eval(questions, home, names or None, n, suffix, out, base_url, typer.echo)
        else:
            r_names, r_base, r_tag = ROUNDS[round_]
            tag = r_tag if tag is None else tag
            res = retrieval_topk(questions, home, names or r_names, f"-{tag}" if tag else "",
                                 BASES[base or r_base], k, out)
    except (OSError, ValueError) as exc:  # a missing file, a bad row or config (ConfigError)
        _fail(str(exc))
    typer.echo(json.dumps(res, indent=1))


@app.command("validate-detectors")
def validate_detectors_cmd(
    n: Annotated[int, typer.Option(help="HaluEval questions (2 answers each)")] = 200,
    seed: Annotated[int, typer.Option()] = 0,
    split: Annotated[str, typer.Option()] = "dev",
    out: Annotated[str, typer.Option()] = "experiments/detectors/halueval-dev",
    home: Annotated[str, typer.Option(help="reply cache and server logs")] = "experiments/cache",
    config: Annotated[str | None, typer.Option(
        metavar="YAML", help="a config file whose llm section is used (llm.base_url / "
        "llm.endpoints: the calls go there and no local server is started)")] = None,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="lexical baseline only")] = False,
    max_llm_calls: MaxLLMCallsOpt = None,
    max_concurrency: Annotated[int | None, typer.Option(
        min=1, help="judge calls in flight (default: llm.max_concurrency per endpoint)")] = None,
    own_answers: Annotated[int, typer.Option(
        metavar="N", help="set (ii) instead: the local model's own answers to the first N "
        "HaluEval test questions of the (b)/(c) protocols' hybrid arm, then every detector on "
        "them, then the table against the labels (labels-pass1.jsonl, labels-pass2.jsonl in "
        "--out) when present")] = 0,
    ragas: Annotated[int, typer.Option(
        metavar="N", help="with --own-answers: also ragas Faithfulness on a balanced, seeded "
        "subsample of N labelled answers (slow: minutes per answer) → ragas.json")] = 0,
    decisions: Annotated[bool, typer.Option(
        "--decisions", help="no LLM: the detectors' decisions on the labelled answers in --out "
        "(thresholds chosen by 5-fold cross-validation, scored held-out, with CIs and cost per "
        "answer) → decisions.csv")] = False,
    answers_only: Annotated[bool, typer.Option(
        "--answers-only", help="with --own-answers: only generate the answers (for labelling)")
    ] = False,
    mtrag_human: Annotated[int, typer.Option(
        metavar="N", help="instead: the detectors against people on MTRAG's 477 human-rated "
        "responses: every no-LLM detector on all, the configured judge on the first N of a "
        "seeded order stratified by responding model and collection (477 = all; with --no-llm "
        "none), and the LLM labeller's labels in --out/labels-pass1.jsonl → human.json, "
        "human.csv (use --out experiments/detectors/mtrag-human)")] = 0,
) -> None:
    """Hallucination detectors (graded LLM judge, lexical baseline) on HaluEval right vs
    hallucinated answers, or on the model's own LLM-labelled answers, or against people on
    MTRAG's human-rated responses (--mtrag-human): AUROC with CIs."""
    if mtrag_human:
        from agentic_rag.studies.detectors.human import validate_human

        validate_human(mtrag_human, out, home, config, no_llm, max_concurrency, seed)
        return
    from agentic_rag.config_base import ConfigError
    from agentic_rag.studies.detectors.run import DetectorOptions, validate_detectors

    opts = DetectorOptions(n=n, seed=seed, split=split, out=out, home=home, config=config,
                           no_llm=no_llm, max_llm_calls=max_llm_calls,
                           max_concurrency=max_concurrency, own_answers=own_answers, ragas=ragas,
                           decisions=decisions, answers_only=answers_only)
    try:
        validate_detectors(opts)
    except ConfigError as exc:
        _fail(str(exc))


@app.command("containment-agreement", cls=ManyValues)
def containment_agreement_cmd(
    answers: Annotated[Path | None, typer.Option(
        help="own-answers JSONL, read only (default: the detector validation's own answers, "
             "containment_agreement.OWN_ANSWERS)")] = None,
    runs: Annotated[list[Path] | None, typer.Option(
        help="one or more run folders (default: the claim b-answers and c-boundaries runs "
             "under experiments/runs/; the flag alone: none)")] = None,
    threshold: Annotated[float, typer.Option(help="token F1 counted as right")] = 0.5,
) -> None:
    """answer_in_context (no LLM) vs the LLM's token F1 where both exist: own answers and
    claims runs."""
    from agentic_rag.studies.containment_agreement import report

    report(answers, None if runs is None else [r for r in runs if str(r) not in ("", ".")],
           threshold, log=typer.echo)


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


@app.command("mlflow-log", cls=OptionalURI)
def mlflow_log_cmd(
    run_dirs: Annotated[list[Path], typer.Argument(
        help="finished run folders (summary.csv; a sweep's spec.yaml gives each config's "
             "overrides as params)")],
    mlflow: MlflowOpt = "default",
    experiment: Annotated[str | None, typer.Option(
        help="the MLflow experiment (default: the spec's name, else the folder's)")] = None,
) -> None:
    """Log finished run folders to MLflow, old or new (what `sweep --mlflow` does after a
    run): a run per summary row, its overrides as params, every figure and CI bound as a
    metric; a folder already logged there is not logged twice."""
    from agentic_rag.experiments.mlflow_log import DEFAULT_URI, MlflowUnavailable, log_run_folder

    uri = DEFAULT_URI if mlflow in (None, "default") else mlflow
    for run_dir in run_dirs:
        try:
            log_run_folder(run_dir, uri, experiment, log=typer.echo)
        except (FileNotFoundError, ValueError, MlflowUnavailable) as exc:
            _fail(str(exc))


@app.command("validate-judge")
def validate_judge_cmd(
    n: Annotated[int, typer.Option(help="HaluEval questions (2 answers each)")] = 30,
    seed: Annotated[int, typer.Option()] = 0,
    metric: Annotated[str, typer.Option(help="judge (the configured support detector, "
                                        "agent.support.detector at its threshold) or "
                                        "ragas-faithfulness")] = "judge",
    out: Annotated[Path, typer.Option()] = Path("experiments/hallucination-validation.json"),
    config: ConfigOpt = None, home: HomeOpt = None, max_concurrency: MaxConcurrencyOpt = None,
) -> None:
    """Check a hallucination metric on HaluEval: does it tell right from hallucinated answers?
    "judge" is the support detector the config uses (`agent.support.detector`, default
    graded_judge_q): accuracy of its decisions at `agent.support.threshold`, AUROC of its
    score. The judge calls `llm.base_url` / `llm.endpoints` when set (no local server is started),
    up to `llm.max_concurrency` calls in flight per endpoint."""
    from agentic_rag.studies.detectors.run import validate_on_pairs

    cfg = _config(config, home)
    if metric not in ("judge", "ragas-faithfulness"):
        _fail(f"--metric {metric!r}: use judge or ragas-faithfulness")
    res = validate_on_pairs(cfg.llm, cfg.home, n, seed, metric, max_concurrency or cfg.llm.slots,
                            support=cfg.agent.support)
    out.parent.mkdir(parents=True, exist_ok=True)
    results = json.loads(out.read_text()) if out.exists() else {}
    results[metric] = res
    out.write_text(json.dumps(results, indent=2))
    typer.echo(json.dumps(res, indent=2))
    if res.get("auroc") == res.get("auroc") and res.get("auroc", 0.5) <= 0.6:
        typer.secho(f"{metric} cannot tell right from hallucinated answers here "
                    f"(AUROC {res['auroc']:.2f})", fg=typer.colors.YELLOW)
