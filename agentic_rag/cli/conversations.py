"""`agentic-rag conversations`: the query modes of a conversation's final turn scored on
MTRAG-UN's human conversations (nDCG@10 / recall@5 with paired CIs vs the last turn alone,
chosen on dev, reported on test) and the gate's retrieval iterations per session
(`studies.conversations`), into a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.cli.app import ConfigOpt, HomeOpt, _config, _fail, app


@app.command()
def conversations(
    modes: Annotated[list[str], typer.Option(
        "--mode", help="query modes: last_turn, carry, conversation, rewrite (the human one, "
                       "15 tasks), llm_rewrite (one cached LLM call a task)")] = [  # noqa: B006
        "last_turn", "carry", "conversation", "rewrite"],
    split: Annotated[str, typer.Option(help="dev, test or all")] = "all",
    collections: Annotated[list[str] | None, typer.Option(
        "--collection", help="clapnq, ibmcloud, fiqa, govt (default: all four)")] = None,
    gates: Annotated[list[str] | None, typer.Option(
        "--gate", help="also the carry query of every task under gate.mode = this (static, "
                       "always_expand, gated): iterations per session")] = None,
    run_dir: Annotated[Path | None, typer.Option(
        help="continue this run folder (rows already there are kept)")] = None,
    runs_dir: Annotated[Path, typer.Option(help="where a new run folder goes")] = Path(
        "experiments/runs"),
    config: ConfigOpt = None, home: HomeOpt = None,
) -> None:
    """Score each query mode's final-turn search on MTRAG-UN (corpus: each collection's
    pooled reference passages, not the full collections) and write the run folder:
    rows.jsonl, summary.csv, chosen.json, gating.csv."""
    import pandas as pd

    from agentic_rag.studies.conversations import ConversationEvalError, run_conversation_eval

    cfg = _config(config, home)
    try:
        if "llm_rewrite" in modes:
            from agentic_rag.llm.chat import make_chat_model
            from agentic_rag.llm.server import serve_local

            with serve_local(cfg.llm, cfg.home, log=typer.echo):
                out = run_conversation_eval(
                    modes, split, collections, tuple(gates or ()), cfg, runs_dir,
                    run_dir=run_dir, chat=make_chat_model(cfg.llm, cfg.home), log=typer.echo)
        else:
            out = run_conversation_eval(modes, split, collections, tuple(gates or ()), cfg,
                                        runs_dir, run_dir=run_dir, log=typer.echo)
    except ConversationEvalError as exc:
        _fail(str(exc))
    s = pd.read_csv(out / "summary.csv")
    if len(s):
        cols = ["split", "group", "mode", "n", "ndcg@10", "ndcg@10_diff_vs_base",
                "ndcg@10_diff_ci_low", "ndcg@10_diff_ci_high", "recall@5"]
        typer.echo(s[s["group"].isin(["all", "Follow-up"])][cols].to_string(
            index=False, float_format=lambda v: f"{v:.3f}"))
    typer.echo(f"run folder: {out}")
