"""Agent retrieval policies × tool modes against closed-book, on τ²-banking and the Python FAQ.

    agentic-rag agent-eval --run agent-v1 --split test --n 30 \\
        --cells retrieve_first:native closed_book:native
    agentic-rag agent-eval --run agent-v1 --split dev --n 8 \\
        --cells retrieve_first:native tool_required:native free:native closed_book:native \\
                retrieve_first:json tool_required:json free:json
    agentic-rag agent-eval --run agent-v1 --summarize-only

In code: `evaluate(AgentEvalOptions(run=...), ...)` (`options.py`). One row per (dataset,
split, cell, question) is appended to `<runs-dir>/<run>/rows.jsonl` (default
`experiments/agent-runs/`, relative to the working directory); a rerun skips rows already
there, and every LLM call (agent and judges) is cached on disk (keyed by model and server
URL: keep `--port`), so a rerun after an interruption costs nothing for what was done.
Up to `--max-concurrency` questions run at once (default `llm.max_concurrency`; rows are
written in the same order at any concurrency); `--max-llm-calls N` stops cleanly after N
new LLM calls (a rerun continues). Before each pass the expected calls, tokens and wall
time are printed, and while it runs, progress with an ETA (`llm_cost.py`).
Questions are interleaved (question 1 of each dataset under every cell, then question 2
...), so a run cut short still has paired rows. `summary.csv` has one row per (dataset,
split, cell): means with 95 % bootstrap CIs and, for every metric, the paired difference vs
closed_book on the same questions with its paired-bootstrap CI (`agent_eval.summary.py`).

Metrics per question:
- `searched` (≥ 1 search), `searches`, `model_searches` (the policy's own pre-search not
  counted), `latency_s`, `prompt_tokens`, `completion_tokens`;
- `correct`: the LLM judge (`judge_correctness`) against the gold reference. Python FAQ:
  the answer section (first 500 characters). τ²-banking has no gold answer text; the
  reference is the task's expected outcome written from its gold actions (product names,
  the tools the agent should use, personal data left out) — a weaker gold, said so;
  an abstention ("I don't know") is scored incorrect without a judge call;
- `token_f1` (SQuAD) against the FAQ answer section (NaN for banking);
- `hallucinated`: the default support detector (`agent.support.detector`, graded_judge_q,
  the judge's P(yes) given the question) on the answer against the passages the agent was
  served, below `agent.support.threshold` (0.536); its score is `support`, the detector
  `support_detector`, the threshold `support_threshold`. NaN for closed_book (no evidence), 0 for an abstention.
  Judgements written before 2026-12-03 came from the retired yes/no JSON judge (no
  `support_detector` in their rows);
- `citation_valid`, `cites_served`, `invalid_citations`, `abstained`, `failed` (an LLM
  error or an invalid JSON action: scored as incorrect, counted here).
Judge failures (LLMError) leave the metric NaN and are counted in `judge_failures`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from agentic_rag import tracing
from agentic_rag.agent.loop import run_agent
from agentic_rag.agent.result import AgentResult
from agentic_rag.agent.tool import AgenticRAGTool
from agentic_rag.config import AgentConfig, RAGConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.evaluation.answers import token_f1
from agentic_rag.evaluation.llm_judge import judge_correctness
from agentic_rag.evaluation.support import support_score, unsupported
from agentic_rag.experiments.llm_cost import (
    Progress,
    agent_cost,
    estimate_line,
    judge_cost,
    local_server_meta,
    measured_rates,
)
from agentic_rag.experiments.runfolder import base_meta, git_commit
from agentic_rag.jsonl import append_rows, read_rows
from agentic_rag.llm.cache import ChatCache, model_identity
from agentic_rag.llm.calls import CallMeter, MeteredChatModel, map_calls
from agentic_rag.llm.chat import make_chat_model
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.llm.server import serve_local
from agentic_rag.llm.types import ChatModel, LLMError
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.store.index import AgenticIndex
from agentic_rag.studies.agent_eval.options import (
    PROG,
    REPEAT_SEED,
    REPEAT_TEMPERATURE,
    AgentEvalOptions,
    command_line,
    parse_cell,
)
from agentic_rag.studies.agent_eval.summary import compare, markdown, summarize
from agentic_rag.studies.agent_eval.tasks import customer_openings, load
from agentic_rag.studies.question_file import score as figure_score

GATE_DEFAULT = RAGConfig().gate.mode
# `hallucinated`: the default support detector at its threshold (what `ask` and sweeps use)
SUPPORT = RAGConfig().agent.support


def build_pipeline(ds, home: Path, overrides: dict, chat: ChatModel) -> Pipeline:  # noqa: ANN001
    """One index per corpus (by fingerprint), built once and shared by later runs."""
    cfg = RAGConfig().with_overrides(
        {"home": str(home / f"{ds.name.split(':')[0].split('[')[0]}-{ds.corpus_fingerprint()}"),
         **overrides})
    index = AgenticIndex(cfg)
    if index.count() == 0:
        t0 = time.perf_counter()
        index.add_documents(ds.corpus)
        print(f"[{ds.name}] indexed {len(ds.corpus)} documents, {index.count()} chunks in "
              f"{time.perf_counter() - t0:.0f}s", flush=True)
    return Pipeline(cfg, index=index, chat_model=chat)


def agent_row(res: AgentResult, item: dict) -> dict:
    """Everything measured without a judge; the judges run in a second pass (`judge`)."""
    failed = res.stop_reason in ("llm_error", "invalid_action")
    return {"answer": res.answer, "stop_reason": res.stop_reason, "error": res.error,
            "searched": float(res.tool_calls > 0), "searches": res.tool_calls,
            "model_searches": res.model_tool_calls,
            "retrieval_iterations": res.retrieval_iterations, "latency_s": res.latency_s,
            "cached_calls": res.cached_calls,
            "prompt_tokens": res.prompt_tokens, "completion_tokens": res.completion_tokens,
            "citations": res.citations, "invalid_citations": res.invalid_citations,
            "cited_chunks": res.cited_chunks, "served": res.served,
            "citation_valid": float(res.citation_valid), "cites_served": float(res.cites_served),
            "abstained": float(res.abstained), "failed": float(failed),
            "action_failures": res.action_failures,
            "queries": [s.arguments.get("query") for s in res.steps
                        if s.kind == "tool_call" and s.arguments],
            # the trajectory (`evaluation.trajectory`): what each search served, in order, and
            # the LLM calls the agent made (the policy's own pre-search is not one)
            "served_by_search": [list(s.tool.chunk_ids) for s in res.steps
                                 if s.kind == "tool_call" and s.tool],
            "llm_turns": sum(1 for s in res.steps if s.via != "policy"),
            **(_figure(res, item, failed) if "gold_numbers" in item else {}),
            "token_f1": token_f1(res.answer, item["answers"]) if item["answers"] else np.nan,
            "evidence": "\n\n".join(s.tool.content for s in res.steps
                                     if s.tool and s.tool.chunk_ids)}


def _figure(res: AgentResult, item: dict, failed: bool) -> dict:
    """banking-products: its own score without an LLM (`question_file.score`): the gold figure
    among the answer's (`figure_correct`), a figure no gold document states (`wrong_figure`)."""
    s = figure_score({"question": item["question"], "answer": item["gold_answer"]}, res.answer,
                     res.abstained or failed, set(item["gold_numbers"]))
    return {"figure_correct": s["correct"], "wrong_figure": s["wrong_figure"]}


