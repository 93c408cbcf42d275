"""Does the agent say "I don't know" when the documents do not answer? (issue 21)

A generated test set (`agentic-rag testset`) holds a share of questions the corpus does not
answer (`answerable: false`, checked against the corpus by the generator). The agent answers
each of them and, for contrast, as many answerable ones; the report gives

- on the unanswerable questions, the share it abstains on (the right reply);
- on the answerable ones, the share it answers (anything but an abstention), and of those
  answers, how many contain the reference answer (`evaluation.containment.contains_answer`);

each share with its n and a Wilson 95 % interval. An abstention is what the agent's own
detector reads as one (`evaluation.answers.is_abstention`: "I don't know", "the passages do not
mention ..."); a run that ended in an LLM error or an invalid action is neither, and is
counted apart (`failed`). Answering is not being right: the answered share is the other side
of the abstention share (an agent that always abstains scores 100 % on the first), and the
containment count is a lexical floor, not a judge.

    rows = ask_questions(queries, chat, tool, config.agent)      # one agent run per question
    report = abstention_report(rows)
    run = run_abstention(config, docs, questions, answerable=20)  # all of it, files written
    agentic-rag abstention DOCS QUESTIONS --answerable 20         # the same from the shell
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.base import Query
from agentic_rag.experiments.stats import wilson_interval
from agentic_rag.jsonl import append_rows
from agentic_rag.llm.calls import CallMeter

FAILED = ("llm_error", "invalid_action")


def select_questions(queries: Sequence[Query], answerable: int | None = None,
                     seed: int = 0) -> list[Query]:
    """Every unanswerable question (`metadata["answerable"] is False`), then `answerable`
    answerable ones drawn with `seed` (None: as many as there are unanswerable ones; more
    than the set has: all of them)."""
    no = [q for q in queries if q.metadata.get("answerable") is False]
    yes = [q for q in queries if q.metadata.get("answerable") is not False]
    if not no:
        raise ValueError("the set has no unanswerable questions (answerable: false): generate "
                         "it with agentic-rag testset --unanswerable 0.1 or more")
    take = len(no) if answerable is None else answerable
    if take < 0:
        raise ValueError(f"answerable: {take} is not >= 0")
    return no + sorted(random.Random(seed).sample(yes, min(take, len(yes))),
                       key=lambda q: q.id)


def ask_questions(queries: Sequence[Query], chat: Any, tool: Any, config: Any = None,
                  on_row: Callable[[dict[str, Any]], Any] | None = None) -> list[dict[str, Any]]:
    """One `run_agent` per question, in order (the tool keeps a session per question, so the
    runs are not concurrent); each row: id, question, answerable, reference, answer,
    stop_reason, abstained, failed, contains_reference (answerable and answered: the
    reference in the answer, else None), served (the chunk ids the agent was given).
    `on_row`: called with each row as it is made (progress, a rows file)."""
    from agentic_rag.agent.loop import run_agent
    from agentic_rag.evaluation.containment import contains_answer

    rows = []
    for q in queries:
        res = run_agent(q.text, chat, tool, config)
        answerable = q.metadata.get("answerable") is not False
        failed = res.stop_reason in FAILED
        abstained = not failed and res.abstained
        contains = None
        if answerable and not failed and not abstained and q.answers:
            c = contains_answer(res.answer, q.answers)
            contains = None if c != c else bool(c)
        row = {"id": q.id, "question": q.text, "answerable": answerable,
               "reference": q.answers[0] if q.answers else "", "answer": res.answer,
               "stop_reason": res.stop_reason, "abstained": abstained, "failed": failed,
               "contains_reference": contains, "served": res.served}
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def abstention_report(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The shares of `ask_questions` rows: abstained on the unanswerable questions, answered
    on the answerable ones (failed runs left out of both, counted), each with n and a Wilson
    95 % interval; and how many answers contain the reference."""
    def share(k: int, n: int) -> dict[str, Any]:
        lo, hi = wilson_interval(k, n)
        return {"k": k, "n": n, "share": round(k / n, 3) if n else None,
                "ci95": [round(lo, 3), round(hi, 3)] if n else None}

    ok = [r for r in rows if not r["failed"]]
    no = [r for r in ok if not r["answerable"]]
    yes = [r for r in ok if r["answerable"]]
    answered = [r for r in yes if not r["abstained"]]
    checked = [r for r in answered if r["contains_reference"] is not None]
    return {"unanswerable_abstained": share(sum(r["abstained"] for r in no), len(no)),
            "answerable_answered": share(len(answered), len(yes)),
            "answers_containing_reference": share(sum(bool(r["contains_reference"])
                                                      for r in checked), len(checked)),
            "failed": {"unanswerable": sum(r["failed"] and not r["answerable"] for r in rows),
                       "answerable": sum(r["failed"] and r["answerable"] for r in rows)},
            "interval": "Wilson score, 95 %"}


