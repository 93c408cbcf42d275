"""`agentic-rag tune my-docs/ --out tuned/`: a folder to a tuned, servable config in one
command (`studies.tune.tune`: questions generated from the documents, a sweep chosen for
them, the rule on dev, the figures on test, `tuned/best-config.yaml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.cli.app import (
    ConfigOpt,
    HomeOpt,
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
from agentic_rag.ingest.readers import FORMATS


@app.command(cls=OptionalURI)
def tune(
    folder: Annotated[Path | None, typer.Argument(
        help=f"a folder of {FORMATS} documents (not with --explain)")] = None,
    n: Annotated[int, typer.Option(min=2, help="questions to generate (half dev, half test)")] = 200,
    budget: Annotated[str, typer.Option(
        help="search space: quick (a handful of configs), standard (+ gate modes, more "
             "weights), thorough (+ chunk sizes, single retrievers)")] = "quick",
    llm_strategies: Annotated[bool, typer.Option(
        "--llm-strategies", help="also try LLM rerank (and, standard and up, multi-query, "
                                 "HyDE): LLM calls per query")] = False,
    out: Annotated[Path, typer.Option(help="where the set, the report and best-config.yaml "
                                           "go")] = Path("tuned"),
    seed: Annotated[int, typer.Option(help="sampling and split seed")] = 0,
    questions: Annotated[Path | None, typer.Option(
        help="a set made already from FOLDER (agentic-rag testset), with its own dev/test "
             "split: used instead of generating one")] = None,
    rule: Annotated[str, typer.Option(
        help="the choice rule on dev: noninferiority (the default; "
             "experiments/tune/RULE-NONINFERIORITY.md) or sign (the rule before it)")]
        = "noninferiority",
    explain: Annotated[Path | None, typer.Option(
        "--explain", metavar="RUN_DIR",
        help="print a finished run's dev table with each candidate's verdict under --rule "
             "(RUN_DIR: a tune --out folder, a sweep run folder with summary.csv, or a "
             "folder holding only a tune report.md); "
             "nothing is rerun")] = None,
    config: ConfigOpt = None, home: HomeOpt = None,
    max_concurrency: MaxConcurrencyOpt = None, max_llm_calls: MaxLLMCallsOpt = None,
    mlflow: MlflowOpt = None,
) -> None:
    """Generate questions from FOLDER, sweep settings chosen for its documents, choose on
    the dev questions by a fixed rule, score once on the test questions, and write
    OUT/best-config.yaml, OUT/report.md and OUT/tune.png. Every step is cached: a rerun
    (after --max-llm-calls, a stopped LLM or an interrupt) continues. `--explain RUN_DIR`:
    the dev table of a finished run with each candidate's verdict, nothing rerun."""
    from agentic_rag.llm.binary import ServerError
    from agentic_rag.llm.calls import LLMCallCap
    from agentic_rag.llm.types import LLMError
    from agentic_rag.studies.tune import tune as run_tune
    from agentic_rag.studies.tune_space import TuneError

    if explain is not None:
        from agentic_rag.studies.tune_report import explain_run

        if folder is not None:
            _fail("--explain RUN_DIR reads a finished run: give no FOLDER with it")
        try:
            typer.echo(explain_run(explain, rule))
        except TuneError as exc:
            _fail(str(exc))
        return
    if folder is None:
        _fail("FOLDER: a folder of documents to tune for (or --explain RUN_DIR)")
    cfg = _config(config, home)
    try:
        res = run_tune(folder, n=n, budget=budget, llm_strategies=llm_strategies, out=out,
                       max_llm_calls=max_llm_calls, config=cfg, seed=seed, log=typer.echo,
                       max_concurrency=max_concurrency, questions=questions, rule=rule)
    except LLMCallCap as stop:
        _stopped_at_cap(stop, f"the replies so far are cached (and in {out}/llm-replies.jsonl)")
    except (ServerError, LLMError) as exc:
        _fail(f"the LLM stopped: {exc}. Nothing computed is lost (replies are cached): "
              "start it again, then rerun this command to continue")
    except (TuneError, ValueError) as exc:
        _fail(str(exc))
    typer.echo(f"chosen: {res.chosen}; report {res.paths['report']}, config "
               f"{res.paths['config']}")
    typer.secho(f"serve it: agentic-rag serve --config {res.paths['config']}",
                fg=typer.colors.GREEN)
    # the dev and test sweeps, each with the tuned config, report and plot
    log_mlflow(mlflow, [res.paths["dev_run"], res.paths["test_run"]],
               tuple(res.paths[k] for k in ("config", "report", "plot")))
