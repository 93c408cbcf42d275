"""The agent on the banking-products questions (issue 40): correct / wrong / abstained / wrong
figure per setting, paired bootstrap CIs vs today's default. LLM: the local model through
`serve_local` (reused when one answers on the port); replies cached under the index home, so
the `abstain` and `retry` settings reuse the first answers of the `flag` run on the same
retrieval.

Scoring (no LLM): `correct` — the gold figure (canonical, `support.numbers`) is among the
answer's figures and the answer does not abstain; `abstained` — `is_abstention`; `wrong` —
neither; `wrong_figure` — the answer states a figure (not in the question) that no gold
document states.

    PYTHONPATH=. python experiments/agent-support/agent_eval.py dev <index home> [n] [settings] [suffix]
    # the second round: ... dev <home> all today,coverage+abstain,named+flag,named+abstain named
    # the fourth: ... test <home> all question+abstain question (paired with the committed
    # named+abstain rows by `question_vs_named.py`)
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from agentic_rag.agent.loop import run_agent
from agentic_rag.agent.result import strip_citations
from agentic_rag.agent.tool import AgenticRAGTool
from agentic_rag.config import RAGConfig
from agentic_rag.datasets.corpora import banking_documents
from agentic_rag.evaluation.figures import states_zero, strip_passage_refs
from agentic_rag.evaluation.support import numbers
from agentic_rag.experiments.stats import paired_bootstrap
from agentic_rag.llm.binary import PACK_SERVER
from agentic_rag.llm.server import serve_local
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.store.index import AgenticIndex
from agentic_rag.studies.strategies import NAMED_BASE, STRATEGIES

# the server these replies were cached under (a Xeon's own pick is AMX `sapphirerapids`
# since 2026-12-05, an AMD EPYC's zen4 runs plain kernels since 2026-12-06: both round
# differently, so their replies are cached apart)
PACK_VARIANT = PACK_SERVER

HERE = Path(__file__).parent
COVER = STRATEGIES["title coverage 1.0"]
FLAG = {"agent.support.on_unsupported": "flag"}  # the default when these settings were run
BEFORE_AMOUNT = {"agent.support.amount_needs_figure": False}  # the default before round six
SETTINGS = {
    "today": {**FLAG},
    "coverage+flag": {**COVER, **FLAG},
    "coverage+abstain": {**COVER, "agent.support.on_unsupported": "abstain"},
    "coverage+retry": {**COVER, "agent.support.on_unsupported": "retry"},
    "coverage+grouped+retry": {**COVER, "agent.support.on_unsupported": "retry",
                               "context.group_by_document": True},
    # the second round (CHOICE-RULE-NAMED.md): entity scope, at most 2 hits per document
    "named+abstain": {**STRATEGIES["named boost, 2 per doc"],
                      "agent.support.on_unsupported": "abstain"},
    "named+flag": {**STRATEGIES["named boost, 2 per doc"], **FLAG},
    # the fourth round (CHOICE-RULE-QUESTION.md): + the BM25 named list for questions
    "question+abstain": {**STRATEGIES["named boost, 2 per doc"],
                         **STRATEGIES["question lexical 1.0"],
                         "agent.support.on_unsupported": "abstain"},
    # the fifth (CHOICE-RULE-LONGEST.md): + the longest name matched (today's default)
    "longest+abstain": {**STRATEGIES["named boost, 2 per doc"],
                        **STRATEGIES["question lexical 1.0"], **STRATEGIES["longest name"],
                        "agent.support.on_unsupported": "abstain"},
    # the sixth (CHOICE-RULE-AMOUNT.md): + an amount question answered without a figure fails
    "amount+abstain": {**STRATEGIES["named boost, 2 per doc"],
                       **STRATEGIES["question lexical 1.0"], **STRATEGIES["longest name"],
                       "agent.support.on_unsupported": "abstain",
                       "agent.support.amount_needs_figure": True},
}
# today's default with the gate flagging only: the answers the gate acts on, as the model gave them
SETTINGS["amount+flag"] = {**SETTINGS["amount+abstain"], **FLAG}
# the eighth (CHOICE-RULE-ORDINAL.md): "[4]" read as a passage, not a figure
for _how in ("pointer", "citation"):
    SETTINGS[f"{_how}+abstain"] = {**SETTINGS["amount+abstain"],
                                   "agent.support.passage_numbers": _how}
# the twelfth round's confidence+abstain (figure confidence recorded, never acting) and
# confidence-0.7+abstain (a candidate, replayed) ran at ff96b41 (CHOICE-RULE-CONFIDENCE.md,
# confidence_rule.py): agent.support.figure_confidence was removed after its verdict
# the tenth round's shared+abstain (CHOICE-RULE-SHARED.md, fusion.named_match: shared) ran at
# a7bbfe4: the value was removed after its verdict (shared_dev.py verdict)
# the eleventh round's alike+abstain (CHOICE-RULE-ALIKE.md) ran at 2c1a99e: the switch was
# removed after its verdict
# the ninth round's reorder-all/any+abstain (CHOICE-RULE-REORDER.md) ran at eea4038: the
# mechanism was removed after its verdict
# every setting before the sixth round ran with the amount rule off, its default then; every
# one before the eighth read "[4]" as a figure
SETTINGS = {k: v if "agent.support.amount_needs_figure" in v else {**BEFORE_AMOUNT, **v}
            for k, v in SETTINGS.items()}
SETTINGS = {k: {"agent.support.passage_numbers": "figure", **v} for k, v in SETTINGS.items()}
BEFORE_AUTO = NAMED_BASE  # the default before named_scope auto
AGENT = {"agent.max_steps": 1}  # retrieve_first, then the answer: one LLM call per question


def score(r: dict, answer: str, abstained: bool, gold_numbers: set[str]) -> dict:
    # passage pointers ("Document 3", "[1]") are not figures (evaluation.figures)
    figs = [n for n in numbers(strip_passage_refs(strip_citations(answer)))
            if n not in set(numbers(r["question"]))]
    if not figs and states_zero(answer, r["question"]):  # "does not charge": the figure 0
        figs = ["0"]
    gold = numbers(r["answer"])
    correct = (not abstained) and bool(gold) and gold[0] in figs
    return {"correct": float(correct), "abstained": float(abstained),
            "wrong": float(not correct and not abstained),
            "wrong_figure": float(not abstained and any(f not in gold_numbers for f in figs))}


def run(split: str, home: str, n: int | None = None, names: list[str] | None = None,
        suffix: str = "") -> dict:
    path = Path(split) if split.endswith(".jsonl") else \
        Path(f"datasets/banking-products/{split}.jsonl")  # or a set in the same format
    rows = [json.loads(x) for x in path.open()][:n]
    split = path.stem if split.endswith(".jsonl") else split
    docs = {d.id: d for d in banking_documents()}
    # the default before issue 40's second round (named_scope auto): every setting here is
    # relative to it, so the committed runs replay as they were
    base = RAGConfig().with_overrides({"home": home, **AGENT, **BEFORE_AUTO, **PACK_VARIANT})
    url = os.environ.get("LLM_BASE_URL")  # a llama.cpp server already answering elsewhere
    if url:
        base = base.with_overrides({"llm.base_url": url})
    index = AgenticIndex(base)
    if index.count() == 0:  # a fresh home: the τ²-banking documents, default chunking (~80 s)
        index.add_documents(list(docs.values()))
    names = names or list(SETTINGS)
    out_rows, per = [], {}
    with serve_local(base.llm, base.home, log=print):
        pipes = {}
        for name in names:
            cfg = base.with_overrides(SETTINGS[name])
            pipe = Pipeline(cfg, index=index)
            pipes[name] = (cfg, pipe, AgenticRAGTool(pipe))
            per[name] = {}
        # question by question, every setting in turn: a run cut short stays paired
        for r in rows:
            gold_numbers = {x for d in r["doc_ids"] for x in numbers(docs[d].text)}
            for name in names:
                cfg, pipe, tool = pipes[name]
                vals = per[name]
                t0 = time.perf_counter()
                res = run_agent(r["question"], pipe.chat_model, tool, cfg.agent)
                if res.stop_reason == "llm_error":  # recorded as a failure, never a score
                    out_rows.append({"setting": name, "id": r["id"], "error": res.error})
                    for k in ("correct", "abstained", "wrong", "wrong_figure"):
                        vals.setdefault(k, []).append(float("nan"))
                    continue
                s = score(r, res.answer, res.abstained, gold_numbers)
                for k, v in s.items():
                    vals.setdefault(k, []).append(v)
                row = {"setting": name, "id": r["id"], "answer": res.answer, **s,
                       "gate_action": res.gate_action, "gate_notes": res.gate_notes,
                       "cited_docs": [c.split("#")[0] for c in res.cited_chunks],
                       "s": round(time.perf_counter() - t0, 2)}
                out_rows.append(row)
                print(json.dumps(row), flush=True)
    summary = {"split": split, "n": len(rows), "agent": AGENT, "settings": {}}
    import math
    for name in names:
        v = per[name]
        s = {k: sum(x for x in xs if not math.isnan(x)) / max(1, sum(1 for x in xs if not math.isnan(x)))
             for k, xs in v.items()}
        s["failed"] = sum(1 for x in v["correct"] if math.isnan(x))
        if name != names[0]:
            for k in ("correct", "wrong", "abstained", "wrong_figure"):
                s[f"{k} diff vs {names[0]}"] = paired_bootstrap(v[k], per[names[0]][k])
        summary["settings"][name] = s
    tag = f"{split}" + (f"-n{n}" if n else "") + suffix
    (HERE / f"agent-{tag}.json").write_text(json.dumps(summary, indent=1) + "\n")
    with (HERE / f"agent-{tag}-answers.jsonl").open("w") as f:
        for x in out_rows:
            f.write(json.dumps(x) + "\n")
    return summary


if __name__ == "__main__":
    n = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] != "all" else None
    names = sys.argv[4].split(",") if len(sys.argv) > 4 else None
    suffix = f"-{sys.argv[5]}" if len(sys.argv) > 5 else ""  # e.g. "named": agent-dev-named.json
    print(json.dumps(run(sys.argv[1], sys.argv[2], n, names, suffix), indent=1))


def summarize_log(path: str, out: str) -> dict:
    """The summary of a run cut short, from its printed rows (one JSON row per line): only the
    questions every setting answered, so the comparison stays paired."""
    import math
    from collections import defaultdict

    rows = [json.loads(x) for x in Path(path).open() if x.startswith("{")]
    by_q: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in rows:
        by_q[r["id"]][r["setting"]] = r
    names = list(dict.fromkeys(r["setting"] for r in rows))
    done = [q for q, s in by_q.items() if set(s) == set(names)
            and not any("error" in x for x in s.values())]
    summary = {"questions": done, "n": len(done), "settings": {}}
    for name in names:
        s = {k: sum(by_q[q][name][k] for q in done) / max(1, len(done))
             for k in ("correct", "wrong", "abstained", "wrong_figure")}
        if name != names[0] and len(done) > 1:
            for k in ("correct", "wrong", "abstained", "wrong_figure"):
                d = paired_bootstrap([by_q[q][name][k] for q in done],
                                     [by_q[q][names[0]][k] for q in done])
                s[f"{k} diff vs {names[0]}"] = {x: (round(v, 3) if isinstance(v, float)
                                                    and not math.isnan(v) else v)
                                                for x, v in d.items()}
        summary["settings"][name] = s
    Path(out).write_text(json.dumps(summary, indent=1) + "\n")
    return summary
