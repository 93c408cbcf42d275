"""`make bench`, sessions section (issue 61, item 6): does llama-server's prompt cache absorb a
conversation's growing history? Each turn re-sends the earlier turns at the front of the prompt
(`agent/session.py`); the target is that turn n **evaluates** at most 1.5x the prompt tokens of
turn 1 (median over sessions), where the tokens **sent** grow with the history.

    .venv/bin/python benchmarks/session_prompt_cache.py [--collection fiqa] [--sessions 6]
        [--turns 5] [--port N] [--json benchmarks/SESSION_PROMPT_CACHE.json]
    .venv/bin/python benchmarks/session_prompt_cache.py --render-only   # the table from JSON

K real conversations: MTRAG-UN's human conversations of one collection with at least `--turns`
user turns (the first K by conversation id), their user turns played in order through
`run_turn` with the default config (agent, session settings, the default model), over an index
of that collection's pooled reference passages (not the full collection). The default server
settings (`llm.server`, one slot) on a server of the benchmark's own (`--port`: a free one
unless given; a server already answering there is reused), so no one else's requests share its
slot; the reply cache is OFF (a cached reply evaluates nothing). Reuse a server only if it has
not seen these conversations: its host-memory prompt cache (`--cache-ram`, 8 GiB by default)
keeps whole earlier prompts, and a rerun on it evaluated 1 token of 1,226 on turn 2. Per call the server's
`timings` give the prompt tokens evaluated (`prompt_n`) and reused from its cache (`cache_n`):
`ChatReply.prompt_evaluated` / `prompt_reused`, summed per turn in `Turn`.

Per turn number: prompt tokens sent, evaluated, reused (medians over sessions), the ratio
evaluated(turn n) / evaluated(turn 1) per session and its median, the LLM calls and the turn's
latency. A turn that asked a clarifying question makes no LLM call (its counts are None);
a session whose turn 1 made none is compared with its first turn that made one. Token counts do
not depend on the machine's load; latency does: the load average is recorded beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "benchmarks" / "SESSION_PROMPT_CACHE.json"
TARGET = 1.5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def conversations(collection: str, k: int, turns: int) -> list[tuple[str, list[str]]]:
    """(conversation id, its first `turns` user turns) for the first `k` conversations of
    `collection` (by id) with at least `turns` user turns (the longest task of each holds them)."""
    from agentic_rag.datasets.mtrag import load_mtrag

    longest: dict[str, Any] = {}
    for t in load_mtrag().collection(collection).tasks:
        if t.conversation_id not in longest or t.turn > longest[t.conversation_id].turn:
            longest[t.conversation_id] = t
    out = []
    for cid in sorted(longest):
        users = [x.text for x in longest[cid].turns if x.speaker == "user"]
        if len(users) >= turns:
            out.append((cid, users[:turns]))
    return out[:k]


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per turn number: medians over sessions, the ratio to each session's first answered turn."""
    rows = []
    n_max = max(len(s["turns"]) for s in sessions)
    for n in range(1, n_max + 1):
        turns = [(s, s["turns"][n - 1]) for s in sessions if len(s["turns"]) >= n]
        ratios = []
        for s, t in turns:
            base = next((u["prompt_evaluated"] for u in s["turns"] if u["prompt_evaluated"]), None)
            if t["prompt_evaluated"] is not None and base:
                ratios.append(t["prompt_evaluated"] / base)
        sent_ratios = []
        for s, t in turns:
            base = next((u["prompt_tokens"] for u in s["turns"] if u["prompt_tokens"]), None)
            if t["prompt_tokens"] and base:
                sent_ratios.append(t["prompt_tokens"] / base)
        answered = [t for _, t in turns if t["prompt_evaluated"] is not None]
        rows.append({
            "turn": n, "sessions": len(turns), "answered": len(answered),
            "history_turns": _median([t["history_turns"] for t in answered]),
            "llm_calls": _median([t["llm_calls"] for t in answered]),
            "sent": _median([t["prompt_tokens"] for t in answered]),
            "evaluated": _median([t["prompt_evaluated"] for t in answered]),
            "reused": _median([t["prompt_reused"] for t in answered]),
            "ratio_evaluated": _median(ratios), "ratio_evaluated_max": max(ratios, default=None),
            "ratio_sent": _median(sent_ratios),
            "latency_s": _median([t["latency_s"] for t in answered])})
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    from agentic_rag.agent.session import Session, run_turn
    from agentic_rag.agent.tool import AgenticRAGTool
    from agentic_rag.config import RAGConfig
    from agentic_rag.datasets.mtrag import load_mtrag
    from agentic_rag.experiments.plan import open_index
    from agentic_rag.experiments.runfolder import git_commit
    from agentic_rag.llm.chat import make_chat_model
    from agentic_rag.llm.processor import processor_class
    from agentic_rag.llm.server import LlamaServer, build_info, server_settings
    from agentic_rag.retrieve.pipeline import Pipeline

    port = args.port or _free_port()
    cfg = RAGConfig().with_overrides({"llm.cache": False, "llm.server.port": port})
    convs = conversations(args.collection, args.sessions, args.turns)
    ccfg, index = open_index(cfg, load_mtrag().collection(args.collection).dataset(
        "last_turn", False), args.cache_dir, log=lambda m: print(m, file=sys.stderr))
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before = os.getloadavg()
    sessions = []
    with LlamaServer(cfg.llm.server, home=args.cache_dir) as srv:
        chat = make_chat_model(cfg.llm, args.cache_dir, base_url=srv.base_url)
        pipe = Pipeline(ccfg, index=index)
        tool = AgenticRAGTool(pipe)
        for cid, messages in convs:
            session, turns = Session(), []
            for message in messages:
                turn = run_turn(session, message, chat, tool, cfg.agent)
                steps = turn.result.steps if turn.result is not None else []
                calls = [s for s in steps if s.prompt_tokens]
                turns.append({
                    "n": turn.n, "message": message, "history_turns": turn.history_turns,
                    "clarifying": turn.clarifying, "stop_reason": turn.stop_reason,
                    "llm_calls": len(calls), "prompt_tokens": turn.prompt_tokens,
                    "prompt_evaluated": turn.prompt_evaluated,
                    "prompt_reused": turn.prompt_reused,
                    "completion_tokens": turn.completion_tokens,
                    "latency_s": round(turn.latency_s, 2),
                    "calls": [{"kind": s.kind, "via": s.via, "sent": s.prompt_tokens,
                               "evaluated": s.prompt_evaluated, "reused": s.prompt_reused}
                              for s in calls]})
                print(f"{cid} turn {turn.n}: sent {turn.prompt_tokens}, evaluated "
                      f"{turn.prompt_evaluated}, reused {turn.prompt_reused}, "
                      f"{len(calls)} calls, {turn.latency_s:.1f} s", file=sys.stderr, flush=True)
            sessions.append({"conversation_id": cid, "turns": turns})
            _write(args, _report(args, cfg, sessions, started, load_before, srv, build_info,
                                 server_settings, processor_class, git_commit))
    return _report(args, cfg, sessions, started, load_before, srv, build_info, server_settings,
                   processor_class, git_commit)


