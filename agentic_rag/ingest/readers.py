"""Files into `Document`s: plain text as it is; reStructuredText as Sphinx builds it
(`ingest.rst`: roles, directives), Markdown and MDX as a documentation site writes them, read
as plain Markdown (`ingest.mdx`: front matter, admonitions, components; `ingest.myst`); AsciiDoc
(`ingest.asciidoc`); HTML pages and Word documents (`ingest.html`), PDFs (`ingest.pdf`) and Jupyter
notebooks (`ingest.notebook`) converted to Markdown, so the chunker keeps their code, tables
and lists whole. Binary, non-UTF-8 or unreadable files raise
`DocumentError`, which names the file. A folder is read recursively (`iter_document_paths`),
leaving out what is not its documents (`skipped_in_folder`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agentic_rag.documents import Document, DocumentError, detect_format

DOC_SUFFIXES = (".md", ".markdown", ".mdx", ".rst", ".txt", ".html", ".htm", ".pdf", ".docx",
                ".ipynb", ".adoc", ".asciidoc")
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
FORMATS = ".md/.mdx/.rst/.adoc/.txt/.html/.pdf/.docx/.ipynb"  # for help texts and errors
HTML_SUFFIXES = (".html", ".htm")
_PAGE_HEADING = re.compile(r"^## Page \d+$")
_CROSS_REFERENCE = re.compile(r":(?:std:)?(?:ref|doc):`")  # a reST role naming another page
# MyST's: `{ref}`label``, `{doc}`page``, `[](#label)`, `<project:page.md>`
_MYST_REFERENCE = re.compile(r"\{(?:std:)?(?:ref|doc)\}`|\[\]\(|<project:")
_ANTORA_NAV = re.compile(r"nav(?:-[\w-]+)?\.adoc")


def read_document(path: str | Path, doc_id: str | None = None) -> Document:
    """Read one .txt file, an .rst page (`ingest.rst`), a .md / .markdown / .mdx page
    (`ingest.mdx`, `ingest.myst`), an .adoc page (`ingest.asciidoc`), or an .html /
    .htm page or a .docx (`ingest.html`), a PDF's text (`ingest.pdf`) or a notebook
    (`ingest.notebook`) as Markdown; binary, non-UTF-8 or unreadable content raises
    `DocumentError`."""

    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read file: {exc.strerror}") from None
    name, title = path.name.lower(), ""
    metadata: dict[str, Any] = {}
    if name.endswith((".pdf", ".docx", ".ipynb", *HTML_SUFFIXES)):
        text, title = _converted(path, raw)
        metadata = {"converted_from": "html" if name.endswith(HTML_SUFFIXES)
                    else name.rsplit(".", 1)[1]}
    elif b"\x00" in raw[:8192]:
        raise DocumentError(f"{path}: looks like a binary file (NUL bytes); expected UTF-8 text")
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DocumentError(
                f"{path}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                "convert it to UTF-8 first"
            ) from None
        if name.endswith(MARKDOWN_SUFFIXES):
            from agentic_rag.ingest.includes import myst_with_includes
            from agentic_rag.ingest.mdx import site_markdown
            from agentic_rag.ingest.myst import myst_markdown, titled_references
            from agentic_rag.ingest.snippets import markdown_snippets
            from agentic_rag.ingest.sphinx_site import site_names, source_root

            mdx = name.endswith(".mdx")
            try:
                if not mdx:
                    text = markdown_snippets(text, path, BUILD_FOLDERS | SKIPPED_FOLDERS)  # MkDocs'
                    text = myst_with_includes(text, path, BUILD_FOLDERS | SKIPPED_FOLDERS)
                    # the project's other pages are read only for a page that refers to them;
                    # `[](page.md)` shows a title only in a Sphinx project (a Markdown site: nothing)
                    skip = BUILD_FOLDERS | SKIPPED_FOLDERS
                    if _MYST_REFERENCE.search(text):
                        sphinx = (source_root(path.absolute(), skip) / "conf.py").is_file()
                        text = titled_references(text, site_names(path, skip=skip), links=sphinx)
                    text = myst_markdown(text)
                text, fields = site_markdown(text, mdx=mdx)
            except RecursionError:
                raise DocumentError(f"{path}: nested too deeply to read") from None
            title = fields.pop("title")
            metadata = fields  # description, tags, last_updated: where the front matter has them
        elif detect_format(name) == "rst":
            from agentic_rag.ingest.includes import rst_with_includes
            from agentic_rag.ingest.rst import sphinx_rst
            from agentic_rag.ingest.sphinx_site import site_names

            try:
                text = rst_with_includes(text, path, skip=BUILD_FOLDERS | SKIPPED_FOLDERS)
                # the project's other pages are read only for a page that refers to them
                site = site_names(path, skip=BUILD_FOLDERS | SKIPPED_FOLDERS) \
                    if _CROSS_REFERENCE.search(text) else None
                text = sphinx_rst(text, site)
            except RecursionError:
                raise DocumentError(f"{path}: nested too deeply to read") from None
        elif name.endswith((".adoc", ".asciidoc")):
            from agentic_rag.ingest.asciidoc import asciidoc_to_markdown

            text, title, fields = asciidoc_to_markdown(text, asciidoc_attributes(path.parent))
            metadata = {"converted_from": "asciidoc", **fields}
    return Document(id=doc_id or path.as_posix(), text=text, title=title or first_line(text),
                    source=path.as_posix(), format=detect_format(path.name), metadata=metadata)


@functools.lru_cache(maxsize=64)
def asciidoc_attributes(folder: Path) -> dict[str, str]:
    """The AsciiDoc attributes set for pages in `folder` outside the pages: an Antora
    component's `antora.yml` (`asciidoc.attributes`) and an editor's `.asciidoctorconfig`
    (attribute entries), in `folder` or up to 8 folders above it, the nearer winning (a
    value ending in `@` is a soft set: the page may override it, as it may any of these)."""
    found: list[dict[str, str]] = []
    for d in [folder.resolve(), *folder.resolve().parents][:9]:
        here: dict[str, str] = {}
        if (cfg := d / ".asciidoctorconfig").is_file():
            for line in cfg.read_text(encoding="utf-8", errors="replace").splitlines():
                if (m := re.match(r"^:(\w[\w-]*):(?:[ \t]+(.*))?$", line)) is not None:
                    here[m.group(1)] = (m.group(2) or "").strip()
        if (yml := d / "antora.yml").is_file():
            here.update(_antora_attributes(yml))
        found.append(here)
    return {k: v for here in reversed(found) for k, v in here.items()}


def _antora_attributes(path: Path) -> dict[str, str]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except yaml.YAMLError:
        return {}
    section = data.get("asciidoc") if isinstance(data, dict) else None
    attrs = section.get("attributes") if isinstance(section, dict) else None
    if not isinstance(attrs, dict):
        return {}
    return {str(k): "" if v is True else str(v).removesuffix("@")
            for k, v in attrs.items() if v is not False and v is not None}


def first_line(text: str) -> str:
    """A document's title by default: its first line that is not an underline."""
    for line in text.splitlines():
        if line.strip() and not set(line.strip()) <= set("=-*#~^"):
            return line.strip().lstrip("#").strip()
    return ""


