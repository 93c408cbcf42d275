"""reStructuredText directives by what Sphinx shows of them: the name tables `ingest.rst`
reads a directive by, a directive's parts (`parts`: arguments, options, content), code
directives as the code-blocks `markup` reads (`code_block`), and whether an `.. only::`
condition holds for an HTML build (`not_html`). Pure: tested without files.
"""

from __future__ import annotations

import re

from agentic_rag.ingest.sphinx import VERSIONS, indent_of

_OPTION = re.compile(r"^:[\w -]+:(?:[ \t].*)?$")
# code: left as written where `markup` reads them as code, else rewritten as a code-block in
# their language (None: their first argument's); the hidden ones dropped
CODE = {"code-block": None, "code": None, "sourcecode": None, "doctest": None,
         "testcode": None, "productionlist": "text", "parsed-literal": "text",
         "literal": "text", "math": "math", "graphviz": "dot", "digraph": "dot", "graph": "dot",
         "mermaid": "mermaid", "plantuml": "plantuml", "prompt": "console",
         "program-output": "text", "command-output": "console", "ipython": "python",
         "jupyter-execute": "python", "code-cell": "", "exec": "python", "testoutput": "text",
         "code-tab": ""}
ARGUMENT_IS_CODE = {"math", "program-output", "command-output"}
HIDDEN = {"testsetup", "testcleanup"}  # Sphinx runs them, the page does not show them
DROPPED = {*HIDDEN, "toctree", "index", "highlight", "moduleauthor", "sectionauthor",
            "tabularcolumns", "raw", "image", "include", "literalinclude", "contents", "meta",
            "autosummary", "default-role", "default-domain", "audit-event-table", "program",
            "tags", "youtube", "video", "iframe", "bibliography", "footbibliography",
            "sidebar-links", "rst-class", "inheritance-diagram", "namespace", "namespace-push",
            "namespace-pop", "autoprogram", "click", "argparse", "module", "currentmodule",
            "automodule"}
# a bold line over their content: the kind's name, or the title their argument gives
ADMONITIONS = {"note", "tip", "hint", "important", "warning", "caution", "danger", "error",
                "attention", "seealso", "impl-detail", "todo", "admonition", "topic", "sidebar",
                "dropdown", "tab", "tab-item", "group-tab", "card", "grid-item-card", "details"}
ADMONITION_LABEL = {"seealso": "See also", "impl-detail": "CPython implementation detail"}
TITLED = {"admonition", "topic", "sidebar", "dropdown", "tab", "tab-item", "group-tab", "card",
           "grid-item-card", "details", "list-table", "table", "csv-table", "rubric"}
# no argument: the text on their first line and the lines under it are content
NO_ARGUMENTS = (ADMONITIONS - TITLED) | {"glossary", "hlist", "compound", "pull-quote",
                                            "epigraph", "highlights", "tab-set", "tabs"}
# their content shown (under their title, where `TITLED`)
CONTAINERS = {"only", "glossary", "hlist", "container", "compound", "grid", "grid-item",
               "tab-set", "tabs", "epigraph", "highlights", "pull-quote", "figure",
               "list-table", "table", "csv-table", "rubric", "centered", "cssclass", "div"}
CPYTHON = {"deprecated-removed", "availability", "audit-event"}  # CPython's own notes
# API descriptions (any domain, autodoc's too): their arguments are signatures, one a line
DESCRIPTIONS = {"function", "class", "method", "attribute", "data", "exception", "decorator",
                 "decoratormethod", "classmethod", "staticmethod", "abstractmethod",
                 "coroutinefunction", "coroutinemethod", "awaitablefunction", "awaitablemethod",
                 "property", "type", "macro", "member", "var", "struct", "union", "enum",
                 "enumerator", "concept", "alias", "interface", "describe", "object", "option",
                 "cmdoption", "envvar", "opcode", "pdbcommand", "2to3fixer", "monitoring-event",
                 "directive", "role", "confval", "setting", "event", "cfunction", "cmember",
                 "cmacro", "ctype", "cvar", "autoclass", "autoexception", "autofunction",
                 "automethod", "autoattribute", "autodata", "autodecorator", "autoproperty"}
