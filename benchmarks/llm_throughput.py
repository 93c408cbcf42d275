"""`make bench`, LLM section: the local LLM's throughput and the claims protocols' LLM-evaluated
questions per hour, for one or more llama.cpp builds / server set-ups side by side in one run.

    .venv/bin/python benchmarks/llm_throughput.py [--questions 8]
        [--arm NAME PYTHON LAUNCH [LAYOUT] ...]   # default: the installed build, see below
    .venv/bin/python benchmarks/llm_throughput.py --render-only   # the section again from JSON

An arm is a server and a prompt layout: NAME, the PYTHON whose llama-cpp-python serves,
LAUNCH, one of
`plain` (`python -m llama_cpp.server`, the server as started before the launcher existed),
`auto` (`python -m agentic_rag.llm.launch`: ggml's best CPU variant for this processor when
the build ships variants; what `LlamaServer` runs), a variant name such as `haswell` (the
launcher with `AGENTIC_RAG_CPU_VARIANT` set: that variant, whatever the processor has), or
the path of a llama.cpp `llama-server` executable (`make llama-server`; `llm.server.binary`:
PYTHON is then unused), optionally with `:VARIANT` to pin ggml's CPU variant
(`llm.server.cpu_variant`), `+repack` / `+no-repack` to set `llm.server.repack` (default:
`binary.repacks`, plain kernels on zen4 / icelake) and `@N` for N slots (`llm.server.slots`;
the arm then sends each question's calls N at a time where the protocol allows, see `question`),
and optionally LAYOUT, the answer prompt's layout (`llm_judge.answer_messages`):
`context-first` (today's, the default) or `instructions-first` (before prefix re-use).
Default arms (issue 39): `old-default`, llama-cpp-python's server (`auto`, today's layout),
the default before issue 39 and the portable fall-back now; when that build ships CPU
variants, the same build held to the AVX2 variant (`installed-avx2`); and `new-default`, the
C++ llama-server `make install` builds (one slot), with the CPU variant the default config
runs (ggml's pick for this processor when a test completion runs on it:
`binary.runnable_binary`), and where that runs ggml's plain kernels, the same with the weights
repacked (`repacked`, the default until 2026-12-06). The first arm is the reference of the
"vs first arm" column. The
layout before prefix re-use: `--arm before PYTHON auto instructions-first`.
All arms' servers run at once on ports 8801... (an idle server uses no CPU); the questions go
question by question to each arm in turn, the order rotated per question, so background load
falls on every arm alike (as bench.py interleaves its repetitions).

Per arm, with a WARM server (LlamaServer's warm-up request first) and a COLD reply cache (the
chat model is built with `llm.cache: false`, every call reaches the server):
- probes: one prompt of the first question's hybrid context (~1k tokens, 1 token generated)
  and one generation of 128 tokens;
- the (b) + (c) claims protocol mix on the first `--questions` questions of
  `load_dataset("halueval-qa").split("test").sample(200, 0, 2000)` (the claims' sample), hybrid
  static retrieval k = 10, default context: per question three answers
  (`llm_judge.generate_answer`, temperature 0, 64 tokens) on the dense-only context, the hybrid
  context and the hybrid context with `context.boundaries: False`, and two graded-judge calls
  (`support.graded_support` on `evaluate.judge_view(hits, ctx.included)`) for the two hybrid
  arms, in the order the claims make them (`ORDER`): each arm's answer LAYOUT
  (`llm_judge.answer_messages`) decides which calls share a processed prefix (llama-cpp-python
  keeps the longest common prefix with the previous prompt). Contexts are retrieved once,
  before any server starts, and are the same for every arm.
Figures: prompt and generated tokens/s from the server's own timings (llama.cpp's
`llama_perf_context_print` lines in the server log: prompt tokens actually evaluated, i.e.
after the reused prefix, over their eval time; generated tokens over their eval time), summed
over the protocol's calls; questions per hour = questions / the summed wall-clock time of the
arm's protocol calls (client side; retrieval excluded: done beforehand). Greedy equality: the first 20 answer prompts'
replies of each arm against the first arm's, verbatim, with the differing ones shown; the
judge's P(yes) compared too. The ratio between arms is what carries over between machines.

Figures go to benchmarks/LLM_THROUGHPUT.json and to the "LLM throughput" section at the end of
benchmarks/RESULTS.md (between markers; `bench.py` renders the rest of that file, so `make
bench` runs this script after it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from agentic_rag.config import RAGConfig
from agentic_rag.config_llm import LLAMA_SERVER_BUILD, LLMConfig, ServerConfig  # noqa: E402
from agentic_rag.evaluation.llm_judge import ANSWER_LAYOUTS  # noqa: E402
from agentic_rag.experiments.runfolder import git_commit, git_dirty  # noqa: E402
from agentic_rag.llm.launch import VARIANT_ENV  # noqa: E402
from agentic_rag.llm.server import LAUNCHER, LlamaServer, build_info, llama_build_info, server_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sections import write_section  # noqa: E402

HERE = Path(__file__).resolve().parent
JSON_OUT = HERE / "LLM_THROUGHPUT.json"
MD_OUT = HERE / "RESULTS.md"
BEGIN, END = "<!-- llm-throughput:begin -->", "<!-- llm-throughput:end -->"
EQUALITY_PROMPTS = 20
DENSE = {"fusion.retrievers": ["dense"], "gate.mode": "static"}
HYBRID = {"fusion.retrievers": ["dense", "bm25"], "gate.mode": "static"}
K = 10


# -- the protocol's prompts (retrieval once, outside the timed part) ---------------------

def protocol_items(n: int, cache_dir: str) -> list[dict[str, Any]]:
    """Per question: the three answer contexts and the judge view, as the (b)/(c) protocols
    build them."""
    from agentic_rag.datasets.qa import load_dataset
    from agentic_rag.experiments.measure import judge_view
    from agentic_rag.experiments.plan import open_index
    from agentic_rag.retrieve.pipeline import Pipeline

    ds = load_dataset("halueval-qa").split("test").sample(200, 0, 2000)
    base = RAGConfig()
    first, index = open_index(base.with_overrides(HYBRID), ds, cache_dir)
    home = {"home": first.home}
    dense = Pipeline(base.with_overrides({**DENSE, **home}), index=index)
    hybrid = Pipeline(base.with_overrides({**HYBRID, **home}), index=index)
    flat = Pipeline(base.with_overrides({**HYBRID, **home, "context.boundaries": False}),
                    index=index)
    items = []
    for q in ds.queries[:n]:
        d_intent, d_res = dense.retrieve(q.text, k=K)
        d_ctx = dense.format(d_res.hits[:K], d_intent)
        intent, res = hybrid.retrieve(q.text, k=K)
        hits = res.hits[:K]
        on, off = hybrid.format(hits, intent), flat.format(hits, intent)
        items.append({"id": q.id, "question": q.text,
                      "contexts": {"dense": d_ctx.text, "hybrid": on.text, "hybrid_flat": off.text},
                      "judge_views": {"hybrid": judge_view(hits, on.included),
                                      "hybrid_flat": judge_view(hits, off.included)}})
    return items


# The protocol's calls per question, in the order the claims make them. Before prefix re-use
# ("instructions-first" answers): b-answers first (dense, hybrid), then c-boundaries
# (boundaries off: answer, judge; boundaries on: its answer is b-answers' hybrid one, from the
# cache, so only its judge, which re-uses the canonical judge view the previous judge call
# processed). Today ("context-first"): c-boundaries first, each answer right before its
# judge (boundaries on: the answer's context is the judge's view, so the judge re-uses it,
# and the on-answer re-uses the off-judge's view), then b-answers' dense answer (its hybrid
# one is c's, cached). The same 5 calls either way.
ORDER = {
    "instructions-first": (("answer", "dense"), ("answer", "hybrid"), ("answer", "hybrid_flat"),
                           ("judge", "hybrid_flat"), ("judge", "hybrid")),
    "context-first": (("answer", "hybrid_flat"), ("judge", "hybrid_flat"), ("answer", "hybrid"),
                      ("judge", "hybrid"), ("answer", "dense")),
}


# -- server timings ----------------------------------------------------------------------

_PROMPT = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
# llama-cpp-python: "llama_perf_context_print:        eval time = ... ms / N runs";
# llama-server: "slot print_timing: ... |        eval time = ... ms / N tokens"
_EVAL = re.compile(r"(?<!prompt )eval time =\s*([\d.]+) ms /\s*(\d+) (?:runs|tokens)")
_PREFIX = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


def server_timings(log_text: str) -> dict[str, float]:
    """Sums over the requests logged in `log_text` (llama-cpp-python's verbose server log)."""
    p = [(float(ms), int(n)) for ms, n in _PROMPT.findall(log_text)]
    g = [(float(ms), int(n)) for ms, n in _EVAL.findall(log_text)]
    reused = [(int(a), int(b)) for a, b in _PREFIX.findall(log_text)]
    p_ms, p_n = sum(x[0] for x in p), sum(x[1] for x in p)
    g_ms, g_n = sum(x[0] for x in g), sum(x[1] for x in g)
    return {"requests": len(p), "prompt_tokens_evaluated": p_n, "prompt_eval_s": p_ms / 1000,
            "prompt_tokens_per_s": p_n / (p_ms / 1000) if p_ms else float("nan"),
            "generated_tokens": g_n, "generation_s": g_ms / 1000,
            "generated_tokens_per_s": g_n / (g_ms / 1000) if g_ms else float("nan"),
            "prefix_tokens_reused": sum(a for a, _ in reused)}


class _LogWindow:
    """The server log from now on."""

    def __init__(self, path: Path) -> None:
        self.path, self.start = path, path.stat().st_size

    def text(self) -> str:
        time.sleep(0.2)  # the last request's perf lines are printed as it returns
        with self.path.open("rb") as f:
            f.seek(self.start)
            return f.read().decode(errors="replace")


# -- one arm -----------------------------------------------------------------------------

class _PlainServer(LlamaServer):
    """`python -m llama_cpp.server`: the server as LlamaServer started it before the launcher."""

    def command(self, model_path: Path) -> list[str]:
        cmd = super().command(model_path)
        cmd[cmd.index(LAUNCHER)] = "llama_cpp.server"
        return cmd


class Arm:
    """One server set-up: started (warm) and stopped by the caller; `question` runs one
    question's protocol calls on it and returns their wall-clock time."""

    def __init__(self, name: str, python: str, launch: str, port: int, home: Path,
                 model: str = "qwen2.5-coder-1.5b", layout: str = "context-first") -> None:
        self.name, self.python, self.launch, self.model = name, python, launch, model
        self.layout = layout
        self.py = None if python == sys.executable else python
        head, _, slots = launch.partition("@")
        rest, plus, repack = head.rpartition("+")
        if plus and repack in ("repack", "no-repack"):  # a path may hold a "+" too
            head = rest
        else:
            plus = repack = ""
        binary, _, variant = head.partition(":")
        self.binary = binary if os.sep in binary else None
        if plus and not self.binary:
            raise SystemExit(f"--arm {name}: {launch!r}: `+repack` or `+no-repack` after a "
                             "llama-server path only")
        self.cfg = ServerConfig(model=model, port=port, binary=self.binary,
                                slots=int(slots or 1),
                                cpu_variant=(variant or None) if self.binary else None,
                                repack=(repack == "repack") if plus else None)
        cls = _PlainServer if launch == "plain" else LlamaServer
        self.srv = cls(self.cfg, home=home / name, python=self.py)
        self.answers: list[dict] = []
        self.judges: list[dict] = []
        self.protocol_s = 0.0

    def start(self) -> None:
        from agentic_rag.llm.client import OpenAIChatModel

        old = os.environ.pop(VARIANT_ENV, None)
        if self.launch not in ("plain", "auto") and not self.binary:
            os.environ[VARIANT_ENV] = self.launch
        try:  # the server and the build info see the same variant setting
            self.info = (build_info(self.cfg) if self.binary
                         else llama_build_info.__wrapped__(self.py))
            t0 = time.perf_counter()
            self.srv.start()  # includes LlamaServer's one-token warm-up request
            self.ready_s = time.perf_counter() - t0
        finally:
            os.environ.pop(VARIANT_ENV, None)
            if old is not None:
                os.environ[VARIANT_ENV] = old
        self.chat = OpenAIChatModel(LLMConfig(cache=False, temperature=0.0,
                                              max_concurrency=self.cfg.slots),
                                    base_url=self.srv.base_url)
        lines = self.srv.log_path.read_text(errors="replace").splitlines()
        self.launch_line = next((x for x in lines if "llama_launch:" in x
                                 or "load_backend: loaded CPU" in x), None)
        self.system_info = next((x.strip() for x in lines if x.startswith("CPU :")
                                 or "system_info:" in x), None)

    def probes(self, context: str) -> None:
        from agentic_rag.evaluation.llm_judge import generate_answer

        w = _LogWindow(self.srv.log_path)
        generate_answer(self.chat, "Summarise the context in one word.", context, max_tokens=1)
        self.probe_prompt = server_timings(w.text())
        w = _LogWindow(self.srv.log_path)
        self.chat.chat([{"role": "user", "content": "Write the numbers from 1 to 300 in words, "
                         "separated by commas."}], max_tokens=128)
        self.probe_gen = server_timings(w.text())
        self.window = _LogWindow(self.srv.log_path)  # the protocol's requests from here on

    def question(self, it: dict) -> float:
        from agentic_rag.evaluation.llm_judge import generate_answer
        from agentic_rag.evaluation.support import graded_support

        t0 = time.perf_counter()
        given = {}

        def answer(arm: str) -> None:
            r = generate_answer(self.chat, it["question"], it["contexts"][arm],
                                layout=self.layout)
            given[arm] = r.content
            self.answers.append({"id": it["id"], "context": arm, "answer": r.content,
                                 "prompt_tokens": r.prompt_tokens,
                                 "completion_tokens": r.completion_tokens,
                                 "latency_s": round(r.latency_s, 2)})

        def judge(arm: str) -> None:
            p, r = graded_support(self.chat, it["judge_views"][arm], given[arm].strip())
            self.judges.append({"id": it["id"], "context": arm, "p_yes": p,
                                "prompt_tokens": r.prompt_tokens,
                                "latency_s": round(r.latency_s, 2)})

        if self.cfg.slots == 1:
            for kind, arm in ORDER[self.layout]:
                (answer if kind == "answer" else judge)(arm)
        else:  # each context's answer → judge chain on its own slot, the slots kept busy
            from concurrent.futures import ThreadPoolExecutor

            chains: dict[str, list[str]] = {}
            for kind, arm in ORDER[self.layout]:
                chains.setdefault(arm, []).append(kind)

            def run(arm: str) -> None:
                for kind in chains[arm]:
                    (answer if kind == "answer" else judge)(arm)

            with ThreadPoolExecutor(self.cfg.slots) as pool:
                list(pool.map(run, chains))
        dt = time.perf_counter() - t0
        self.protocol_s += dt
        return dt

    def result(self, n: int) -> dict[str, Any]:
        timings = server_timings(self.window.text())
        calls = len(self.answers) + len(self.judges)
        return {"name": self.name, "python": self.python, "launch": self.launch,
                "model": self.model, "layout": self.layout, "build": self.info,
                "server_log_launch_line": self.launch_line,
                "server_system_info": self.system_info, "settings": server_settings(self.cfg),
                "ready_s": round(self.ready_s, 1), "probe_prompt": self.probe_prompt,
                "probe_generation": self.probe_gen,
                "protocol": {**timings, "questions": n, "llm_calls": calls,
                             "wall_s": self.protocol_s,
                             "questions_per_hour": 3600 * n / self.protocol_s,
                             "llm_calls_per_hour": 3600 * calls / self.protocol_s},
                "answers": self.answers, "judges": self.judges}


def run_arms(specs: list[list[str]], items: list[dict], home: Path, port: int,
             model: str, log=print) -> list[dict]:  # noqa: ANN001
    """All arms' servers up at once (idle ones use no CPU), then question by question each
    arm in turn, the order rotated per question, so that background load falls on every arm
    alike (as bench.py interleaves repetitions)."""
    arms = [Arm(name, python, launch, port + i, home, model, *rest)
            for i, (name, python, launch, *rest) in enumerate(specs)]
    try:
        for a in arms:
            log(f"arm {a.name}: {a.python} ({a.launch}) on port {a.cfg.port}")
            a.start()
        for a in arms:
            a.probes(items[0]["contexts"]["hybrid"])
        for i, it in enumerate(items):
            order = arms[i % len(arms):] + arms[:i % len(arms)]
            took = {a.name: a.question(it) for a in order}
            log(f"  question {i + 1}/{len(items)}: " + ", ".join(
                f"{k} {v:.0f}s" for k, v in took.items()))
        return [a.result(len(items)) for a in arms]
    finally:
        for a in arms:
            a.srv.stop()


# -- comparison and rendering -------------------------------------------------------------

def equality(base: dict, other: dict, n: int = EQUALITY_PROMPTS) -> dict[str, Any]:
    """`other`'s answers and judge scores against `base`'s on the same (question, context),
    the first `n` answer prompts of `base` (arms may order their calls differently)."""
    theirs = {(x["id"], x["context"]): x for x in other["answers"]}
    pairs = [(x, theirs[x["id"], x["context"]]) for x in base["answers"][:n]
             if (x["id"], x["context"]) in theirs]
    diffs = [{"id": x["id"], "context": x["context"], base["name"]: x["answer"],
              other["name"]: y["answer"]} for x, y in pairs if x["answer"] != y["answer"]]
    their_j = {(x["id"], x["context"]): x for x in other["judges"]}
    jp = [(x, their_j[x["id"], x["context"]]) for x in base["judges"]
          if (x["id"], x["context"]) in their_j]
    dp = [abs(x["p_yes"] - y["p_yes"]) for x, y in jp]
    return {"prompts": len(pairs), "identical": len(pairs) - len(diffs),
            "diffs": diffs, "judge_calls": len(dp), "judge_p_yes_max_abs_diff": max(dp, default=0.0),
            "judge_verdicts_equal": sum((x["p_yes"] >= 0.5) == (y["p_yes"] >= 0.5) for x, y in jp)}


def render(res: dict) -> str:
    st = res["stamp"]
    arms = res["arms"]
    base = arms[0]
    L = [BEGIN, "## LLM throughput (local server, claims protocol mix)", "",
         f"Measured {st['date']} at commit {st['commit']}"
         + (" + uncommitted changes" if st["dirty"] else "")
         + f" by `{st['command']}` on {st['machine']} (load {st['load']} at start). "
         "Method in `benchmarks/llm_throughput.py`'s docstring: warm server, cold reply cache, "
         f"{base['protocol']['questions']} HaluEval test questions × (3 answers + 2 graded-judge "
         "calls); tokens/s from the server's own timings. Only the ratios carry over between "
         "machines.", "",
         "| arm | answer layout | build, CPU backend loaded | prompt tok/s (probe) | generated tok/s (probe) "
         "| prompt tok/s (protocol) | generated tok/s (protocol) | prefix tokens reused "
         "| protocol wall | questions/hour | vs first arm |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for a in arms:
        b, p = a["build"], a["protocol"]
        backend = (f"variant `{b['cpu_variant']}`" if b.get("cpu_variant")
                   else f"linked-in `{b.get('cpu_backend')}`")
        if b.get("server") == "llama-server":
            kernels = {True: ", weights repacked", False: ", plain kernels"}.get(
                a["settings"].get("repack"), "")
            build = (f"C++ llama-server {b['version']}, "
                     f"{a['settings']['slots']} slot(s), {backend}{kernels}")
        else:
            kind = (f"GGML_BACKEND_DL, {len(b['cpu_variants'])} variants" if b["backend_dl"]
                    else "portable")
            build = (f"{kind} ({'forced' if b.get('cpu_variant_forced') else a['launch']}), "
                     f"{backend}")
        ratio = p["questions_per_hour"] / base["protocol"]["questions_per_hour"]
        # llama-server logs no prefix-match line: its re-use shows in fewer tokens evaluated
        reused = ("n/a" if b.get("server") == "llama-server"
                  else f"{p['prefix_tokens_reused']:,}")
        L.append(f"| {a['name']} | {a.get('layout', 'instructions-first')} | {build} | "
                 f"{a['probe_prompt']['prompt_tokens_per_s']:.0f} | "
                 f"{a['probe_generation']['generated_tokens_per_s']:.1f} | "
                 f"{p['prompt_tokens_per_s']:.0f} | {p['generated_tokens_per_s']:.1f} | "
                 f"{reused} | {p['wall_s'] / 60:.1f} min | "
                 f"{p['questions_per_hour']:.0f} | {ratio:.2f}× |")
    L += ["", f"Probe prompt: {base['probe_prompt']['prompt_tokens_evaluated']} tokens; probe "
          f"generation: {base['probe_generation']['generated_tokens']} tokens. Protocol: "
          f"{base['protocol']['llm_calls']} calls, {base['protocol']['prompt_tokens_evaluated']:,} "
          "prompt tokens evaluated by the first arm.", ""]
    for a in arms[1:]:
        e = res["equality"][a["name"]]
        L.append(f"Greedy equality, {a['name']} vs {base['name']}: {e['identical']}/{e['prompts']} "
                 f"answer prompts identical (temperature 0, 64 tokens); judge P(yes) max abs "
                 f"difference {e['judge_p_yes_max_abs_diff']:.4f} over {e['judge_calls']} calls, "
                 f"{e['judge_verdicts_equal']}/{e['judge_calls']} same verdict at 0.5.")
        for d in e["diffs"]:
            L.append(f"- {d['id']} ({d['context']}): {base['name']} {d[base['name']]!r} → "
                     f"{a['name']} {d[a['name']]!r}")
        L.append("")
    if (e := res.get("kernels_equality")) is not None:
        L.append(f"Greedy equality, new-default (plain kernels) vs repacked (the same build and "
                 f"variant, weights repacked): {e['identical']}/{e['prompts']} answer prompts "
                 f"identical; judge P(yes) max abs difference {e['judge_p_yes_max_abs_diff']:.4f} "
                 f"over {e['judge_calls']} calls, {e['judge_verdicts_equal']}/{e['judge_calls']} "
                 "same verdict at 0.5.")
        L += [f"- {d['id']} ({d['context']}): repacked {d['repacked']!r} → plain "
              f"{d['new-default']!r}" for d in e["diffs"]] + [""]
    L.append("Builds: " + "; ".join(
        (f"{a['name']}: llama-server {a['build']['version']} ({a['build']['binary']}), "
         if a["build"].get("server") == "llama-server" else
         f"{a['name']}: llama-cpp-python {a['build']['llama_cpp_python']}, ggml "
         f"{a['build']['ggml_version']} ({a['build']['ggml_commit']}), ")
        + (f"server log `{a['server_system_info']}`" if a["server_system_info"]
           else f"CPU variant `{a['build'].get('cpu_variant')}`") for a in arms) + ".")
    L += ["", END]
    return "\n".join(L) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--arm", nargs="+", action="append",
                    metavar="NAME PYTHON LAUNCH [LAYOUT]",
                    help="LAYOUT: context-first (default) or instructions-first")
    ap.add_argument("--port", type=int, default=8801, help="first arm's port; then +1 per arm")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b",
                    help="llm.server.model (smollm2-135m checks the wiring in seconds)")
    ap.add_argument("--cache-dir", default="experiments/cache", help="the sweep's index cache")
    ap.add_argument("--json", default=str(JSON_OUT), help="the figures")
    ap.add_argument("--md", default=str(MD_OUT), help="the Markdown file whose section is rewritten")
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args()
    if args.render_only:
        write_section(Path(args.md), render(json.loads(Path(args.json).read_text())))
        return
    arms = args.arm
    for a in arms or []:
        if len(a) not in (3, 4) or (len(a) == 4 and a[3] not in ANSWER_LAYOUTS):
            ap.error(f"--arm {' '.join(a)}: expected NAME PYTHON LAUNCH [LAYOUT], LAYOUT one "
                     f"of {ANSWER_LAYOUTS}")
    if not arms:  # the old default (issue 39) against the new one, today's prompt layout
        arms = [["old-default", sys.executable, "auto", "context-first"]]
        if llama_build_info()["backend_dl"]:
            arms.append(["installed-avx2", sys.executable, "haswell", "context-first"])
        default = ServerConfig().binary  # the llama-server `make install` built, if it did
        if default:  # ggml's pick that answers a test completion (`binary.runnable_binary`)
            arms.append(["new-default", sys.executable, default, "context-first"])
            if server_settings(ServerConfig())["repack"] is False:  # plain kernels: vs repacked
                arms.append(["repacked", sys.executable, default + "+repack", "context-first"])
        else:
            print(f"no llama-server build ({LLAMA_SERVER_BUILD}): the default is the old one",
                  flush=True)
    stamp = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
             "commit": git_commit(short=True), "dirty": git_dirty(),
             "command": "python benchmarks/llm_throughput.py " + " ".join(sys.argv[1:]),
             "machine": f"{platform.machine()} {os.cpu_count()} CPUs "
                        f"({_cpu_model()})", "load": f"{os.getloadavg()[0]:.1f}"}
    print(f"retrieving the contexts of {args.questions} questions ...", flush=True)
    items = protocol_items(args.questions, args.cache_dir)
    with tempfile.TemporaryDirectory(prefix="llm-bench-") as tmp:
        results = run_arms(arms, items, Path(tmp), args.port, args.model,
                           log=lambda m: print(m, flush=True))
    res = {"stamp": stamp, "arms": results,
           "equality": {a["name"]: equality(results[0], a) for a in results[1:]}}
    by_name = {a["name"]: a for a in results}
    if {"new-default", "repacked"} <= by_name.keys():  # what the plain kernels change
        res["kernels_equality"] = equality(by_name["repacked"], by_name["new-default"])
    Path(args.json).write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    section = render(res)
    write_section(Path(args.md), section)
    print(section)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