def report_lines(report: dict[str, Any]) -> list[str]:
    """The report in words, one line per share, saying when n is too small for a claim."""
    def pct(s: dict[str, Any]) -> str:
        if not s["n"]:
            return "n = 0"
        lo, hi = s["ci95"]
        few = " — too few for a claim" if s["n"] < 30 else ""
        return f"{s['k']} of {s['n']}: {s['share']:.0%} [{lo:.0%}, {hi:.0%}]{few}"

    f = report["failed"]
    return [f"unanswerable questions, the agent abstained on {pct(report['unanswerable_abstained'])}",
            f"answerable questions, the agent answered {pct(report['answerable_answered'])}",
            f"  answers containing the reference answer: "
            f"{pct(report['answers_containing_reference'])}",
            f"failed runs (LLM error or invalid action), left out of both: {f['unanswerable']} "
            f"unanswerable, {f['answerable']} answerable; intervals: {report['interval']}"]


@dataclass(frozen=True)
class AbstentionRun:
    """What `run_abstention` wrote: the per-question rows (`rows_path`, JSONL), the report
    (`report_path`, JSON: `report` plus the set, the policy and `checked`), and `checked`:
    whether the set's unanswerable questions were checked against the corpus when it was
    generated (None: its summary does not say, so some may be answerable)."""

    rows_path: Path
    report_path: Path
    report: dict[str, Any]
    checked: bool | None


def run_abstention(cfg: RAGConfig, docs: str | Path, questions: str | Path,
                   answerable: int | None = None, seed: int = 0, out: str | Path | None = None,
                   meter: CallMeter | None = None,
                   log: Callable[[str], Any] = print) -> AbstentionRun:
    """The abstention study on a generated set: `select_questions` from `questions` (a set
    from `agentic-rag testset` over `docs`), the agent (`cfg.agent`) over the index at
    `cfg.home` through `cfg.llm` (the local server started when `cfg.llm` names no
    endpoint), each row written to `out` (default `<questions stem>.abstention.jsonl`) as it
    is made, then the report beside it (`.json`). ValueError for a set without unanswerable
    questions or an empty index (a `DatasetError` is one); `llm.LLMCallCap` at the meter's cap
    propagates with the rows so far written and no report; `ServerError` if the server does
    not start."""
    from agentic_rag.agent.tool import AgenticRAGTool
    from agentic_rag.datasets.qa import load_local
    from agentic_rag.experiments.llm_cost import (
        agent_cost,
        estimate_line,
        measured_rates,
        planned_model,
        serves_in_parallel,
    )
    from agentic_rag.llm.calls import MeteredChatModel
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.server import serve_local
    from agentic_rag.retrieve.pipeline import Pipeline

    questions = Path(questions)
    queries = select_questions(load_local(docs, questions).queries, answerable, seed)
    pipe = Pipeline(cfg)
    if pipe.index.count() == 0:
        raise ValueError(f"the index at {cfg.home} is empty: run `agentic-rag index {docs}` "
                         f"first (with the same --config / --home)")
    n_no = sum(q.metadata.get("answerable") is False for q in queries)
    log(f"{n_no} unanswerable + {len(queries) - n_no} answerable questions from {questions}; "
        f"policy {cfg.agent.policy}, index {cfg.home}")
    log(estimate_line(agent_cost(len(queries)),
                      measured_rates([Path(cfg.home) / "cache" / "llm.sqlite"],
                                     model=planned_model(cfg.llm)), 1,
                      serves_in_parallel(cfg.llm)))
    out = Path(out) if out else questions.with_name(f"{questions.stem}.abstention.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("", encoding="utf-8")
    with serve_local(cfg.llm, cfg.home):
        chat = MeteredChatModel(make_chat_model(cfg.llm, cfg.home), meter or CallMeter())
        pipe = Pipeline(cfg, index=pipe.index, chat_model=chat)

        def write(row: dict) -> None:  # each row as it is made: a cut run keeps them
            append_rows(out, [row])

        rows = ask_questions(queries, chat, AgenticRAGTool(pipe), cfg.agent, on_row=write)
    report = abstention_report(rows)
    # a set generated before the corpus check (its summary has no unanswerable_checked) may
    # hold "unanswerable" questions the corpus answers
    summary = questions.with_name(f"{questions.stem}.summary.json")
    checked = json.loads(summary.read_text()).get("unanswerable_checked") \
        if summary.exists() else None
    report_path = out.with_suffix(".json")
    report_path.write_text(json.dumps({**report, "questions": str(questions),
                                       "policy": cfg.agent.policy,
                                       "unanswerable_checked_against_corpus": checked}, indent=2))
    return AbstentionRun(out, report_path, report, checked)
