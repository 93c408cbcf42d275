"""Agent retrieval policies × tool modes against closed-book, on τ²-banking and the Python FAQ.

    .venv/bin/python experiments/agent_eval.py --run agent-v1 --split test --n 30 \\
        --cells retrieve_first:native closed_book:native
    .venv/bin/python experiments/agent_eval.py --run agent-v1 --split dev --n 8 \\
        --cells retrieve_first:native tool_required:native free:native closed_book:native \\
                retrieve_first:json tool_required:json free:json
    .venv/bin/python experiments/agent_eval.py --run agent-v1 --summarize-only

One row per (dataset, split, cell, question) is appended to
`experiments/agent-runs/<run>/rows.jsonl`; a rerun skips rows already there, and every LLM
call (agent and judges) is cached on disk (keyed by model and server URL: keep `--port`),
so a rerun after an interruption costs nothing for what was done. Questions are
interleaved (question 1 of each dataset under every cell, then question 2 ...), so a run
cut short still has paired rows. `summary.csv` has one row per (dataset, split, cell):
means with 95 % bootstrap CIs and, for every metric, the paired difference vs closed_book
on the same questions with its paired-bootstrap CI.

Metrics per question:
- `searched` (≥ 1 search), `searches`, `model_searches` (the policy's own pre-search not
  counted), `latency_s`, `prompt_tokens`, `completion_tokens`;
- `correct`: the LLM judge (`judge_correctness`) against the gold reference. Python FAQ:
  the answer section (first 500 characters). τ²-banking has no gold answer text; the
  reference is the task's expected outcome written from its gold actions (product names,
  the tools the agent should use, personal data left out) — a weaker gold, said so;
  an abstention ("I don't know") is scored incorrect without a judge call;
- `token_f1` (SQuAD) against the FAQ answer section (NaN for banking);
- `hallucinated`: the support judge (`judge_support`) on the answer against the passages
  the agent was served; NaN for closed_book (no evidence) and 0 for an abstention;
- `citation_valid`, `cites_served`, `invalid_citations`, `abstained`, `failed` (an LLM
  error or an invalid JSON action: scored as incorrect, counted here).
Judge failures (LLMError) leave the metric NaN and are counted in `judge_failures`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agentic_rag.agent import AgentResult, run_agent  # noqa: E402
from agentic_rag.config import AgentConfig, RAGConfig, ServerConfig  # noqa: E402
from agentic_rag.datasets import load_dataset  # noqa: E402
from agentic_rag.evaluation.answers import token_f1  # noqa: E402
from agentic_rag.evaluation.llm_judge import judge_correctness, judge_support  # noqa: E402
from agentic_rag.experiments.stats import bootstrap_ci, paired_bootstrap  # noqa: E402
from agentic_rag.index import AgenticIndex  # noqa: E402
from agentic_rag.llm import ChatCache, LLMError, OpenAIChatModel  # noqa: E402
from agentic_rag.pipeline import Pipeline  # noqa: E402
from agentic_rag.server import LlamaServer  # noqa: E402
from agentic_rag.tool import AgenticRAGTool  # noqa: E402

ROOT = Path(__file__).resolve().parent
DATASETS = ("python-faq", "tau2-banking")
BASELINE = "closed_book:native"
DEFAULT_CELL = f"{AgentConfig().policy}:{AgentConfig().mode}"
POLICIES = ("retrieve_first", "tool_required", "free", "closed_book")
GATES = ("gated", "static", "always_expand")
GATE_DEFAULT = RAGConfig().gate.mode
METRICS = ["searched", "searches", "model_searches", "retrieval_iterations", "gold_served",
           "correct", "token_f1",
           "hallucinated",
           "citation_valid", "cites_served", "abstained", "failed", "latency_s",
           "prompt_tokens", "completion_tokens"]
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


def parse_cell(cell: str) -> tuple[str, str, str | None]:
    """`policy:mode[:gate]`; the gate is the retrieval tool's `gate.mode` (None: the
    config's default, `gated`), e.g. `retrieve_first:native:static` for the static tool."""
    parts = cell.split(":")
    if len(parts) not in (2, 3) or parts[0] not in POLICIES or parts[1] not in ("native", "json") \
            or (len(parts) == 3 and parts[2] not in GATES):
        raise SystemExit(f"--cells: {cell!r} is not policy:mode[:gate] with policy in "
                         f"{POLICIES}, mode native|json, gate in {GATES}")
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


