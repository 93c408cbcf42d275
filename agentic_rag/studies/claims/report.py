"""The ledger as files: `claims.json` (strict JSON: the claims, the rows, the LLM budget) and
`REPORT.md` (the verdict table, the protocols, what each arm cost beside the effect, what was
not run and why, the LLM budget, and which run folders are committed)."""

from __future__ import annotations

import json
import platform
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.config import RAGConfig
from agentic_rag.experiments.llm_cost import COMPLETION_TOKENS_PER_S, PROMPT_TOKENS_PER_S
from agentic_rag.studies.claims.ppi import PPI_COLUMNS
from agentic_rag.studies.claims.registry import (
    CLAIMS,
    DESIGN_SOURCE,
    NON_LLM_MINUTES,
    NOT_RUN,
    SESSION_CAVEAT,
    SESSIONS,
    SESSIONS_POOL,
    for_deployment,
)

_VERDICT_RULE = (
    "Verdict rule (code: `agentic_rag.studies.claims.verdict`), on the relative change "
    "treatment vs baseline over the same queries (tiers: the same repetitions): its 95 % "
    "interval is the paired bootstrap CI of the absolute difference divided by the baseline "
    "arm's mean (a fixed number, not resampled: the interval leaves out the baseline mean's "
    "own uncertainty, so it is narrower than a bootstrap of the ratio would be), read in this "
    "order: CI entirely opposite to the claimed direction → "
    "contradicted; the design states a figure (a range, *stated figure* column) and the whole "
    "CI is short of it → smaller than claimed (also when the CI contains 0: the stated figure "
    "is ruled out), the whole CI beyond it → larger than claimed; CI contains 0 → "
    "inconclusive; otherwise (the CI excludes 0 and overlaps the stated range) → confirmed. "
    "A CI touching the range overlaps it. The stated figures come from " + DESIGN_SOURCE +
    "; they are pooled over those sessions, so each deployment's row is held to the same "
    "range. When "
    "the baseline mean is 0 the relative change is undefined and the CI of the absolute "
    "difference decides by its sign. *not run* / *not applicable*: no measurement, no "
    "verdict; the reason is listed below the table.")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def write_report(ledger: pd.DataFrame, out_dir: str | Path, smoke: bool = False,
                 budget: pd.DataFrame | None = None) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    records = [{k: None if isinstance(v, float) and v != v else v for k, v in r.items()
                if not (k.startswith(PPI_COLUMNS) and _missing(v))}  # only rows that have PPI
               for r in ledger.to_dict(orient="records")]  # strict JSON: NaN → null
    (out_dir / "claims.json").write_text(json.dumps(
        {"date": stamp, "machine": platform.platform(), "smoke": smoke,
         "claims": [asdict(c) for c in CLAIMS], "ledger": records,
         "llm_budget": [] if budget is None else budget.to_dict(orient="records")},
        indent=1, default=str))
    lines = [f"# Claims ledger{' (smoke run: tiny samples, not evidence)' if smoke else ''}",
             "", f"Generated {stamp} on `{platform.platform()}` by `agentic-rag claims`. "
             "Every number below is read from the run folder named in its row "
             "(`experiments/runs/<run>/summary.csv`); rows of claims not rerun this time "
             "are kept from the previous report with their own run and commit. Which run "
             "folders are committed is listed under *Run folders*.", "", _VERDICT_RULE, "",
             *table(records), *_protocols(), *_beside(records), *_not_run(records),
             *_budget(budget), *_run_folders(records)]
    commits = sorted({r["git_commit"] for r in records if isinstance(r.get("run"), str)
                      and isinstance(r.get("git_commit"), str)})
    models = sorted({r["embedding_model"] for r in records
                     if isinstance(r.get("embedding_model"), str)})
    lines += ["", f"Commits: {', '.join(f'`{c}`' for c in commits) or '?'}; embedding model "
              f"{', '.join(f'`{m}`' for m in models) or '?'}."]
    path = out_dir / "REPORT.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def table(records: list[dict[str, Any]]) -> list[str]:
    """The verdict table: one line per claim × deployment, the design's stated figure beside
    the measured effect."""
    lines = ["| claim | deployment (dataset) | n | metric | baseline → treatment | relative "
             "effect [95 % CI] | stated figure | verdict | run |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        stated = _stated(r)
        if r["verdict"] in NOT_RUN:
            lines.append(f"| {r['claim']} | {r['deployment']} ({r['dataset']}) | – | "
                         f"{r['metric']} | – | – | {stated} | *{r['verdict']}* | "
                         f"{'`' + r['run'] + '`' if isinstance(r.get('run'), str) else '–'} |")
            continue
        lines.append(
            f"| {r['claim']} | {r['deployment']} ({r['dataset']}) | {r['n_queries']} | "
            f"{r['metric']} | {_num(r['baseline_value'])} → {_num(r['treatment_value'])} | "
            f"{_effect(r)} | "
            f"{stated} | **{r['verdict']}** | `{r['run']}` |")
    return lines


def _stated(r: dict[str, Any]) -> str:
    """The design's figure as a range of relative changes, or – when it states none."""
    lo, hi = r.get("design_low"), r.get("design_high")
    if lo is None or hi is None or lo != lo:
        return "–"
    return f"{lo:+.1%}" if lo == hi else f"{lo:+.1%} to {hi:+.1%}"


def _protocols() -> list[str]:
    lines = ["", "## Protocols", ""]
    for c in CLAIMS:
        lines.append(f"- **{c.id}** — {c.statement}. Baseline `{json.dumps(c.baseline)}`, "
                     f"treatment `{json.dumps(c.treatment)}`, metric `{c.metric}` "
                     f"({'higher' if c.direction > 0 else 'lower'} is the claim). {c.protocol}."
                     + (f" Deployments: {', '.join(c.deployments)}." if c.deployments else "")
                     + (f" Stated figure: {c.design_figure.label(c.direction)}."
                        if c.design_figure else ""))
        on_sessions = for_deployment(c, SESSIONS_POOL)
        if on_sessions is not c and on_sessions.applies_to(SESSIONS_POOL):
            lines.append(f"  - on MTRAG's sessions ({', '.join(SESSIONS)}): metric "
                         f"`{on_sessions.metric}`, baseline `{json.dumps(on_sessions.baseline)}`"
                         f", treatment `{json.dumps(on_sessions.treatment)}`. "
                         f"{on_sessions.protocol}.")
    return lines


def _beside(records: list[dict[str, Any]]) -> list[str]:
    lines = ["", "## Beside the effect (quality and cost of each arm)", ""]
    for r in records:
        parts = [", ".join(f"{k[:-9]} {_num(r[k])} → {_num(r[k.replace('_baseline', '_treatment')])}"
                           for k in r if k.endswith("_baseline") and r.get(k) is not None
                           and k != "baseline")]
        if r.get("failures") is not None:
            parts.append(f"failures (both arms) {int(r['failures'])}")
        if r.get("deployment") in SESSIONS and r["verdict"] not in NOT_RUN:
            n = int(r.get("n_queries") or 0)
            parts.append(f"{n} sessions" + (" (fewer than 500: not a figure over 500+ "
                                             "sessions)" if n < 500 else ""))
            parts.append(r.get("corpus_caveat") or SESSION_CAVEAT)
        if r["claim"] == "c-boundaries" and r["verdict"] not in NOT_RUN:
            judged = r.get("judge_validation")
            parts.append(f"judge: {judged if isinstance(judged, str) else 'not validated'}")
            for arm in ("baseline", "treatment"):
                if isinstance(r.get(f"{arm}_ppi"), str):
                    parts.append(f"hallucination rate with the detector's error (PPI), {arm}: "
                                 f"{r[f'{arm}_ppi']}")
            if isinstance(r.get("ppi_difference"), str):
                parts.append(r["ppi_difference"])
        if any(parts):
            lines.append(f"- {r['claim']} / {r['dataset']}: {'; '.join(p for p in parts if p)}")
    return lines


def _not_run(records: list[dict[str, Any]]) -> list[str]:
    return ["", "## Not run, not applicable", "",
            *(f"- {r['claim']} / {r['deployment']}: *{r['verdict']}* — {r.get('reason') or '?'}"
              for r in records if r["verdict"] in NOT_RUN)]


def _budget(budget: pd.DataFrame | None) -> list[str]:
    if budget is None or not len(budget):
        return []
    total = float(budget["minutes_est"].sum())
    lines = ["", "## LLM budget of a full run", "",
             f"Ceiling from `runner.estimate_llm_cost` (every context at its "
             f"{RAGConfig().context.max_tokens}-token budget + 150, 40 generated tokens a "
             "call, no cache hits) at this machine's rates: "
             f"{PROMPT_TOKENS_PER_S:.0f} prompt and {COMPLETION_TOKENS_PER_S:.0f} "
             "generated tokens/s (Qwen2.5-Coder-1.5B, 2 CPU cores). Cached calls cost "
             "nothing: c-boundaries' boundaries-on arm repeats b-answers' hybrid prompts, "
             "and the judge reads the same evidence in both arms, so the real cost is "
             "lower.", "", "| protocol | deployment | LLM calls | prompt tokens | "
             "minutes |", "|---|---|---|---|---|"]
    lines += [f"| {b['protocol']} | {b['deployment']} | {b['llm_calls']} | "
              f"{b['prompt_tokens_est']:,} | {b['minutes_est']:.0f} |"
              for b in budget.to_dict(orient="records")]
    lines += [f"| total | | {int(budget['llm_calls'].sum())} | "
              f"{int(budget['prompt_tokens_est'].sum()):,} | {total:.0f} |", "",
              f"With the protocols that need no LLM (~{NON_LLM_MINUTES} min: retrieval "
              "sweeps and the tiers benchmark), a full run's ceiling is "
              f"{total + NON_LLM_MINUTES:.0f} min. Full run: `make claims`; the LLM "
              "protocols alone: `agentic-rag claims --only b-answers --only c-boundaries "
              "--only a-agent-tool-calls`."]
    return lines


def _run_folders(records: list[dict[str, Any]]) -> list[str]:
    """Each run folder the rows name, whether it is committed, and the committed files a
    row's figures were built from (the agent protocol's rows)."""
    runs: dict[str, dict[str, Any]] = {}
    for r in records:
        for key, flag in (("run", "run_committed"), ("judge_run", "judge_run_committed")):
            if isinstance(r.get(key), str) and r.get(flag) is not None:
                entry = runs.setdefault(r[key], {"claims": [], "committed": r[flag]})
                if r["claim"] not in entry["claims"]:
                    entry["claims"].append(r["claim"] + (" (judge validation)"
                                                         if key == "judge_run" else ""))
                if key == "run" and isinstance(r.get("agent_run"), str):
                    entry["source"] = (r["agent_run"], r.get("agent_run_committed"))
    if not runs:
        return []
    for r in records:
        if isinstance(r.get("run"), str) and r["run"] in runs and r.get("verdict") not in NOT_RUN:
            runs[r["run"]].setdefault("rows", []).append(
                (r["claim"], r["deployment"], r.get("rows_file")))
    lines = ["", "## Run folders", "",
             "Per-question rows (query id, arm, the metric, the columns beside it) are "
             "committed under `experiments/claims/rows/` where the run folder was on the "
             "machine that wrote this report; `tests/test_claims_rows.py` recomputes each "
             "committed row's effect, CI and verdict from them.", ""]
    for run, e in runs.items():
        line = (f"- `{run}` ({', '.join(e['claims'])}): run folder "
                f"{'committed' if e['committed'] else 'not committed'}")
        if "source" in e:
            src, ok = e["source"]
            line += (f"; built from the agent evaluation's rows in `{src}/` "
                     f"({'committed' if ok else 'not committed'})")
        kept = [f"`{f}`" for _, _, f in e.get("rows", []) if f]
        missing = [f"{c} / {d}" for c, d, f in e.get("rows", []) if not f]
        if kept:
            line += f"; per-question rows in `rows/`: {', '.join(kept)}"
        if missing:
            line += f"; per-question rows not committed ({', '.join(missing)})"
        lines.append(line)
    return lines


def _num(x: float | None) -> str:
    if x is None or x != x:  # NaN, or null read back from claims.json
        return "–"
    return f"{x:.3f}" if abs(x) < 100 else f"{x:,.0f}"


def _effect(r: dict[str, Any]) -> str:
    """`+4.7% [+3.1%, +6.4%]`; a part not measured (too few paired values for a CI: NaN,
    null in claims.json) is `–`."""
    def pct(x: float | None) -> str:
        return "–" if x is None or x != x else f"{x:+.1%}"
    return f"{pct(r.get('relative_effect'))} [{pct(r.get('ci_low'))}, {pct(r.get('ci_high'))}]"