def judge(row: dict, item: dict, chat: ChatModel) -> dict:
    """`correct` against the gold reference, `hallucinated` against the served passages.
    A failed run or an abstention is incorrect without a judge call; an abstention makes no
    claim (not hallucinated); without passages served (closed_book, a run that did not
    search) there is nothing to judge against: NaN, and the summary counts `halluc_judged`."""
    out = {"judge_failures": 0}
    no_claim = row["failed"] or row["abstained"] or not row["answer"]
    if no_claim:
        out["correct"] = 0.0
    else:
        try:
            ok, _ = judge_correctness(chat, item["judge_question"], item["reference"],
                                      row["answer"])
            out["correct"] = float(ok)
        except LLMError:
            out["correct"], out["judge_failures"] = np.nan, 1
    if not row["evidence"]:
        out["hallucinated"] = np.nan  # nothing served (closed_book, or no search): not judged
    elif no_claim:
        out["hallucinated"] = 0.0
    else:
        try:
            score = support_score(SUPPORT.detector, chat, row["evidence"], row["answer"],
                                  item["question"])
            out["support"] = score
            out["hallucinated"] = unsupported(score, SUPPORT.threshold)
        except LLMError:
            out["hallucinated"] = np.nan
            out["judge_failures"] += 1
    out["support_detector"], out["support_threshold"] = SUPPORT.detector, SUPPORT.threshold
    return out


