"""MyST Markdown (Sphinx's Markdown, Jupyter Book) read as the built page reads: directives and
roles as their text, what only the builder reads dropped.

    text = myst_markdown(raw_text)      # before `mdx.site_markdown`, which takes the front matter

- an admonition (```` ```{note} ````, ```` ```{admonition} Title ````, `:::{tip}`, a version
  note: ```` ```{versionadded} 3.1 ```` → "**New in version 3.1**") and a container that shows
  its content (`{tab-item} pip`, `{dropdown} Title`, `{card}`, `{figure}`'s caption,
  `{eval-rst}`, ...) become a bold line over their content (`mdx`'s admonition form); their
  options (`:class: info`, a `---` YAML block) go;
- a code directive (```` ```{code-block} python ````, `{code-cell} ipython3`,
  `{jupyter-execute}`, `{math}`, a language such as ```` ```{r} ````) becomes a plain fenced
  block in its language, without its options;
- navigation and build-only directives (`{toctree}`, `{contents}`, `{include}`,
  `{literalinclude}`, `{image}`, `{raw}`, and the same written in RST inside `{eval-rst}`) go;
- roles read as their text: a code role (``{py:func}`~os.path.join` `` and every `domain:` role)
  as inline code as Sphinx shows it (`join`: "~" keeps the last part), a cross-reference
  (``{ref}`Install <install>` ``, ``{doc}`usage` ``, ``{pr}`1234` ``) as its title or target,
  ``{pep}`8` `` as "PEP 8";
- a target line `(label)=` goes.
Fenced code and inline code are not rewritten. A page with none of these reads as it is.
An unknown directive keeps its content as text (its options dropped). Pure: tested without files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentic_rag.ingest.mdx import OPENER, closes_fence

# ```{name} args  /  :::{name} args (the colon_fence extension)
_DIRECTIVE = re.compile(r"^([ \t]*)(`{3,}|~{3,}|:{3,})\{([A-Za-z][\w:.+-]*)\}[ \t]*(.*?)[ \t\r]*$")
_OPTION = re.compile(r"^[ \t]*:[\w-]+:(?:[ \t].*)?$")
_ITEM_FENCE = re.compile(r"^([ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+)(`{3,}|~{3,})")  # "- ```yaml"
_PROMPT = re.compile(r"(?:\$|>>>|%|PS>|C:\\>)[ \t]")
_TARGET = re.compile(r"^\([\w.:/+-]+\)=[ \t\r]*$")
# a role, or inline code (matched first where it starts first, so a role inside code stays)
_ROLE_OR_CODE = re.compile(r"\{([A-Za-z][\w:.+-]*)\}(`+)(?!`)(.+?)(?<!`)\2(?!`)|(`+)(?!`).+?(?<!`)\4(?!`)")
_TITLED = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)

_ADMONITIONS = {"note": "Note", "tip": "Tip", "hint": "Hint", "important": "Important",
                "warning": "Warning", "caution": "Caution", "danger": "Danger",
                "error": "Error", "attention": "Attention", "seealso": "See also",
                "versionadded": "New in version", "versionchanged": "Changed in version",
                "deprecated": "Deprecated since version",
                "versionremoved": "Removed in version"}
# content shown, the arguments (if any) as its title
_CONTAINERS = {"admonition", "dropdown", "tab-set", "tab-item", "tab", "grid", "grid-item",
               "grid-item-card", "card", "card-carousel", "topic", "sidebar", "margin",
               "container", "div", "epigraph", "pull-quote", "highlights", "compound",
               "eval-rst", "only", "glossary", "hlist", "centered", "rubric", "figure",
               "figure-md", "table", "list-table", "csv-table", "tabbed", "details"}
# containers whose arguments are layout or conditions, not a title (`{grid} 1 2 2 3`)
_UNTITLED = {"grid", "tab-set", "container", "div", "card-carousel", "hlist", "only", "eval-rst",
             "glossary", "compound"}
# code: their language (None: the first argument's, e.g. {code-block} python)
_CODE = {"code-block": None, "code": None, "sourcecode": None, "code-cell": None,
         "jupyter-execute": "python", "ipython": "python", "doctest": "pycon",
         "testcode": "python", "testoutput": "text", "testsetup": "python",
         "testcleanup": "python", "math": "math", "mermaid": "mermaid", "graphviz": "dot",
         "digraph": "dot", "graph": "dot", "plantuml": "plantuml", "prompt": "console",
         "program-output": "text", "command-output": "console", "exec": "python",
         "literal": "text", "parsed-literal": "text"}
_LANGUAGES = {"python", "py", "python3", "ipython3", "pycon", "r", "julia", "bash", "sh",
              "shell", "console", "zsh", "powershell", "sql", "javascript", "js", "ts",
              "typescript", "json", "yaml", "toml", "ini", "c", "cpp", "rust", "go", "java",
              "html", "css", "ojs", "dot", "latex", "tex", "text", "none", "xml", "scala"}
_DROPPED = {"toctree", "contents", "include", "literalinclude", "image", "raw",
            "tableofcontents", "bibliography", "footbibliography", "autosummary",
            "automodule", "autoclass", "autofunction", "automethod", "autoattribute",
            "autodata", "autoexception", "autoprogram", "click", "argparse", "sectionauthor",
            "moduleauthor", "index", "meta", "tags", "youtube", "video", "iframe"}
# roles Sphinx shows as code (and every `domain:role`, `py:func`); the rest (`ref`, `doc`, `term`,
# extlinks such as `pr`, `issue`, `pypi`) as text
_CODE_ROLES = {"func", "class", "meth", "mod", "attr", "data", "exc", "obj", "const", "any",
               "file", "samp", "command", "program", "option", "envvar", "kbd", "code",
               "literal", "regexp", "makevar", "mailheader", "keyword", "token", "type"}
_TEXT_DOMAINS = ("external", "cite", "std:ref", "std:doc", "std:term", "math:", "eq")
_DROPPED_ROLES = {"octicon", "fa", "iconify", "index"}
_RST_DROPPED = re.compile(r"^\.\. (?:" + "|".join(map(re.escape, sorted(_DROPPED))) + ")::")


@dataclass
class _Open:
    fence: str  # the opening fence ("```", "::::", ...)
    kind: str  # "code", "text", "drop", "plain" (a fenced block that is no directive)
    name: str = ""
    options: bool = False  # still in the options at the start of the body
    yaml: bool = False  # in a `---` options block
    had_options: bool = False
    dropping: bool = False  # in an RST navigation directive (`{eval-rst}`)
    indent: str = ""
    title: str = ""  # an unknown directive's arguments, its title if its body is text

    def code_fence(self) -> str:
        """The fence of its code block as written out (a colon fence becomes backticks)."""
        return "```" if self.fence[0] == ":" else self.fence


def myst_markdown(text: str) -> str:
    """`text` with MyST's directives, roles and targets read (the module doc); byte for byte
    `text` when it has none."""
    if "{" not in text and ")=" not in text:
        return text
    out: list[str] = []
    stack: list[_Open] = []
    for line in text.splitlines(keepends=True):
        top = stack[-1] if stack else None
        if top is not None and not top.yaml and _closes(line, top.fence):
            stack.pop()
            end = "\r\n" if line.endswith("\r\n") else "\n"
            out.append(line if top.kind == "plain" else f"{top.indent}{top.code_fence()}{end}"
                       if top.kind == "code" else "\n" if top.kind == "text" else "")
            continue
        if top is not None and _skipped(line, top):
            continue
        if top is not None and top.kind == "unknown":
            if not line.strip():
                continue
            out.append(_decided(top, line))
        if top is not None and top.kind in ("code", "plain", "drop"):
            if top.kind != "drop":
                out.append(line)
            continue
        out.extend(_line(line, stack))
    return "".join(out)


def _skipped(line: str, top: _Open) -> bool:
    """Whether `line` is one of a directive's options (`:class: info` lines or a `---` YAML
    block at the start of its body) or, in `{eval-rst}`, part of an RST navigation directive
    (`.. toctree::` and its indented body)."""
    if top.options:
        if top.yaml or (line.strip() == "---"):
            top.yaml = not (top.yaml and line.strip() == "---")
            top.had_options = True
            return True
        if _OPTION.match(line):
            top.had_options = True
            return True
        top.options = False
        if top.had_options and not line.strip():  # the blank line after the options
            return True
    if top.name == "eval-rst":
        if _RST_DROPPED.match(line):
            top.dropping = True
            return True
        top.dropping = top.dropping and (not line.strip() or line[:1] in " \t")
        return top.dropping
    return False


def _line(line: str, stack: list[_Open]) -> list[str]:
    """What a line outside code becomes; a directive or fence it opens pushed on `stack`."""
    d = _DIRECTIVE.match(line)
    if d:
        indent, fence, name, args = d.groups()
        kind, head = _directive(name.lower(), " ".join(_roles(args).split()))
        top = _Open(fence, kind, name.lower(), options=True, indent=indent, title=head)
        stack.append(top)
        if kind == "code":
            end = "\r\n" if line.endswith("\r\n") else "\n"
            return [f"{indent}{top.code_fence()}{head}{end}"]
        return [f"{indent}{head}\n"] if head and kind == "text" else []
    m = OPENER.match(line) or _ITEM_FENCE.match(line)
    if m:
        stack.append(_Open(m.group(2), "plain"))
        return [line]
    if _TARGET.match(line):
        return []
    return [_roles(line)]


def _roles(text: str) -> str:
    return _ROLE_OR_CODE.sub(_role, text) if "}`" in text else text


def _directive(name: str, args: str) -> tuple[str, str]:
    """(kind, head): for code, the fence's language; for text, its bold title line."""
    if name in _CODE or name in _LANGUAGES:
        lang = _CODE.get(name, name) or (args.split()[0] if args.split() else "")
        return "code", lang
    if name in _DROPPED:
        return "drop", ""
    if name in _ADMONITIONS:
        label = _ADMONITIONS[name]
        return "text", f"**{label} {args}**" if args and name.startswith(("version", "dep")) \
            else f"**{label}: {args}**" if args else f"**{label}**"
    if name in ("figure", "image", "figure-md"):
        return "text", ""
    if name in _CONTAINERS:
        return "text", f"**{args}**" if args and name not in _UNTITLED else ""
    return "unknown", f"**{args}**" if args else ""