def _converted(path: Path, raw: bytes) -> tuple[str, str]:
    """(Markdown, title) of a PDF (`ingest.pdf`), an HTML page or a .docx (`ingest.html`); the
    title "" where the first line of the text is to be used. An HTML page decodes as its own
    <meta charset> says; one with no text in its main content (a redirect stub) reads as an
    empty document, as an empty .md does."""
    from agentic_rag.ingest.html import DocxError, convert_page, docx_to_markdown
    from agentic_rag.ingest.notebook import NotebookError, notebook_to_markdown
    from agentic_rag.ingest.pdf import PdfError, pdf_to_markdown

    try:
        if path.name.lower().endswith(".ipynb"):  # no heading in it: its file name
            text, title = notebook_to_markdown(raw)
            return text, title or path.stem
        if path.name.lower().endswith(".pdf"):  # its title: the first line not "## Page N"
            text = pdf_to_markdown(raw)
            return text, first_line("\n".join(ln for ln in text.splitlines()
                                              if not _PAGE_HEADING.match(ln)))
        if path.name.lower().endswith(".docx"):
            return docx_to_markdown(raw)
        if b"\x00" in raw[:8192] and raw[:2] not in (b"\xff\xfe", b"\xfe\xff"):  # not UTF-16
            raise DocumentError(f"{path}: looks like a binary file (NUL bytes), not an HTML page")
        return convert_page(raw)
    except (PdfError, DocxError, NotebookError) as exc:
        raise DocumentError(f"{path}: {exc}") from None
    except RecursionError:
        raise DocumentError(f"{path}: nested too deeply to convert") from None