def load(name: str, split: str, n: int, seed: int, corpus_size: int | None):
    """The sampled questions and the corpus to index: the whole corpus, or (corpus_size) the
    sampled questions' gold documents plus seeded distractors (`Dataset.sample`)."""
    ds = load_dataset(name).split(split).sample(n, seed=seed, corpus_size=corpus_size)
    out = []
    for q in ds.queries:
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


def build_pipeline(ds, home: Path, overrides: dict, chat: OpenAIChatModel) -> Pipeline:  # noqa: ANN001
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
            "token_f1": token_f1(res.answer, item["answers"]) if item["answers"] else np.nan,
            "evidence": "\n\n".join(s.tool.content for s in res.steps
                                     if s.tool and s.tool.chunk_ids)}


def judge(row: dict, item: dict, chat: OpenAIChatModel) -> dict:
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
            supported, _ = judge_support(chat, row["evidence"], row["answer"])
            out["hallucinated"] = 0.0 if supported else 1.0
        except LLMError:
            out["hallucinated"] = np.nan
            out["judge_failures"] += 1
    return out


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _key(r: dict) -> tuple:
    return r["dataset"], r["split"], r["cell"], r["qid"]


def run(args: argparse.Namespace) -> None:
    run_dir = ROOT / "agent-runs" / args.run
    run_dir.mkdir(parents=True, exist_ok=True)
    rows_path, judged_path = run_dir / "rows.jsonl", run_dir / "judgements.jsonl"
    cells = [c if ":" in c else f"{c}:native" for c in args.cells]
    for c in cells:
        parse_cell(c)
    meta_path = run_dir / f"meta-{args.split}.json"
    if meta_path.exists() and "tau2-banking" in args.datasets:
        before = json.loads(meta_path.read_text()).get("banking_question", "scenario")
        if before != args.banking_question:
            raise SystemExit(f"{run_dir}: its banking rows read the {before!r} question; "
                             f"--banking-question {args.banking_question} needs its own --run")
    overrides = {"context.max_tokens": args.context_tokens}
    srv = LlamaServer(ServerConfig(port=args.port, n_ctx=8192, n_threads=args.threads),
                      home=args.home)
    srv.start()
    try:
        cfg = RAGConfig()
        chat = OpenAIChatModel(cfg.llm, base_url=srv.base_url,
                               cache=ChatCache(Path(args.home) / "llm.sqlite"))
        loaded = {d: load(d, args.split, args.n, args.seed, args.corpus_size.get(d))
                  for d in args.datasets}
        items = {d: v[0] for d, v in loaded.items()}
        if args.banking_question == "opening" and "tau2-banking" in items:
            ds = loaded["tau2-banking"][1]
            items["tau2-banking"] = customer_openings(
                items["tau2-banking"], chat, {q.id: q.text for q in ds.queries},
                run_dir / f"openings-{args.split}.jsonl")
        meta = {"command": " ".join(sys.argv), "git_commit": _git_commit(),
                "model": cfg.llm.server.model, "server": srv.base_url, "seed": args.seed,
                "overrides": overrides, "agent_defaults": AgentConfig().model_dump(),
                "banking_question": args.banking_question,
                "max_steps": args.max_steps, "corpus_size": args.corpus_size,
                "corpora": {d: {"name": v[1].name, "documents": len(v[1].corpus),
                                "fingerprint": v[1].corpus_fingerprint()}
                            for d, v in loaded.items()}}
        # every invocation on this run folder (passes, resumptions, the judge pass), in order
        earlier = json.loads(meta_path.read_text()).get("history", []) if meta_path.exists() else []
        meta["history"] = [*earlier, {"command": meta["command"], "git_commit": meta["git_commit"],
                                      "started": time.strftime("%Y-%m-%dT%H:%M:%S")}]
        meta_path.write_text(json.dumps(meta, indent=2))
        if not args.judge_only:
            gates = sorted({parse_cell(c)[2] for c in cells} - {None}, key=str)
            pipes = {(d, g): build_pipeline(v[1], Path(args.home), {**overrides, "gate.mode": g},
                                            chat)
                     for d, v in loaded.items() for g in [GATE_DEFAULT, *gates]}
            _agent_pass(args, cells, items, pipes, chat, rows_path, judged_path)
        if not args.no_judge:
            _judge_pass(args, items, chat, rows_path, judged_path)
    finally:
        srv.stop()


