"""One `tune` run, step by step (the steps and the rule: `studies/tune.py`). Each step is
cached: the generated set in `out/`, the LLM replies in the reply cache and
`out/llm-replies.jsonl`, the sweeps' rows in the row cache, their indexes in `cache_dir`."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from agentic_rag.config import RAGConfig
from agentic_rag.datasets.base import documents_fingerprint
from agentic_rag.experiments.spec import DatasetSpec
from agentic_rag.ingest.readers import FORMATS
from agentic_rag.jsonl import JsonlError, read_records
from agentic_rag.studies.tune_report import _metrics, _plot, _records, report_markdown
from agentic_rag.studies.tune_space import (
    DEFAULT_RULE,
    DEV_SHARE,
    NONINFERIORITY_MARGINS,
    RULE_TEXT,
    RULES,
    TuneError,
    TuneResult,
    choose_by_rule,
    llm_calls_per_query,
    profile,
    rule_table,
    search_space,
    spec_for,
)


def read_folder(folder: Path) -> list:
    """The folder's documents; an error naming the folder (missing, no documents) or every
    file that cannot be read (binary, not UTF-8, unreadable), so all are fixed at once."""
    from agentic_rag.documents import DocumentError
    from agentic_rag.ingest.readers import iter_document_paths, read_document

    if not folder.exists():
        raise TuneError(f"{folder}: no such folder")
    try:
        paths = list(iter_document_paths([folder]))
    except DocumentError as exc:
        raise TuneError(str(exc)) from None
    if not paths:
        raise TuneError(f"{folder}: no {FORMATS} documents in it")
    docs, bad = [], []
    for path, doc_id in paths:
        try:
            docs.append(read_document(path, doc_id))
        except DocumentError as exc:
            bad.append(str(exc))
    if bad:
        raise TuneError(f"{len(bad)} of {len(paths)} files in {folder} cannot be read (fix or "
                        "move them, then rerun):\n  " + "\n  ".join(bad))
    if not any(d.text.strip() for d in docs):
        raise TuneError(f"{folder}: every document is empty")
    return docs


@dataclass
class TuneRun:
    folder: Path | None
    n: int
    budget: str
    llm_strategies: bool
    out: Path
    max_llm_calls: int | None
    config: RAGConfig
    chat: Any = None
    seed: int = 0
    log: Callable[[str], Any] = print
    runs_dir: str | Path | None = None
    cache_dir: str | Path | None = None
    max_concurrency: int | None = None
    min_tokens: int = 25
    # a packaged corpus instead of a folder (the evidence runs): its documents to generate
    # from, and the corpus the sweeps index (its questions replaced by the generated ones)
    docs: list | None = None
    corpus: DatasetSpec | None = None
    questions: Path | None = None  # a set made already (split dev/test): used as it is
    # a cut of the search space (a time budget): only the configs `keep(overrides)` accepts
    keep: Callable[[dict[str, Any]], bool] | None = None
    meter: Any = None
    notes: dict[str, Any] = field(default_factory=dict)
    rule: str = DEFAULT_RULE  # the choice rule (`tune_space.RULES`)

    def run(self) -> TuneResult:
        from agentic_rag.llm.calls import CallMeter

        if self.questions is not None and not self.questions.exists():
            raise TuneError(f"{self.questions}: questions file not found")
        if self.rule not in RULES:
            raise TuneError(f"rule {self.rule!r}: use one of {', '.join(RULES)}")
        if self.n < 2:
            raise TuneError(f"n: {self.n} is too few (one dev and one test question at least)")
        docs = self.docs if self.docs is not None else read_folder(self.folder)
        self.out.mkdir(parents=True, exist_ok=True)
        self.runs_dir = Path(self.runs_dir or self.out / "runs")
        self.cache_dir = Path(self.cache_dir or Path(self.config.home) / "tune-cache")
        self.meter = self.meter or CallMeter(self.max_llm_calls)
        chunks = self._chunks(docs)
        prof = profile(docs, chunks)
        space = search_space(prof, self.budget, self.llm_strategies)
        if self.keep is not None:
            space = {k: v for k, v in space.items() if k == "default" or self.keep(v)}
        self.log(f"{prof['documents']} documents, {prof['chunks']} chunks; search space "
                 f"({self.budget}): {', '.join(space)}")
        qpath = self.questions or self.out / "questions.jsonl"
        fresh = self.questions is None and not self._reusable(qpath, docs)
        self._announce(chunks, docs, space, fresh)
        with self._server(fresh or self.llm_strategies):
            if fresh:
                self._generate(docs, chunks, qpath)
            dev, test = self._split_files(qpath)
            names = list(space)
            dev_res = self._sweep("dev", dev, space, names, self.config)
            table = rule_table(dev_res.summary, names, self.rule)
            chosen = choose_by_rule(table, self.rule)
            self.log(f"the rule ({self.rule}) chose {chosen!r} on "
                     f"{int(table['n_queries'].iloc[0])} dev questions")
            test_names = ["default"] if chosen == "default" else ["default", chosen]
            test_res = self._sweep("test", test, space, test_names, self.config)
        cfg = self.config.with_overrides(space[chosen])
        test_table = rule_table(test_res.summary, test_names, self.rule)
        return self._write(prof, space, table, test_table, chosen, cfg, dev_res, test_res,
                           qpath)

    # -- steps ---------------------------------------------------------------------------
    def _chunks(self, docs: list) -> list:
        from agentic_rag.ingest.chunking import AgenticChunker

        chunker = AgenticChunker(self.config.chunking)
        return [c for d in docs for c in chunker.chunk(d)]

    def _settings(self, docs: list) -> dict[str, Any]:
        return {"n": self.n, "seed": self.seed, "mode": "span", "dev_share": DEV_SHARE,
                "documents_sha256": documents_fingerprint(docs),
                "chunking": self.config.chunking.model_dump()}

    def _reusable(self, qpath: Path, docs: list) -> bool:
        meta = qpath.with_name("questions.tune.json")
        if not (qpath.exists() and meta.exists()):
            return False
        if json.loads(meta.read_text()) == self._settings(docs):
            self.log(f"reusing {qpath} (same documents and settings)")
            return True
        self.log(f"{qpath}: made from other documents or settings: generating again")
        return False

    def _capacity(self, chunks: list, docs: list) -> int:
        """Questions the documents can give: the drawable chunks with an answer span."""
        from agentic_rag.datasets.testset_sampling import chunk_span, sample_chunks

        by_id = {d.id: d for d in docs}
        return sum(chunk_span(c, by_id[c.doc_id]) is not None
                   for c in sample_chunks(chunks, self.seed, self.min_tokens))

    def _announce(self, chunks: list, docs: list, space: dict, fresh: bool) -> None:
        """The calls and time to expect, before the first LLM call; a folder too small for
        `n` is refused here."""
        from agentic_rag.datasets.testset_cost import estimate
        from agentic_rag.experiments.llm_cost import (
            estimate_line,
            measured_rates,
            planned_model,
            serves_in_parallel,
        )

        est = {"llm_calls": 0, "prompt_tokens_est": 0, "completion_tokens_est": 0}
        if fresh:
            can = self._capacity(chunks, docs)
            if can < self.n:
                raise TuneError(
                    f"{self.folder or 'the documents'}: {len(chunks)} chunks, {can} of them with "
                    f"an answer span: they can give at most {can} questions (about {can // 2} "
                    f"at a typical acceptance), fewer than --n {self.n}; lower --n to "
                    f"{max(2, can // 2)} or add documents")
            est = estimate(self.n, chunks, True, 0.0, False, mode="span", round_trip=True)
        per_q = sum(llm_calls_per_query(o) for o in space.values())
        if per_q:  # each LLM config on the dev questions, the chosen one on test
            q = self.n
            est["llm_calls"] += per_q * round(q * DEV_SHARE) + 10 * round(q * (1 - DEV_SHARE))
            est["prompt_tokens_est"] += est["llm_calls"] * 150
            est["completion_tokens_est"] += est["llm_calls"] * 20
        if est["llm_calls"]:
            model = getattr(self.chat, "model_id", None) if self.chat is not None \
                else planned_model(self.config.llm)
            rates = measured_rates([Path(self.config.home) / "cache" / "llm.sqlite"], model=model)
            self.log("expected: " + estimate_line(est, rates, self.max_concurrency or 1,
                                                  serves_in_parallel(self.config.llm))
                     + (f" (stops at --max-llm-calls {self.max_llm_calls})"
                        if self.max_llm_calls is not None else ""))
        else:
            self.log("no LLM calls to make (the set exists, no LLM strategies)")

    def _server(self, needed: bool) -> Any:
        """The embedded LLM server when calls will be made to it, else nothing."""
        if not needed or self.chat is not None or not self.config.llm.uses_local_server:
            return nullcontext()
        from agentic_rag.llm.server import serve_local

        return serve_local(self.config.llm, self.config.home)

    def _chat(self) -> Any:
        from agentic_rag.llm.calls import MeteredChatModel
        from agentic_rag.llm.chat import make_chat_model

        chat = self.chat or make_chat_model(self.config.llm, self.config.home,
                                            pack=self.out / "llm-replies.jsonl")
        return MeteredChatModel(chat, self.meter)

    def _generate(self, docs: list, chunks: list, qpath: Path) -> None:
        from agentic_rag.datasets.testset import generate_testset
        from agentic_rag.experiments.llm_cost import Progress

        res = generate_testset(docs, self._chat(), n=self.n, seed=self.seed, unanswerable=0.0,
                               chunks=chunks, mode="span", dev_share=DEV_SHARE,
                               max_concurrency=self.max_concurrency or 1,
                               min_tokens=self.min_tokens,
                               progress=Progress(self.n, self.log, "questions", self.meter))
        res.write(qpath)
        s = res.summary
        self.log(f"{s['accepted']} questions kept of {s['drawn']} draws ({s['llm_calls']} "
                 f"calls); rejected {json.dumps(s['rejected'])}")
        dev = s["by_split"].get("dev", 0)
        if s["accepted"] < self.n:
            self.log(self._shortfall(s))
        if dev == 0 or s["by_split"].get("test", 0) == 0:
            raise TuneError(f"{qpath}: {s['accepted']} questions passed the filters "
                            f"({json.dumps(s['by_split'])}): too few to choose on dev and "
                            "report on test; add documents or raise --n")
        qpath.with_name("questions.tune.json").write_text(json.dumps(self._settings(docs)))

    def _shortfall(self, s: dict) -> str:
        """Why fewer than --n questions were kept, and what to do. The draw cap counts chunks
        in the sampled order, those without an answer span included (`no_answer_span`)."""
        from agentic_rag.datasets.testset_cost import ROUND_TRIP_PASS

        cap = math.ceil(3 * self.n / ROUND_TRIP_PASS)
        beyond = s["rejected"].get("knowable beyond its share", 0)
        if s["drawn"] + s.get("no_answer_span", 0) >= cap:
            why = f"the draw cap ({cap} = 3 x --n / {ROUND_TRIP_PASS}) was reached"
        elif beyond:
            why = (f"{beyond} answerable without the documents (general knowledge) were "
                   "dropped beyond their share")
        else:
            why = f"every chunk with an answer span was drawn ({s['drawn']})"
        return (f"only {s['accepted']} of --n {self.n} questions: {why}; the choice rests on "
                f"{s['by_split'].get('dev', 0)} dev and {s['by_split'].get('test', 0)} test "
                "questions, so its intervals are wide: add documents for more")

    def _split_files(self, qpath: Path) -> tuple[Path, Path]:
        try:
            rows = read_records(qpath)
        except JsonlError as exc:
            raise TuneError(str(exc)) from None
        paths = []
        for split in ("dev", "test"):
            p = self.out / f"questions.{split}.jsonl"
            mine = [r for r in rows if r.get("split") == split and r.get("answerable", True)]
            if not mine:
                raise TuneError(f"{qpath}: no {split} questions with an answer")
            p.write_text("".join(json.dumps(r) + "\n" for r in mine), encoding="utf-8")
            paths.append(p)
        return paths[0], paths[1]

    def dataset(self, questions: Path) -> DatasetSpec:
        if self.corpus is not None:
            return self.corpus.model_copy(update={"questions": str(questions),
                                                  "unanswerable": False})
        return DatasetSpec(name="local", docs=str(self.folder), questions=str(questions),
                           split="all", n=None, unanswerable=False)

    def _sweep(self, split: str, questions: Path, space: dict, names: list[str],
               base: RAGConfig) -> Any:
        from agentic_rag.experiments.runner import run_sweep

        stem = (self.folder.name if self.folder else (self.corpus.name if self.corpus
                                                      else "docs"))
        spec = spec_for(f"tune-{stem}-{split}", self.dataset(questions), base, space, names)
        # the LLM strategies' replies go to the tuned folder's pack too, beside the
        # generator's: a rerun on a fresh machine asks the model nothing
        spec = spec.model_copy(update={"reply_pack": str(self.out / "llm-replies.jsonl")})
        self.log(f"{split} sweep: {len(names)} configs")
        return run_sweep(spec, self.runs_dir, self.cache_dir, progress=False, log=self.log,
                         meter=self.meter)

    # -- outputs -------------------------------------------------------------------------
    def _write(self, prof: dict, space: dict, table: pd.DataFrame, test_table: pd.DataFrame,
               chosen: str, cfg: RAGConfig, dev_res: Any, test_res: Any,
               qpath: Path) -> TuneResult:
        from agentic_rag.experiments.plan import load_spec_dataset, open_index

        # the chosen config's index (built by the sweep, reused): the served config's home
        served, _ = open_index(cfg, load_spec_dataset(test_res.spec), self.cache_dir,
                               log=self.log)
        cfg = cfg.with_overrides({"home": str(Path(served.home).resolve())})
        sfile = qpath.with_name(f"{qpath.stem}.summary.json")
        summary = json.loads(sfile.read_text()) if sfile.exists() else {}
        provenance = {
            "tuned_by": "agentic-rag tune", "folder": str(self.folder or self.corpus.name),
            "questions": str(qpath), "generated": {k: summary.get(k) for k in (
                "accepted", "drawn", "llm_calls", "by_split", "rejected", "generator", "mode")},
            "profile": prof, "budget": self.budget, "search_space": space,
            "rule": RULE_TEXT[self.rule], "rule_name": self.rule,
            "margins": NONINFERIORITY_MARGINS if self.rule == "noninferiority" else None,
            "chosen": chosen, "overrides": space[chosen],
            "dev": {"run": str(dev_res.run_dir), "metrics": _metrics(table, chosen)},
            "test": {"run": str(test_res.run_dir), "metrics": _metrics(test_table, chosen)}}
        best = self.out / "best-config.yaml"
        best.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False)
                        + yaml.safe_dump({"provenance": provenance}, sort_keys=False,
                                         allow_unicode=True), encoding="utf-8")
        plot = self.out / "tune.png"
        _plot(table, test_table, chosen, plot)
        report = report_markdown(self.folder or self.corpus.name, prof, summary, table,
                                 test_table, chosen, best, plot, self.rule)
        (self.out / "report.md").write_text(report, encoding="utf-8")
        (self.out / "tune.json").write_text(json.dumps(
            {**provenance, "dev_table": _records(table), "test_table": _records(test_table)},
            indent=2, default=str))
        self.log(report)
        return TuneResult(report=report, config=cfg, summary=test_res.summary, chosen=chosen,
                          dev=table, paths={"config": best, "report": self.out / "report.md",
                                            "plot": plot, "questions": qpath,
                                            "dev_run": dev_res.run_dir,
                                            "test_run": test_res.run_dir})
