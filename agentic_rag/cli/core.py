"""Command line: `agentic-rag index|search|demo|config`. It only calls the library."""

from __future__ import annotations

import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.cli.app import ConfigOpt, HomeOpt, _config, _fail, app
from agentic_rag.config import RAGConfig
from agentic_rag.config_base import ConfigError
from agentic_rag.documents import CHUNK_TYPES, DocumentError, Hit
from agentic_rag.ingest.readers import FORMATS, iter_document_paths, read_document

SAMPLE_QUERIES: list[str] = [
    "How do I create and activate a virtual environment?",
    "Show me code to reverse a list in place",
    "Can you tell me what the ** operator does in a function call with a dictionary?",
    "What are the steps to unlock a debit card whose PIN is locked?",
    "How much is the monthly maintenance fee of the Blue checking account?",
    "How can I find the methods or attributes of an object?",
]


def _index(cfg: RAGConfig):  # noqa: ANN202
    from agentic_rag.store.index import AgenticIndex

    return AgenticIndex(cfg)


def print_hits(hits: list[Hit], width: int = 300) -> None:
    if not hits:
        typer.echo("  (no results)")
    for h in hits:
        c = h.chunk
        extra = ""
        if "step" in c.metadata:
            extra = f" steps {c.metadata['step']}-{c.metadata.get('step_end')}"
        elif "row" in c.metadata:
            extra = f" row {c.metadata['row']}/{c.metadata.get('rows')}"
        typer.secho(f"  #{h.rank} {h.score:.3f} [{c.chunk_type}{extra}] "
                    f"{c.heading_path or '(no heading)'}", bold=True)
        typer.echo(f"     {c.source or c.doc_id} chars {c.start_char}-{c.end_char}")
        snippet = c.text.strip().replace("\n", "\n     | ")
        if len(snippet) > width:
            snippet = snippet[:width] + " …"
        typer.echo(f"     | {snippet}")


@app.command()
def index(
    paths: Annotated[list[Path] | None, typer.Argument(help=f"{FORMATS} files or folders")] = None,
    corpus: Annotated[str | None, typer.Option(help="a named corpus instead of paths: "
                                               "default, python-docs, banking")] = None,
    config: ConfigOpt = None, home: HomeOpt = None,
) -> None:
    """Chunk, embed and index documents (re-adding a changed document replaces it)."""
    cfg = _config(config, home)
    if not paths and not corpus:
        _fail("give PATH... or --corpus NAME")
    try:
        if corpus:
            from agentic_rag.datasets.corpora import load_corpus

            docs = load_corpus(corpus)
        else:
            docs = [read_document(f, doc_id) for f, doc_id in iter_document_paths(paths or [])]
    except (DocumentError, RuntimeError, ValueError) as exc:
        _fail(str(exc))
    _index_docs(cfg, docs)


def _index_docs(cfg: RAGConfig, docs):  # noqa: ANN001, ANN202
    from agentic_rag.store.index import IndexLocked, IndexStateError

    t0 = time.perf_counter()
    try:
        idx = _index(cfg)
        report = idx.add_documents(docs, progress=sys.stderr.isatty())
        n_lex = len(idx.lexical)
    except (IndexLocked, IndexStateError) as exc:  # their messages name the file and the fix
        _fail(str(exc))
    dt = time.perf_counter() - t0
    typer.echo(f"indexed {report.documents} documents in {dt:.1f}s: {report.added_chunks} chunks "
               f"added {dict(sorted(report.by_type.items()))}, {report.deleted_chunks} replaced, "
               f"{report.unchanged_documents} documents unchanged; "
               f"{idx.count()} chunks in {cfg.store.kind}, {n_lex} in BM25 ({cfg.home})")
    if report.skipped:  # a scanned PDF, a page its scripts fill in: say so, by name
        names = sorted(report.skipped)
        typer.echo(f"{len(names)} documents with no text, not indexed (a scanned PDF or a page "
                   f"filled in by scripts has none): {', '.join(names[:5])}"
                   + (f" and {len(names) - 5} more" if len(names) > 5 else ""), err=True)
    return idx


@app.command()
def search(
    query: str,
    k: Annotated[int, typer.Option("-k", min=1, max=100)] = 5,
    type_: Annotated[list[str] | None, typer.Option("--type", "-t",
                                                    help=f"chunk type: {', '.join(CHUNK_TYPES)}")
                     ] = None,
    mode: Annotated[str, typer.Option(help="dense or bm25")] = "dense",
    config: ConfigOpt = None, home: HomeOpt = None,
) -> None:
    """Search the index; prints ranked chunks with type, heading path, source and score."""
    cfg = _config(config, home)
    for t in type_ or []:
        if t not in CHUNK_TYPES:
            _fail(f"--type {t!r} is not a chunk type ({', '.join(CHUNK_TYPES)})")
    if mode not in ("dense", "bm25"):
        _fail(f"--mode {mode!r}: use dense or bm25")
    from agentic_rag.store.index import IndexLocked, IndexStateError

    where = {"chunk_type": type_ if len(type_ or []) > 1 else type_[0]} if type_ else None
    try:  # their messages name the file and the fix
        idx = _index(cfg)
        if idx.count() == 0:
            _fail(f"the index at {cfg.home} is empty: run `agentic-rag index PATH...` first")
        hits = (idx.search if mode == "dense" else idx.search_lexical)(query, k, where)
    except (IndexLocked, IndexStateError) as exc:
        _fail(str(exc))
    print_hits(hits)


