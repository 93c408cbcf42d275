"""Right document in the top 5 (issue 40), no LLM: the banking-products questions
(datasets/banking-products/<split>.jsonl) searched through the agent's tool path
(`Pipeline.retrieve`, k 5, the gate included) under each retrieval setting; a question
scores 1 when a gold document (one stating the answer) is among the 5 served passages'
documents, and `answer@5` when the answer's figure is verbatim in one of them. Paired
bootstrap CIs vs the default (experiments/stats.py).

    PYTHONPATH=. python experiments/agent-support/retrieval_top5.py dev <index home>
    PYTHONPATH=. python experiments/agent-support/retrieval_top5.py dev <index home> named
      # the second sweep (strategies.NAMED_NAMES) -> retrieval-top5-named-dev.json
    PYTHONPATH=. python experiments/agent-support/retrieval_top5.py dev <index home> lexical
      # the third (strategies.LEXICAL_NAMES, on today's default) -> retrieval-top5-lexical-dev.json
      # (`question`: the fourth, strategies.QUESTION_NAMES -> retrieval-top5-question-<split>.json;
      #  `longest`: the fifth, strategies.LONGEST_NAMES on BEFORE_LONGEST -> -longest-<split>;
      #  `shared`: the tenth, at a7bbfe4 (named_match shared, then the default, and "longest
      #  name") -> -shared-<set>, renamed by set; the value was removed after its verdict)
    PYTHONPATH=. python experiments/agent-support/retrieval_top5.py test <index home> lexical \
        "default,named scope off,<chosen>"      # the test part, once, with the chosen setting
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentic_rag.config import RAGConfig
from agentic_rag.experiments.stats import paired_bootstrap
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.store.index import AgenticIndex
from agentic_rag.studies.strategies import (
    BEFORE_LONGEST,
    DENSE_NAMED,
    LEXICAL_NAMES,
    LONGEST_NAMES,
    NAMED_BASE,
    NAMED_NAMES,
    QUESTION_NAMES,
    STRATEGIES,
)

SETTINGS = ("default", "title 0.5", "title coverage 0.5", "title coverage 1.0",
            "title coverage 2.0")
HERE = Path(__file__).parent


def run(split: str, home: str, settings=SETTINGS, tag: str = "", base_overrides=None) -> dict:
    path = Path(split) if split.endswith(".jsonl") else \
        Path(f"datasets/banking-products/{split}.jsonl")
    rows = [json.loads(x) for x in path.open()]
    # relative to the default before named_scope auto (issue 40's second round): the
    # committed tables replay as they were; "default" is that default. The third round
    # (`base_overrides={}`) is relative to today's default
    base = RAGConfig().with_overrides({"home": home, **(NAMED_BASE if base_overrides is None
                                                        else base_overrides)})
    index = AgenticIndex(base)
    per: dict[str, dict[str, list[float]]] = {}
    detail = []
    for name in settings:
        cfg = base.with_overrides(STRATEGIES[name])
        pipe = Pipeline(cfg, index=index)
        doc5, ans5 = [], []
        for r in rows:
            _, res = pipe.retrieve(r["question"], k=5)
            hits = res.hits[:5]
            docs = [h.chunk.doc_id for h in hits]
            doc5.append(float(any(d in r["doc_ids"] for d in docs)))
            ans5.append(float(any(r["answer"] in h.chunk.text for h in hits)))
            detail.append({"setting": name, "id": r["id"], "doc@5": doc5[-1], "answer@5": ans5[-1],
                           "top5_docs": docs})
        per[name] = {"doc@5": doc5, "answer@5": ans5}
    split = Path(split).stem if split.endswith(".jsonl") else split
    out = {"split": split, "n": len(rows), "settings": {}}
    for name in settings:
        s = {m: sum(v) / len(v) for m, v in per[name].items()}
        if name != "default":
            for m in ("doc@5", "answer@5"):
                s[f"{m} diff vs default"] = paired_bootstrap(per[name][m], per["default"][m])
        out["settings"][name] = s
    (HERE / f"retrieval-top5{tag}-{split}.json").write_text(json.dumps(out, indent=1) + "\n")
    with (HERE / f"retrieval-top5{tag}-{split}-per-question.jsonl").open("w") as f:
        for d in detail:
            f.write(json.dumps(d) + "\n")
    return out


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[3] == "named":  # the second sweep: named_scope, per doc
        print(json.dumps(run(sys.argv[1], sys.argv[2], NAMED_NAMES, "-named"), indent=1))
    elif len(sys.argv) > 3 and sys.argv[3] == "lexical":  # the third: a BM25 named list
        names = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else LEXICAL_NAMES
        print(json.dumps(run(sys.argv[1], sys.argv[2], names, "-lexical", DENSE_NAMED), indent=1))
    elif len(sys.argv) > 3 and sys.argv[3] == "question":  # the fourth: for questions only
        names = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else QUESTION_NAMES
        print(json.dumps(run(sys.argv[1], sys.argv[2], names, "-question", DENSE_NAMED), indent=1))
    elif len(sys.argv) > 3 and sys.argv[3] == "longest":  # the fifth, on the default then
        print(json.dumps(run(sys.argv[1], sys.argv[2], LONGEST_NAMES, "-longest", BEFORE_LONGEST),
                         indent=1))
    else:
        print(json.dumps(run(sys.argv[1], sys.argv[2]), indent=1))
