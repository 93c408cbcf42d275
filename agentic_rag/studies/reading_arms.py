"""The same questions over two readings of the same documents (issue 38's reading studies in
experiments/tune/: HTML pages vs their source, a site's Markdown as written vs converted, .rst
as written vs as Sphinx builds it): each reading indexed in a home of its own under the
shipped default pipeline, every question searched once (`arm`: answer@5, loose answer@5,
nDCG@10 by document), and the paired difference of two arms with its bootstrap CI
(`compare`, `experiments.stats.paired_bootstrap`). No LLM.

Also what the reading studies measure around it: a folder's two readings (`readings`: as
written, as read) and what each leaves of a site builder's syntax (`leftovers`), .rst pages as
Sphinx's text builder renders them (`sphinx_text`) and the word overlap with it (`words`,
`overlap`), a role as an HTML page prints it (`rendered`), what a PDF reading holds of the
HTML one (`recovered`), the files a text pass changes (`unchanged_by`), the test split apart
(`compare_splits`)."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from agentic_rag.config import RAGConfig
from agentic_rag.documents import Document, detect_format
from agentic_rag.evaluation.containment import answer_at_k, chunk_view
from agentic_rag.evaluation.retrieval import doc_run, ir_metrics
from agentic_rag.experiments.stats import paired_bootstrap
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.ingest.readers import first_line, iter_document_paths, read_document
from agentic_rag.jsonl import read_records
from agentic_rag.retrieve.pipeline import Pipeline

METRICS = ("answer@5", "loose answer@5", "ndcg@10")


def set_questions(path: Path) -> list[dict]:
    """The answerable questions of a generated set (`agentic-rag testset`) as `arm` reads them."""
    return [{"id": q["id"], "text": q["question"], "answers": [q["answer"]],
             "qrels": {d: 1 for d in q["doc_ids"]}, "split": q["split"]}
            for q in read_records(path) if q.get("answerable", 1)]


def loose(s: str) -> str:
    """Lower case, punctuation read as a space, padded: " os getenv key default none "."""
    return " " + " ".join(re.sub(r"[^\w]+", " ", s.lower()).split()) + " "


def loose_at_5(hits, answers: list[str]) -> float:  # noqa: ANN001
    """answer@5 with punctuation read as a space: "os.getenv(key, default=None)" holds
    "getenv(key, default=None)" (the project's SQuAD normalisation deletes punctuation, so
    there "osgetenvkey" does not hold "getenvkey")."""
    refs = [loose(a) for a in answers if loose(a).strip()]
    return float(any(r in loose(chunk_view(h)) for h in hits[:5] for r in refs))


def arm(docs: list[Document], questions: list[dict], home: Path,
        answers: str = "answers") -> tuple[dict, list[dict]]:
    """`docs` indexed under `home`, each question searched (k 10): the index's counts and a
    row per question (`answers`: the question's field holding the answers to look for)."""
    pipe = Pipeline(RAGConfig().with_overrides({"home": str(home)}))
    pipe.index.add_documents(docs)
    chunks = pipe.index.store.get(None, limit=1_000_000)
    stats = {"documents": len(docs), "characters": sum(len(d.text) for d in docs),
             "chunks": len(chunks),
             "by_type": dict(sorted(Counter(c.chunk_type for c in chunks).items()))}
    rows, run = [], {}
    for q in questions:
        _, result = pipe.retrieve(q["text"], k=10)
        run[q["id"]] = doc_run(result.hits[:10])
        rows.append({"id": q["id"], "split": q["split"],
                     "answer@5": answer_at_k(result.hits, q.get(answers, q["answers"]), 5),
                     "loose answer@5": loose_at_5(result.hits, q.get(answers, q["answers"]))})
    ndcg = ir_metrics({q["id"]: q["qrels"] for q in questions}, run)
    for r in rows:
        r["ndcg@10"] = ndcg[r["id"]]["ndcg@10"]
    return stats, rows


def compare(first: list[dict], second: list[dict], names: tuple[str, str] = ("source", "html")
            ) -> dict:
    """Each metric's mean per arm and the paired difference (second arm − first) with its
    bootstrap CI, keyed by the arms' `names`."""
    out: dict = {"questions": len(first)}
    for metric in METRICS:
        a, b = [r[metric] for r in first], [r[metric] for r in second]
        out[metric] = {names[0]: sum(a) / len(a), names[1]: sum(b) / len(b),
                       f"{names[1]}_minus_{names[0]}": paired_bootstrap(b, a)}
    return out


def compare_splits(first: list[dict], second: list[dict],
                   names: tuple[str, str] = ("source", "html")) -> dict:
    """`compare` on all the questions (`all`), and on the test split alone (`test`) when the
    rows hold some test questions and some others."""
    out = {"all": compare(first, second, names)}
    test = [i for i, r in enumerate(first) if r["split"] == "test"]
    if test and len(test) < len(first):
        out["test"] = compare([first[i] for i in test], [second[i] for i in test], names)
    return out


# what a reading leaves of a site builder's syntax outside code blocks (experiments/tune/site_markdown.py)
LEFTOVERS = {
    "esm": re.compile(r"^(?:import|export)[\s{*]", re.M),
    "jsx comment": re.compile(r"\{/\*"),
    "component tag": re.compile(r"</?[A-Z][\w.]*[\s/>]"),
    "front matter": re.compile(r"\A---\s*$|^(?:title|description|sidebar(?:_\w+)?|slug|"
                               r"template|hero|tags|last_?[uU]pdate):", re.M),
    "admonition fence": re.compile(r"^[ \t]*:::", re.M),
    "hugo shortcode": re.compile(r"\{\{[<%]"),
    # MyST (Sphinx, Jupyter Book; 2026-12-05): a role, a target line
    "myst role": re.compile(r"\{[A-Za-z][\w:.+-]*\}\x00"),
    "myst target": re.compile(r"^\([\w.:/+-]+\)=[ \t]*$", re.M),
    # AsciiDoc (2026-12-05): macros, cross references, block lines, section titles, labels
    "asciidoc macro": re.compile(r"\b(?:xref|link|image|include|kbd|btn|menu|footnote|pass)"
                                 r":[^\s\[]*\["),
    "asciidoc cross reference": re.compile(r"<<[^<>\n]+>>"),
    "asciidoc block line": re.compile(r"^(?:\[[^\]\n]*\]|-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\|===|"
                                      r":[\w-]+:(?:\s.*)?|(?:ifn?def|endif)::.*|//.*)[ \t]*$", re.M),
    "asciidoc section title": re.compile(r"^=+ \S", re.M),
    "asciidoc admonition label": re.compile(r"^(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION): ", re.M),
    # reStructuredText (Sphinx; 2026-12-06): a role, an explicit markup line (a directive, a
    # target, a comment), a hyperlink reference
    "rst role": re.compile(r"(?<![\w`]):(?:[A-Za-z][\w.+-]*:)+\x00"),
    "rst explicit markup": re.compile(r"^[ \t]*\.\.(?:[ \t]+\S.*)?$", re.M),
    "rst hyperlink reference": re.compile(r"\x00__?(?!\w)"),
}
# a code chunk that is a MyST directive block (```{note}: read as code before 2026-12-05)
_DIRECTIVE_CODE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})\{[A-Za-z]")
_INLINE_CODE = re.compile(r"(`+).+?\1")
_KEY_TITLE = re.compile(r"^(?:---|[\w-]+:(?:\s|$))")  # "title: Tabs", "sidebar_position: 4"


def readings(folder: Path) -> dict[str, list[Document]]:
    """`folder`'s documents as written (`raw`: the text as it is) and as read (`site`)."""
    raw, site = [], []
    for path, doc_id in iter_document_paths([folder]):
        text = path.read_text(encoding="utf-8-sig")
        raw.append(Document(id=doc_id, text=text, title=first_line(text), source=str(path),
                            format=detect_format(path.name)))
        site.append(read_document(path, doc_id))
    return {"raw": raw, "site": site}


def _markup(doc_id: str) -> str:
    lower = doc_id.lower()
    return "asciidoc" if lower.endswith((".adoc", ".asciidoc")) else \
        "rst" if detect_format(lower) == "rst" else "markdown"


def leftovers(docs: list[Document]) -> dict:
    """Chunk counts, and the non-code chunks holding a site builder's syntax (`LEFTOVERS`)."""
    chunker = AgenticChunker(RAGConfig().chunking)
    chunks = [c for d in docs for c in chunker.chunk(d)]
    # inline code out (a mark left where it was: a role is its name before one); the AsciiDoc
    # and RST patterns only for their own pages (an RST field list reads like an attribute
    # entry; an RST literal is two marks)
    prose = [(_INLINE_CODE.sub("\x00", c.text), _markup(c.doc_id))
             for c in chunks if c.chunk_type != "code"]

    def hit(k: str, t: str, markup: str) -> bool:
        own = k.split()[0] if k.split()[0] in ("asciidoc", "rst") else markup
        return own == markup and bool(LEFTOVERS[k].search(t))

    return {"documents": len(docs), "chunks": len(chunks),
            "non-code chunks": len(prose),
            "with leftovers": {k: sum(hit(k, t, a) for t, a in prose) for k in LEFTOVERS},
            "any leftover": sum(any(hit(k, t, a) for k in LEFTOVERS) for t, a in prose),
            "titles that are front matter": sum(bool(_KEY_TITLE.match(d.title)) for d in docs),
            "code chunks that are a MyST directive": sum(
                bool(_DIRECTIVE_CODE.match(c.text)) for c in chunks if c.chunk_type == "code"),
            "by_type": dict(sorted(Counter(c.chunk_type for c in chunks).items()))}


# .rst (and MyST) pages as Sphinx's text builder renders them: the peer reading (experiments/tune/rst_peer.py)
_WORD = re.compile(r"[a-z0-9_]+")


def words(text: str) -> Counter:
    """`text`'s words (`[a-z0-9_]+`, lower case) as a multiset."""
    return Counter(_WORD.findall(text.lower()))


MYST = ["colon_fence", "deflist", "dollarmath", "fieldlist", "substitution", "tasklist",
        "attrs_inline", "attrs_block", "html_admonition"]  # MyST-Parser's optional syntax


def sphinx_text(folder: Path, pages: list[Path], root: Path | None = None,
                myst: bool = False) -> dict[Path, str]:
    """Each page's text as Sphinx's text builder writes it (no extension, no warnings);
    `root`: the tree copied around FOLDER (its files as they are, FOLDER's pages below);
    `myst`: .md pages too, with MyST-Parser (`pip install myst-parser`) and `MYST` on."""
    from sphinx.application import Sphinx

    with tempfile.TemporaryDirectory() as tmp:
        tree, out = Path(tmp) / "tree", Path(tmp) / "out"
        src = tree / folder.resolve().relative_to(root.resolve()) if root else tree
        if root is not None:
            shutil.copytree(root, tree, ignore=shutil.ignore_patterns(".git"), symlinks=True)
            for stale in (p for p in src.rglob("*") if p.name.endswith(peer_suffixes(myst))):
                stale.unlink()  # FOLDER's pages are written below, as without a root
        for p in pages:
            dest = src / p.relative_to(folder)
            if p.name.endswith(".rst.txt"):
                dest = dest.with_name(p.name.removesuffix(".rst.txt") + ".rst")
            dest.parent.mkdir(parents=True, exist_ok=True)
            text = p.read_text(encoding="utf-8-sig")
            dest.write_text(text if p.suffix == ".md" else _without_index(text), encoding="utf-8")
        conf = "extensions = []\nroot_doc = '__root__'\n"
        if myst:
            conf = (f"extensions = ['myst_parser']\nroot_doc = '__root__'\nmyst_enable_extensions = "
                    f"{MYST!r}\nsource_suffix = {{'.rst': 'restructuredtext', '.md': 'markdown'}}\n")
        (src / "conf.py").write_text(conf)
        (src / "__root__.rst").write_text("Root\n====\n")
        (src / "docutils.conf").write_text("[general]\nreport_level: 5\nhalt_level: 5\n")
        app = Sphinx(str(src), str(src), str(out), str(Path(tmp) / "doctrees"), "text",
                     status=None, warning=None, freshenv=True, verbosity=0)
        app.build(force_all=True)
        texts = {}
        for p in pages:
            rel = p.relative_to(folder).as_posix().removesuffix(".txt").removesuffix(".rst")
            rel = rel.removesuffix(".md")
            built = out / f"{rel}.txt"
            if built.is_file():
                texts[p] = built.read_text(encoding="utf-8")
        return texts


def peer_suffixes(myst: bool) -> tuple[str, ...]:
    """The page endings `sphinx_text` builds (.md too with `myst`)."""
    return (".rst", ".rst.txt", ".md") if myst else (".rst", ".rst.txt")


def _without_index(text: str) -> str:
    """`.. index::` blocks out: they show nothing, and CPython 3.11's older entry forms
    ("module: signal") stop Sphinx 9's build."""
    out, skip_deeper = [], None
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip())
        if skip_deeper is not None and (not line.strip() or indent > skip_deeper):
            continue
        skip_deeper = indent if line.strip().startswith(".. index::") else None
        if skip_deeper is None:
            out.append(line)
    return "\n".join(out)


