"""Issue 39: do ggml's CPU variants give the same greedy answers? The default llama-server runs
ggml's pick for the processor (`binary.runnable_binary`); the reply cache keys on the variant
that runs, since kernels of two variants round differently. This measures how often they do.

    .venv/bin/python benchmarks/variant_equality.py [--variants x64 haswell skylakex icelake zen4]
        [--model qwen2.5-coder-1.5b] [--json benchmarks/VARIANT_EQUALITY.json]
    .venv/bin/python benchmarks/variant_equality.py --variants zen4+repack zen4+no-repack \
        --json benchmarks/REPACK_EQUALITY.json     # ggml's repacked weights vs its plain kernels

For each variant this processor can load (a variant it cannot, e.g. `alderlake`'s AVX-VNNI on
an AMD EPYC, is reported as skipped), the default llama-server build held to that variant
(`llm.server.cpu_variant`) answers a fixed prompt set, greedily (temperature 0, 64 tokens,
one slot, the default server settings): `PROMPTS`, 12 questions over a short context each
(context-first, as `llm_judge.answer_messages` lays answers out), then 12 yes/no judge
questions whose P(yes) is read from the top log-probabilities of the first token. The first
variant is the reference; per variant: answers identical (verbatim), the differing ones shown,
and the judge's largest |ΔP(yes)| and verdict changes at 0.5. Prompt and generation tokens/s
come from the server's own timings.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agentic_rag.config_llm import ServerConfig  # noqa: E402
from agentic_rag.llm.binary import VARIANT_RANK, ServerError, cpu_variants
from agentic_rag.llm.server import LlamaServer, build_info, server_settings

HERE = Path(__file__).resolve().parent

CONTEXTS = [
    ("The Eiffel Tower was completed in 1889 for the Exposition Universelle in Paris. Gustave "
     "Eiffel's company designed and built it; the engineers Maurice Koechlin and Emile Nouguier "
     "drew the first sketches. It is 330 metres tall and was the tallest man-made structure "
     "until the Chrysler Building in New York was finished in 1930.",
     "Who drew the first sketches of the Eiffel Tower?"),
    ("Python's `functools.lru_cache` decorator wraps a function with a memoizing callable that "
     "saves up to `maxsize` most recent calls. If `maxsize` is set to None, the LRU feature is "
     "disabled and the cache can grow without bound. The wrapped function has `cache_info()` "
     "and `cache_clear()` methods.",
     "What happens when maxsize is None?"),
    ("Metallica is an American heavy metal band formed in 1981 in Los Angeles by drummer Lars "
     "Ulrich and vocalist and guitarist James Hetfield. The band's long-time lead guitarist is "
     "Kirk Hammett, and its bassist since 2003 is Robert Trujillo.",
     "Who founded Metallica?"),
    ("The mitochondrion is an organelle found in most eukaryotic cells. It generates most of "
     "the cell's supply of adenosine triphosphate (ATP), used as a source of chemical energy. "
     "Mitochondria have their own DNA, inherited in most species from the mother only.",
     "From which parent is mitochondrial DNA usually inherited?"),
    ("In SQL, a LEFT JOIN returns all rows from the left table and the matched rows from the "
     "right table; where there is no match, the columns of the right table are NULL. An INNER "
     "JOIN returns only the rows that have matching values in both tables.",
     "What does a LEFT JOIN return for rows without a match?"),
    ("The Treaty of Westphalia, signed in 1648 in Osnabrück and Münster, ended the Thirty "
     "Years' War in the Holy Roman Empire and the Eighty Years' War between Spain and the Dutch "
     "Republic. It is often cited as the origin of the modern state system.",
     "Which wars did the Peace of Westphalia end?"),
    ("A Bloom filter is a space-efficient probabilistic data structure used to test whether an "
     "element is a member of a set. False positive matches are possible, but false negatives "
     "are not: a query returns either 'possibly in set' or 'definitely not in set'.",
     "Can a Bloom filter give false negatives?"),
    ("Mount Kilimanjaro in Tanzania is the highest mountain in Africa, about 5,895 metres above "
     "sea level. It has three volcanic cones: Kibo, Mawenzi and Shira. Kibo, the highest, is "
     "dormant and could erupt again.",
     "Which of Kilimanjaro's cones is the highest?"),
    ("The HTTP status code 429 Too Many Requests indicates the user has sent too many requests "
     "in a given amount of time. The response may include a Retry-After header saying how long "
     "to wait before making a new request.",
     "Which header tells a client how long to wait after a 429?"),
    ("Marie Curie was the first woman to win a Nobel Prize and the only person to win Nobel "
     "Prizes in two different sciences: physics in 1903, shared with Pierre Curie and Henri "
     "Becquerel, and chemistry in 1911 for the discovery of polonium and radium.",
     "For what did Marie Curie win the 1911 Nobel Prize?"),
    ("Git's `rebase` command reapplies commits on top of another base tip. Interactive rebase "
     "(`git rebase -i`) lets you reorder, squash, edit or drop commits. Rebasing rewrites "
     "history, so it should not be used on commits already pushed to a shared branch.",
     "Why should you not rebase pushed commits?"),
    ("The Great Barrier Reef, off the coast of Queensland, Australia, is the world's largest "
     "coral reef system, composed of over 2,900 individual reefs and 900 islands stretching "
     "over 2,300 kilometres.",
     "How many individual reefs make up the Great Barrier Reef?"),
]
JUDGE_CLAIMS = [  # (context index, claim): half supported, half not
    (0, "The Eiffel Tower was completed in 1889."), (0, "Gustave Eiffel drew the first sketches."),
    (1, "lru_cache has a cache_clear method."), (2, "Robert Trujillo co-founded Metallica."),
    (3, "Mitochondria produce ATP."), (4, "An INNER JOIN returns unmatched rows with NULLs."),
    (5, "The treaty was signed in 1748."), (6, "Bloom filters can return false positives."),
    (7, "Kilimanjaro is in Kenya."), (8, "A 429 response may carry a Retry-After header."),
    (9, "Marie Curie shared the 1903 prize with Henri Becquerel."),
    (11, "The reef stretches over 5,000 kilometres."),
]


def answer_messages(context: str, question: str) -> list[dict]:
    return [{"role": "system", "content": "Answer the question from the context only, briefly."},
            {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}"}]


def judge_messages(context: str, claim: str) -> list[dict]:
    return [{"role": "system", "content": "Reply with yes or no only."},
            {"role": "user", "content": f"Context:\n{context}\n\nDoes the context support "
                                        f"this statement? {claim}"}]


def _post(url: str, body: dict) -> dict:
    import urllib.request

    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:  # noqa: S310 - loopback
        return json.loads(r.read())


def p_yes(choice: dict) -> float:
    tops = choice["logprobs"]["content"][0]["top_logprobs"]
    yes = sum(math.exp(t["logprob"]) for t in tops if t["token"].strip().lower() == "yes")
    no = sum(math.exp(t["logprob"]) for t in tops if t["token"].strip().lower() == "no")
    return yes / (yes + no) if yes + no else float("nan")


def run_variant(binary: str, variant: str, model: str, port: int, home: Path,
                startup_timeout_s: float = 600.0, prompts: int = len(CONTEXTS)) -> dict:
    """One server held to `variant` (`NAME`, `NAME+repack` or `NAME+no-repack`: the weights
    repacked or not, `llm.server.repack`; by default as `binary.repacks` says)."""
    name, plus, repack = variant.partition("+")
    if plus and repack not in ("repack", "no-repack"):
        raise SystemExit(f"--variants {variant}: `+repack` or `+no-repack` after the name")
    cfg = ServerConfig(model=model, binary=binary, cpu_variant=name, port=port,
                       startup_timeout_s=startup_timeout_s,
                       repack=(repack == "repack") if plus else None)
    info = build_info(cfg)  # an error when this processor cannot load the variant
    t0 = time.perf_counter()
    with LlamaServer(cfg, home=home / variant) as srv:
        ready = time.perf_counter() - t0
        url = srv.base_url + "/chat/completions"
        answers, judges, prompt_ms, prompt_n, gen_ms, gen_n = [], [], 0.0, 0, 0.0, 0
        for context, question in CONTEXTS[:prompts]:
            r = _post(url, {"model": "local", "messages": answer_messages(context, question),
                            "temperature": 0, "max_tokens": 64})
            answers.append(r["choices"][0]["message"]["content"])
            t = r.get("timings", {})
            prompt_ms += t.get("prompt_ms", 0)
            prompt_n += t.get("prompt_n", 0)
            gen_ms += t.get("predicted_ms", 0)
            gen_n += t.get("predicted_n", 0)
        for i, claim in JUDGE_CLAIMS[:prompts]:
            r = _post(url, {"model": "local", "messages": judge_messages(CONTEXTS[i][0], claim),
                            "temperature": 0, "max_tokens": 1, "logprobs": True,
                            "top_logprobs": 10})
            judges.append(p_yes(r["choices"][0]))
    return {"variant": variant, "loaded": info["cpu_variant"], "version": info["version"],
            "repack": server_settings(cfg)["repack"],
            "ready_s": ready, "answers": answers, "p_yes": judges,
            "prompt_tokens_per_s": prompt_n / (prompt_ms / 1000) if prompt_ms else None,
            "generated_tokens_per_s": gen_n / (gen_ms / 1000) if gen_ms else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=ServerConfig().binary)
    ap.add_argument("--variants", nargs="+", default=None,
                    help="default: every variant built, best first; the first is the "
                         "reference")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--port", type=int, default=8831)
    ap.add_argument("--prompts", type=int, default=len(CONTEXTS),
                    help="the first N answer prompts and N judge prompts (a busy machine)")
    ap.add_argument("--startup-timeout", type=float, default=600.0,
                    help="seconds a server may take to load and warm up (a busy machine)")
    ap.add_argument("--json", default=str(HERE / "VARIANT_EQUALITY.json"))
    args = ap.parse_args()
    if not args.binary:
        ap.error("no llama-server build (make install) and no --binary")
    rank = {v: i for i, v in enumerate(VARIANT_RANK)}
    variants = args.variants or sorted(cpu_variants(args.binary), key=lambda v: rank.get(v, 99))
    results, skipped = [], {}
    with tempfile.TemporaryDirectory(prefix="variant-eq-") as tmp:
        for i, v in enumerate(variants):
            try:
                print(f"{v} ...", flush=True)
                results.append(run_variant(args.binary, v, args.model, args.port + i, Path(tmp),
                                           args.startup_timeout, args.prompts))
                r = results[-1]
                Path(args.json).with_suffix(".partial.json").write_text(
                    json.dumps(results, indent=1) + "\n")  # a stopped run keeps its variants
                print(f"  {r['loaded']}: prompt {r['prompt_tokens_per_s']:.0f} tok/s, "
                      f"generation {r['generated_tokens_per_s']:.1f} tok/s", flush=True)
            except ServerError as exc:
                skipped[v] = str(exc).splitlines()[0][:300]
                print(f"  skipped: {skipped[v]}", flush=True)
    ref = results[0]
    rows = []
    for r in results:
        diff = [{"prompt": k, "reference": a, "this": b}
                for k, (a, b) in enumerate(zip(ref["answers"], r["answers"], strict=True)) if a != b]
        dp = [abs(a - b) for a, b in zip(ref["p_yes"], r["p_yes"], strict=True)]
        flips = sum((a >= 0.5) != (b >= 0.5) for a, b in zip(ref["p_yes"], r["p_yes"], strict=True))
        rows.append({"variant": r["variant"], "identical_answers": len(r["answers"]) - len(diff),
                     "answers": len(r["answers"]), "differing": diff, "p_yes_max_abs_diff": max(dp),
                     "verdict_changes": flips, "prompt_tokens_per_s": r["prompt_tokens_per_s"],
                     "generated_tokens_per_s": r["generated_tokens_per_s"]})
    out = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
           "command": "python benchmarks/variant_equality.py " + " ".join(sys.argv[1:]),
           "machine": f"{platform.machine()} {os.cpu_count()} CPUs", "model": args.model,
           "reference": ref["variant"], "rows": rows, "skipped": skipped, "raw": results}
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"\n| variant | answers identical to {ref['variant']} | judge max abs dP(yes) | "
          "verdicts changed | prompt tok/s | generated tok/s |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['variant']} | {r['identical_answers']}/{r['answers']} | "
              f"{r['p_yes_max_abs_diff']:.4f} | {r['verdict_changes']}/{len(ref['p_yes'])} | "
              f"{r['prompt_tokens_per_s']:.0f} | {r['generated_tokens_per_s']:.1f} |")
    for v, why in skipped.items():
        print(f"| {v} | skipped: {why} |")
    for r in rows:
        for d in r["differing"]:
            print(f"{r['variant']} prompt {d['prompt']}: {d['reference']!r} vs {d['this']!r}")


if __name__ == "__main__":
    main()