def _key(r: dict) -> tuple:
    """A row's identity: one greedy run per question and cell (`repeat` None), or one row per
    sampled repeat."""
    return r["dataset"], r["split"], r["cell"], r["qid"], r.get("repeat")


def sampling(args: AgentEvalOptions, llm: LLMConfig) -> tuple[float, list[int]] | None:
    """`--repeats K` (K > 1): the temperature (`--temperature`, else `llm.temperature` when
    > 0, else `REPEAT_TEMPERATURE`) and the seed of each repeat; None: one greedy run."""
    if args.repeats == 1:
        return None
    t = args.temperature or llm.temperature or REPEAT_TEMPERATURE
    return t, [REPEAT_SEED + r for r in range(args.repeats)]


def sampled(config: LLMConfig, temperature: float, seed: int) -> LLMConfig:
    """The LLM settings of one sampled repeat: its temperature and seed are sent with every
    call and are in the reply cache key (`llm.client`), so a repeat never reads a greedy
    run's replies, nor another seed's."""
    return config.model_copy(update={"temperature": temperature, "seed": seed})


def run(args: AgentEvalOptions, meter: CallMeter | None = None,
        llm: LLMConfig | None = None) -> None:
    """The agent pass and the judge pass of `args.cells` on `args.datasets`, appended to
    `args.runs_dir/args.run/`. The LLM: `llm` when it sets `llm.base_url` / `llm.endpoints`
    (called through `make_chat_model`, no server started), else the local server started for
    the run (`--port`, `--threads`). Every LLM call goes through `meter` (default: one capped
    at `args.max_llm_calls`); at its cap `llm.LLMCallCap` propagates, with every finished
    row written."""
    cells = check(args)
    meter = meter if meter is not None else CallMeter(args.max_llm_calls)
    cfg = RAGConfig()
    remote = llm is not None and not llm.uses_local_server
    if remote:
        cfg = cfg.model_copy(update={"llm": llm})
    conc = args.max_concurrency or cfg.llm.slots
    run_dir = Path(args.runs_dir) / args.run
    run_dir.mkdir(parents=True, exist_ok=True)
    rows_path, judged_path = run_dir / "rows.jsonl", run_dir / "judgements.jsonl"
    meta_path = run_dir / f"meta-{args.split}.json"
    overrides = {"context.max_tokens": args.context_tokens}
    # the local server: the caller's (a --config's variant and repacking), on this run's port
    server = (llm or cfg.llm).server.model_copy(
        update={"port": args.port, "n_ctx": 8192, "n_threads": args.threads})
    with serve_local(cfg.llm, args.home, server) as srv:
        if srv is None:  # llm.base_url / llm.endpoints: the pool or the one endpoint
            model = make_chat_model(cfg.llm, args.home)
            where = ", ".join(cfg.llm.endpoints or (cfg.llm.base_url,))
            llm_meta = {"identity": model.model_id}

            def repeat_model(t: float, seed: int) -> ChatModel:
                return make_chat_model(sampled(cfg.llm, t, seed), args.home)
        else:
            # keyed by the model that answers (weights, build, variant, repacking), not the URL
            local = cfg.llm.model_copy(update={"server": server})
            cache = ChatCache(Path(args.home) / "llm.sqlite")
            model = OpenAIChatModel(local, base_url=srv.base_url, cache=cache)
            where = srv.base_url
            llm_meta = {"identity": model_identity(local)}

            def repeat_model(t: float, seed: int) -> ChatModel:
                return OpenAIChatModel(sampled(local, t, seed), base_url=srv.base_url,
                                       cache=cache)
        chat = MeteredChatModel(model, meter)  # greedy: the judges, and the agent of one run
        sampling_ = sampling(args, llm or cfg.llm)
        # the agent's model per repeat (None: the greedy run, which a run with repeats makes
        # too, first, so its figure is compared on the same questions); the judges stay greedy
        agents = {None: (chat, {})}
        if sampling_ is not None:
            agents.update({r: (MeteredChatModel(repeat_model(sampling_[0], seed), meter),
                               {"repeat": r, "llm_seed": seed, "temperature": sampling_[0]})
                           for r, seed in enumerate(sampling_[1])})
        loaded = {d: load(d, args.split, args.n, args.seed, args.corpus_size.get(d))
                  for d in args.datasets}
        items = {d: v[0] for d, v in loaded.items()}
        if args.banking_question == "opening" and "tau2-banking" in items:
            ds = loaded["tau2-banking"][1]
            items["tau2-banking"] = customer_openings(
                items["tau2-banking"], chat, {q.id: q.text for q in ds.queries},
                run_dir / f"openings-{args.split}.jsonl")
        llm_meta.update({"reply_cache_key": chat.model_id, "max_concurrency": conc,
                         "repeats": None if sampling_ is None else {
                             "k": args.repeats, "temperature": sampling_[0],
                             "seeds": sampling_[1]},
                         **(local_server_meta(server) if srv is not None else {})})
        _write_meta(meta_path, args, cfg, where, overrides, loaded, llm_meta)
        if not args.judge_only:
            gates = sorted({parse_cell(c)[2] for c in cells} - {None}, key=str)
            searches = any(parse_cell(c)[0] != "closed_book" for c in cells)  # else no index
            pipes = {(d, g): build_pipeline(v[1], Path(args.home), {**overrides, "gate.mode": g},
                                            chat)
                     for d, v in loaded.items() for g in [GATE_DEFAULT, *gates] if searches}
            # traces of the agent pass (`tracing.export`, default file: <run>/traces.jsonl)
            trace_cfg = RAGConfig.load(args.config).tracing if args.config else cfg.tracing
            with tracing.recording(trace_cfg, run_dir):
                _agent_pass(args, cells, items, pipes, chat, rows_path, judged_path, conc,
                            meter, agents)
        if not args.no_judge:
            _judge_pass(args, items, chat, rows_path, judged_path, conc, meter)


