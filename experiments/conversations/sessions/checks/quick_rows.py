import sys, os
root = os.environ["H1_ROOT"]
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower() and "editable" not in repr(f).lower()]
sys.path.insert(0, root)
import agentic_rag
assert agentic_rag.__file__.startswith(root), agentic_rag.__file__
import sys, json
from pathlib import Path
from agentic_rag.experiments.runner import run_sweep
from agentic_rag.experiments.measure import evaluation_settings
from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.experiments import row_cache
row_cache.code_version.cache_clear()
row_cache.code_version = lambda: "fixed"
import agentic_rag.experiments.runner as R
R.code_version = row_cache.code_version
out = sys.argv[1]
res = run_sweep("experiments/conversations/sessions/checks/quick2.yaml", runs_dir=out, cache_dir="/work/main/experiments/cache", progress=False, use_cache=False, row_cache=out + "/rows.sqlite", log=lambda *a: None)
import sqlite3
keys = sorted(r[0] for r in sqlite3.connect(out + "/rows.sqlite").execute("select key from rows"))
Path(out + "/keys.json").write_text(json.dumps(keys))
print(res.run_dir)
