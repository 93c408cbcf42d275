"""`agentic-rag testset DOCS --n 200 --out questions.jsonl`: a test set generated from your
own documents by the configured LLM (`datasets.testset.generate_testset`)."""

from __future__ import annotations

import json
import os
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
from agentic_rag.ingest.readers import FORMATS
from agentic_rag.jsonl import JsonlError, read_records


@app.command()
def testset(
    docs: Annotated[list[Path], typer.Argument(help=f"folders or files of {FORMATS} documents")],
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
    round_trip: Annotated[bool, typer.Option(
        help="span mode: the model answers each question from its own passage, and a question "
             "whose answer is not its span is rejected (--no-round-trip: skip those calls)")] = True,
    exclude: Annotated[list[Path] | None, typer.Option(
        help="a set made before (its questions JSONL; repeatable): its chunks are not drawn, "
             "so the new set shares no question with it (another --seed alone shares many: "
             "the same chunk gives the same question); matched by file and range within the "
             "folder, so a set made from a copy of the folder under another name counts")] = None,
    reanchor: Annotated[Path | None, typer.Option(
        help="no generation, no LLM call: a set made before (its questions JSONL) with its gold "
             "spans moved to today's reading of DOCS (a newer agentic-rag reads some markup "
             "differently), written to --out; a row whose answer is gone is left out")] = None,
    config: ConfigOpt = None, home: HomeOpt = None,
    max_concurrency: MaxConcurrencyOpt = None, max_llm_calls: MaxLLMCallsOpt = None,
) -> None:
    """Generate questions, short answers and their gold spans from DOCS with the configured
    LLM (the local model unless llm.base_url / llm.endpoints is set); every call is cached.
    With --reanchor SET: move SET's gold spans to today's reading of DOCS instead."""
    from agentic_rag.datasets.testset import generate_testset
    from agentic_rag.datasets.testset_cost import estimate
    from agentic_rag.experiments.llm_cost import Progress
    from agentic_rag.llm.binary import ServerError
    from agentic_rag.llm.calls import CallMeter, LLMCallCap, MeteredChatModel
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.server import serve_local

    cfg = _config(config, home)
    documents, chunks, excluded = _read_docs(docs, cfg, exclude or [])
    if reanchor is not None:
        _reanchor(reanchor, documents, chunks, out)
        return
    conc = max_concurrency or cfg.llm.max_concurrency
    typer.echo(f"{len(documents)} documents, {len(chunks)} chunks → {n} questions")
    if mode not in ("span", "free"):
        _fail(f"--mode {mode!r}: use span or free")
    round_trip = round_trip and mode == "span"  # the check reads a span: span mode only
    est = estimate(n, chunks, knowable, unanswerable, corpus_check, mode=mode,
                   round_trip=round_trip)
    _echo_estimate(est, cfg, conc, unanswerable)
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
                                   round_trip=round_trip, exclude_chunks=excluded,
                                   progress=Progress(n, typer.echo, "testset", meter))
    except LLMCallCap as stop:
        _stopped_at_cap(stop, f"{out} is not written yet")
    except (ServerError, ValueError) as exc:
        _fail(str(exc))
    _echo_testset(res, res.write(out), n, docs, out, meter)


def _read_docs(docs: list[Path], cfg, exclude: list[Path]) -> tuple[list, list, set[str]]:  # noqa: ANN001
    """The documents of DOCS, their chunks and the chunk ids `--exclude` names; a bad input
    ends the command naming it."""
    from agentic_rag.documents import DocumentError
    from agentic_rag.ingest.chunking import AgenticChunker
    from agentic_rag.ingest.readers import iter_document_paths, read_document

    try:
        documents = [read_document(f, did) for f, did in iter_document_paths(docs)]
    except DocumentError as exc:
        _fail(str(exc))
    if not documents:
        _fail(f"no {FORMATS} documents in {', '.join(map(str, docs))}")
    chunker = AgenticChunker(cfg.chunking)
    chunks = [c for d in documents for c in chunker.chunk(d)]
    try:
        per_file = {path: excluded_chunks([path]) for path in exclude}
    except ValueError as exc:
        _fail(str(exc))
    if per_file:  # `generate_testset` skips those of these documents' chunks (its summary)
        from agentic_rag.datasets.testset import excluded_here

        ids = [c.id for c in chunks]
        for path, theirs in per_file.items():
            here = excluded_here(theirs, ids)
            typer.echo(f"not drawn: the {len(here)} chunks of {path}" + (
                "" if here else f" (warning: none of its {len(theirs)} chunk ids is a chunk of "
                f"these documents: e.g. {sorted(theirs)[0]!r}; here e.g. {ids[0]!r})"))
    return documents, chunks, set().union(*per_file.values())