def _agent_pass(args, cells, items, pipes, chat, rows_path, judged_path) -> None:  # noqa: ANN001
    """Questions interleaved across datasets; each row is judged as soon as it is run, so a
    run cut by its budget leaves complete, paired rows."""
    done = {_key(r) for r in _read(rows_path)}
    judged = {_key(r) for r in _read(judged_path)}
    deadline = time.time() + args.budget_min * 60 if args.budget_min else None
    with rows_path.open("a") as out:
        for i in range(max(len(v) for v in items.values())):
            for d in args.datasets:
                if i >= len(items[d]):
                    continue
                item = items[d][i]
                for cell in cells:
                    if (d, args.split, cell, item["qid"]) in done:
                        continue
                    if deadline and time.time() > deadline:
                        print(f"budget of {args.budget_min} min spent: stopping before "
                              f"{d} #{i} {cell}", flush=True)
                        return
                    policy, mode, gate = parse_cell(cell)
                    acfg = AgentConfig(policy=policy, mode=mode, max_steps=args.max_steps)
                    tool = None if policy == "closed_book" else \
                        AgenticRAGTool(pipes[d, gate or GATE_DEFAULT])
                    t0 = time.perf_counter()
                    res = run_agent(item["question"], chat, tool, acfg)
                    row = {"dataset": d, "split": args.split, "cell": cell, "qid": item["qid"],
                           "i": i, **agent_row(res, item), "wall_s": time.perf_counter() - t0}
                    out.write(json.dumps(row, default=_jsonable) + "\n")
                    out.flush()
                    j = {}
                    if not args.no_judge and _key(row) not in judged:
                        j = {"dataset": d, "split": args.split, "cell": cell,
                             "qid": item["qid"], **judge(row, item, chat)}
                        with judged_path.open("a") as jout:
                            jout.write(json.dumps(j, default=_jsonable) + "\n")
                    print(f"[{d} #{i} {cell}] searches={row['searches']} "
                          f"cites={row['citations']} bad={row['invalid_citations']} "
                          f"{row['stop_reason']} correct={j.get('correct')} "
                          f"halluc={j.get('hallucinated')} {time.perf_counter() - t0:.0f}s :: "
                          f"{res.answer[:100]!r}", flush=True)


def _judge_pass(args, items, chat, rows_path, judged_path) -> None:  # noqa: ANN001
    by_q = {(d, it["qid"]): it for d, its in items.items() for it in its}
    done = {_key(r) for r in _read(judged_path)}
    with judged_path.open("a") as out:
        for row in _read(rows_path):
            item = by_q.get((row["dataset"], row["qid"]))
            if item is None or row["split"] != args.split or _key(row) in done:
                continue
            t0 = time.perf_counter()
            j = {"dataset": row["dataset"], "split": row["split"], "cell": row["cell"],
                 "qid": row["qid"], **judge(row, item, chat)}
            out.write(json.dumps(j, default=_jsonable) + "\n")
            out.flush()
            print(f"judged [{row['dataset']} #{row['i']} {row['cell']}] correct={j['correct']} "
                  f"hallucinated={j['hallucinated']} {time.perf_counter() - t0:.0f}s", flush=True)


def _jsonable(v):  # noqa: ANN001, ANN202
    return None if isinstance(v, float) and np.isnan(v) else str(v)


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=ROOT, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def gold_served(df: pd.DataFrame) -> pd.Series:
    """1 when a served chunk overlaps a gold span (FAQ: the answer section) or is a gold
    document (banking: a required document); NaN for runs that served nothing. It tells a
    retrieval miss from a model that did not use what it was given."""
    out = pd.Series(np.nan, index=df.index)
    for name in df["dataset"].unique():
        ds = load_dataset(name)
        for i, r in df[df["dataset"] == name].iterrows():
            served = r["served"] or []
            if not served:
                continue
            hit = 0.0
            for cid in served:
                doc, _, rest = cid.partition("#")
                span = rest.rpartition("@")[2]
                start, _, end = span.partition("-")
                for g in ds.spans.get(r["qid"], []):
                    if g.doc_id == doc and int(start) < g.end and int(end) > g.start:
                        hit = 1.0
                if not ds.spans.get(r["qid"]) and doc in ds.qrels.get(r["qid"], {}):
                    hit = 1.0
            out[i] = hit
    return out


def _judged_rows(run_dir: Path) -> pd.DataFrame:
    """A run's rows with their judge verdicts (NaN where not judged)."""
    df = pd.DataFrame(_read(run_dir / "rows.jsonl"))
    judged = pd.DataFrame(_read(run_dir / "judgements.jsonl"))
    keys = ["dataset", "split", "cell", "qid"]
    if judged.empty:
        judged = pd.DataFrame(columns=[*keys, "correct", "hallucinated", "judge_failures"])
    df = df.merge(judged, on=keys, how="left")
    df.loc[df["evidence"].fillna("") == "", "hallucinated"] = np.nan  # see judge()
    return df


