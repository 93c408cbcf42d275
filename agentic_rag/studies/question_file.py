"""The agent and top-k retrieval on a question file, scored without an LLM, and settings compared
on committed answer rows: what issue 40's rounds (experiments/agent-support/) share.

A question file holds rows `id`, `question`, `answer`, `doc_ids` (datasets/banking-products
and the sets generated or rewritten from the τ²-banking product documents); `dev` / `test`
name datasets/banking-products/<split>.jsonl. `agentic-rag question-eval` runs `agent_eval`
(`--agent`) or `retrieval_topk`; both write `<out>/agent-<tag>.json` (+ `-answers.jsonl`) or
`<out>/retrieval-top<k><tag>-<set>.json` (+ `-per-question.jsonl`), paired bootstrap CIs
(`experiments.stats.paired_bootstrap`) against the first setting (the agent) or `default`.

Scoring of an answer (`score`): `correct` — the gold figure (canonical, `support.numbers`) is
among the answer's figures and the answer does not abstain; `abstained`; `wrong` — neither;
`wrong_figure` — the answer states a figure (not in the question) no gold document states."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from agentic_rag.agent.result import strip_citations
from agentic_rag.config import RAGConfig
from agentic_rag.evaluation.figures import states_zero, strip_passage_refs
from agentic_rag.evaluation.support import numbers
from agentic_rag.experiments.stats import paired_bootstrap
from agentic_rag.jsonl import append_rows, read_records
from agentic_rag.studies.strategies import (
    BEFORE_LONGEST,
    COVERAGE_NAMES,
    DENSE_NAMED,
    LEXICAL_NAMES,
    LONGEST_NAMES,
    NAMED_BASE,
    NAMED_NAMES,
    QUESTION_NAMES,
    STRATEGIES,
)

KEYS = ("correct", "abstained", "wrong", "wrong_figure")
# the base each round's settings are relative to (--base): the defaults of their day, so the
# committed tables replay as they were
BASES = {"named-base": NAMED_BASE,  # before named_scope auto (the first two rounds)
         "dense-named": DENSE_NAMED,  # the dense named list alone (the third and fourth)
         "before-longest": BEFORE_LONGEST,  # names matched by coverage (the fifth)
         "today": {}}
# the retrieval sweeps of the rounds (`--round`): settings, base, tag
ROUNDS = {"coverage": (COVERAGE_NAMES[:5], "named-base", ""),
          "named": (NAMED_NAMES, "named-base", "named"),  # the second: scope, hits per document
          "lexical": (LEXICAL_NAMES, "dense-named", "lexical"),  # the third: a BM25 named list
          "question": (QUESTION_NAMES, "dense-named", "question"),  # the fourth: questions only
          "longest": (LONGEST_NAMES, "before-longest", "longest")}  # the fifth
AGENT = {"agent.max_steps": 1}  # retrieve_first, then the answer: one LLM call per question

# the agent settings of issue 40's rounds (CHOICE-RULE-*.md), on NAMED_BASE
COVER = STRATEGIES["title coverage 1.0"]
FLAG = {"agent.support.on_unsupported": "flag"}  # the default when these settings were run
ABSTAIN = {"agent.support.on_unsupported": "abstain"}
NAMED = STRATEGIES["named boost, 2 per doc"]
QUESTION = {**NAMED, **STRATEGIES["question lexical 1.0"]}
LONGEST = {**QUESTION, **STRATEGIES["longest name"]}
SETTINGS: dict[str, dict] = {
    "today": {**FLAG},
    "coverage+flag": {**COVER, **FLAG},
    "coverage+abstain": {**COVER, **ABSTAIN},
    "coverage+retry": {**COVER, "agent.support.on_unsupported": "retry"},
    "coverage+grouped+retry": {**COVER, "agent.support.on_unsupported": "retry",
                               "context.group_by_document": True},
    "named+abstain": {**NAMED, **ABSTAIN},  # the second round: entity scope, 2 hits per document
    "named+flag": {**NAMED, **FLAG},
    "question+abstain": {**QUESTION, **ABSTAIN},  # the fourth: + the BM25 named list
    "longest+abstain": {**LONGEST, **ABSTAIN},  # the fifth: + the longest name matched
    # the sixth: + an amount question answered without a figure fails (today's default)
    "amount+abstain": {**LONGEST, **ABSTAIN, "agent.support.amount_needs_figure": True},
}
# today's default with the gate flagging only: the answers the gate acts on, as the model gave them
SETTINGS["amount+flag"] = {**SETTINGS["amount+abstain"], **FLAG}
for _how in ("pointer", "citation"):  # the eighth: "[4]" read as a passage, not a figure
    SETTINGS[f"{_how}+abstain"] = {**SETTINGS["amount+abstain"],
                                   "agent.support.passage_numbers": _how}
# every setting before the sixth round ran with the amount rule off, its default then; every
# one before the eighth read "[4]" as a figure. The rounds whose switch was removed after its
# verdict ran at their own commit (experiments/agent-support/README.md, "Scripts")
SETTINGS = {k: {"agent.support.passage_numbers": "figure",
                **({} if "agent.support.amount_needs_figure" in v
                   else {"agent.support.amount_needs_figure": False}), **v}
            for k, v in SETTINGS.items()}


def load_questions(split: str | Path) -> tuple[list[dict], Path]:
    """The rows of `split` (dev | test of datasets/banking-products, or a .jsonl) and its path."""
    path = Path(split) if str(split).endswith(".jsonl") else \
        Path(f"datasets/banking-products/{split}.jsonl")
    return read_records(path), path


def set_name(split: str | Path) -> str:
    """`dev` -> dev; `.../figures-named.jsonl` -> figures-named."""
    return Path(split).stem if str(split).endswith(".jsonl") else str(split)


def gold_numbers(row: dict, docs: dict) -> set[str]:
    """Every figure the question's gold documents state."""
    return {x for d in row["doc_ids"] for x in numbers(docs[d].text)}


