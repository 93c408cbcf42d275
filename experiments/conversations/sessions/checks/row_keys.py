import sys, os, json
root = os.environ["H1_ROOT"]
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower() and "editable" not in repr(f).lower()]
sys.path.insert(0, root)
import agentic_rag
assert agentic_rag.__file__.startswith(root)
from agentic_rag.experiments import row_cache
row_cache.code_version = lambda: "fixed"
from agentic_rag.experiments.measure import evaluation_settings
from agentic_rag.experiments.plan import load_spec_dataset
from agentic_rag.experiments.runfolder import versions
from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.studies.claims.registry import CLAIMS, DATASETS, claim_spec
from agentic_rag.config import RAGConfig
specs = [SweepSpec.load("/work/main/experiments/quick.yaml")]
for c in CLAIMS:
    if c.kind != "sweep": continue
    for dep in ("document analysis", "code", "support automation"):
        if c.applies_to(dep):
            specs.append(claim_spec(c, DATASETS[dep], RAGConfig()))
cache = row_cache.RowCache("/tmp/h1_keys_cache.sqlite")
out = {}
pk = versions()
for spec in specs:
    ds = load_spec_dataset(spec)
    configs = spec.configs()
    llm_ids = frozenset(q.id for q in ds.queries[:spec.llm_sample])
    keys = row_cache.RowKeys([c for _, _, c in configs], ds, evaluation_settings(spec), llm_ids, {"packages": pk}, cache)
    out[spec.name] = [keys.key(i, q.id, 0) for i in range(len(configs)) for q in ds.queries]
print(json.dumps({k: len(v) for k, v in out.items()}))
json.dump(out, open(sys.argv[1], "w"))