def check(args: AgentEvalOptions) -> list[str]:
    """The cells as `policy:mode[:gate]` (a bare policy is native); ValueError for a bad cell,
    or for banking rows of this run that read the other `--banking-question`."""
    cells = [c if ":" in c else f"{c}:native" for c in args.cells]
    for c in cells:
        parse_cell(c)
    run_dir = Path(args.runs_dir) / args.run
    meta_path = run_dir / f"meta-{args.split}.json"
    if meta_path.exists() and "tau2-banking" in args.datasets:
        before = json.loads(meta_path.read_text()).get("banking_question", "scenario")
        if before != args.banking_question:
            raise ValueError(f"{run_dir}: its banking rows read the {before!r} question; "
                             f"--banking-question {args.banking_question} needs its own --run")
    return cells


def _write_meta(meta_path: Path, args: AgentEvalOptions, cfg: RAGConfig, server: str,
                overrides: dict, loaded: dict, llm: dict | None = None) -> None:
    """`meta-<split>.json`: this invocation's settings and corpora (`runfolder.base_meta`'s
    Python, platform and packages; `llm`: the model's identity as `llm.model_identity` gives
    it for this server, the reply cache's key, the calls in flight), and the history of every
    invocation on this run folder (passes, resumptions, the judge pass), in order."""
    meta = {**base_meta(), "command": command_line(args), "git_commit": git_commit(),
            "llm": llm,
            "model": cfg.llm.server.model if cfg.llm.uses_local_server else cfg.llm.model,
            "server": server, "seed": args.seed,
            "overrides": overrides, "agent_defaults": AgentConfig().model_dump(),
            "banking_question": args.banking_question,
            "max_steps": args.max_steps, "corpus_size": args.corpus_size,
            "corpora": {d: {"name": v[1].name, "documents": len(v[1].corpus),
                            "fingerprint": v[1].corpus_fingerprint()}
                        for d, v in loaded.items()}}
    earlier = json.loads(meta_path.read_text()).get("history", []) if meta_path.exists() else []
    meta["history"] = [*earlier, {"command": meta["command"], "git_commit": meta["git_commit"],
                                  "started": time.strftime("%Y-%m-%dT%H:%M:%S")}]
    meta_path.write_text(json.dumps(meta, indent=2))


def _pending(args, cells, items, done, repeats=(None,)):  # noqa: ANN001, ANN202
    """The (dataset, i, item, cell, repeat) not in `done`, questions interleaved across
    datasets, a question's repeats together (a run cut short has whole questions)."""
    for i in range(max(len(v) for v in items.values())):
        for d in args.datasets:
            if i >= len(items[d]):
                continue
            for cell in cells:
                for r in repeats:
                    if (d, args.split, cell, items[d][i]["qid"], r) not in done:
                        yield d, i, items[d][i], cell, r


