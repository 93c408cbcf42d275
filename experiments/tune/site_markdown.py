"""A documentation site's Markdown/MDX read as written (the text as it is: what `index` read from
a .md before 2026-12-05, and from a .mdx renamed .md) and as a reader sees it
(`ingest.mdx.site_markdown`; both: `studies.reading_arms.readings`): what is left of the site
builder's syntax outside code blocks (`reading_arms.leftovers`), titles, and the shipped default
pipeline's retrieval on the same questions. No LLM call.

    PYTHONPATH=. python experiments/tune/site_markdown.py compare DOCS [QUESTIONS|-] [OUT]
    PYTHONPATH=. python experiments/tune/site_markdown.py parts DOCS QUESTIONS OUT
    PYTHONPATH=. python experiments/tune/site_markdown.py unchanged DIR...   # the MyST pass
    PYTHONPATH=. python experiments/tune/site_markdown.py names DIR|dataset:NAME ...  # shared names
    # Starlight's own documentation (MIT), 37 pages, from its public repository:
    #   git --git-dir=<starlight clone>/.git archive HEAD docs/src/content/docs | tar -x -C /tmp/sl
    #   (the English pages: the top folder and components/ guides/ reference/ resources/) → DOCS
    # QUESTIONS: `agentic-rag tune DOCS --out experiments/tune/starlight` wrote them
    #   (span-first, LLM-written from the converted pages: any phrasing bias favours that arm)

AsciiDoc pages (.adoc: not read at all before 2026-12-05) read as written are their text as
Markdown would read it. Leftovers: chunks outside code blocks holding an ESM line (`import`/`export` at a line start), a
JSX comment, a component tag (`<Tabs`, `</TabItem>`; inline code aside), a front matter line
(`title:`, `sidebar_position:`, a `---` fence opening the page), an admonition fence (`:::`) or
a Hugo shortcode (`{{<`, `{{%`: a shortcode the page shows, not runs, reads `{{< x >}}` and counts).
Retrieval: answer@5 and loose answer@5 (`studies.reading_arms.loose_at_5`), nDCG@10 by document;
paired bootstrap CIs (site − raw) over the questions. `parts`: the same, taking the conversion
apart: raw → front matter and admonitions only (the MDX part off) → the whole conversion, and
the whole conversion without the H1 and description it adds from the front matter.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.ingest.readers import iter_document_paths
from agentic_rag.studies.reading_arms import arm, compare, compare_splits, leftovers, readings, set_questions


def main(folder: Path, questions: Path | None, out: Path | None) -> dict:
    arms = readings(folder)
    result: dict = {"folder": str(folder), **{f"{k} leftovers": leftovers(v)
                                               for k, v in arms.items()}}
    if questions is not None:
        qs = set_questions(questions)
        with tempfile.TemporaryDirectory() as tmp:
            rows = {k: arm(v, qs, Path(tmp) / k)[1] for k, v in arms.items()}
        result.update(compare_splits(rows["raw"], rows["site"], ("raw", "site")))
    if out is not None:
        out.write_text(json.dumps(result, indent=1) + "\n")
    return result


def parts(folder: Path, questions: Path, out: Path) -> dict:
    """Each step of the conversion against the one before it (module doc, `parts`)."""
    import agentic_rag.ingest.mdx as mdx

    qs = set_questions(questions)
    arms = readings(folder)
    whole, headed = mdx._mdx, mdx.headed
    mdx._mdx = lambda seg: seg
    arms["front matter only"] = readings(folder)["site"]
    mdx._mdx, mdx.headed = whole, (lambda body, fields: body)
    arms["site, no H1 or description added"] = readings(folder)["site"]
    mdx.headed = headed
    with tempfile.TemporaryDirectory() as tmp:
        rows = {k: arm(v, qs, Path(tmp) / str(i))[1] for i, (k, v) in enumerate(arms.items())}
    steps = [("raw", "front matter only"), ("front matter only", "site"),
             ("site", "site, no H1 or description added"), ("raw", "site")]
    result = {f"{a} -> {b}": compare(rows[a], rows[b], (a, b)) for a, b in steps}
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result


def unchanged(folders: list[Path]) -> dict:
    """Markdown files (.md, .markdown) the MyST pass leaves byte for byte as they are, and the
    ones it changes (`reading_arms.unchanged`): on folders that are not MyST, a change is a
    false reading."""
    from agentic_rag.ingest.myst import myst_markdown
    from agentic_rag.studies.reading_arms import unchanged_by

    files = [p for f in folders for p in sorted(f.rglob("*")) if p.suffix in (".md", ".markdown")]
    return unchanged_by(myst_markdown, files)


def names(sources: list[str]) -> dict:
    """Per folder (or `dataset:NAME`): the share of documents whose name another shares
    (`coverage.shared_name_share`, which turns the subject check and `named_scope: auto` on
    from 0.25) and the names shared most."""
    from collections import Counter

    from agentic_rag.datasets.qa import load_dataset
    from agentic_rag.store.coverage import shared_name_share
    from agentic_rag.store.lexical import doc_name

    out = {}
    for src in sources:
        ids = [d.id for d in load_dataset(src[8:]).corpus] if src.startswith("dataset:") else \
            [d for _, d in iter_document_paths([Path(src)])]
        shared = Counter(doc_name(i) for i in ids)
        out[src] = {"documents": len(ids), "shared_name_share": shared_name_share(ids),
                    "most shared": [[k, v] for k, v in shared.most_common(5) if v > 1]}
    return out


app = typer.Typer()


@app.command("compare")
def _compare(folder: Path, questions: Annotated[str | None, typer.Argument()] = None,
             out: Annotated[Path | None, typer.Argument()] = None) -> None:
    """DOCS [QUESTIONS|-] [OUT]: leftovers, and retrieval raw vs site on QUESTIONS."""
    q = Path(questions) if questions not in (None, "-") else None
    print(json.dumps(main(folder, q, out), indent=1))


@app.command("parts")
def _parts(folder: Path, questions: Path, out: Path) -> None:
    print(json.dumps(parts(folder, questions, out), indent=1))


@app.command("unchanged")
def _unchanged(folders: list[Path]) -> None:
    print(json.dumps(unchanged(folders), indent=1))


@app.command("names")
def _names(sources: list[str]) -> None:
    print(json.dumps(names(sources), indent=1, ensure_ascii=False))


if __name__ == "__main__":
    app()
