"""`agentic-rag chat`: a conversation with the agent over the index, in the terminal.

User turns come from stdin (`/quit` or end of input ends the conversation) or, with
`--script FILE`, one turn per line (blank lines skipped). Every line of a script is checked
before anything runs: a line over the tool's query limit (`search_documents`' 200 characters)
is an error naming the file and the line, and nothing is printed. `--json` prints one JSON
object per turn (`turn_record`): the query built from the history, the queries searched,
the answer, abstained / clarifying, and the passages served to the model (source document,
chunk id, text) with the ids the answer cites. The local LLM is started or reused as `ask`
does. The session and its rules: `agentic_rag/agent/session.py`. Each turn is traced
(`tracing.export`, default file: `<home>/chats/<date-time>/traces.jsonl`, named at the end
unless `--json`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer

from agentic_rag.cli.app import ConfigOpt, HomeOpt, _config, _fail, app
from agentic_rag.config_base import ConfigError

QUIT = "/quit"


class ScriptError(ValueError):
    """A chat script that cannot run; the message names the file and the line."""


def read_script(path: Path, limit: int) -> list[str]:
    """The user turns of a script, one a line (blank lines skipped, `/quit` ends it), each
    checked against `limit` characters before any runs."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptError(f"{path}: cannot read the script: {exc}") from exc
    turns: list[str] = []
    for i, line in enumerate(lines, 1):
        message = " ".join(line.split())
        if message == QUIT:
            break
        if len(message) > limit:
            raise ScriptError(f"{path}:{i}: a turn of {len(message)} characters is over the "
                              f"query limit of {limit} characters (search_documents' query); "
                              "shorten it or split it into two turns")
        if message:
            turns.append(message)
    if not turns:
        raise ScriptError(f"{path}: no user turn (one a line)")
    return turns


def _stdin_turns(limit: int) -> Iterator[str]:
    """User turns typed on stdin until `/quit` or end of input; a turn over `limit` is
    refused with the limit and asked again."""
    tty = sys.stdin.isatty()
    while True:
        if tty:
            typer.echo("you> ", nl=False, err=True)
        line = sys.stdin.readline()
        if not line:
            return
        message = " ".join(line.split())
        if message == QUIT:
            return
        if len(message) > limit:
            typer.secho(f"  a turn of {len(message)} characters is over the query limit of "
                        f"{limit}: shorten it", fg=typer.colors.RED, err=True)
        elif message:
            yield message


def turn_record(turn) -> dict[str, Any]:  # noqa: ANN001 - agent.session.Turn
    """The JSON object of one turn (`--json`)."""
    return turn.model_dump(mode="json")


def _echo_turn(turn) -> None:  # noqa: ANN001 - agent.session.Turn
    if turn.follow_up:
        typer.echo(f"  follow-up ({turn.follow_up_reason}): query {turn.query!r}")
    for q in turn.queries:
        typer.echo(f"  searched {q!r}")
    color = typer.colors.YELLOW if turn.clarifying else None
    typer.secho(turn.answer or f"(no answer: {turn.stop_reason})", bold=True, fg=color)
    by_id = {p.chunk_id: p for p in turn.passages}
    for cid in turn.cited:
        p = by_id.get(cid)
        if p is not None:
            typer.echo(f"  [{p.citation_id}] from {p.doc_id}" + (f" — {p.title}" if p.title else ""))
    if turn.invalid_citations:
        typer.echo(f"  NOT SERVED: {', '.join(turn.invalid_citations)}")
    typer.echo(f"  [turn {turn.n}; {turn.stop_reason}; {len(turn.passages)} passages; "
               f"{turn.history_turns} earlier turns in the prompt; {turn.prompt_tokens}+"
               f"{turn.completion_tokens} tokens; {turn.latency_s:.1f}s]")


@app.command()
def chat(config: ConfigOpt = None, home: HomeOpt = None,
         script: Annotated[Path | None, typer.Option(
             help="one user turn per line (blank lines skipped, /quit ends); default: stdin")
         ] = None,
         json_out: Annotated[bool, typer.Option(
             "--json", help="one JSON object per turn: query, queries searched, answer, "
                            "abstained/clarifying, passages served, cited ids")] = False,
         query_mode: Annotated[str | None, typer.Option(
             help="last_turn | carry | llm_rewrite (default: agent.session.query_mode)")
         ] = None,
         serve: Annotated[bool, typer.Option(help="start the local server if none answers")
                          ] = True) -> None:
    """A conversation with the agent over the index: each turn's search query is built from
    the earlier turns, which the model reads before the new one."""
    from agentic_rag import tracing
    from agentic_rag.agent.session import MESSAGE_MAX_CHARS, Session, run_turn
    from agentic_rag.agent.tool import AgenticRAGTool
    from agentic_rag.llm.server import serve_local
    from agentic_rag.retrieve.pipeline import Pipeline

    cfg = _config(config, home)
    try:
        cfg = cfg.with_overrides({"agent.session.query_mode": query_mode}) if query_mode else cfg
        turns = read_script(script, MESSAGE_MAX_CHARS) if script is not None else None
    except (ConfigError, ScriptError) as exc:
        _fail(str(exc))
    server = serve_local(cfg.llm, cfg.home, log=lambda m: typer.echo(m, err=True)) if serve \
        else nullcontext()
    session = Session()
    folder = Path(cfg.home) / "chats" / time.strftime("%Y%m%d-%H%M%S")
    with server, tracing.recording(cfg.tracing, folder,
                                   say=lambda m: typer.echo(m, err=True)) as traces:
        pipe = Pipeline(cfg)
        if cfg.agent.policy != "closed_book" and pipe.index.count() == 0:
            _fail(f"the index at {cfg.home} is empty: run `agentic-rag index` first")
        tool = AgenticRAGTool(pipe) if cfg.agent.policy != "closed_book" else None
        if turns is None and sys.stdin.isatty():
            typer.echo(f"chat over {cfg.home} (query mode {cfg.agent.session.query_mode}): "
                       f"type a question; {QUIT} or Ctrl-D ends", err=True)
        try:
            for message in turns if turns is not None else _stdin_turns(MESSAGE_MAX_CHARS):
                turn = run_turn(session, message, pipe.chat_model, tool, cfg.agent)
                if json_out:
                    typer.echo(json.dumps(turn_record(turn), ensure_ascii=False))
                else:
                    _echo_turn(turn)
        except KeyboardInterrupt:  # Ctrl-C: the turns printed so far stand
            typer.echo("", err=True)
    if traces is not None and traces.exists() and not json_out:  # --json: JSON lines only
        typer.echo(f"traces: {traces}", err=True)