# folders a documentation folder holds that are not its documents: hidden ones (.git, .venv),
# dependencies, and a built Sphinx site's copies of its sources, assets and highlighted code
SKIPPED_FOLDERS = {"node_modules", "__pycache__", "site-packages", "_sources", "_static",
                   "_images", "_downloads", "_modules"}
# a built Sphinx site's generated pages (index, module index, search): no content of their own
SPHINX_GENERATED = re.compile(r"(genindex(-\w+)?|py-modindex|search)\.html?")
# a documentation project's build output (Sphinx's `_build/html`, Jekyll's `_site`): left out
# where the walk also finds pages outside it, its sources (read alone it is the site's pages)
BUILD_FOLDERS = {"_build", "_site"}


def skipped_in_folder(rel: Path, folder: Path) -> bool:
    """Whether a folder walk leaves out `rel` (a path inside `folder`): under a hidden or
    `SKIPPED_FOLDERS` folder, an Antora module's navigation file (`modules/api/nav.adoc`), or
    a Sphinx site's generated page (where `searchindex.js` stands beside it)."""
    if any(part.startswith(".") or part in SKIPPED_FOLDERS for part in rel.parts[:-1]):
        return True
    if _ANTORA_NAV.fullmatch(rel.name.lower()) and len(rel.parts) >= 3 \
            and rel.parts[-3] == "modules":  # an Antora module's navigation: links only
        return True
    return bool(SPHINX_GENERATED.fullmatch(rel.name.lower())
                and (folder / rel).with_name("searchindex.js").exists())


def iter_document_paths(paths: Iterable[str | Path]) -> Iterator[tuple[Path, str]]:
    """Expand files and folders into (file, doc_id); ids are paths relative to the folder's parent.
    A folder's documents are its files with a `DOC_SUFFIXES` suffix, recursively, but not those
    `skipped_in_folder`, nor a build output (`BUILD_FOLDERS`) beside pages outside it; a file
    given by itself must be a document too."""
    for p in map(Path, paths):
        if p.is_dir():
            files = [f for f in sorted(p.rglob("*"))
                     if f.is_file() and f.name.lower().endswith(DOC_SUFFIXES)
                     and not skipped_in_folder(f.relative_to(p), p)]
            built = {f for f in files if BUILD_FOLDERS & set(f.relative_to(p).parts[:-1])}
            if len(built) < len(files):  # the sources beside their build: not both
                files = [f for f in files if f not in built]
            for f in files:
                yield f, (Path(p.resolve().name) / f.relative_to(p)).as_posix()
        elif p.is_file():
            if not p.name.lower().endswith(DOC_SUFFIXES):  # as a folder's files are chosen
                hint = ("; a question set given after `testset --exclude a.jsonl` is read as a "
                        "document: repeat --exclude before each file"
                        if p.suffix.lower() in (".jsonl", ".json") else "")
                raise DocumentError(f"{p}: not a document ({', '.join(DOC_SUFFIXES)}){hint}")
            yield p, p.name
        else:
            raise DocumentError(f"{p}: no such file or folder")
