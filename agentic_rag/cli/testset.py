"""`agentic-rag testset DOCS --n 200 --out questions.jsonl`: a test set generated from your
own documents by the configured LLM (`datasets.testset.generate_testset`)."""

from __future__ import annotations

import json
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
def testset(
    docs: Annotated[list[Path], typer.Argument(help="folders or files of .md/.rst/.txt documents")],
    out: Annotated[Path, typer.Option(help="the set (JSONL); the rejected questions and a "
                                           "summary are written beside it")] = Path("questions.jsonl"),
    n: Annotated[int, typer.Option(min=1, help="questions to keep")] = 200,
    seed: Annotated[int, typer.Option(help="sampling and split seed")] = 0,
    unanswerable: Annotated[float, typer.Option(
        min=0.0, max=0.9, help="share of questions the documents do not answer (abstention)")] = 0.1,
    knowable: Annotated[bool, typer.Option(
        help="ask the model each question without context, to flag the ones it knows "
             "(--no-knowable: skip those calls)")] = True,
    mode: Annotated[str, typer.Option(
        help="span: the answer is chosen by rule from the passage (code, numbers with units, "
             "defined terms, table cells, list items) and the model writes its question; "
             "free: the model picks a quote and asks (the v4 generator)")] = "span",
    max_knowable_share: Annotated[float, typer.Option(
        min=0.0, max=1.0, help="questions the model answers without context kept up to this "
                               "share of the set (1: all)")] = 0.25,
    corpus_check: Annotated[bool, typer.Option(
        help="also ask the model each unanswerable question over BM25's top 5 chunks, and "
             "reject it when it answers (a small model answers made-up things too)")] = False,
    config: ConfigOpt = None, home: HomeOpt = None,
    max_concurrency: MaxConcurrencyOpt = None, max_llm_calls: MaxLLMCallsOpt = None,
) -> None:
    """Generate questions, short answers and their gold spans from DOCS with the configured
    LLM (the local model unless llm.base_url / llm.endpoints is set); every call is cached."""
    from agentic_rag.datasets.testset import estimate, generate_testset
    from agentic_rag.documents import DocumentError, iter_document_paths, read_document
    from agentic_rag.experiments.llm_cost import Progress, estimate_line, measured_rates, serves_in_parallel
    from agentic_rag.ingest.chunking import AgenticChunker
    from agentic_rag.llm.calls import CallMeter, LLMCallCap, MeteredChatModel
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.server import ServerError, serve_local

    cfg = _config(config, home)
    try:
        documents = [read_document(f, did) for f, did in iter_document_paths(docs)]
    except DocumentError as exc:
        _fail(str(exc))
    if not documents:
        _fail(f"no .md/.rst/.txt documents in {', '.join(map(str, docs))}")
    chunker = AgenticChunker(cfg.chunking)
    chunks = [c for d in documents for c in chunker.chunk(d)]
    conc = max_concurrency or cfg.llm.max_concurrency
    typer.echo(f"{len(documents)} documents, {len(chunks)} chunks → {n} questions")
    if mode not in ("span", "free"):
        _fail(f"--mode {mode!r}: use span or free")
    est = estimate(n, chunks, knowable, unanswerable, corpus_check, mode=mode)
    typer.echo(estimate_line(est, measured_rates([Path(cfg.home) / "cache" / "llm.sqlite"]),
                             conc, serves_in_parallel(cfg.llm))
               + (f"; of the calls, {est['corpus_checks']} check the unanswerable questions "
                  f"against the corpus (one each: {unanswerable:.0%} of n)"
                  if est["corpus_checks"] else ""))
    server = serve_local(cfg.llm, cfg.home)
    meter = CallMeter(max_llm_calls)
    try:
        with server:
            chat = MeteredChatModel(make_chat_model(cfg.llm, cfg.home), meter)
            res = generate_testset(documents, chat, n=n, seed=seed, unanswerable=unanswerable,
                                   chunks=chunks, check_knowable=knowable,
                                   check_unanswerable=corpus_check,
                                   max_concurrency=conc, mode=mode,
                                   max_knowable_share=max_knowable_share,
                                   progress=Progress(n, typer.echo, "testset", meter))
    except LLMCallCap as stop:
        _stopped_at_cap(stop, f"{out} is not written yet")
    except (ServerError, ValueError) as exc:
        _fail(str(exc))
    paths = res.write(out)
    s = res.summary
    typer.echo(f"{s['accepted']} questions from {s['documents']} documents ({s['drawn']} "
               f"drawn, {s['llm_calls']} calls, {s['calls_per_kept']} per kept question; "
               f"rejected: {json.dumps(s['rejected'])}); {s['unanswerable']} "
               f"unanswerable, {s['knowable']} knowable without context")
    typer.echo(f"by chunk type {json.dumps(s['by_chunk_type'])}, by intent "
               f"{json.dumps(s['by_intent'])}, splits {json.dumps(s['by_split'])}")
    for what, path in paths.items():
        typer.echo(f"  {what}: {path}")
    typer.echo(f"{meter.calls} new LLM calls, {meter.cached} cached")
    if s["accepted"] < n:
        typer.secho(f"only {s['accepted']} of {n} questions passed the filters in "
                    f"{s['drawn']} draws: add documents or lower --n", fg=typer.colors.YELLOW)
    typer.echo(f"use it: load_local({str(docs[0])!r}, {str(out)!r}), or a sweep spec's "
               f"dataset: {{name: local, docs: {docs[0]}, questions: {out}}}")