def overlap(ours: Counter, theirs: Counter) -> tuple[float, float]:
    """(precision, recall) of the words `ours` against `theirs`."""
    common = sum((ours & theirs).values())
    return common / max(1, sum(ours.values())), common / max(1, sum(theirs.values()))


# a reStructuredText role as the HTML page prints it: :exc:`KeyError` → KeyError,
# :class:`.datetime` → datetime, :func:`~os.path.join` → join, :ref:`text <label>` → text
_ROLE = re.compile(r":[\w:.+-]+:`(~?)\.?([^`<]*?)\s*(?:<[^>]*>)?`")


def rendered(answer: str) -> str:
    """A python-library-qa answer (quoted from the .rst source) as its HTML page reads."""
    out = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), answer)
    return out.replace("``", "")


def recovered(pdf: str, html: str) -> dict:
    """How much of a document's HTML reading its PDF reading holds: the PDF's headings that are
    HTML sections, the HTML's prose sentences (6 words or more, outside code blocks, lists and
    tables) and the lines of its code blocks found in the PDF's text (`loose`)."""
    code = [ln for block in re.findall(r"^```[^\n]*\n(.*?)^```$", html, flags=re.M | re.S)
            for ln in block.splitlines() if loose(ln).strip()]
    html = re.sub(r"^```.*?^```$", "", html, flags=re.M | re.S)
    heads = [loose(h.lstrip("#")) for h in re.findall(r"^#+ .*$", pdf, re.M)]
    html_heads = {loose(h.lstrip("#")) for h in re.findall(r"^#+ .*$", html, re.M)}
    prose = [ln for ln in html.split("\n\n") if not ln.lstrip().startswith(("#", "|", "-"))]
    sentences = [x for para in prose for x in re.split(r"(?<=[.!?])\s+", " ".join(para.split()))
                 if len(x.split()) >= 6]
    hay = loose(pdf)
    found = [x for x in sentences if loose(x) in hay]
    return {"pdf_headings": len(heads), "pdf_headings_in_html": sum(h in html_heads for h in heads),
            "html_sentences": len(sentences), "found_in_pdf": len(found),
            "share": len(found) / len(sentences),
            "not_found_examples": [x for x in sentences if loose(x) not in hay][:8],
            "html_code_lines": len(code), "code_lines_in_pdf": sum(loose(x) in hay for x in code),
            "code_not_found": [x for x in code if loose(x) not in hay][:12]}


def unchanged_by(transform: Callable[[str], str], files: list[Path]) -> dict:
    """How many of `files` a text pass (`transform`) leaves byte for byte as they are, and the
    first changed line (120 characters) of each one it changes."""
    changed = {}
    for p in files:
        text = p.read_text(encoding="utf-8-sig", errors="replace")
        out = transform(text)
        if out != text:
            line = next(a for a, b in zip(text.splitlines() + [""], out.splitlines() + [""]) if a != b)
            changed[str(p)] = line[:120]
    return {"files": len(files), "changed": len(changed), "changes": changed}