def _report(args, cfg, sessions, started, load_before, srv, build_info, server_settings,  # noqa: ANN001, PLR0913
            processor_class, git_commit) -> dict[str, Any]:
    rows = summarize(sessions)
    later = [r["ratio_evaluated"] for r in rows[1:] if r["ratio_evaluated"] is not None]
    return {
        "benchmark": "session_prompt_cache", "started": started,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": git_commit(short=True), "processor": processor_class(),
        "cpus": os.cpu_count(), "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "model": cfg.llm.server.model, "server": {**server_settings(cfg.llm.server),
                                                  **_build(build_info, cfg)},
        "note": args.note,
        "setup": {"collection": args.collection, "sessions": len(sessions),
                  "turns": args.turns, "corpus": "the collection's pooled MTRAG reference passages",
                  "agent": cfg.agent.model_dump(exclude={"support"}),
                  "reply_cache": False},
        "target": {"ratio_evaluated_max_median": TARGET,
                   "worst_median_ratio": max(later, default=None),
                   "holds": bool(later) and max(later) <= TARGET},
        "per_turn": rows, "sessions": sessions}


def _build(build_info, cfg) -> dict[str, Any]:  # noqa: ANN001
    info = build_info(cfg.llm.server)
    return {k: info.get(k) for k in ("version", "commit", "cpu_variant") if k in info}


def _write(args: argparse.Namespace, report: dict[str, Any]) -> None:
    Path(args.json).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")


def render(report: dict[str, Any]) -> str:
    fmt = lambda v, d=0: "–" if v is None else f"{v:,.{d}f}"  # noqa: E731
    lines = [f"{report['setup']['sessions']} MTRAG-UN {report['setup']['collection']} "
             f"conversations x {report['setup']['turns']} user turns; {report['model']} on "
             f"llama-server {report['server'].get('cpu_variant')}, {report['server'].get('slots')} "
             f"slot(s); {report['processor']}, {report['cpus']} CPUs, load "
             f"{report['load_before'][0]:.1f} -> {report['load_after'][0]:.1f}; commit "
             f"{report['commit']}", "",
             "| turn | answered | earlier turns in prompt | LLM calls | sent | evaluated | "
             "reused | evaluated / turn 1 (median, max) | sent / turn 1 | latency s |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["per_turn"]:
        lines.append(f"| {r['turn']} | {r['answered']}/{r['sessions']} | "
                     f"{fmt(r['history_turns'])} | {fmt(r['llm_calls'])} | {fmt(r['sent'])} | "
                     f"{fmt(r['evaluated'])} | {fmt(r['reused'])} | "
                     f"{fmt(r['ratio_evaluated'], 2)} ({fmt(r['ratio_evaluated_max'], 2)}) | "
                     f"{fmt(r['ratio_sent'], 2)} | {fmt(r['latency_s'], 1)} |")
    t = report["target"]
    lines += ["", f"Target (evaluated, turn n / turn 1, median <= {t['ratio_evaluated_max_median']}): "
              f"worst turn's median {fmt(t['worst_median_ratio'], 2)}: "
              f"{'holds' if t['holds'] else 'FAILS'}"]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--collection", default="fiqa")
    p.add_argument("--sessions", type=int, default=6)
    p.add_argument("--turns", type=int, default=5)
    p.add_argument("--port", type=int, default=None, help="default: a free port")
    p.add_argument("--cache-dir", default=str(ROOT / "experiments" / "cache"))
    p.add_argument("--json", default=str(OUT))
    p.add_argument("--note", default="")
    p.add_argument("--render-only", action="store_true")
    args = p.parse_args()
    report = json.loads(Path(args.json).read_text()) if args.render_only else run(args)
    if not args.render_only:
        _write(args, report)
    print(render(report))


if __name__ == "__main__":
    main()