def _agent_pass(args, cells, items, pipes, chat, rows_path, judged_path,  # noqa: ANN001
                conc: int = 1, meter: CallMeter | None = None, agents: dict | None = None) -> None:
    """Questions interleaved across datasets; each row is judged as soon as it is run, so a
    run cut by its budget leaves complete, paired rows. Up to `conc` questions (agent and
    judges) at once; rows are written in the order above at any concurrency. `agents`:
    repeat -> (the agent's chat model, the row fields that name the repeat); default: `chat`
    alone, greedy. `chat` judges."""
    agents = agents or {None: (chat, {})}
    done = {_key(r) for r in read_rows(rows_path)}
    judged = {_key(r) for r in read_rows(judged_path)}
    deadline = time.time() + args.budget_min * 60 if args.budget_min else None
    n = sum(1 for _ in _pending(args, cells, items, done, tuple(agents)))
    if n:
        print(f"agent pass: {n} question × cell runs to do. " + estimate_line(
            agent_cost(n), rates=measured_rates([Path(args.home) / "llm.sqlite"],
                                                model=getattr(chat, "model_id", None)),
            concurrency=conc, parallel=False), flush=True)
    progress = Progress(n, lambda m: print(m, flush=True), "agent pass", meter)

    def tasks():  # noqa: ANN202 - drawn in this thread, so the budget is checked here
        for d, i, item, cell, r in _pending(args, cells, items, done, tuple(agents)):
            if deadline and time.time() > deadline:
                print(f"budget of {args.budget_min} min spent: stopping before "
                      f"{d} #{i} {cell}", flush=True)
                return
            yield d, i, item, cell, r

    def run_one(task: tuple) -> tuple[dict, dict, str, float]:  # a worker: the LLM calls
        d, i, item, cell, r = task
        agent_chat, repeat = agents[r]
        policy, mode, gate = parse_cell(cell)
        acfg = AgentConfig(policy=policy, mode=mode, max_steps=args.max_steps)
        tool = None if policy == "closed_book" else AgenticRAGTool(pipes[d, gate or GATE_DEFAULT])
        t0 = time.perf_counter()
        with tracing.labels(dataset=d, split=args.split, cell=cell, repeat=repeat.get("repeat"),
                            **{"question.id": item["qid"]}):
            res = run_agent(item["question"], agent_chat, tool, acfg)
        row = {"dataset": d, "split": args.split, "cell": cell, "qid": item["qid"],
               "i": i, **repeat, **agent_row(res, item), "wall_s": time.perf_counter() - t0}
        j = {}
        if not args.no_judge and _key(row) not in judged:
            j = {"dataset": d, "split": args.split, "cell": cell,
                 "qid": item["qid"], **repeat, **judge(row, item, chat)}
        return row, j, res.answer, time.perf_counter() - t0

    for _, (row, j, answer, seconds) in map_calls(run_one, tasks(), conc):
        append_rows(rows_path, [row], _jsonable)
        if j:
            append_rows(judged_path, [j], _jsonable)
        rep = f" r{row['repeat']}" if "repeat" in row else ""
        print(f"[{row['dataset']} #{row['i']} {row['cell']}{rep}] searches={row['searches']} "
              f"cites={row['citations']} bad={row['invalid_citations']} "
              f"{row['stop_reason']} correct={j.get('correct')} "
              f"halluc={j.get('hallucinated')} {seconds:.0f}s :: "
              f"{answer[:100]!r}", flush=True)
        progress.advance()


