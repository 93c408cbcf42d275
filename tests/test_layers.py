"""The floor plan: subpackages in layer order, no module importing from a layer above its own,
no import circles. Every import counts: top-level, inside functions (lazy) and under
`TYPE_CHECKING`, read from the source with `ast` (nothing is imported)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import agentic_rag

PKG = Path(agentic_rag.__file__).parent
# lowest first; the top-level modules (config tree, records, package files) are layer 0
LAYERS = ["", "ingest", "store", "llm", "evaluation", "datasets", "retrieve", "agent", "serve",
          "experiments", "studies", "cli"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def internal_imports() -> dict[str, set[str]]:
    """module → the agentic_rag modules it imports (a `from pkg import submodule` counts as
    the submodule)."""
    paths = {module_name(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in paths.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    out.add(sub if sub in paths else base)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
        graph[mod] = {m for m in out if m in paths and m != mod}
    return graph


def layer(mod: str) -> int:
    parts = mod.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else 0


def test_every_module_is_in_a_layer():
    top = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert top == set(LAYERS) - {""}, "a subpackage missing from LAYERS (or a stale one in it)"


def test_no_module_imports_from_a_layer_above_its_own():
    graph = internal_imports()
    up = sorted(f"{a} (layer {LAYERS[layer(a)] or 'top'}) imports {b} ({LAYERS[layer(b)]})"
                for a, deps in graph.items() if a != "agentic_rag"
                for b in deps if layer(b) > layer(a))
    assert up == []
    # the package's front door (`from agentic_rag import RAGConfig`) is for users, never for the library
    assert [a for a, deps in graph.items() if "agentic_rag" in deps] == []


def test_no_import_circles():
    graph = internal_imports()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert circles == []


def test_the_checker_sees_a_circle_and_an_upward_import(tmp_path, monkeypatch):
    """The rules above can fail: a lazy import from store up to retrieve is both."""
    fake = tmp_path / "agentic_rag"
    for sub in ["", "store", "retrieve"]:
        (fake / sub).mkdir(exist_ok=True)
        (fake / sub / "__init__.py").write_text("")
    (fake / "store" / "index.py").write_text("def f():\n    from agentic_rag.retrieve.gate import g\n")
    (fake / "retrieve" / "gate.py").write_text("from agentic_rag.store.index import f\n")
    monkeypatch.setattr(sys.modules[__name__], "PKG", fake)
    graph = internal_imports()
    assert graph["agentic_rag.store.index"] == {"agentic_rag.retrieve.gate"}
    assert layer("agentic_rag.store.index") < layer("agentic_rag.retrieve.gate")
    try:
        test_no_import_circles()
    except AssertionError:
        pass
    else:
        raise AssertionError("the circle store.index <-> retrieve.gate was not found")


def test_calibration_does_not_import_the_gate():
    """The gate depends on calibration, never the other way round (at run time too)."""
    code = ("import sys, agentic_rag.retrieve.calibration; print('agentic_rag.retrieve.gate' in "
            "sys.modules, 'agentic_rag.retrieve.retrievers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]
