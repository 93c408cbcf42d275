"""The 2-config x 100-question slice of the quick sweep (`quick2.yaml`), recomputed
(`--no-cache`) by the `agentic_rag` of `--tree` with the code version fixed, into OUT (the run
folder and `keys.json`, its row-cache keys). Run once per tree and compare the rows.

    python experiments/conversations/sessions/checks/quick_rows.py --tree DIR OUT
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

from _tree import tree_argument, use_tree

SPEC = Path(__file__).with_name("quick2.yaml")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    tree_argument(ap)
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    use_tree(args.tree)
    from agentic_rag.experiments.runner import run_sweep

    db = args.out / "rows.sqlite"
    res = run_sweep(SPEC, runs_dir=args.out, cache_dir="experiments/cache", progress=False,
                    use_cache=False, row_cache=db, log=lambda *a: None)
    keys = sorted(r[0] for r in sqlite3.connect(db).execute("select key from rows"))
    (args.out / "keys.json").write_text(json.dumps(keys))
    print(res.run_dir)


if __name__ == "__main__":
    main()