def summarize(run_dir: Path) -> pd.DataFrame:
    df = _judged_rows(run_dir)
    df["gold_served"] = gold_served(df)
    for c in METRICS:
        df[c] = pd.to_numeric(df[c], errors="coerce") if c in df else np.nan  # older rows
    out = []
    for (d, split), g in df.groupby(["dataset", "split"]):
        base = g[g.cell == BASELINE].set_index("qid")
        default = g[g.cell == DEFAULT_CELL].set_index("qid")
        for cell, c in g.groupby("cell"):
            c = c.set_index("qid")
            s = {"dataset": d, "split": split, "cell": cell, "n": len(c),
                 "judged": int(c["correct"].notna().sum()),
                 "halluc_judged": int(c["hallucinated"].notna().sum()),
                 "judge_failures": int(c["judge_failures"].fillna(0).sum()),
                 **_latency(c)}
            for m in METRICS:
                s[m] = float(c[m].mean())
                lo, hi = bootstrap_ci(c[m].tolist())
                s[f"{m}_ci"] = f"[{lo:.2f}, {hi:.2f}]"
                shared = c.index.intersection(base.index)
                if cell != BASELINE and len(shared):
                    s[f"{m}_vs_closed"] = _paired(c, base, shared, m)
                # every other cell against the default agent, on the same questions
                both = c.index.intersection(default.index)
                if cell not in (BASELINE, DEFAULT_CELL) and len(both):
                    s[f"{m}_vs_default"] = _paired(c, default, both, m)
                # the static (or always-expand) tool against the default gated tool, same
                # policy and mode, same questions
                if cell.count(":") == 2:
                    ref = g[g.cell == cell.rsplit(":", 1)[0]].set_index("qid")
                    both = c.index.intersection(ref.index)
                    if len(both):
                        s[f"{m}_vs_gated"] = _paired(c, ref, both, m)
            out.append(s)
    summary = pd.DataFrame(out)
    summary.to_csv(run_dir / "summary.csv", index=False)
    return summary


def compare(before_dir: Path, after_dir: Path, metrics: tuple[str, ...] = (
        "token_f1", "abstained", "searches", "cites_served", "citation_valid", "correct",
        "hallucinated")) -> pd.DataFrame:
    """The same cells on the same questions in two runs (e.g. before / after an agent change,
    both at one commit each: see their meta files): per dataset × cell, each metric's mean
    in both and the paired difference after − before with its paired-bootstrap CI."""
    keys = ["dataset", "split", "cell", "qid"]
    a, b = _judged_rows(before_dir).set_index(keys), _judged_rows(after_dir).set_index(keys)
    shared = a.index.intersection(b.index)
    out = []
    for d, split, cell in sorted({k[:3] for k in shared}):
        rows = [k for k in shared if k[:3] == (d, split, cell)]
        s = {"dataset": d, "split": split, "cell": cell, "n": len(rows)}
        for m in metrics:
            if m not in a or m not in b:
                continue
            x = pd.to_numeric(b.loc[rows, m], errors="coerce")
            y = pd.to_numeric(a.loc[rows, m], errors="coerce")
            s[f"{m}_before"], s[f"{m}_after"] = float(y.mean()), float(x.mean())
            s[f"{m}_diff"] = _fmt(paired_bootstrap(x.tolist(), y.tolist()))
        out.append(s)
    return pd.DataFrame(out)


def _latency(c: pd.DataFrame) -> dict:
    """p50 latency over the rows that made every LLM call (a reply read from the cache takes
    ~0 s); rows written before `cached_calls` was recorded count as made."""
    made = c[c["cached_calls"].fillna(0) == 0] if "cached_calls" in c else c
    return {"latency_p50_s": float(made["latency_s"].median()) if len(made) else np.nan,
            "latency_n": len(made)}


def _paired(c: pd.DataFrame, ref: pd.DataFrame, shared: pd.Index, m: str) -> str:
    """`diff [ci_low, ci_high] (n=…)`: paired bootstrap of c − ref over the shared questions
    where both have a value."""
    return _fmt(paired_bootstrap(c.loc[shared, m].tolist(), ref.loc[shared, m].tolist()))


def _fmt(pb: dict) -> str:
    if pb["n"] == 0:
        return "– (n=0)"
    return f"{pb['diff']:+.2f} [{pb['ci_low']:+.2f}, {pb['ci_high']:+.2f}] (n={pb['n']})"


