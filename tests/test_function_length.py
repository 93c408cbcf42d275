"""Functions stay under ~80 lines (the house style): every function or method in the package
longer than `MAX_LINES`, docstring included, is listed here with the reason it may be, and
the list holds nothing that has since been split. Read from the source with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import agentic_rag

PKG = Path(agentic_rag.__file__).parent
MAX_LINES = 80
# module:qualname -> why it may be longer (say it in a comment at the function too)
ALLOWED = {
    "agentic_rag.ingest.markup:_Parser._step":
        "the markup parser's state machine: one branch per kind of block start, tried in "
        "order (the comment at the function says so)",
}


def package_sources() -> dict[str, str]:
    """module name -> source, for every module of the package."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path.read_text()
    return out


def long_functions(sources: dict[str, str], max_lines: int = MAX_LINES) -> dict[str, int]:
    """module:qualname -> lines, for every function or method (nested ones too) over
    `max_lines`, docstring and comments included."""
    out: dict[str, int] = {}

    def walk(node: ast.AST, module: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = child.end_lineno - child.lineno + 1
                if lines > max_lines:
                    out[f"{module}:{prefix}{child.name}"] = lines
                walk(child, module, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, module, f"{prefix}{child.name}.")

    for module, source in sources.items():
        walk(ast.parse(source, module), module, "")
    return out


def test_no_function_over_80_lines_without_a_reason():
    found = long_functions(package_sources())
    unexplained = {k: v for k, v in found.items() if k not in ALLOWED}
    assert not unexplained, (f"over {MAX_LINES} lines: {unexplained}; split them, or list them "
                             "in ALLOWED with the reason (and say it at the function)")
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"no longer over {MAX_LINES} lines, drop from ALLOWED: {stale}"


def test_the_scan_counts_methods_and_nested_functions_by_qualified_name():
    body = "            x = 1\n"
    src = ("class A:\n    def m(self):\n        def inner():\n" + body * 90
           + "async def short():\n    pass\n")
    assert long_functions({"mod": src}) == {"mod:A.m": 92, "mod:A.m.inner": 91}
    assert long_functions({"mod": src}, max_lines=91) == {"mod:A.m": 92}
