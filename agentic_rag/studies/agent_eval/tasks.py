"""The questions the agent evaluation asks and the references its judges read: the Python FAQ
as it is; τ²-banking tasks as a framed scenario (or the customer's opening message written
from it by the LLM) with a reference written from the task's gold actions; the banking
product questions (datasets/banking-products) as they are, with their gold figure."""

from __future__ import annotations

import json
from pathlib import Path

from agentic_rag.datasets.base import Dataset
from agentic_rag.datasets.qa import load_dataset, with_questions
from agentic_rag.evaluation.support import numbers
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.llm.types import LLMError

BANKING_FRAME = ("A Rho-Bank customer contacts support. Their situation, written as "
                 "instructions for the customer:\n\n{scenario}\n\nAs the bank's support "
                 "agent: what do you tell or recommend to this customer, according to the "
                 "bank's documentation?")
# τ²-bench runs a user simulator: an LLM that plays the scenario and talks to the agent. With
# `--banking-question opening` the same local LLM writes the customer's first message from the
# scenario (one cached call per task), and the agent answers that message, as a support agent
# would, instead of the whole role-play scenario (`BANKING_FRAME`).
OPENING_SYSTEM = ("You play a bank customer. The user message holds your instructions: who you "
                  "are and what you want. Write the first message you send to the bank's "
                  "support agent: one to three sentences, in the first person, that say what "
                  "you want. Do not reveal what the instructions tell you to hide, and do not "
                  "invent account numbers or personal data. Write only the message.")
_PERSONAL = {"customer_name", "annual_income", "user_id", "name", "address", "email",
             "phone_number", "date_of_birth", "arguments", "summary", "transaction_id"}


def banking_reference(actions_json: str) -> str:
    """The expected outcome of a τ² task, from its gold actions, without personal data."""
    parts: list[str] = []
    for a in json.loads(actions_json):
        args = {k: v for k, v in (a.get("arguments") or {}).items() if k not in _PERSONAL}
        text = a["name"] + (f"({', '.join(f'{k}={v}' for k, v in args.items())})" if args else "")
        if text not in parts:
            parts.append(text)
    return "The correct outcome is that the support agent leads to these actions: " + \
        "; ".join(parts)


PRODUCTS_DIR = Path("datasets/banking-products")  # relative to the repository root


def banking_products(split: str, where: Path = PRODUCTS_DIR) -> Dataset:
    """The banking product questions of `split` (dev | test | all: both files) over the
    τ²-banking documents, as `question-eval` reads them: gold documents (`doc_ids`) and the
    figure's span in them (`spans`)."""
    from agentic_rag.datasets.corpora import banking_documents

    base = Dataset(name="banking-products", corpus=banking_documents(), queries=[], qrels={})
    parts = [with_questions(base, where / f"{s}.jsonl")
             for s in (("dev", "test") if split == "all" else (split,))]
    if len(parts) == 1:
        return parts[0]
    return base.model_copy(update={
        "queries": [q for p in parts for q in p.queries],
        **{f: {k: v for p in parts for k, v in getattr(p, f).items()}
           for f in ("qrels", "spans", "fixed_split")}})


def dataset(name: str) -> Dataset:
    """A dataset by name, every question (the summary reads its gold): `load_dataset`'s, or
    the banking product questions."""
    return banking_products("all") if name == "banking-products" else load_dataset(name)


def load(name: str, split: str, n: int, seed: int, corpus_size: int | None):  # noqa: ANN201
    """The sampled questions and the corpus to index: the whole corpus, or (corpus_size) the
    sampled questions' gold documents plus seeded distractors (`Dataset.sample`)."""
    whole = banking_products(split) if name == "banking-products" else load_dataset(name)
    ds = whole.split(split).sample(n, seed=seed, corpus_size=corpus_size)
    out = []
    by_id = {d.id: d for d in ds.corpus}
    for q in ds.queries:
        if name == "banking-products":
            # the judge reads the gold figure; `figure_correct` (no LLM) is the set's own score
            out.append({"qid": q.id, "question": q.text, "judge_question": q.text,
                        "reference": q.answers[0], "answers": [],
                        "gold_answer": q.answers[0],
                        "gold_numbers": sorted({x for d in ds.qrels.get(q.id, {})
                                                for x in numbers(by_id[d].text)})})
            continue
        if name == "tau2-banking":
            # the judge reads the outcome, not the 3,500-character scenario (prompt cost)
            out.append({"qid": q.id, "question": BANKING_FRAME.format(scenario=q.text),
                        "judge_question": "What should the bank's support agent do for the "
                                          "customer?",
                        "reference": banking_reference(q.metadata.get("actions", "[]")),
                        "answers": []})
        else:
            out.append({"qid": q.id, "question": q.text, "judge_question": q.text,
                        "reference": q.answers[0][:500], "answers": q.answers})
    return out, ds


def customer_openings(items: list[dict], chat: OpenAIChatModel, scenarios: dict[str, str],
                      path: Path) -> list[dict]:
    """The banking items with the customer's opening message as the question (written by the
    LLM from each task's scenario; the calls are cached; the messages are kept in `path`). A
    task whose message cannot be written (LLMError) keeps the framed scenario, and says so."""
    out, log = [], []
    for it in items:
        try:
            reply = chat.chat([{"role": "system", "content": OPENING_SYSTEM},
                               {"role": "user", "content": scenarios[it["qid"]]}], max_tokens=120)
            msg, err = reply.content.strip().strip('"'), None
        except LLMError as exc:
            msg, err = "", f"{exc.kind}: {exc}"
        log.append({"qid": it["qid"], "opening": msg, "error": err})
        out.append({**it, "question": msg} if msg else it)
    path.write_text("".join(json.dumps(r) + "\n" for r in log))
    return out
