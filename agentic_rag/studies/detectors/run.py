"""Validate hallucination detectors on labelled answers: AUROC with a bootstrap CI, on scores.

Set (i) is HaluEval QA: per question, its right answer (label 0) and its hallucinated
answer (label 1), each checked against the question's knowledge paragraph. Every detector
scores every answer (`support.py`: the graded LLM judge, the lexical baseline); the rows go
to a JSONL file one by one (fsync'd), so a killed run resumes where it stopped and a
finished one is re-read, not re-run. Failures (an LLM call that failed after its retries)
are rows with an `error`, counted and never scored. The no-LLM scores (`LEXICAL_SCORES`) are
cheap and pure: every pass recomputes them on the rows already written and rewrites the file
when they changed, so a change to them reaches the tables without re-asking the judge
(`--no-llm` on a finished folder does exactly that).

    agentic-rag validate-detectors --n 200 --out experiments/detectors/halueval-dev

AUROC's CI resamples questions (both answers of a question together), 2,000 draws
(`detectors.stats`). Set (ii), the model's own answers, LLM-labelled (`llm:<model>` in each label's
`labeller`), is `detectors.own`;
both share this module's scoring (`score_answer`) and its resumable JSONL rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.config import SupportConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.datasets.qa import halueval_pairs
from agentic_rag.llm.calls import CallMeter, MeteredChatModel
from agentic_rag.studies.detectors.scoring import run_validation, with_combined


def validate_on_pairs(llm: LLMConfig, home: str | Path, n: int, seed: int = 0,
                      metric: str = "judge", max_concurrency: int = 1,
                      meter: CallMeter | None = None, log=None,  # noqa: ANN001
                      support: SupportConfig | None = None) -> dict[str, Any]:
    """The one judge validation (`agentic-rag validate-judge`): `metric` ("judge": the
    configured support detector, `support.detector` at `support.threshold`, default
    `SupportConfig()`'s; or ragas faithfulness) on `n` seeded HaluEval dev questions, right
    answer vs hallucinated answer; failures counted, not scored. The local server is started
    (or reused) for it when `llm` needs one; replies are cached under `home`.
    (`agentic-rag validate-detectors` compares every detector on 200 questions and on the
    model's own labelled answers.)"""
    import time

    from agentic_rag.evaluation.llm_judge import validate_judge
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.server import serve_local

    if metric not in ("judge", "ragas-faithfulness"):
        raise ValueError(f"metric {metric!r}: use judge or ragas-faithfulness")
    pairs = halueval_pairs(n, seed)
    items = [(p["question"], p["context"], p["right"], p["hallucinated"]) for p in pairs]
    support = support or SupportConfig()
    t0 = time.perf_counter()
    with serve_local(llm, home, log=log):
        chat = make_chat_model(llm, home)
        if metric == "judge":
            res = validate_judge(MeteredChatModel(chat, meter or CallMeter()), items,
                                 support.detector, support.threshold, max_concurrency)
        else:
            from agentic_rag.evaluation.ragas_metrics import validate_faithfulness

            res = validate_faithfulness(llm, [i[1:] for i in items],
                                        [p["question"] for p in pairs])
    return {**res, "metric": metric, "n_questions": n, "seed": seed,
            "model": llm.server.model if llm.uses_local_server else llm.model,
            "identity": chat.model_id, "seconds": round(time.perf_counter() - t0, 1)}


@dataclass(frozen=True)
class DetectorOptions:
    """The options of `agentic-rag validate-detectors` (declared once, as typer options, in
    `cli/evaluate.py`; their help is there)."""
    n: int = 200
    seed: int = 0
    split: str = "dev"
    out: str = "experiments/detectors/halueval-dev"
    home: str = "experiments/cache"
    config: str | None = None
    no_llm: bool = False
    max_llm_calls: int | None = None
    max_concurrency: int | None = None
    own_answers: int = 0
    ragas: int = 0
    decisions: bool = False
    answers_only: bool = False


def validate_detectors(args: DetectorOptions) -> None:
    """Set (i), HaluEval pairs (`--n`), or set (ii) (`--own-answers N`), or the held-out
    decisions on labelled answers (`--decisions`, no LLM). A bad `--config` is a ConfigError
    naming the file and field."""
    from agentic_rag.config import RAGConfig
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.server import serve_local

    cfg = RAGConfig()
    if args.config:
        cfg = cfg.model_copy(update={"llm": RAGConfig.load(args.config).llm})
    conc = args.max_concurrency or cfg.llm.slots
    if args.decisions:
        _decisions_main(Path(args.out), args.seed)
        return
    if args.own_answers:
        _own_main(args, cfg, conc)
        return
    items = halueval_pairs(args.n, args.seed, args.split)
    if args.no_llm:
        rows = run_validation(None, items, args.out, max_calls=args.max_llm_calls)
    else:
        with serve_local(cfg.llm, args.home) as srv:
            chat = make_chat_model(cfg.llm, args.home, base_url=srv and srv.base_url)
            rows = run_validation(chat, items, args.out, max_calls=args.max_llm_calls,
                                  max_concurrency=conc)
    from agentic_rag.studies.detectors.stats import detector_table

    table = detector_table(with_combined(rows))
    table.to_csv(Path(args.out) / "detectors.csv", index=False)
    print(table.to_string(index=False))
    _write_paired(with_combined(rows), Path(args.out))


def _write_paired(rows: pd.DataFrame, out: Path) -> None:
    """`paired.csv`: each question-aware detector against its question-blind twin."""
    from agentic_rag.studies.detectors.stats import paired_table

    paired = paired_table(rows)
    if not paired.empty:
        paired.to_csv(out / "paired.csv", index=False)
        print(paired.to_string(index=False))


def _decisions_main(out: Path, seed: int) -> None:
    from agentic_rag.studies.detectors.decisions import decision_table, winner
    from agentic_rag.studies.detectors.own import labels_description, own_rows

    table = decision_table(own_rows(out), seed=seed)
    table.to_csv(out / "decisions.csv", index=False)
    cols = ["detector", "coverage", "accuracy", "balanced_accuracy", "recall_unsupported",
            "precision_unsupported", "threshold_all", "llm_calls_per_answer"]
    print(table[cols].round(3).to_string(index=False))
    print(f"labels: {labels_description(out)}; best held-out balanced accuracy among the "
          f"deployable detectors: {winner(table)}")


def _own_main(args: DetectorOptions, cfg: Any, conc: int) -> None:
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.server import serve_local
    from agentic_rag.studies.detectors.own import own_answers, own_rows, own_table, score_own

    with serve_local(cfg.llm, args.home) as srv:
        chat = make_chat_model(cfg.llm, args.home, base_url=srv and srv.base_url)
        own_answers(chat, args.out, args.own_answers, args.seed, args.home,
                    max_calls=args.max_llm_calls)
        if not args.answers_only:
            score_own(None if args.no_llm else chat, args.out, max_concurrency=conc)
        if args.ragas and not args.no_llm:
            from agentic_rag.studies.detectors.ragas import score_ragas

            score_ragas(cfg.llm, args.out, args.ragas, args.seed)
    if not args.answers_only and (Path(args.out) / "labels-pass1.jsonl").exists():
        table, info = own_table(args.out)
        table.to_csv(Path(args.out) / "detectors.csv", index=False)
        (Path(args.out) / "labelling.json").write_text(json.dumps(info, indent=2))
        print(table.to_string(index=False))
        print(info)
        _write_paired(own_rows(args.out), Path(args.out))
    if args.ragas and (Path(args.out) / "ragas.jsonl").exists():
        from agentic_rag.studies.detectors.ragas import ragas_summary

        summary = ragas_summary(args.out)
        (Path(args.out) / "ragas.json").write_text(json.dumps(summary, indent=2))
        print(json.dumps(summary, indent=2))
