"""Issue 40's "checked on customer-phrased questions": the banking-products questions (written
by templates) rewritten by the local LLM the way a customer types into a support chat, then
the right document in the top 5 (retrieval_top5's scoring) under today's default and the
settings before it. The rewrites are LLM-made (`made_by`), one greedy call per question,
cached; a rewrite that drops the product's name is kept and flagged (`names_product`), since
customers do that too.

    PYTHONPATH=. python experiments/agent-support/customer_phrasing.py rewrite test <index home>
      # -> customer/test.jsonl (57 LLM calls)
    PYTHONPATH=. python experiments/agent-support/customer_phrasing.py rewrite \
        experiments/agent-support/generated-s2/figures-named.jsonl <index home>
      # -> customer/generated-s2.jsonl (72 calls: LLM-written questions, a held-out set)
    PYTHONPATH=. python experiments/agent-support/customer_phrasing.py retrieval test <index home>
      # -> retrieval-top5-customer-test.json (+ -named: the rewrites still naming the product)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentic_rag.config import RAGConfig
from agentic_rag.llm.binary import PACK_SERVER

# the server these replies were cached under (a Xeon's own pick is AMX `sapphirerapids`
# since 2026-12-05, an AMD EPYC's zen4 runs plain kernels since 2026-12-06: both round
# differently, so their replies are cached apart)
PACK_VARIANT = PACK_SERVER

HERE = Path(__file__).parent
OUT = HERE / "customer"
PROMPT = ("Rewrite this question the way a bank customer would type it into a support chat: "
          "casual, short, in the first person ('my ...'), keeping the product's name and what "
          "is asked. No greeting, no explanation: output only the rewritten question.\n\n"
          "Question: {question}")


def rewrite(split: str, home: str) -> int:
    """`split`: dev | test (datasets/banking-products) or a .jsonl in the same format, written
    to customer/<its folder's name>.jsonl."""
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.server import serve_local

    sys.path.insert(0, str(HERE))
    from generated_products import names_product

    path = Path(split if split.endswith(".jsonl") else f"datasets/banking-products/{split}.jsonl")
    rows = [json.loads(x) for x in path.open()]
    split = path.parent.name if split.endswith(".jsonl") else split
    cfg = RAGConfig().with_overrides({"home": home, **PACK_VARIANT})
    OUT.mkdir(exist_ok=True)
    out = []
    with serve_local(cfg.llm, cfg.home, log=print):
        chat = make_chat_model(cfg.llm, cfg.home)
        for r in rows:
            reply = chat.chat([{"role": "user", "content": PROMPT.format(question=r["question"])}],
                              max_tokens=64)
            text = reply.content.strip().strip('"').splitlines()[0].strip() if reply.content \
                else ""
            out.append({**r, "question": text or r["question"], "original": r["question"],
                        "names_product": names_product(text, r["doc_ids"][0]),
                        "made_by": f"llm: {cfg.llm.server.model} rewrite of a "
                        + ("template" if path.parent.name == "banking-products" else "generated")
                        + " question"})
            print(json.dumps({"id": r["id"], "question": text}), flush=True)
    with (OUT / f"{split}.jsonl").open("w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    named = [r for r in out if r["names_product"]]
    with (OUT / f"{split}-named.jsonl").open("w") as f:
        for r in named:
            f.write(json.dumps(r) + "\n")
    return len(out)


def retrieval(split: str, home: str) -> dict:
    sys.path.insert(0, str(HERE))
    from retrieval_top5 import run

    from agentic_rag.studies.strategies import BEFORE_LONGEST

    names = ("default", "named scope off", "longest name")  # on BEFORE_LONGEST, as round 5
    # the rewrites still naming the product, where a set has any that do not (`names_product`)
    return {name: run(str(OUT / f"{name}.jsonl"), home, names, "-customer", BEFORE_LONGEST)
            for name in (split, f"{split}-named") if (OUT / f"{name}.jsonl").exists()}


if __name__ == "__main__":
    if sys.argv[1] == "rewrite":
        print(rewrite(sys.argv[2], sys.argv[3]), "questions rewritten")
    else:
        print(json.dumps(retrieval(sys.argv[2], sys.argv[3]), indent=1))