def _judge_pass(args, items, chat, rows_path, judged_path,  # noqa: ANN001
                conc: int = 1, meter: CallMeter | None = None) -> None:
    by_q = {(d, it["qid"]): it for d, its in items.items() for it in its}
    done = {_key(r) for r in read_rows(judged_path)}
    todo = [(row, by_q[row["dataset"], row["qid"]]) for row in read_rows(rows_path)
            if (row["dataset"], row["qid"]) in by_q and row["split"] == args.split
            and _key(row) not in done]
    if todo:
        print(f"judge pass: {len(todo)} rows to judge. " + estimate_line(
            judge_cost(len(todo)), rates=measured_rates([Path(args.home) / "llm.sqlite"],
                                                        model=getattr(chat, "model_id", None)),
            concurrency=conc, parallel=False), flush=True)
    progress = Progress(len(todo), lambda m: print(m, flush=True), "judge pass", meter)

    def one(task: tuple[dict, dict]) -> tuple[dict, dict, float]:  # a worker: the judges
        row, item = task
        t0 = time.perf_counter()
        j = {"dataset": row["dataset"], "split": row["split"], "cell": row["cell"],
             "qid": row["qid"], **{k: row[k] for k in ("repeat", "llm_seed", "temperature")
                                   if k in row}, **judge(row, item, chat)}
        return row, j, time.perf_counter() - t0

    for _, (row, j, seconds) in map_calls(one, todo, conc):
        append_rows(judged_path, [j], _jsonable)
        print(f"judged [{row['dataset']} #{row['i']} {row['cell']}] correct={j['correct']} "
              f"hallucinated={j['hallucinated']} {seconds:.0f}s", flush=True)
        progress.advance()


def _jsonable(v):  # noqa: ANN001, ANN202
    return None if isinstance(v, float) and np.isnan(v) else str(v)


def evaluate(opts: AgentEvalOptions, meter: CallMeter | None = None,
             llm: LLMConfig | None = None, out=print) -> pd.DataFrame:  # noqa: ANN001
    """Run (unless `opts.summarize_only`), judge, summarize; write `summary.csv` and
    `summary.md` in the run folder, print the summary through `out` and return it.
    `meter`: every LLM call goes through it (default: one capped at `opts.max_llm_calls`);
    at its cap `llm.LLMCallCap` propagates with every finished row written (a rerun
    continues). `llm`: the caller's LLM settings (the claims' config), else `opts.config`'s
    (`run`). ValueError (a ConfigError is one) for a bad cell, config or banking question,
    before any LLM server starts."""
    if not opts.summarize_only:
        check(opts)
        if llm is None and opts.config:
            llm = RAGConfig.load(opts.config).llm
        run(opts, meter, llm)
    run_dir = Path(opts.runs_dir) / opts.run
    summary = summarize(run_dir)
    (run_dir / "summary.md").write_text(markdown(summary, "` then `".join(
        reproduce(c) for c in _commands(run_dir, command_line(opts)))) + repeats_markdown(run_dir))
    cols = ["dataset", "split", "cell", "n", "searched", "searches", "correct", "correct_vs_closed",
            "token_f1", "hallucinated", "citation_valid", "cites_served", "latency_p50_s"]
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        out(summary[[c for c in cols if c in summary]].to_string(index=False))
        if opts.compare:
            cmp = compare(Path(opts.runs_dir) / opts.compare, run_dir)
            cmp.to_csv(run_dir / f"compare-{opts.compare}.csv", index=False)
            out(cmp.to_string(index=False))
    return summary


def repeats_markdown(run_dir: Path) -> str:
    """The pass^k section of `summary.md` for a run with repeats ("" without)."""
    from agentic_rag.studies.agent_eval import repeats

    if not (run_dir / "passk.csv").exists():
        return ""
    try:
        per_q = pd.read_csv(run_dir / "passk.csv")
    except pd.errors.EmptyDataError:
        return ""
    if "success" not in per_q:
        return ""
    return "\n" + repeats.markdown(repeats.passk_table(per_q),
                                   pd.read_csv(run_dir / "repeats.csv"), repeats.flips(per_q))


def _commands(run_dir: Path, current: str) -> list[str]:
    """Every command recorded in the run's meta files, in order, without repeats."""
    metas = sorted(run_dir.glob("meta-*.json"))
    commands = [h["command"] for m in metas
                for h in json.loads(m.read_text()).get("history")
                or [json.loads(m.read_text())]] or [current]
    return list(dict.fromkeys(commands))


def reproduce(command: str) -> str:
    """A recorded command as a shell line from the repository root. Runs recorded by the
    former script (`experiments/agent_eval.py --run ...`, gone) read as `agentic-rag
    agent-eval` with the same options, which the command still takes."""
    for script in ("experiments/agent_eval.py", "agent_eval.py"):
        if command.startswith(script + " "):
            command = PROG + command[len(script):]
    if command.startswith("agentic-rag "):
        return f"AGENTIC_RAG_DATA=datasets/cache .venv/bin/{command}"
    return f"AGENTIC_RAG_DATA=datasets/cache .venv/bin/python {command}"

