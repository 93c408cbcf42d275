"""The `agentic-rag` typer app and what every command module shares: the config and home options,
LLM-call options, `_config` (a config file, checked) and `_fail` (a clear error, exit 2). Commands
register on `app` in their own modules (`core`, `evaluate`, `testset`, `serve`); `cli.main`
imports them all and runs the app."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.config import RAGConfig
from agentic_rag.config_base import ConfigError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="agentic-rag: agent-aware chunking, hybrid retrieval and evaluation.")


ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="RAGConfig YAML/JSON")]


HomeOpt = Annotated[Path | None, typer.Option("--home", help="index folder (overrides config)")]


def _config(path: Path | None, home: Path | None) -> RAGConfig:
    try:
        cfg = RAGConfig.load(path) if path else RAGConfig()
    except ConfigError as exc:
        _fail(str(exc))
    return cfg.with_overrides({"home": str(home)}) if home else cfg


def _fail(msg: str) -> None:
    typer.secho(f"error: {msg}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


MaxConcurrencyOpt = Annotated[int | None, typer.Option(
    min=1, help="LLM calls in flight at once (default: llm.max_concurrency; rows come out "
                "the same at any value)")]


MaxLLMCallsOpt = Annotated[int | None, typer.Option(
    min=0, help="stop cleanly after N new (not cached) LLM calls; a rerun continues")]


def _stopped_at_cap(stop: Exception, what: str) -> None:
    from agentic_rag.experiments.llm_cost import cap_message

    typer.echo(cap_message(stop, what, "agentic-rag " + " ".join(sys.argv[1:])))
    raise typer.Exit(0)
