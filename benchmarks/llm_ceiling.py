"""Issue 64: the local LLM's ceiling on the processor at hand, and which way to run it is fastest.

    make llm-ceiling                                   # = the command below, on an idle machine
    nice -n 10 .venv/bin/python benchmarks/llm_ceiling.py [--smoke] [--repetitions 3]
        [--variants zen4 haswell] [--stage2-from both|today|none] [--pp 512] [--tg 64]
        [--prompts 12] [--max-tokens 64] [--shared]
    .venv/bin/python benchmarks/llm_ceiling.py --render-only   # LLM_CEILING.md from the JSONs

For the default model (`qwen2.5-coder-1.5b`, Qwen2.5-Coder-1.5B-Instruct Q4_K_M) this measures
prompt (pp, 512 tokens) and generation (tg, 64 tokens) tokens/s with llama.cpp's own
`llama-bench`, built from the llama-server's source (`make llama-tools`), for each candidate
way to run it:
- stage 1, the cross of ggml's CPU variants this processor can load (each run from a folder
  where ggml can load only that one; `--smoke`: ggml's pick and `haswell`), repacked weight
  layouts on/off (`--repack`) and weight formats: the shipped Q4_K_M and the same weights
  converted ONCE to Q4_0 and Q8_0 (`models.converted_model`, cached by the source's sha256;
  the conversion's seconds are recorded), at today's settings otherwise;
- stage 2, from today's default path and from stage 1's fastest: thread counts (1 .. the CPUs
  this process may use), batch / micro-batch sizes (prompt only: a generated token is one
  batch) and flash attention, one at a time (a batch above the 512-token prompt is the same
  run as 512, so batch 256 / 512 are measured at micro-batch 256).
Every row names the processor (vendor, family/model, flags, `processor.processor_class`) and the
load average before and after it (a shared machine's figures are smoke, not the ceiling).
First the answers (whether a format is correct matters more than its speed): for each
weight format, a llama-server on ggml's pick (today's repack rule) answers
`variant_equality.CONTEXTS` greedily and its yes/no judge prompts; answers identical to
Q4_K_M's are counted, the differing ones shown, the judge's largest |dP(yes)| and verdict
changes at 0.5 given.

Writes benchmarks/LLM_CEILING_<class>_<ggml's pick>.json (e.g. LLM_CEILING_AVX-512_zen4.json;
`--json` another) and renders every LLM_CEILING_*.json into benchmarks/LLM_CEILING.md.
The winner per processor class goes into `agentic_rag/llm/fast_path.py`'s FASTEST by hand, only
from a run on idle cores whose answers are correct (docs/servers.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from variant_equality import CONTEXTS, JUDGE_CLAIMS, _post, answer_messages, judge_messages, p_yes  # noqa: E402

from agentic_rag.config_llm import LLAMA_SERVER_BUILD, ServerConfig  # noqa: E402
from agentic_rag.llm.binary import (  # noqa: E402
    PLAIN_KERNELS_FASTER,
    VARIANT_RANK,
    cpu_variants,
    server_binary_info,
)
from agentic_rag.llm.models import WEIGHT_FORMATS, converted_model, llama_tool  # noqa: E402
from agentic_rag.llm.processor import processor_info  # noqa: E402
from agentic_rag.llm.server import LlamaServer  # noqa: E402

MD_OUT = HERE / "LLM_CEILING.md"
MODEL = "qwen2.5-coder-1.5b"
PP, TG = 512, 64  # --pp / --tg change them
TODAY = {"n_batch": 512, "n_ubatch": 512, "flash_attn": 0}  # server.py's _BINARY_DEFAULTS


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def tool_in_variant(tool: Path, variant: str) -> Path:
    """`tool` (llama-bench) in `<its folder>/variants-tools/<variant>/` beside links to its
    libraries and only `variant`'s CPU library, so ggml can load only that one (as
    `binary.variant_binary` holds the server; a folder of its own: the server's is shared)."""
    folder = tool.parent / "variants-tools" / variant
    held = folder / tool.name
    if held.exists():
        return held
    folder.parent.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{variant}.", dir=folder.parent))
    os.link(tool, tmp / tool.name)
    for lib in tool.parent.iterdir():
        if ".so" in lib.name and (not lib.name.startswith("libggml-cpu-")
                                  or lib.name == f"libggml-cpu-{variant}.so"):
            (tmp / lib.name).symlink_to(lib.absolute())
    try:
        tmp.rename(folder)
    except OSError:  # another run made it first
        pass
    return held


