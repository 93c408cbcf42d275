"""The row-cache keys of the quick sweep and of every sweep claim on the three original
deployments, computed by the `agentic_rag` of `--tree` with the code version fixed, into
OUT (JSON: spec name -> keys). Run once per tree and compare the files.

    python experiments/conversations/sessions/checks/row_keys.py --tree DIR OUT.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _tree import tree_argument, use_tree


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    tree_argument(ap)
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    use_tree(args.tree)
    from agentic_rag.config import RAGConfig
    from agentic_rag.experiments import row_cache
    from agentic_rag.experiments.measure import evaluation_settings
    from agentic_rag.experiments.plan import load_spec_dataset
    from agentic_rag.experiments.runfolder import versions
    from agentic_rag.experiments.spec import SweepSpec
    from agentic_rag.studies.claims.registry import CLAIMS, DATASETS, claim_spec

    specs = [SweepSpec.load("experiments/quick.yaml")]
    specs += [claim_spec(c, DATASETS[dep], RAGConfig()) for c in CLAIMS if c.kind == "sweep"
              for dep in ("document analysis", "code", "support automation")
              if c.applies_to(dep)]
    cache = row_cache.RowCache(args.out.with_suffix(".sqlite"))
    out, packages = {}, {"packages": versions()}
    for spec in specs:
        ds = load_spec_dataset(spec)
        configs = [c for _, _, c in spec.configs()]
        llm_ids = frozenset(q.id for q in ds.queries[:spec.llm_sample])
        keys = row_cache.RowKeys(configs, ds, evaluation_settings(spec), llm_ids, packages, cache)
        out[spec.name] = [keys.key(i, q.id, 0) for i in range(len(configs)) for q in ds.queries]
    print(json.dumps({k: len(v) for k, v in out.items()}))
    args.out.write_text(json.dumps(out))


if __name__ == "__main__":
    main()
