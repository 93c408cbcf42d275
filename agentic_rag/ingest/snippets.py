"""MkDocs' snippets (`pymdownx.snippets`): `--8<-- "file"` read into a Markdown page where
the site's `mkdocs.yml` enables the extension, as it reads them before the page is parsed
(`markdown_snippets`; `ingest.readers` calls it before MyST's includes). Files are read as
`ingest.includes` reads included files (`read_capped`: regular files, capped).
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from agentic_rag.ingest.includes import DEPTH, MAX_PAGE, read_capped

_SNIPPET = re.compile(r"""^([ \t]*)(;*)(?:-+8<-+[ \t]+("(?:\\"|[^"\n])+?"|'(?:\\'|[^'\n])+?')|(-+8<-+))$""")
_SNIPPET_SECTION = re.compile(r"(?i)^(.*?)(;*)(-+8<-+[ \t]+)(\[[ \t]*(start|end)[ \t]*:[ \t]*"
                              r"([a-z][-_0-9a-z]*)[ \t]*\])(.*)$")
_SNIPPET_FILE = re.compile(r"(?i)(.*?)(?:((?::-?[0-9]*){1,2}(?:(?:,(?=[-0-9:])-?[0-9]*)(?::-?[0-9]*)?)*)"
                           r"|(:[a-z][-_0-9a-z]*))?$")
_SECTION_HINT = re.compile(r"-8<-+[ \t]+\[")  # a cheap look before `_SNIPPET_SECTION`
_MKDOCS_FILES = ("mkdocs.yml", "mkdocs.yaml")


@dataclass
class _Snippets:
    """A MkDocs project's snippet settings (`mkdocs.yml`: `pymdownx.snippets`), and what a
    page's snippets may still add."""

    base: list[Path]
    dedent: bool = False
    left: int = field(default_factory=lambda: MAX_PAGE)


def markdown_snippets(text: str, page: str | Path, skip: Collection[str] = ()) -> str:
    """`text`, a Markdown page of a MkDocs site whose `mkdocs.yml` enables
    `pymdownx.snippets`, with its snippets read in as that extension does before the page is
    parsed: a line `--8<-- "file"` (inside a code fence too: a tutorial's example code), a
    `--8<--` block of file names, `"file:3:10"` line ranges and `"file:name"` sections
    (`--8<-- [start:name]` / `[end:name]` marker lines removed everywhere), nested snippets,
    a `;--8<--` escape shown as `--8<--`. Paths are relative to the extension's `base_path`
    (`!relative $config_dir`, `$docs_dir` and a bare `!relative`, the page's folder, as MkDocs
    reads them; default: the folder holding `mkdocs.yml`, where `mkdocs build` runs), never
    outside it (`restrict_base_path`, its default). A page of no such site comes back as it
    is. `auto_append` files are not appended: they are abbreviation lists a page shows as
    tooltips, and would repeat on every page. A snippet that cannot be read is dropped, as
    the extension drops it (`check_paths` off); URLs are not fetched (nothing leaves the
    machine)."""
    if "8<" not in text:
        return text
    path = Path(os.path.abspath(page))
    cfg = _snippet_settings(path, frozenset(skip))
    if cfg is None:
        return text
    return "\n".join(_snippet_lines(text.replace("\r\n", "\n").split("\n"), cfg, set(), False))


def _snippet_settings(page: Path, skip: frozenset[str]) -> _Snippets | None:
    """The snippet settings of the MkDocs site `page` belongs to (the nearest `mkdocs.yml`
    above it, no hidden or skipped folder between), or None where it has none or the site
    does not enable `pymdownx.snippets`."""
    for folder in list(page.parents)[:DEPTH]:
        if any(p.startswith(".") or p in skip for p in page.parent.relative_to(folder).parts):
            return None
        config = next((folder / n for n in _MKDOCS_FILES if (folder / n).is_file()), None)
        if config is None:
            continue
        data = _mkdocs_config(config)
        opts = _extension_options(data, "pymdownx.snippets")
        if opts is None:
            return None
        docs = data.get("docs_dir") if isinstance(data.get("docs_dir"), str) else "docs"
        where = {"$config_dir": folder, "$docs_dir": folder / docs, "": page.parent}
        base = opts.get("base_path", ["."])
        bases = []
        for b in base if isinstance(base, list) else [base]:
            if isinstance(b, _Relative):
                bases.append(where.get(b.value.strip(), folder / b.value.strip()))
            elif isinstance(b, str):
                bases.append(folder / b)
        return _Snippets([Path(os.path.abspath(b)) for b in bases] or [folder],
                         opts.get("dedent_subsections") is True)
    return None


@dataclass(frozen=True)
class _Relative:
    """MkDocs' `!relative` tag: a path from the config's, the docs' or the page's folder."""

    value: str


def _mkdocs_config(config: Path) -> dict:
    """`mkdocs.yml` as a mapping ({} where it does not parse): `!relative` kept, `!ENV` as
    its variable's value or its default, other tags (`!!python/name:`) as nothing."""
    import yaml

    class Loose(yaml.SafeLoader):
        pass

    def env(loader: yaml.SafeLoader, node: yaml.Node) -> str | None:
        names = (loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode)
                 else [loader.construct_scalar(node)])  # type: ignore[arg-type]
        found = next((os.environ[n] for n in names[:-1] if isinstance(n, str) and n in os.environ), None)
        return found if found is not None else (names[-1] if len(names) > 1 else os.environ.get(str(names[0])))

    Loose.add_constructor("!relative", lambda loader, node: _Relative(str(loader.construct_scalar(node))))
    Loose.add_constructor("!ENV", env)
    Loose.add_multi_constructor("", lambda loader, suffix, node: None)
    try:
        data = yaml.load(config.read_text(encoding="utf-8-sig"), Loader=Loose)  # a SafeLoader
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def _extension_options(data: dict, name: str) -> dict | None:
    """The options `mkdocs.yml` gives the Markdown extension `name` ({} where it is enabled
    without any), or None where it is not enabled; `markdown_extensions` as a list (of names
    and one-key mappings) or a mapping."""
    extensions = data.get("markdown_extensions")
    items = extensions.items() if isinstance(extensions, dict) else (
        [next(iter(e.items())) if isinstance(e, dict) and len(e) == 1 else (e, {})
         for e in extensions] if isinstance(extensions, list) else [])
    for key, opts in items:
        if key == name:
            return opts if isinstance(opts, dict) else {}
    return None


def _snippet_lines(lines: list[str], cfg: _Snippets, seen: set[Path], is_section: bool) -> list[str]:
    """pymdownx.snippets' `parse_snippets`: the lines with snippets read in."""
    out: list[str] = []
    block = False
    for line in lines:
        m = _SNIPPET.match(line) if "8<" in line else None
        inline = False
        if m is not None:
            if m.group(2):  # escaped: shown, one ";" fewer
                out.append(line.replace(";", "", 1))
                continue
            if m.group(3) is None:  # a block's opening or closing marker
                block = not block
                continue
            if block:
                continue  # the inline form is not read inside a block
            inline = True
        elif not block:
            s = _SNIPPET_SECTION.match(line) if not is_section and _SECTION_HINT.search(line) else None
            if s is not None and not s.group(2):
                continue  # a section marker: not shown
            out.append(line if s is None else s.group(1) + s.group(2).replace(";", "", 1) + s.group(3)
                       + s.group(4) + s.group(7))
            continue
        space = (m.group(1) if inline and m is not None else line[:len(line) - len(line.lstrip())]).expandtabs(4)
        name = m.group(3)[1:-1].strip() if inline and m is not None else line.strip()
        if not inline and not name:
            out.append("")
            continue
        if name.startswith(";"):
            continue
        out.extend(space + ln for ln in _snippet(name, cfg, seen))
    return out


def _snippet(spec: str, cfg: _Snippets, seen: set[Path]) -> list[str]:
    """One snippet's lines (its own snippets read), [] where it cannot be read."""
    f = _SNIPPET_FILE.match(spec) if len(spec) <= 1000 else None
    name = f.group(1).strip() if f else ""
    if not name or name.lower().startswith(("http://", "https://")):
        return []  # URLs are not fetched (pymdownx's `url_download` is off by default too)
    path = _snippet_path(name, cfg.base)
    if path is None or path in seen or len(seen) >= DEPTH:
        return []
    try:
        text = read_capped(path, cfg.left)
    except (OSError, UnicodeDecodeError):
        return []
    if text is None:
        return []
    cfg.left -= len(text)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines if text.endswith("\n") else lines[:-1]
    if f is not None and f.group(2):
        picked: list[str] = []
        total = len(lines)
        for part in f.group(2)[1:].split(","):
            bounds = [b[:9] for b in part.split(":")]  # a line number past 10**9 is past the end
            first = int(bounds[0]) if bounds[0] not in ("", "-") else None
            last = int(bounds[1]) if len(bounds) > 1 and bounds[1] not in ("", "-") else None
            first = None if first is None else (max(0, total + first) if first < 0 else max(0, first - 1))
            last = None if last is None else (max(0, min(total, total + 1 + last)) if last < 0 else last)
            picked.extend(lines[first:last])
        lines = textwrap.dedent("\n".join(picked)).split("\n") if cfg.dedent else picked
    elif f is not None and f.group(3):
        lines = _snippet_section(lines, f.group(3)[1:], cfg.dedent)
    return _snippet_lines(lines, cfg, seen | {path}, bool(f is not None and f.group(3)))


def _snippet_path(name: str, bases: list[Path]) -> Path | None:
    """The first base's file `name`, not outside that base (pymdownx's `restrict_base_path`);
    a base that is a file names itself only."""
    for base in bases:
        try:
            if base.is_dir():
                path = Path(os.path.abspath(base / name))
                if path.is_relative_to(base) and path.exists():
                    return path
            elif base.is_file() and (base.parent / name).exists() and os.path.samefile(base.parent / name, base):
                return base
        except (OSError, ValueError):  # a name too long for the file system, a NUL in it
            continue
    return None


def _snippet_section(lines: list[str], section: str, dedent: bool) -> list[str]:
    """The lines between `--8<-- [start:section]` and `--8<-- [end:section]` (other sections'
    markers left out)."""
    out: list[str] = []
    inside = False
    for line in lines:
        m = _SNIPPET_SECTION.match(line) if _SECTION_HINT.search(line) else None
        if m is not None and inside and m.group(2):
            line = m.group(1) + m.group(2).replace(";", "", 1) + m.group(3) + m.group(4) + m.group(7)
        elif m is not None and m.group(6) == section:
            if m.group(5) == "start":  # a second start is passed over
                inside = True
                continue
            break  # its end, an end before a start, or "[START:x]" (pymdownx compares "start")
        elif m is not None and inside:
            continue
        if inside:
            out.append(line)
    return textwrap.dedent("\n".join(out)).split("\n") if dedent else out
