"""Command line: `agentic-rag index|search|demo|config`. It only calls the library."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from .config import ConfigError, RAGConfig
from .documents import CHUNK_TYPES, DocumentError, Hit, iter_document_paths, read_document

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="agentic-rag: agent-aware chunking, hybrid retrieval and evaluation.")

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="RAGConfig YAML/JSON")]
HomeOpt = Annotated[Path | None, typer.Option("--home", help="index folder (overrides config)")]

SAMPLE_QUERIES: list[tuple[str, str | None]] = [
    ("How do I create and activate a virtual environment?", None),
    ("code to reverse a list in place", "code"),
    ("What does the ** operator do in a function call with a dictionary?", "code"),
    ("steps to unlock a debit card whose PIN is locked", "list"),
    ("monthly maintenance fee of the checking account", "table_row"),
    ("How can I find the methods or attributes of an object?", None),
]


def _config(path: Path | None, home: Path | None) -> RAGConfig:
    try:
        cfg = RAGConfig.load(path) if path else RAGConfig()
    except ConfigError as exc:
        _fail(str(exc))
    return cfg.with_overrides({"home": str(home)}) if home else cfg


def _fail(msg: str) -> None:
    typer.secho(f"error: {msg}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def _index(cfg: RAGConfig):  # noqa: ANN202
    from .index import AgenticIndex

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
    paths: Annotated[list[Path] | None, typer.Argument(help=".md/.rst/.txt files or folders")] = None,
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
            from .datasets import load_corpus

            docs = load_corpus(corpus)
        else:
            docs = [read_document(f, doc_id) for f, doc_id in iter_document_paths(paths or [])]
    except (DocumentError, RuntimeError, ValueError) as exc:
        _fail(str(exc))
    _index_docs(cfg, docs)


def _index_docs(cfg: RAGConfig, docs):  # noqa: ANN001, ANN202
    t0 = time.perf_counter()
    idx = _index(cfg)
    report = idx.add_documents(docs, progress=sys.stderr.isatty())
    n_lex = len(idx.lexical)
    dt = time.perf_counter() - t0
    typer.echo(f"indexed {report.documents} documents in {dt:.1f}s: {report.added_chunks} chunks "
               f"added {dict(sorted(report.by_type.items()))}, {report.deleted_chunks} replaced, "
               f"{report.unchanged_documents} documents unchanged; "
               f"{idx.count()} chunks in {cfg.store.kind}, {n_lex} in BM25 ({cfg.home})")
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
    idx = _index(cfg)
    if idx.count() == 0:
        _fail(f"the index at {cfg.home} is empty: run `agentic-rag index PATH...` first")
    where = {"chunk_type": type_ if len(type_ or []) > 1 else type_[0]} if type_ else None
    hits = (idx.search if mode == "dense" else idx.search_lexical)(query, k, where)
    print_hits(hits)


@app.command()
def demo(config: ConfigOpt = None, home: HomeOpt = None,
         corpus: Annotated[str, typer.Option()] = "default") -> None:
    """The main job: index the default corpus and answer sample queries from it."""
    from .datasets import load_corpus

    cfg = _config(config, home)
    try:
        docs = load_corpus(corpus)
    except (RuntimeError, ValueError) as exc:
        _fail(str(exc))
    idx = _index_docs(cfg, docs)
    for q, ctype in SAMPLE_QUERIES:
        where = {"chunk_type": ctype} if ctype else None
        typer.secho(f"\nQ: {q}" + (f"   [--type {ctype}]" if ctype else ""),
                    fg=typer.colors.CYAN)
        t0 = time.perf_counter()
        hits = idx.search(q, 3, where)
        typer.echo(f"  dense top-3 in {1000 * (time.perf_counter() - t0):.0f} ms")
        print_hits(hits, width=200)


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


def main() -> None:
    app()


if __name__ == "__main__":
    main()