def _decided(top: _Open, line: str) -> str:
    """An unknown directive (`{pip-cli}`, `{exercise}`) read by its first line of content:
    code when it is a shell or REPL prompt (`$ pip install x`, `>>> f()`), else text under
    its title; what it writes out before that line."""
    if _PROMPT.match(line.lstrip()):
        top.kind = "code"
        return f"{top.indent}{top.code_fence()}console\n"
    top.kind = "text"
    return f"{top.indent}{top.title}\n" if top.title else ""


def _closes(line: str, fence: str) -> bool:
    if fence[0] != ":":
        return closes_fence(line, fence)
    s = line.strip()
    return bool(s) and set(s) == {":"} and len(s) >= len(fence)


def _role(m: re.Match[str]) -> str:
    name = m.group(1)
    if name is None:  # inline code: as it is
        return m.group(0)
    name, body = name.lower(), " ".join(m.group(3).split())
    if name in _DROPPED_ROLES:
        return ""
    titled = _TITLED.match(body)
    shown = titled.group(1) if titled and titled.group(1) else (titled.group(2) if titled else body)
    if name in ("pep", "rfc"):
        return f"{name.upper()} {shown}"
    if name == "math":
        return f"${shown}$"
    if name not in _CODE_ROLES and (":" not in name or name.startswith(_TEXT_DOMAINS)):
        return shown
    if shown.startswith("~") and not titled:
        shown = shown[1:].rsplit(".", 1)[-1]
    shown = shown.lstrip("!~")
    tick = "``" if "`" in shown else "`"
    return f"{tick}{shown}{tick}"
