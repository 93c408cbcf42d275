"""docs/index.md's module table against the modules: every module of agentic_rag/ has a
docstring and a row, each row is what `docs/module_table.py` writes from that docstring, and
no row names a module that is gone (< 1 s: the modules are read with `ast`, not imported)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "module_table.py"


def _generator():
    spec = importlib.util.spec_from_file_location("module_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mt = _generator()
FIX = f"regenerate the table with `{mt.COMMAND}`"


def listed(block: str) -> dict[str, str]:
    """`folder/module` → its row, read back from the table (a row with an empty `where` is in
    the folder of the row above it)."""
    out: dict[str, str] = {}
    folder = ""
    for line in block.splitlines():
        found = re.match(r"\|\s*(.*?)\s*\| `(\w+)` \|", line)
        if not found:
            continue
        where, name = found.groups()
        if where:
            folder = "" if where == "top level" else where.strip("`").rstrip("/")
        out[f"{folder}/{name}".lstrip("/")] = line
    return out


def test_every_module_has_a_docstring():
    missing = [str(p.relative_to(mt.ROOT)) for p in mt.undocumented()]
    assert not missing, (f"modules without a docstring: {missing}; give each a one-sentence summary "
                         f"at its top, then {FIX}")


def test_the_module_table_lists_every_module_with_its_docstring_line():
    expected = mt.rows()
    table = listed(mt.current_block(mt.INDEX_MD.read_text()))
    missing = [m for m in expected if m not in table]
    gone = [m for m in table if m not in expected]
    stale = [m for m in expected if m in table and table[m] != expected[m]]
    assert not (missing or gone or stale), (
        f"docs/index.md's module table: {FIX} (missing: {missing}; stale: {stale}; "
        f"no such module: {gone})")
    assert mt.current_block(mt.INDEX_MD.read_text()) == mt.table(), f"rows out of order: {FIX}"


@pytest.mark.parametrize("docstring, line", [
    ("One typed configuration tree.\n\nMore.", "One typed configuration tree"),
    ("Does the agent abstain? (issue 21)", "Does the agent abstain?"),
    ("Reads `a.b`. e.g. this stays. Then `x` goes.", "Reads `a.b`. e.g. this stays"),
    ("Split (see `x. Y`). Rest.", "Split (see `x. Y`)"),
    ("`agentic-rag index|search`: the commands.", "`agentic-rag index|search`: the commands"),
    ("Files into documents: " + "a, " * 100 + "b.", "Files into documents"),
])
def test_a_line_is_the_first_sentence_cut_at_a_colon_when_long(docstring, line):
    assert mt.summary(docstring) == line


def test_the_generator_writes_a_module_it_has_not_seen(tmp_path):
    """A new module gets a row in its folder; the block between the markers is all that changes."""
    pkg = tmp_path / "agentic_rag"
    (pkg / "store").mkdir(parents=True)
    (pkg / "store" / "__init__.py").write_text('"""Layer 2, stores."""\n')
    (pkg / "ingest").mkdir()
    (pkg / "ingest" / "__init__.py").write_text('"""Layer 1, reading."""\n')
    (pkg / "config.py").write_text('"""The config.\n\nDetails."""\n')
    (pkg / "store" / "vec.py").write_text('"""Vectors: kept | searched."""\nX = 1\n')
    (pkg / "ingest" / "new.py").write_text('"""A new reader, just added."""\n')
    assert mt.rows(pkg) == {
        "config": "| top level | `config` | The config |",
        "ingest/new": "| `ingest/` | `new` | A new reader, just added |",
        "store/vec": "| `store/` | `vec` | Vectors: kept \\| searched |",
    }
    (pkg / "ingest" / "bare.py").write_text("X = 1\n")
    assert [p.name for p in mt.undocumented(pkg)] == ["bare.py"]
