"""The figure-and-product check (no LLM) on the τ²-banking answers committed in
experiments/agent-runs/*/rows.jsonl: which of the agent's real answers the gate would act on,
next to the LLM support judge's `hallucinated` verdicts of the same answers (judgements.jsonl;
LLM-labelled: Qwen2.5-Coder-1.5B, not validated on these). Passages are rebuilt from the chunk
ids (`doc#type@start-end`: the document's text between the offsets).

    PYTHONPATH=. python experiments/agent-support/gate_on_committed_runs.py
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from agentic_rag.agent.result import strip_citations
from agentic_rag.config import RAGConfig
from agentic_rag.datasets.corpora import banking_documents
from agentic_rag.datasets.qa import banking_tasks
from agentic_rag.evaluation.figures import Passage, check_figures
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.retrieve.context import citation_id
from agentic_rag.store.coverage import TitleCoverage
from agentic_rag.store.lexical import LexicalIndex


def main() -> dict:
    docs = {d.id: d for d in banking_documents()}
    tasks = {q.id: q.text for q in banking_tasks().queries}
    cfg = RAGConfig()
    chunks = AgenticChunker(cfg.chunking).chunk_many(list(docs.values()))
    cov = TitleCoverage(LexicalIndex(cfg.lexical).build(chunks, [c.index_text() for c in chunks]))
    seen, out = set(), []
    for path in sorted(Path("experiments/agent-runs").glob("*/rows.jsonl")):
        judged = {}
        jpath = path.with_name("judgements.jsonl")
        if jpath.exists():
            for line in jpath.open():
                j = json.loads(line)
                judged[(j["cell"], j["qid"])] = j.get("hallucinated")
        for line in path.open():
            r = json.loads(line)
            if r.get("dataset") != "tau2-banking" or not r.get("served") or r.get("abstained") \
                    or not r.get("answer"):
                continue
            key = (r["qid"], r["answer"])
            if key in seen:
                continue
            seen.add(key)
            ps = []
            for cid in r["served"]:
                doc, _, span = cid.partition("#")
                a, b = (int(x) for x in span.split("@")[1].split("-"))
                ps.append(Passage(citation_id(cid), doc, docs[doc].text[a:b]))
            question = tasks.get(r["qid"], "")
            named = cov.named_documents(question) if question else []
            chk = check_figures(question, strip_citations(r["answer"]), ps,
                                [citation_id(c) for c in r.get("cited_chunks") or []], named)
            h = judged.get((r["cell"], r["qid"]))
            out.append({"run": path.parent.name, "qid": r["qid"], "figures": list(chk.figures),
                        "acts": not chk.ok, "unsupported": list(chk.unsupported),
                        "wrong_product": list(chk.wrong_product), "named": len(named),
                        "hallucinated": None if h is None or (isinstance(h, float) and math.isnan(h)) else h})
    n = len(out)
    with_figs = [x for x in out if x["figures"]]
    acts = [x for x in out if x["acts"]]
    hal = [x for x in out if x["hallucinated"] == 1.0]
    ok = [x for x in out if x["hallucinated"] == 0.0]
    summary = {"answers": n, "with_figures": len(with_figs), "gate_acts": len(acts),
               "judged_hallucinated": len(hal), "acts_on_hallucinated": sum(x["acts"] for x in hal),
               "judged_supported": len(ok), "acts_on_supported": sum(x["acts"] for x in ok)}
    Path("experiments/agent-support/gate-on-committed-runs.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in out))
    return summary


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