def loads(held: Path, variant: str) -> bool:
    """Whether this processor loads `variant` (ggml refuses a variant whose instructions it
    lacks; then no CPU backend loads)."""
    r = subprocess.run([str(held), "--list-devices"], capture_output=True, text=True,
                       cwd=held.parent, stdin=subprocess.DEVNULL, timeout=120)
    return f"libggml-cpu-{variant}.so" in r.stdout + r.stderr


def bench(held: Path, models: dict[str, Path], reps: int, repack: str = "0,1",
          threads: str | None = None, batch: str = "512", ubatch: str = "512",
          fa: str = "0", gen: bool = True) -> list[dict[str, Any]]:
    """One llama-bench run (its parameter lists crossed), rows as it reports them, each with
    the weight format's name and the load average around it."""
    cmd = [str(held), "-o", "json", "-r", str(reps), "-p", str(PP), "-n", str(TG if gen else 0),
           "--repack", repack, "-b", batch, "-ub", ubatch, "-fa", fa,
           "-t", threads or str(len(os.sched_getaffinity(0)))]
    for path in models.values():
        cmd += ["-m", str(path)]
    before = loadavg()
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=held.parent,
                       stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {r.returncode}: {r.stderr[-800:]}")
    after = loadavg()
    by_path = {str(p): f for f, p in models.items()}
    rows = []
    for row in json.loads(r.stdout):
        rows.append({"format": by_path.get(row["model_filename"], row["model_filename"]),
                     "test": "pp" if row["n_prompt"] else "tg",
                     "tokens": row["n_prompt"] or row["n_gen"],
                     "threads": row["n_threads"], "n_batch": row["n_batch"],
                     "n_ubatch": row["n_ubatch"], "flash_attn": int(row["flash_attn"] in (1, True, "on")),
                     "repack": int(bool(row.get("repack", row.get("use_extra_bufts", 1)))),
                     "tokens_per_s": round(row["avg_ts"], 2), "stddev": round(row["stddev_ts"], 2),
                     "samples": [round(x, 2) for x in row.get("samples_ts", [])],
                     "loadavg_before": before, "loadavg_after": after})
    print(f"  {held.parent.name}: {len(rows)} rows in {time.perf_counter() - t0:.0f} s, "
          f"load {before[:1]} -> {after[:1]}", flush=True)
    return rows


def answers(fmt: str, path: Path, port: int, home: Path, n: int = len(CONTEXTS),
            max_tokens: int = 64) -> dict[str, Any]:
    """Greedy answers and judge P(yes) of a llama-server on ggml's pick for one weight format."""
    cfg = ServerConfig(model=str(path), binary=str(LLAMA_SERVER_BUILD), port=port,
                       startup_timeout_s=900)
    with LlamaServer(cfg, home=home / fmt) as srv:
        url = srv.base_url + "/chat/completions"
        out, judge = [], []
        for context, question in CONTEXTS[:n]:
            r = _post(url, {"model": "local", "messages": answer_messages(context, question),
                            "temperature": 0, "max_tokens": max_tokens})
            out.append(r["choices"][0]["message"]["content"])
        for i, claim in JUDGE_CLAIMS[:n]:
            r = _post(url, {"model": "local", "messages": judge_messages(CONTEXTS[i][0], claim),
                            "temperature": 0, "max_tokens": 1, "logprobs": True, "top_logprobs": 10})
            judge.append(p_yes(r["choices"][0]))
    return {"format": fmt, "answers": out, "p_yes": judge, "questions": [q for _, q in CONTEXTS[:n]]}


