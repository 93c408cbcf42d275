"""Document corpora for indexing, each from a package registry.

- `python-docs`: the Python 3.11 documentation sources (reStructuredText: code,
  tables, procedures) from Debian's `python3.11-doc` package. `make datasets`
  fetches it without root (`apt-get download` + `dpkg-deb -x`) into
  `datasets/cache/`; an installed `/usr/share/doc/python3.11` is used as is.
- `banking`: τ²-bench's banking_knowledge documents (698 Markdown policy and
  procedure documents with tables and numbered steps), shipped in the PyPI
  package `inspect-evals==0.28.0` (installed with `--no-deps`; we only read data).
- `default`: both; the corpus `make run` indexes.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path

from agentic_rag.datasets.base import DatasetMissing
from agentic_rag.documents import Document
from agentic_rag.packages import package_file

PYDOCS_SUBDIR = "usr/share/doc/python3.11/html/_sources"
DEFAULT_PYDOC_SECTIONS = ("tutorial", "howto", "faq")


def cache_dir() -> Path:
    return Path(os.environ.get("AGENTIC_RAG_DATA", "datasets/cache"))


def pydocs_root() -> Path:
    """The `_sources` folder of the Python 3.11 documentation (`make datasets`); its parent is
    the built HTML site."""
    for base in (cache_dir() / "python3.11-doc", Path("/")):
        root = base / PYDOCS_SUBDIR
        if root.is_dir():
            return root
    raise DatasetMissing(
        "python-docs: the Python 3.11 documentation sources were not found in "
        f"{cache_dir() / 'python3.11-doc' / PYDOCS_SUBDIR} or /{PYDOCS_SUBDIR}; run "
        "`make datasets` (apt-get download python3.11-doc && dpkg-deb -x ...) "
        "or `apt-get install python3.11-doc`")


def python_docs(sections: tuple[str, ...] = DEFAULT_PYDOC_SECTIONS) -> list[Document]:
    """The .rst sources of the given top-level sections (e.g. tutorial, howto, faq, library)."""
    root = pydocs_root()
    docs = []
    for section in sections:
        folder = root / section
        if not folder.is_dir():
            raise DatasetMissing(f"python-docs: no section {section!r} under {root}")
        for f in sorted(folder.rglob("*.rst.txt")):
            rel = f.relative_to(root).as_posix()
            text = f.read_text(encoding="utf-8")
            title = next((ln.strip() for ln in text.splitlines()
                          if ln.strip() and not ln.startswith("..")
                          and not set(ln.strip()) <= set("*=-#~^")), rel)
            docs.append(Document(id=f"pydocs/{rel.removesuffix('.txt')}", text=text, title=title,
                                 source=f"python-3.11-docs/{rel}", format="rst",
                                 metadata={"corpus": "python-docs"}))
    return docs


def _package_data(package: str, relpath: str, install: str) -> Path:
    return package_file(package, relpath, install, DatasetMissing)


BANKING_DIR = "tau2/data/domains/banking_knowledge"
INSPECT_EVALS_INSTALL = "pip install --no-deps inspect-evals==0.28.0"


def banking_documents() -> list[Document]:
    path = _package_data("inspect_evals", f"{BANKING_DIR}/documents.json.gz", INSPECT_EVALS_INSTALL)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = json.load(f)
    return [Document(id=r["id"], text=r["content"], title=r["title"],
                     source=f"tau2-bench/banking_knowledge/{r['id']}", format="markdown",
                     metadata={"corpus": "banking"}) for r in rows]


CORPORA: dict[str, Callable[[], list[Document]]] = {
    "python-docs": python_docs,
    "banking": banking_documents,
    "default": lambda: python_docs() + banking_documents(),
}


def load_corpus(name: str) -> list[Document]:
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}; choose one of {sorted(CORPORA)}")
    return CORPORA[name]()


def sample_folder(corpus: str, n: int, seed: int, dest: str | Path) -> Path:
    """Write a seeded sample of `n` documents of a packaged corpus as files, one per document,
    into `dest/<corpus>-<n>-s<seed>/` (returned): a stand-in for a user's own folder.

    The folder name depends only on (corpus, n, seed), so the doc ids that `agentic-rag index`
    or `testset` give its files (`<folder>/<id>.md`) are the same wherever `dest` is. Each file
    is the document's text under a `# <title>` heading (Markdown; `.rst` for python-docs);
    other files already in that folder are removed, so it always holds exactly the sample."""
    docs = sorted(load_corpus(corpus), key=lambda d: d.id)
    if not 1 <= n <= len(docs):
        raise ValueError(f"sample_folder: n={n}, but corpus {corpus!r} has {len(docs)} documents")
    import random

    picked = sorted(random.Random(seed).sample(docs, n), key=lambda d: d.id)
    folder = Path(dest) / f"{corpus}-{n}-s{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    wanted = set()
    for d in picked:
        name = d.id.replace("/", "__") + (".rst" if d.format == "rst" else ".md")
        text = d.text if d.format == "rst" else f"# {d.title}\n\n{d.text}"
        path = folder / name
        wanted.add(name)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    for f in folder.iterdir():
        if f.is_file() and f.name not in wanted:
            f.unlink()
    return folder