@app.command()
def abstention(
    docs: Annotated[Path, typer.Argument(help="the folder the set was generated from (and "
                                              "indexed: agentic-rag index DOCS)")],
    questions: Annotated[Path, typer.Argument(help="a set from agentic-rag testset, with "
                                                   "unanswerable questions")],
    answerable: Annotated[int | None, typer.Option(
        min=0, help="answerable questions asked for contrast, drawn with --seed (default: as "
                    "many as the unanswerable ones)")] = None,
    seed: Annotated[int, typer.Option(help="which answerable questions are drawn")] = 0,
    out: Annotated[Path | None, typer.Option(
        help="the per-question rows (JSONL); default <questions stem>.abstention.jsonl, "
             "with the report in <stem>.abstention.json")] = None,
    config: ConfigOpt = None, home: HomeOpt = None, max_llm_calls: MaxLLMCallsOpt = None,
) -> None:
    """How often the agent says it does not know on the set's unanswerable questions, and
    answers on its answerable ones (experiments/abstention.py): the agent (agent.* of the
    config) over the index at --home, through the configured LLM; every call is cached."""
    from agentic_rag.agent.tool import AgenticRAGTool
    from agentic_rag.datasets.base import DatasetError
    from agentic_rag.datasets.qa import load_local
    from agentic_rag.experiments.llm_cost import agent_cost, estimate_line, measured_rates, serves_in_parallel
    from agentic_rag.llm.calls import CallMeter, LLMCallCap, MeteredChatModel
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.server import ServerError, serve_local
    from agentic_rag.retrieve.pipeline import Pipeline
    from agentic_rag.studies.abstention import abstention_report, ask_questions, report_lines, select_questions

    cfg = _config(config, home)
    try:
        queries = select_questions(load_local(docs, questions).queries, answerable, seed)
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    pipe = Pipeline(cfg)
    if pipe.index.count() == 0:
        _fail(f"the index at {cfg.home} is empty: run `agentic-rag index {docs}` first "
              f"(with the same --config / --home)")
    n_no = sum(q.metadata.get("answerable") is False for q in queries)
    typer.echo(f"{n_no} unanswerable + {len(queries) - n_no} answerable questions from "
               f"{questions}; policy {cfg.agent.policy}, index {cfg.home}")
    typer.echo(estimate_line(agent_cost(len(queries)),
                             measured_rates([Path(cfg.home) / "cache" / "llm.sqlite"]), 1,
                             serves_in_parallel(cfg.llm)))
    out = out or questions.with_name(f"{questions.stem}.abstention.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    server = serve_local(cfg.llm, cfg.home)
    meter = CallMeter(max_llm_calls)
    try:
        with server, out.open("w", encoding="utf-8") as f:
            chat = MeteredChatModel(make_chat_model(cfg.llm, cfg.home), meter)
            pipe = Pipeline(cfg, index=pipe.index, chat_model=chat)

            def write(row: dict) -> None:  # each row as it is made: a cut run keeps them
                f.write(json.dumps(row) + "\n")
                f.flush()

            rows = ask_questions(queries, chat, AgenticRAGTool(pipe), cfg.agent, on_row=write)
    except LLMCallCap as stop:
        _stopped_at_cap(stop, f"{out} holds the rows done so far; the report is not written")
    except (ServerError, ValueError) as exc:
        _fail(str(exc))
    report = abstention_report(rows)
    # a set generated before the corpus check (its summary has no unanswerable_checked) may
    # hold "unanswerable" questions the corpus answers
    summary = questions.with_name(f"{questions.stem}.summary.json")
    checked = json.loads(summary.read_text()).get("unanswerable_checked") \
        if summary.exists() else None
    report_path = out.with_suffix(".json")
    report_path.write_text(json.dumps({**report, "questions": str(questions),
                                       "policy": cfg.agent.policy,
                                       "unanswerable_checked_against_corpus": checked}, indent=2))
    for line in report_lines(report):
        typer.echo(line)
    if checked is None:
        typer.secho(f"{questions}: its unanswerable questions were not checked against the "
                    f"corpus ({summary.name} has no unanswerable_checked): some may be "
                    "answerable; read them before you report the share", fg=typer.colors.YELLOW)
    typer.echo(f"rows: {out}; report: {report_path}; {meter.calls} new LLM calls, "
               f"{meter.cached} cached")


@app.command("validate-testset")
def validate_testset_cmd(
    corpus: Annotated[str, typer.Option(help="halueval or python (testset_validation.CORPORA)")],
    n: Annotated[int, typer.Option(min=3, help="questions to generate")] = 150,
    seed: Annotated[int, typer.Option()] = 0,
    out_dir: Annotated[Path, typer.Option(help="where the generated set and agreement.json go")] = Path(
        "experiments/testset-validation"),
    config: ConfigOpt = None, home: HomeOpt = None,
    max_concurrency: MaxConcurrencyOpt = None, max_llm_calls: MaxLLMCallsOpt = None,
) -> None:
    """Does a generated set rank settings as human questions do? Generate from the gold
    documents of a packaged set's human questions, sweep both, report Kendall τ-b."""
    from agentic_rag.experiments.llm_cost import Progress
    from agentic_rag.llm.calls import CallMeter, LLMCallCap, MeteredChatModel
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.server import ServerError, serve_local
    from agentic_rag.studies.testset_validation import CORPORA, validate_testset

    if corpus not in CORPORA:
        _fail(f"--corpus {corpus!r}: use one of {sorted(CORPORA)}")
    cfg = _config(config, home)
    server = serve_local(cfg.llm, cfg.home)
    meter = CallMeter(max_llm_calls)
    # the set is committed; its LLM replies travel with it, so a fresh machine regenerates
    # the same set from the pack instead of asking the model again
    pack = out_dir / corpus / "llm-replies.jsonl"
    try:
        with server:
            chat = MeteredChatModel(make_chat_model(cfg.llm, cfg.home, pack=pack), meter)
            res = validate_testset(corpus, chat, n=n, seed=seed, out_dir=out_dir,
                                   max_concurrency=max_concurrency or cfg.llm.max_concurrency,
                                   log=typer.echo,
                                   progress=Progress(n, typer.echo, "testset", meter))
    except LLMCallCap as stop:
        _stopped_at_cap(stop, "the generated set is not written yet")
    except (ServerError, ValueError, RuntimeError) as exc:
        _fail(str(exc))
    typer.echo(f"{corpus}: Kendall tau-b {res['tau_b']} [{res['tau_b_ci'][0]}, "
               f"{res['tau_b_ci'][1]}] over {res['configs']} configs "
               f"({res['human_queries']} human, {res['generated_queries']} generated questions)")
    typer.echo(f"best on human: {res['best_human']}; on generated: {res['best_generated']} "
               f"(same: {res['same_best']}; the human best ranks "
               f"{res['best_human_on_generated_rank']} on the generated set)")
    typer.echo(f"→ {out_dir / corpus / 'agreement.json'}")