KNOWN = DROPPED | ADMONITIONS | CONTAINERS | set(VERSIONS) | CPYTHON | DESCRIPTIONS
# the word Sphinx shows before a signature
ANNOTATIONS = {"class": "class", "exception": "exception", "classmethod": "classmethod",
                "staticmethod": "staticmethod", "abstractmethod": "abstractmethod",
                "property": "property", "coroutinefunction": "coroutine",
                "coroutinemethod": "coroutine", "awaitablefunction": "awaitable",
                "awaitablemethod": "awaitable", "autoclass": "class",
                "autoexception": "exception", "autoproperty": "property"}


def code_block(block: list[str], indent: str, short: str, args: str) -> list[str]:
    """A code directive as a code-block `markup` reads (in its language), or as written where
    it already does; a `testoutput` with `:hide:` goes, as on the page."""
    if short in ("testoutput", "testcode") and any(ln.strip() == ":hide:" for ln in block[1:]):
        return []
    if CODE[short] is None:
        return block
    lang = CODE[short] or (args.split()[0] if args.split() else "")
    rest = block[1:]
    if args and short in ARGUMENT_IS_CODE:  # `.. math:: e^{i\pi} = -1`: the formula
        shown = f"$ {args}" if short == "command-output" else args
        rest = ["", f"{indent}   {shown}", *[ln for ln in rest if not _OPTION.match(ln.strip())]]
    return [f"{indent}.. code-block:: {lang}".rstrip(), *rest]


def parts(lines: list[str], no_arguments: bool) -> tuple[list[str], dict[str, str], list[str]]:
    """A directive's lines after its first: (arguments continued, options, content). A
    directive that takes no arguments (an admonition) starts its content there."""
    k, more, options = 0, [], {}
    while not no_arguments and k < len(lines) and lines[k].strip() \
            and not _OPTION.match(lines[k].strip()):
        more.append(lines[k].strip())
        k += 1
    while k < len(lines) and _OPTION.match(lines[k].strip()):
        key, _, value = lines[k].strip()[1:].partition(":")
        options[key.strip()] = value.strip()
        k += 1
    return more, options, lines[k:]


def dedented(lines: list[str], indent: str) -> list[str]:
    """`lines` moved to `indent`, their own indentation relative to the least kept."""
    least = min((indent_of(ln) for ln in lines if ln.strip()), default=0)
    return [indent + ln[least:] if ln.strip() else "" for ln in lines]


_HTML_TAGS = {"html", "format_html", "builder_html", "dirhtml", "builder_dirhtml",
              "singlehtml", "builder_singlehtml"}
_OTHER_BUILDERS = re.compile(r"(?:format_|builder_)?(?:latex|man|texinfo|epub|text|xml|"
                             r"pseudoxml|linkcheck|gettext|changes|json|pickle|qthelp|devhelp)")


def not_html(condition: str) -> bool:
    """Whether an `.. only::` condition leaves its content out of the HTML page: the
    expression (`and`, `or`, `not`, parentheses) with the HTML builder's tags true, other
    builders' false and any other tag (a project's own) true; one that does not parse is
    shown."""
    import ast

    try:
        tree = ast.parse(condition.strip(), mode="eval").body
    except SyntaxError:
        return False

    def value(node: ast.AST) -> bool:
        if isinstance(node, ast.BoolOp):
            parts = [value(v) for v in node.values]
            return all(parts) if isinstance(node.op, ast.And) else any(parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not value(node.operand)
        if isinstance(node, ast.Name):
            return node.id in _HTML_TAGS or not _OTHER_BUILDERS.fullmatch(node.id)
        raise ValueError(node)

    try:
        return not value(tree)
    except ValueError:
        return False