def compare(base: dict, other: dict) -> dict[str, Any]:
    same = [a == b for a, b in zip(base["answers"], other["answers"], strict=True)]
    dp = [abs(a - b) for a, b in zip(base["p_yes"], other["p_yes"], strict=True)]
    flips = sum((a >= 0.5) != (b >= 0.5) for a, b in zip(base["p_yes"], other["p_yes"], strict=True))
    return {"format": other["format"], "identical_answers": sum(same), "answers": len(same),
            "differing": [{"question": base["questions"][i], "Q4_K_M": base["answers"][i],
                           other["format"]: other["answers"][i]}
                          for i, s in enumerate(same) if not s],
            "p_yes_max_abs_diff": round(max(dp), 4), "verdict_changes": flips}


def fastest(rows: list[dict], test: str = "pp") -> dict:
    return max((r for r in rows if r["test"] == test), key=lambda r: r["tokens_per_s"])


def run(args: argparse.Namespace) -> dict[str, Any]:
    cpu = processor_info()
    server = str(LLAMA_SERVER_BUILD)
    pick = server_binary_info(server)["cpu_variant"]
    tool = llama_tool("llama-bench")
    rank = {v: i for i, v in enumerate(VARIANT_RANK)}
    variants = sorted(cpu_variants(server), key=lambda v: rank.get(v, len(rank)))
    if args.smoke:
        variants = [v for v in variants if v in (pick, "haswell")]
    if args.variants:
        variants = [v for v in variants if v in args.variants]
    formats = {}
    conversions = {}
    for fmt in args.formats:
        t0 = time.perf_counter()
        path, record = converted_model(MODEL, fmt)
        formats[fmt] = path
        conversions[fmt] = {**record, "this_call_s": round(time.perf_counter() - t0, 1)}
        print(f"{fmt}: {path} (converted in {record['seconds']} s; this call "
              f"{conversions[fmt]['this_call_s']} s)", flush=True)
    rows, skipped, comparison = [], {}, []
    partial = HERE / f".llm_ceiling.{os.getpid()}.partial.json"  # the rows so far, if stopped

    def save() -> None:
        partial.write_text(json.dumps({"processor": cpu, "conversions": conversions,
                                       "answers": comparison, "rows": rows}, indent=1))

    if not args.no_answers:  # first: whether a format is correct matters more than its speed
        print("answers per weight format (ggml's pick, today's repack rule)", flush=True)
        with tempfile.TemporaryDirectory() as home:
            got = [answers(f, p, args.port + i, Path(home), args.prompts, args.max_tokens)
                   for i, (f, p) in enumerate(formats.items())]
        comparison = [compare(got[0], g) for g in got]
        save()

    print("stage 1: variant x repack x format", flush=True)
    for v in variants:
        held = tool_in_variant(tool, v)
        if not loads(held, v):
            skipped[v] = "this processor cannot load it (its instructions are missing)"
            continue
        for row in bench(held, formats, args.repetitions):
            rows.append({"stage": 1, "variant": v, **row})
        save()
    today_repack = int(pick not in PLAIN_KERNELS_FASTER)
    today = {"variant": pick, "format": "Q4_K_M", "repack": today_repack}
    best = fastest(rows)
    starts = {"today": today, "stage-1 fastest": {k: best[k] for k in ("variant", "format", "repack")}}
    if args.stage2_from != "both":
        starts.pop("stage-1 fastest")
    if args.stage2_from == "none":
        starts.clear()
    print("stage 2: threads, batch / micro-batch, flash attention (one at a time)", flush=True)
    ncpu = len(os.sched_getaffinity(0))
    threads = ",".join(str(t) for t in sorted({1, max(1, ncpu // 2), ncpu}))
    done = set()
    for name, start in starts.items():
        key = tuple(start.values())
        if key in done:
            continue
        done.add(key)
        held = tool_in_variant(tool, start["variant"])
        one = {start["format"]: formats[start["format"]]}
        for label, kw in (("threads", {"threads": threads}),
                          ("batch", {"batch": "256,512", "ubatch": "256", "gen": False}),
                          ("ubatch", {"batch": "512", "ubatch": "128,256,512", "gen": False}),
                          ("flash_attn", {"fa": "0,1"})):
            for row in bench(held, one, args.repetitions, repack=str(start["repack"]), **kw):
                rows.append({"stage": 2, "from": name, "factor": label,
                             "variant": start["variant"], **row})
            save()
    partial.unlink(missing_ok=True)
    return {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "command": "python benchmarks/llm_ceiling.py " + " ".join(sys.argv[1:]),
            "processor": cpu, "ggml_pick": pick, "model": MODEL,
            "llama_server": server_binary_info(server)["version"],
            "pp_tokens": PP, "tg_tokens": TG, "repetitions": args.repetitions,
            "answer_prompts": args.prompts, "answer_max_tokens": args.max_tokens,
            "shared_machine": args.shared, "conversions": conversions, "skipped": skipped,
            "today": today, "rows": rows, "answers": comparison}


def _key(r: dict) -> str:
    return (f"{r['variant']} {r['format']} repack={r['repack']} t={r['threads']} "
            f"b={r['n_batch']}/{r['n_ubatch']} fa={r['flash_attn']}")


def render_one(res: dict) -> str:
    cpu = res["processor"]
    def where(r: dict) -> tuple:  # a stage-2 row can repeat a stage-1 path: kept apart
        return r["stage"], r.get("from"), r.get("factor"), _key(r)

    pp = {where(r): r for r in res["rows"] if r["test"] == "pp"}
    tg = {where(r): r for r in res["rows"] if r["test"] == "tg"}
    t = res["today"]
    ref = next((r for k, r in pp.items() if r["stage"] == 1 and r["variant"] == t["variant"]
                and r["format"] == t["format"] and r["repack"] == t["repack"]), None)
    loads = [x for r in res["rows"] for x in (r["loadavg_before"][:1] + r["loadavg_after"][:1])]
    lines = [f"### {cpu['processor_class']}: {cpu['vendor']} family {cpu['family']} model "
             f"{cpu['model']} ({cpu['model_name']}), {cpu['cpus']} CPUs, ggml's pick `{res['ggml_pick']}`",
             "",
             f"{res['date']}, `{res['command']}`, {res['llama_server']}; pp{res['pp_tokens']} / "
             f"tg{res['tg_tokens']} tokens/s, mean of {res['repetitions']} (llama-bench). "
             + (f"**Smoke on a shared machine** (other jobs running; 1-minute load average "
                f"{min(loads):.1f}-{max(loads):.1f} around the rows): not the ceiling."
                if res["shared_machine"] else f"Load average {min(loads):.1f}-{max(loads):.1f}."),
             "", "Flags: " + " ".join(f for f in cpu["flags"] if f.startswith(("avx", "amx", "fma", "f16c", "bmi"))),
             "",
             "Conversions (once, cached by the source's sha256): " + "; ".join(
                 f"{f} {c['seconds']} s" for f, c in res["conversions"].items() if c["seconds"]),
             ""]
    if res["skipped"]:
        lines += ["Skipped: " + "; ".join(f"`{v}`: {why}" for v, why in res["skipped"].items()), ""]
    lines += ["| stage | path (variant, weights, repack, threads, batch/ubatch, flash attn) | "
              "pp tokens/s | vs today | tg tokens/s | load |", "|---|---|--:|--:|--:|--:|"]
    for k, r in sorted(pp.items(), key=lambda kv: (kv[0][:3] != (1, None, None), kv[0][:3],
                                                   -kv[1]["tokens_per_s"])):
        g = tg.get(k)
        stage = "1" if r["stage"] == 1 else f"2 {r['factor']} (from {r['from']})"
        mark = " (today)" if r is ref else ""
        ratio = f"{r['tokens_per_s'] / ref['tokens_per_s']:.2f}×" if ref else ""
        gen = f"{g['tokens_per_s']:.1f} ± {g['stddev']:.1f}" if g else "–"
        lines.append(f"| {stage} | `{k[3]}`{mark} | {r['tokens_per_s']:.1f} ± {r['stddev']:.1f} | "
                     f"{ratio} | {gen} | {r['loadavg_before'][0]:.1f} |")
    if res["answers"]:
        n = res.get("answer_prompts", len(CONTEXTS))
        lines += ["", "Greedy answers vs Q4_K_M (ggml's pick, today's repack rule; "
                  f"{n} answers of up to {res.get('answer_max_tokens', 64)} tokens, {n} judge "
                  "prompts):", "",
                  "| weights | identical answers | judge max abs dP(yes) | verdict changes |",
                  "|---|--:|--:|--:|"]
        for c in res["answers"]:
            lines.append(f"| {c['format']} | {c['identical_answers']}/{c['answers']} | "
                         f"{c['p_yes_max_abs_diff']:.3f} | {c['verdict_changes']} |")
        for c in res["answers"]:
            for d in c["differing"]:
                lines.append(f"\n- {c['format']}, *{d['question']}* Q4_K_M: "
                             f"{d['Q4_K_M']!r}; {c['format']}: {d[c['format']]!r}")
    return "\n".join(lines)


def render() -> str:
    parts = ["# The local LLM's ceiling per processor class (issue 64)", "",
             "Written by `benchmarks/llm_ceiling.py` from the LLM_CEILING_*.json beside it; "
             "how to read it and what the default runs: docs/servers.md.", ""]
    for f in sorted(HERE.glob("LLM_CEILING_*.json")):
        parts += [render_one(json.loads(f.read_text())), f"\n(from `{f.name}`)", ""]
    return "\n".join(parts)


def main() -> None:
    global PP, TG
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="stage 1 on ggml's pick and haswell only")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--variants", nargs="+", help="stage 1 on these built variants only")
    ap.add_argument("--stage2-from", choices=("both", "today", "none"), default="both",
                    help="stage 2 from today's path and stage 1's fastest, today's only, or none")
    ap.add_argument("--prompts", type=int, default=len(CONTEXTS),
                    help="answer and judge prompts per weight format")
    ap.add_argument("--max-tokens", type=int, default=64, help="per greedy answer")
    ap.add_argument("--pp", type=int, default=PP, help="prompt tokens per test")
    ap.add_argument("--tg", type=int, default=TG, help="generated tokens per test")
    ap.add_argument("--formats", nargs="+", default=list(WEIGHT_FORMATS))
    ap.add_argument("--no-answers", action="store_true")
    ap.add_argument("--shared", action="store_true",
                    help="say the figures are a shared machine's (other jobs running)")
    ap.add_argument("--port", type=int, default=8841)
    ap.add_argument("--json", help="default: LLM_CEILING_<class>_<ggml's pick>.json here")
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args()
    PP, TG = args.pp, args.tg
    if not args.render_only:
        if args.formats[0] != "Q4_K_M":
            raise SystemExit("--formats: Q4_K_M first (the reference of the answers)")
        res = run(args)
        out = Path(args.json) if args.json else HERE / (
            f"LLM_CEILING_{res['processor']['processor_class']}_{res['ggml_pick']}.json")
        out.write_text(json.dumps(res, indent=1) + "\n")
        print(f"wrote {out}")
    MD_OUT.write_text(render() + "\n")
    print(f"wrote {MD_OUT}")


if __name__ == "__main__":
    main()