def score(r: dict, answer: str, abstained: bool, gold_numbers: set[str]) -> dict:
    """The answer's score (module doc); passage pointers ("Document 3", "[1]") are not figures."""
    figs = [n for n in numbers(strip_passage_refs(strip_citations(answer)))
            if n not in set(numbers(r["question"]))]
    if not figs and states_zero(answer, r["question"]):  # "does not charge": the figure 0
        figs = ["0"]
    gold = numbers(r["answer"])
    correct = (not abstained) and bool(gold) and gold[0] in figs
    return {"correct": float(correct), "abstained": float(abstained),
            "wrong": float(not correct and not abstained),
            "wrong_figure": float(not abstained and any(f not in gold_numbers for f in figs))}


def write_rows(path: Path, rows: Sequence[dict]) -> None:
    """`rows` as the whole of the JSONL file `path`."""
    path.unlink(missing_ok=True)
    append_rows(path, rows)


def agent_eval(split: str | Path, home: str, names: Sequence[str] | None = None,
               n: int | None = None, suffix: str = "", out: Path = Path("experiments/agent-support"),
               base_url: str | None = None, log: Callable[[str], None] = print) -> dict:
    """The agent (retrieve_first, one step) under each setting on the questions of `split`,
    question by question with every setting in turn (a run cut short stays paired). Replies are
    cached under `home`; a fresh home is indexed with the τ²-banking documents first (~80 s).
    Writes `<out>/agent-<set>[-n<n>]<suffix>.json` and `...-answers.jsonl`."""
    from agentic_rag.agent.loop import run_agent
    from agentic_rag.agent.tool import AgenticRAGTool
    from agentic_rag.datasets.corpora import banking_documents
    from agentic_rag.llm.binary import PACK_SERVER
    from agentic_rag.llm.server import serve_local
    from agentic_rag.retrieve.pipeline import Pipeline
    from agentic_rag.store.index import AgenticIndex

    rows, _ = load_questions(split)
    rows = rows[:n]
    docs = {d.id: d for d in banking_documents()}
    # PACK_SERVER: the server variant the committed replies were cached under
    base = RAGConfig().with_overrides({"home": home, **AGENT, **NAMED_BASE, **PACK_SERVER})
    if base_url:  # a llama.cpp server already answering elsewhere
        base = base.with_overrides({"llm.base_url": base_url})
    index = AgenticIndex(base)
    if index.count() == 0:
        index.add_documents(list(docs.values()))
    names = list(names or SETTINGS)
    out_rows: list[dict] = []
    per: dict[str, dict[str, list[float]]] = {name: {} for name in names}
    with serve_local(base.llm, base.home, log=log):
        pipes = {}
        for name in names:
            cfg = base.with_overrides(SETTINGS[name])
            pipe = Pipeline(cfg, index=index)
            pipes[name] = (cfg, pipe, AgenticRAGTool(pipe))
        for r in rows:
            gold = gold_numbers(r, docs)
            for name in names:
                cfg, pipe, tool = pipes[name]
                t0 = time.perf_counter()
                res = run_agent(r["question"], pipe.chat_model, tool, cfg.agent)
                if res.stop_reason == "llm_error":  # recorded as a failure, never a score
                    out_rows.append({"setting": name, "id": r["id"], "error": res.error})
                    for k in KEYS:
                        per[name].setdefault(k, []).append(float("nan"))
                    continue
                s = score(r, res.answer, res.abstained, gold)
                for k, v in s.items():
                    per[name].setdefault(k, []).append(v)
                row = {"setting": name, "id": r["id"], "answer": res.answer, **s,
                       "gate_action": res.gate_action, "gate_notes": res.gate_notes,
                       "cited_docs": [c.split("#")[0] for c in res.cited_chunks],
                       "s": round(time.perf_counter() - t0, 2)}
                out_rows.append(row)
                log(json.dumps(row))
    summary = {"split": set_name(split), "n": len(rows), "agent": AGENT, "settings": {}}
    for name in names:
        v = per[name]
        s = {k: sum(x for x in xs if not math.isnan(x)) / max(1, sum(1 for x in xs if not math.isnan(x)))
             for k, xs in v.items()}
        s["failed"] = sum(1 for x in v["correct"] if math.isnan(x))
        if name != names[0]:
            for k in ("correct", "wrong", "abstained", "wrong_figure"):
                s[f"{k} diff vs {names[0]}"] = paired_bootstrap(v[k], per[names[0]][k])
        summary["settings"][name] = s
    tag = set_name(split) + (f"-n{n}" if n else "") + suffix
    (out / f"agent-{tag}.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_rows(out / f"agent-{tag}-answers.jsonl", out_rows)
    return summary


def retrieval_topk(split: str | Path, home: str, settings: Sequence[str], tag: str = "",
                   base: dict | None = None, k: int = 5,
                   out: Path = Path("experiments/agent-support")) -> dict:
    """Each question searched through the agent's tool path (`Pipeline.retrieve`, the gate
    included) under each setting of `studies.strategies.STRATEGIES` (on `base`, default
    NAMED_BASE): `doc@k` = a gold document among the k served passages' documents, `answer@k`
    = the answer verbatim in one of them; paired CIs vs `default`. Writes
    `<out>/retrieval-top<k><tag>-<set>.json` and `...-per-question.jsonl`."""
    from agentic_rag.retrieve.pipeline import Pipeline
    from agentic_rag.store.index import AgenticIndex

    rows, _ = load_questions(split)
    cfg0 = RAGConfig().with_overrides({"home": home, **(NAMED_BASE if base is None else base)})
    index = AgenticIndex(cfg0)
    doc_k, ans_k = f"doc@{k}", f"answer@{k}"
    per: dict[str, dict[str, list[float]]] = {}
    detail = []
    for name in settings:
        pipe = Pipeline(cfg0.with_overrides(STRATEGIES[name]), index=index)
        docs_at, ans_at = [], []
        for r in rows:
            _, res = pipe.retrieve(r["question"], k=k)
            hits = res.hits[:k]
            docs = [h.chunk.doc_id for h in hits]
            docs_at.append(float(any(d in r["doc_ids"] for d in docs)))
            ans_at.append(float(any(r["answer"] in h.chunk.text for h in hits)))
            detail.append({"setting": name, "id": r["id"], doc_k: docs_at[-1],
                           ans_k: ans_at[-1], f"top{k}_docs": docs})
        per[name] = {doc_k: docs_at, ans_k: ans_at}
    result = {"split": set_name(split), "n": len(rows), "settings": {}}
    for name in settings:
        s = {m: sum(v) / len(v) for m, v in per[name].items()}
        if name != "default":
            for m in (doc_k, ans_k):
                s[f"{m} diff vs default"] = paired_bootstrap(per[name][m], per["default"][m])
        result["settings"][name] = s
    stem = f"retrieval-top{k}{tag}-{set_name(split)}"
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    write_rows(out / f"{stem}-per-question.jsonl", detail)
    return result


def setting_rows(path: Path, setting: str) -> dict[str, dict]:
    """The answer rows of one setting in an `agent-*-answers.jsonl`, by question id."""
    return {r["id"]: r for r in read_records(path) if r.get("setting") == setting}


def verdict(r: dict) -> str:
    return "correct" if r["correct"] else "wrong" if r["wrong"] else "abstained"


def compare_rows(path: Path, off: str, candidates: Sequence[str]) -> dict:
    """Each candidate setting vs `off` on the rows of one answer file: rates, the answers it
    turned into "I don't know" (`turned`; `lost`: were correct, `saved`: were wrong), the
    answers whose score changed, and paired bootstrap Δ correct / Δ wrong."""
    rows: dict[str, dict[str, dict]] = {}
    for r in read_records(path):
        rows.setdefault(r["setting"], {})[r["id"]] = r
    base = rows[off]
    res = {"n": len(base), off: {k: sum(r[k] for r in base.values()) / len(base)
                                 for k in ("correct", "wrong", "abstained")}}
    for name in candidates:
        if name not in rows:
            continue
        cand = rows[name]
        ids = sorted(base)
        turned = [i for i in ids if cand[i]["abstained"] and not base[i]["abstained"]]
        res[name] = {
            **{k: sum(cand[i][k] for i in ids) / len(ids) for k in ("correct", "wrong", "abstained")},
            "lost": sum(base[i]["correct"] for i in turned),
            "saved": sum(base[i]["wrong"] for i in turned),
            "correct diff": paired_bootstrap([cand[i]["correct"] for i in ids],
                                             [base[i]["correct"] for i in ids]),
            "wrong diff": paired_bootstrap([cand[i]["wrong"] for i in ids],
                                           [base[i]["wrong"] for i in ids]),
            "turned": [{"id": i, "was": "correct" if base[i]["correct"] else "wrong",
                        "answer": base[i]["answer"], "gate_notes": cand[i]["gate_notes"]}
                       for i in turned],
            "changed": [{"id": i, "was": verdict(base[i]), "now": verdict(cand[i]),
                         "before": base[i]["answer"], "after": cand[i]["answer"]}
                        for i in ids if verdict(base[i]) != verdict(cand[i])]}
    return res



def turn_verdict(per: dict, name: str, lost: int, saved: int, min_net: int = 0,
                 **counts: int) -> dict:
    """One candidate under the abstain rounds' rule (experiments/agent-support/CHOICE-RULE-*.md):
    `lost` / `saved` answers turned into "I don't know" (were correct / were wrong), `counts`
    said beside them; admissible when saved − lost >= `min_net`, lost <= saved and no set's
    paired Δ correct (`per`: `compare_rows` by set) has its 95 % CI below 0."""
    below = [t for t, p in per.items() if name in p and p[name]["correct diff"]["ci_high"] < 0]
    return {"lost": lost, "saved": saved, "net": saved - lost, **counts,
            "correct CI below 0 on": below,
            "admissible": saved - lost >= min_net and lost <= saved and not below}


def rule_round(out: Path, per: dict, verdict: dict, key: Callable[[str, dict], tuple], off: str,
               show: Sequence[str] = ("verdict", "choice"), **extra: object) -> dict:
    """A round's result: the admissible candidate of `verdict` with the largest `key(name,
    verdict)` (else `off`), written to `out` as `{"sets": per, "verdict", "choice", **extra}`;
    its `show` keys printed."""
    ok = {k: v for k, v in verdict.items() if v["admissible"]}
    choice = max(ok, key=lambda k: key(k, ok[k])) if ok else off
    res = {"sets": per, "verdict": verdict, "choice": choice, **extra}
    out.write_text(json.dumps(res, indent=1) + "\n")
    if show:
        print(json.dumps({k: res[k] for k in show}, indent=1))
    return res

def original_id(doc_id: str) -> str:
    """`bank-products/doc_x_001.md` → `doc_x_001` (the index's id)."""
    return doc_id.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".md")


def names_product(question: str, doc_id: str) -> bool:
    """Does the question name its source document's product: every word of the product's
    id part (`lime_green`, `green_account_(savings)` without the qualifier) at a word start?
    The generator sometimes names another product than its passage's or none."""
    from agentic_rag.datasets.products import product_of

    _, prod = product_of(doc_id) or ("", "")
    words = prod.replace("_(checking)", "").replace("_(savings)", "").split("_")
    q = question.lower()
    return bool(prod) and all(re.search(rf"\b{re.escape(w)}", q) for w in words)