@app.command()
def demo(config: ConfigOpt = None, home: HomeOpt = None,
         corpus: Annotated[str, typer.Option()] = "default") -> None:
    """The main job: index the default corpus and answer sample queries from it
    (intent → filters, confidence-gated hybrid retrieval, as configured)."""
    from agentic_rag.datasets.corpora import load_corpus

    cfg = _config(config, home)
    try:
        docs = load_corpus(corpus)
    except (RuntimeError, ValueError) as exc:
        _fail(str(exc))
    idx = _index_docs(cfg, docs)
    from agentic_rag.retrieve.pipeline import Pipeline

    pipe = Pipeline(cfg, index=idx)
    for q in SAMPLE_QUERIES:
        t0 = time.perf_counter()
        intent, result = pipe.retrieve(q)
        ms = 1000 * (time.perf_counter() - t0)
        typer.secho(f"\nQ: {q}", fg=typer.colors.CYAN)
        typer.echo(f"  intent={intent.intent} query={intent.query!r} filters={intent.filters or '-'}"
                   f" | {result.iterations} iteration(s), stop={result.stop_reason}, "
                   f"confidence={result.confidence:.2f} | {ms:.0f} ms")
        print_hits(result.hits[:3], width=200)


llm_app = typer.Typer(help="The local LLM server (llama.cpp, OpenAI-compatible).")
app.add_typer(llm_app, name="llm")


@llm_app.command("serve")
def llm_serve(config: ConfigOpt = None, home: HomeOpt = None,
              model: Annotated[str | None, typer.Option(help="model name or .gguf path")] = None,
              port: Annotated[int | None, typer.Option()] = None) -> None:
    """Start the local model server, wait until it answers, serve until Ctrl-C, stop cleanly."""
    from agentic_rag.llm.binary import ServerError
    from agentic_rag.llm.server import LlamaServer

    cfg = _config(config, home)
    over = {k: v for k, v in (("llm.server.model", model), ("llm.server.port", port)) if v}
    cfg = cfg.with_overrides(over) if over else cfg
    srv = LlamaServer(cfg.llm.server, home=cfg.home)
    typer.echo(f"starting {cfg.llm.server.model} on {srv.base_url} (log {srv.log_path}) ...")
    t0 = time.perf_counter()
    try:
        srv.start()
    except (ServerError, RuntimeError) as exc:
        _fail(str(exc))
    typer.echo(f"ready in {time.perf_counter() - t0:.1f}s: {srv.base_url} (model alias 'local'); "
               "Ctrl-C stops it")
    try:
        while srv.proc is None or srv.proc.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
        typer.echo("stopped")


@app.command()
def ask(question: str, config: ConfigOpt = None, home: HomeOpt = None,
        policy: Annotated[str | None, typer.Option(
            help="retrieve_first | tool_required | free | closed_book (default: agent.policy)")
        ] = None,
        mode: Annotated[str | None, typer.Option(
            help="native or json tool calling (default: agent.mode)")] = None,
        max_steps: Annotated[int | None, typer.Option(min=1, max=10,
                                                      help="default: agent.max_steps")] = None,
        serve: Annotated[bool, typer.Option(help="start the local server if none answers")] = True,
        support: Annotated[bool, typer.Option(
            help="score the answer against the passages it cites with agent.support's detector "
                 "and threshold (on in ask whatever agent.support.enabled says; the judge's "
                 "detectors cost one more LLM call)")] = True,
        ) -> None:
    """Answer a question with the agent loop over the index, through the configured LLM;
    an answer its cited passages do not support is marked UNSUPPORTED."""
    from agentic_rag.agent.loop import run_agent
    from agentic_rag.agent.tool import AgenticRAGTool
    from agentic_rag.llm.server import serve_local
    from agentic_rag.retrieve.pipeline import Pipeline

    cfg = _config(config, home)
    overrides = {k: v for k, v in {"agent.policy": policy, "agent.mode": mode,
                                   "agent.max_steps": max_steps,
                                   "agent.support.enabled": support}.items() if v is not None}
    try:
        cfg = cfg.with_overrides(overrides) if overrides else cfg
    except ConfigError as exc:
        _fail(str(exc))
    server = serve_local(cfg.llm, cfg.home, log=lambda m: typer.echo(m, err=True)) if serve \
        else nullcontext()
    with server:
        pipe = Pipeline(cfg)
        if cfg.agent.policy != "closed_book" and pipe.index.count() == 0:
            _fail(f"the index at {cfg.home} is empty: run `agentic-rag index` first")
        tool = AgenticRAGTool(pipe) if cfg.agent.policy != "closed_book" else None
        res = run_agent(question, pipe.chat_model, tool, cfg.agent)
    for s in res.steps:
        if s.tool:
            who = "policy search" if s.via == "policy" else "search"
            typer.echo(f"  step {s.step}: {who} {s.arguments} -> {len(s.tool.chunk_ids)} passages, "
                       f"{s.tool.iterations} retrieval iteration(s), "
                       + ("LLM reply from the cache" if s.cached else f"{s.latency_s:.1f}s LLM"))
    typer.secho(res.answer or f"(no answer: {res.stop_reason} {res.error or ''})", bold=True)
    if res.cited_chunks or res.invalid_citations:
        typer.echo(f"  cited: {', '.join(res.cited_chunks) or '-'}"
                   + (f"; NOT SERVED: {', '.join(res.invalid_citations)}"
                      if res.invalid_citations else ""))
        _echo_cited_documents(res, pipe)
    _echo_gate(res)
    typer.echo(f"  [{res.policy}/{res.mode}; {res.stop_reason}; {res.tool_calls} searches; "
               f"{res.prompt_tokens}+{res.completion_tokens} tokens; {res.latency_s:.1f}s]")
    if support:
        _echo_support(res)
    cache_note = _reply_cache_note(res, getattr(pipe.chat_model, "cache", None))
    if cache_note:
        typer.echo(f"  {cache_note}")


