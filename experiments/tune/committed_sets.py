"""Every committed generated set (a JSONL with a `generator` field) loads with its gold spans
holding its answers under today's reader (`datasets.qa.with_questions` refuses it otherwise).
No LLM. The documents of local sets must be where they were made:

    PYTHONPATH=. python experiments/agent-support/generated_products.py folder /tmp/bank-products
    mkdir -p /tmp/node-docs && for p in path os timers console querystring readline tty dgram; do
        cp /usr/share/doc/nodejs/api/$p.md /tmp/node-docs/; done
    # /tmp/node-html, /tmp/pdf-docs, /tmp/green-docs, /tmp/starlight-docs,
    # /tmp/pyodide-docs/docs (the MyST pages), /tmp/adoc-asciidoctor, /tmp/rst-pallets+flask/docs:
    # experiments/tune/README.md
    PYTHONPATH=. python experiments/tune/committed_sets.py      # prints OK / ERR per file

(Adapted from a review's script, a helper session's; packaged datasets are loaded by name.)"""

import json
import subprocess
from pathlib import Path

from agentic_rag.datasets.qa import DatasetError, load_dataset, load_local, with_questions

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"bank-products": "/tmp/bank-products", "node-docs": "/tmp/node-docs",
           "node-html": "/tmp/node-html", "pdf-docs": "/tmp/pdf-docs",
           "starlight-docs": "/tmp/starlight-docs", "green-docs": "/tmp/green-docs",
           "docs": "/tmp/pyodide-docs/docs", "adoc-asciidoctor": "/tmp/adoc-asciidoctor",
           "banking-40-s0": str(ROOT / "experiments/cache/your-docs/banking-40-s0")}
NAMED = {"doc_": "tau2-banking", "pydocs/": "python-library-qa", "p": "halueval-qa"}
# sets whose folder name another set's folder shares ("docs"): their folder by file
BY_FILE = {"experiments/tune/flask/": "/tmp/rst-pallets+flask/docs",
           "experiments/tune/click/": "/tmp/full-pallets+click/docs"}
# sets kept as they were made, whose spans an older reading of their documents placed (the
# figures computed on them stand); the re-anchored copy beside each is the one that loads
STALE = {"experiments/tune/pyodide/questions.jsonl":
         "made on 2026-12-05's reading (.rst as written, MyST func roles without '()'); "
         "agentic-rag testset /tmp/pyodide-docs/docs --reanchor ... → questions-reanchored.jsonl",
         "experiments/tune/flask/questions.jsonl":
         "made on 2026-12-06's first .rst reading (`:doc:` and other pages' `:ref:` as their "
         "targets); agentic-rag testset /tmp/rst-pallets+flask/docs --reanchor ... → "
         "questions-reanchored.jsonl",
         "experiments/tune/flask/questions.dev.jsonl": "the same set's dev split (`tune`'s copy)",
         "experiments/tune/flask/questions.test.jsonl": "the same set's test split (`tune`'s copy)"}

if __name__ == "__main__":
    files = subprocess.run("grep -rl '\"generator\"' experiments notebooks/data datasets "
                           "--include=*.jsonl | grep -v rejected", shell=True, cwd=ROOT,
                           capture_output=True, text=True).stdout.split()
    named: dict = {}
    for f in files:
        if f in STALE:
            print("STALE", f, STALE[f])
            continue
        ids = [s["doc_id"] for line in open(ROOT / f) if line.strip()
               for s in (json.loads(line).get("spans") or [])]
        if not ids:
            print("NO SPANS", f)
            continue
        top = ids[0].split("/")[0]
        try:
            own = next((d for k, d in BY_FILE.items() if f.startswith(k)), None)
            if own is not None or top in FOLDERS:
                ds = load_local(own or FOLDERS[top], ROOT / f)
            else:
                key = next(v for k, v in NAMED.items() if ids[0].startswith(k))
                named.setdefault(key, load_dataset(key))
                ds = with_questions(named[key], ROOT / f)
            print("OK", f, len(ds.queries))
        except DatasetError as exc:
            print("ERR", f, str(exc)[:300])
