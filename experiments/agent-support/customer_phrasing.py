"""Issue 40's "checked on customer-phrased questions": the banking-products questions (written
by templates) rewritten by the local LLM the way a customer types into a support chat. The
rewrites are LLM-made (`made_by`), one greedy call per question, cached under the home; a
rewrite that drops the product's name is kept and flagged (`names_product`), since customers
do that too. Then the right document in the top 5 under today's default and the settings
before it (`agentic-rag question-eval`, no LLM).

    PYTHONPATH=. python experiments/agent-support/customer_phrasing.py test <index home>
      # -> customer/test.jsonl, customer/test-named.jsonl (57 LLM calls)
    PYTHONPATH=. python experiments/agent-support/customer_phrasing.py \
        experiments/agent-support/generated-s2/figures-named.jsonl <index home>
      # -> customer/generated-s2.jsonl (72 calls: LLM-written questions, a held-out set)
    for s in test test-named; do .venv/bin/agentic-rag question-eval \
        experiments/agent-support/customer/$s.jsonl --home <index home> --settings default \
        "named scope off" "longest name" --base before-longest --tag customer; done
      # -> retrieval-top5-customer-test.json (+ -named: the rewrites still naming the product)
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from agentic_rag.config import RAGConfig
from agentic_rag.llm.binary import PACK_SERVER  # the server the replies were cached under
from agentic_rag.studies.question_file import load_questions, names_product, write_rows

OUT = Path(__file__).parent / "customer"
PROMPT = ("Rewrite this question the way a bank customer would type it into a support chat: "
          "casual, short, in the first person ('my ...'), keeping the product's name and what "
          "is asked. No greeting, no explanation: output only the rewritten question.\n\n"
          "Question: {question}")


def rewrite(split: str, home: str) -> None:
    """`split`: dev | test (datasets/banking-products) or a .jsonl in the same format, written
    to customer/<its folder's name>.jsonl."""
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.server import serve_local

    rows, path = load_questions(split)
    split = path.parent.name if split.endswith(".jsonl") else split
    cfg = RAGConfig().with_overrides({"home": home, **PACK_SERVER})
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
    write_rows(OUT / f"{split}.jsonl", out)
    write_rows(OUT / f"{split}-named.jsonl", [r for r in out if r["names_product"]])
    print(len(out), "questions rewritten")


if __name__ == "__main__":
    typer.run(rewrite)