def _echo_cited_documents(res, pipe) -> None:  # noqa: ANN001 - AgentResult, Pipeline
    """Which document each cited passage is from, with the document's title."""
    from agentic_rag.retrieve.context import citation_id

    wanted = set(res.cited_chunks)
    titles = {c.id: str(c.metadata.get("title") or "") for c in pipe.index.lexical.chunks
              if c.id in wanted}
    for cid in res.cited_chunks:
        doc = cid.split("#", 1)[0]
        title = titles.get(cid, "")
        typer.echo(f"  [{citation_id(cid)}] from {doc}" + (f" — {title}" if title else ""))


def _echo_gate(res) -> None:  # noqa: ANN001 - AgentResult
    """What the support gate (agent.support.on_unsupported) found and did."""
    if res.gate_action is None:
        return
    if res.gate_action == "none":
        if res.figures:
            typer.echo(f"  figures {', '.join(res.figures)}: each in a cited passage"
                       + (" about what the question names" if res.named_documents else ""))
        return
    color = typer.colors.RED if res.gate_action == "flag" else typer.colors.YELLOW
    for note in res.gate_notes:
        typer.secho(f"  gate ({res.gate_action}): {note}", fg=color, bold=res.gate_action == "flag")


def _echo_support(res) -> None:  # noqa: ANN001 - AgentResult
    """The answer's support line: UNSUPPORTED (red) below the threshold, why when unscored."""
    whose = "the cited passages" if res.support_against == "cited" else "the served passages"
    if res.support_score is None:
        why = f"judge failed: {res.support_error}" if res.support_error else res.support_note
        typer.echo(f"  support: {why}")
    elif res.supported:
        typer.echo(f"  supported by {whose} (support {res.support_score:.2f} >= "
                   f"{res.support_threshold:.2f}, detector {res.support_detector})")
    else:
        typer.secho(f"  UNSUPPORTED by {whose} (support {res.support_score:.2f} < "
                    f"{res.support_threshold:.2f}, detector {res.support_detector})",
                    fg=typer.colors.RED, bold=True)
    if res.support_score is not None and res.support_note:
        typer.echo(f"  ({res.support_note})")


def _reply_cache_note(res, cache) -> str | None:  # noqa: ANN001 - AgentResult, ChatCache | None
    """Says when the answer's LLM turns were read from the reply cache (`llm.ChatCache`):
    those turns did not ask the model (the run's time is the cache's, not the model's)."""
    turns = [s for s in res.steps if s.via != "policy"]  # the policy's own search asks no LLM
    if not turns or res.cached_calls == 0:
        return None
    where = cache.path if cache is not None else "the reply cache"
    if res.cached_calls == len(turns):
        return f"(from the reply cache, {where}: the model was not asked)"
    return f"({res.cached_calls} of {len(turns)} LLM turns from the reply cache, {where})"


config_app = typer.Typer(help="Show or write configurations.")
app.add_typer(config_app, name="config")


@config_app.command("show")
def config_show(config: ConfigOpt = None) -> None:
    """Print the resolved configuration (YAML) and its content hash."""
    import yaml

    cfg = _config(config, None)
    typer.echo(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    typer.echo(f"# hash: {cfg.config_hash()}")


@config_app.command("init")
def config_init(path: Path) -> None:
    """Write the default configuration to PATH (.yaml or .json)."""
    RAGConfig().save(path)
    typer.echo(f"wrote {path}")
