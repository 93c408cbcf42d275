"""The `agentic-rag` typer app and what every command module shares: the config and home options,
LLM-call options, `_config` (a config file, checked), `_fail` (a clear error, exit 2) and
`ManyValues` (list options read argparse-style: `--cells a b c`). Commands
register on `app` in their own modules (`core`, `evaluate`, `testset`, `serve`); `cli.main`
imports them all and runs the app."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperCommand

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


MlflowOpt = Annotated[str | None, typer.Option(
    metavar="[URI]", help="also log the finished run to MLflow (docs/experiments.md#mlflow): "
    "--mlflow alone is the SQLite store experiments/mlflow.db (`make mlflow` shows it), or a "
    "tracking URI (http://HOST:PORT, sqlite:///FILE.db); an unreachable one fails nothing")]


def log_mlflow(uri: str | None, run_dirs: list[Path], extra: tuple[Path, ...] = (),
               experiment: str | None = None) -> None:
    """After a command's run: its finished folders (those with a summary.csv) to MLflow when
    --mlflow was given (`experiments.mlflow_log.log_folders`: a dead store is said, not raised)."""
    if uri:
        from agentic_rag.experiments.mlflow_log import log_folders

        log_folders([d for d in map(Path, run_dirs) if (d / "summary.csv").exists()], uri,
                    typer.echo, extra, experiment)


class OptionalURI(TyperCommand):
    """A command whose `--mlflow` takes an optional URI: `--mlflow` alone (at the end, before
    another option, or before a word with no `://`, such as a spec path) means the default
    store; `--mlflow http://host:5000` names one."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, bare_mlflow(args))


def bare_mlflow(args: list[str]) -> list[str]:
    """A bare `--mlflow` (no URI after it) -> `--mlflow=default`."""
    return ["--mlflow=default" if a == "--mlflow" and (i + 1 == len(args) or "://" not in
                                                        args[i + 1]) else a
            for i, a in enumerate(args)]


class ManyValues(OptionalURI):
    """A command whose list options take one or more values after a single flag, as
    argparse's `nargs="+"` does (`--cells a b c`, what the committed agent-eval commands
    say), besides click's repeated flag (`--cells a --cells b`). The words after such a flag,
    up to the next option, are its values; the flag alone gives one empty value (`--runs`
    with nothing: none), which the command reads as "no values"."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, spread_values(args, self._list_flags()))

    def _list_flags(self) -> set[str]:
        # typer carries its own copy of click (typer._click): its options are not click.Option
        return {o for p in self.params if p.param_type_name == "option"
                and getattr(p, "multiple", False) for o in p.opts}


def spread_values(args: list[str], flags: set[str]) -> list[str]:
    """`--f a b --g` -> `--f a --f b --g` for every flag in `flags`; a flag in `flags`
    followed by no value -> `--f=` (one empty value). Everything after `--` is left as it is."""
    out: list[str] = []
    flag, given = None, False
    for i, a in enumerate(args):
        if a == "--":
            out += [f"{flag}="] if flag and not given else []
            out += args[i:]
            break
        if a.startswith("-"):
            if flag and not given:
                out.append(f"{flag}=")
            flag, given = (a, False) if a in flags else (None, False)
            if flag is None:
                out.append(a)
            continue
        if flag:
            out += [flag, a]
            given = True
        else:
            out.append(a)
    else:
        if flag and not given:
            out.append(f"{flag}=")
    return out