def markdown(summary: pd.DataFrame, command: str) -> str:
    """The README table: one row per dataset × cell, the paired diff vs closed_book."""
    lines = ["| dataset | split | policy:mode | n | searched | searches | retrieval iterations | correct [95% CI] | "
             "Δ correct vs closed-book [95% CI] | token F1 | Δ token F1 [95% CI] | gold passage "
             "served | hallucinated | citation valid | cites a served chunk | abstained | p50 s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in summary.iterrows():
        def f(m: str, r=r) -> str:  # noqa: ANN001
            v = r.get(m)
            return "–" if v is None or v != v else f"{v:.2f}"
        delta = r.get("correct_vs_closed")
        df1 = r.get("token_f1_vs_closed")
        lines.append(f"| {r.dataset} | {r.split} | {r.cell} | {r.n} | {f('searched')} | "
                     f"{f('searches')} | {f('retrieval_iterations')} | {f('correct')} {r.get('correct_ci', '')} | "
                     f"{delta if isinstance(delta, str) else '–'} | {f('token_f1')} | "
                     f"{df1 if isinstance(df1, str) else '–'} | {f('gold_served')} | "
                     f"{f('hallucinated')} | {f('citation_valid')} | {f('cites_served')} | "
                     f"{f('abstained')} | {f('latency_p50_s')} |")
    return "\n".join(lines) + f"\n\nReproduce: `{command}`\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True)
    p.add_argument("--datasets", nargs="+", default=list(DATASETS))
    p.add_argument("--split", default="test", choices=["dev", "test", "all"])
    p.add_argument("--n", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cells", nargs="+", default=["retrieve_first:native", BASELINE])
    p.add_argument("--max-steps", type=int, default=AgentConfig().max_steps)
    p.add_argument("--context-tokens", type=int, default=800,
                   help="context.max_tokens: passages per search (cost: ~40 tokens/s reading)")
    p.add_argument("--port", type=int, default=8777, help="keep it fixed: the LLM cache key has it")
    p.add_argument("--threads", type=int, default=ServerConfig().n_threads,
                   help="llama.cpp threads (1 is faster on an oversubscribed 2-core machine)")
    p.add_argument("--home", default=str(ROOT / "cache" / "agent-eval"))
    p.add_argument("--corpus-size", nargs="*", default=["python-faq=80", "tau2-banking=250"],
                   help="DATASET=N: index the sampled questions' gold documents plus seeded "
                   "distractors up to N documents (none = the whole corpus)")
    p.add_argument("--budget-min", type=float, default=None,
                   help="stop the agent pass after this many minutes (rows so far are kept)")
    p.add_argument("--banking-question", choices=["scenario", "opening"], default="scenario",
                   help="τ²-banking: the agent reads the framed role-play scenario, or the "
                        "customer's opening message written from it by the LLM (use its own "
                        "--run: the cells keep their names)")
    p.add_argument("--no-judge", action="store_true", help="agent pass only")
    p.add_argument("--judge-only", action="store_true", help="judge the rows already run")
    p.add_argument("--summarize-only", action="store_true")
    p.add_argument("--compare", metavar="BEFORE_RUN", default=None,
                   help="after summarizing, pair this run's rows with BEFORE_RUN's (same "
                        "dataset × cell × question) into compare-<BEFORE_RUN>.csv")
    args = p.parse_args()
    args.corpus_size = {k: int(v) for k, v in (x.split("=") for x in args.corpus_size)}
    if not args.summarize_only:
        run(args)
    run_dir = ROOT / "agent-runs" / args.run
    summary = summarize(run_dir)
    metas = sorted(run_dir.glob("meta-*.json"))
    commands = [h["command"] for m in metas
                for h in json.loads(m.read_text()).get("history")
                or [json.loads(m.read_text())]] or [" ".join(sys.argv)]
    commands = list(dict.fromkeys(commands))
    (run_dir / "summary.md").write_text(markdown(summary, "` then `".join(
        f"AGENTIC_RAG_DATA=datasets/cache .venv/bin/python {c}" for c in commands)))
    cols = ["dataset", "split", "cell", "n", "searched", "searches", "correct", "correct_vs_closed",
            "token_f1", "hallucinated", "citation_valid", "cites_served", "latency_p50_s"]
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(summary[[c for c in cols if c in summary]].to_string(index=False))
        if args.compare:
            cmp = compare(ROOT / "agent-runs" / args.compare, run_dir)
            cmp.to_csv(run_dir / f"compare-{args.compare}.csv", index=False)
            print(cmp.to_string(index=False))


if __name__ == "__main__":
    main()
