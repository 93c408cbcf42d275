"""Import `agentic_rag` from another tree (a checkout with a change reverted, say) with the
code version held fixed, so two trees' row-cache keys and rows can be compared: the shared
start of `row_keys.py` and `quick_rows.py`."""

from __future__ import annotations

import sys
from pathlib import Path


def use_tree(root: Path) -> None:
    """Make `import agentic_rag` load `root/agentic_rag` (the editable install's finder
    dropped) and pin the row cache's code version to "fixed"."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()
                        and "editable" not in type(f).__module__.lower()]
    sys.path.insert(0, str(root))
    import agentic_rag
    if not agentic_rag.__file__.startswith(str(root)):
        raise SystemExit(f"agentic_rag came from {agentic_rag.__file__}, not {root}")
    from agentic_rag.experiments import row_cache, runner
    row_cache.code_version = runner.code_version = lambda: "fixed"


def tree_argument(parser) -> None:  # noqa: ANN001 - argparse.ArgumentParser
    parser.add_argument("--tree", type=Path, required=True,
                        help="the checkout whose agentic_rag is imported")