def _echo_estimate(est: dict, cfg, conc: int, unanswerable: float) -> None:  # noqa: ANN001
    """The calls, tokens and time to expect, at the rates the model about to run measured."""
    from agentic_rag.experiments.llm_cost import (
        estimate_line,
        measured_rates,
        planned_model,
        serves_in_parallel,
    )

    rates = measured_rates([Path(cfg.home) / "cache" / "llm.sqlite"],
                           model=planned_model(cfg.llm))
    typer.echo(estimate_line(est, rates, conc, serves_in_parallel(cfg.llm))
               + (f"; of the calls, {est['corpus_checks']} check the unanswerable questions "
                  f"against the corpus (one each: {unanswerable:.0%} of n)"
                  if est["corpus_checks"] else ""))


def _reanchor(path: Path, documents: list, chunks: list, out: Path) -> None:
    """`--reanchor`: the set at `path` re-anchored (`datasets.reanchor`) and written to `out`,
    never over `path` itself."""
    from agentic_rag.datasets.reanchor import reanchor

    if not path.is_file():
        _fail(f"--reanchor {path}: no such file")
    if out.resolve() == path.resolve() or (out.exists() and os.path.samefile(out, path)):
        _fail(f"--out {out} is the set being re-anchored: write it to another file")
    try:
        rows = read_records(path)
    except JsonlError as exc:
        _fail(f"--reanchor {exc} (a questions JSONL)")
    try:
        kept, report = reanchor(rows, documents, chunks)
    except ValueError as exc:
        _fail(f"--reanchor {path}: {exc}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n"
                           for r in kept),  # as `testset` writes a set
                   encoding="utf-8")
    typer.echo(f"{path} → {out}: {report.line()}")


def excluded_chunks(paths: list[Path]) -> set[str]:
    """The `chunk_id`s of the sets at `paths` (`--exclude`): a missing file, a row that is not
    JSON or a set without chunk ids is an error naming the file (and line)."""
    out: set[str] = set()
    for path in paths:
        if not path.is_file():
            raise ValueError(f"--exclude {path}: no such file")
        try:
            ids = {r["chunk_id"] for r in read_records(path) if r.get("chunk_id")}
        except JsonlError as exc:
            raise ValueError(f"--exclude {exc}") from exc
        if not ids:
            raise ValueError(f"--exclude {path}: no row has a chunk_id (pass the questions "
                             "JSONL `agentic-rag testset` wrote)")
        out |= ids
    return out


def _echo_testset(res, paths: dict, n: int, docs: list[Path], out: Path, meter) -> None:  # noqa: ANN001
    """What `testset` made: counts, rejections by reason, files, LLM calls, how to use it."""
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
    answers on its answerable ones (studies/abstention.py): the agent (agent.* of the
    config) over the index at --home, through the configured LLM; every call is cached."""
    from agentic_rag.llm.binary import ServerError
    from agentic_rag.llm.calls import CallMeter, LLMCallCap
    from agentic_rag.studies.abstention import report_lines, run_abstention

    cfg = _config(config, home)
    meter = CallMeter(max_llm_calls)
    rows = out or questions.with_name(f"{questions.stem}.abstention.jsonl")
    try:
        run = run_abstention(cfg, docs, questions, answerable, seed, rows, meter, typer.echo)
    except LLMCallCap as stop:
        _stopped_at_cap(stop, f"{rows} holds the rows done so far; the report is not written")
    except (ServerError, ValueError) as exc:  # a DatasetError is a ValueError
        _fail(str(exc))
    for line in report_lines(run.report):
        typer.echo(line)
    if run.checked is None:
        typer.secho(f"{questions}: its unanswerable questions were not checked against the "
                    f"corpus ({questions.stem}.summary.json has no unanswerable_checked): some "
                    "may be answerable; read them before you report the share",
                    fg=typer.colors.YELLOW)
    typer.echo(f"rows: {run.rows_path}; report: {run.report_path}; {meter.calls} new LLM "
               f"calls, {meter.cached} cached")


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
    from agentic_rag.llm.binary import ServerError
    from agentic_rag.llm.calls import CallMeter, LLMCallCap
    from agentic_rag.studies.testset_validation import result_lines, run_validation

    cfg = _config(config, home)
    try:
        res = run_validation(cfg, corpus, n=n, seed=seed, out_dir=out_dir,
                             max_concurrency=max_concurrency, meter=CallMeter(max_llm_calls),
                             log=typer.echo)
    except LLMCallCap as stop:
        _stopped_at_cap(stop, "the generated set is not written yet")
    except (ServerError, ValueError, RuntimeError) as exc:
        _fail(str(exc))
    for line in result_lines(res):
        typer.echo(line)
    typer.echo(f"→ {out_dir / corpus / 'agreement.json'}")
