"""Every notebook in notebooks/ follows the convention CI relies on (nbmake runs them all in
`make test`): exactly one cell tagged `parameters` (papermill's convention), committed with
no outputs, and a last cell tagged `conclusion` that computes its text from the data (an
f-string with placeholders), never a sentence typed by hand."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def test_the_numbered_notebooks_exist() -> None:
    names = [p.stem for p in NOTEBOOKS]
    assert [n[:2] for n in names] == [f"{i:02d}" for i in range(1, 12)], names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_one_parameters_cell_with_small_defaults_documented(path: Path) -> None:
    params = [c for c in _cells(path) if "parameters" in _tags(c)]
    assert len(params) == 1, f"{path.name}: {len(params)} cells tagged 'parameters', want 1"
    cell = params[0]
    assert cell["cell_type"] == "code"
    src = _source(cell)
    ast.parse(src)
    assert "full" in src.lower(), f"{path.name}: the parameters cell must give the full-size setting"
    assert all(isinstance(node, (ast.Assign, ast.Expr)) for node in ast.parse(src).body), \
        f"{path.name}: the parameters cell holds assignments only"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path: Path) -> None:
    for i, c in enumerate(_cells(path)):
        if c["cell_type"] == "code":
            assert not c.get("outputs"), f"{path.name} cell {i}: stored outputs (strip before commit)"
            assert c.get("execution_count") is None, f"{path.name} cell {i}: execution count stored"


def _fstrings_with_fields(tree: ast.AST) -> int:
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)
               and any(isinstance(v, ast.FormattedValue) for v in n.values))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_last_cell_is_a_computed_conclusion(path: Path) -> None:
    last = _cells(path)[-1]
    assert last["cell_type"] == "code" and "conclusion" in _tags(last), \
        f"{path.name}: the last cell must be a code cell tagged 'conclusion'"
    tree = ast.parse(_source(last))
    assert _fstrings_with_fields(tree) >= 1, f"{path.name}: the conclusion is not computed (no f-string field)"
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert names - {"display", "Markdown", "print", "len", "int", "float", "str", "round", "max", "min",
                    "sum", "dict", "list", "isinstance", "next", "sorted", "zip"}, \
        f"{path.name}: the conclusion reads no data"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_first_code_cell_sets_offline_mode(path: Path) -> None:
    first = next(c for c in _cells(path) if c["cell_type"] == "code")
    assert 'os.environ.setdefault("HF_HUB_OFFLINE", "1")' in _source(first)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_markdown_is_not_left_in_comment_form(path: Path) -> None:
    """A markdown cell written as `# ## Title\\n# text` (a script's comment form) renders every
    line as a top-level heading; headings are `#`-prefixed, body lines are not."""
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] != "markdown":
            continue
        lines = _source(cell).split("\n")
        assert not lines[0].startswith("# #"), f"{path.name} cell {i}: {lines[0][:60]!r}"
        body = [ln for ln in lines[1:] if ln.strip()]
        assert not body or not all(ln.startswith("#") for ln in body), \
            f"{path.name} cell {i}: every line is a heading: {body[0][:60]!r}"
