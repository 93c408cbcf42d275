"""Rows → tables: the tidy results frame, the one-row-per-config summary, and its printout.

`summarize` gives each config its means with 95 % bootstrap CIs and the paired difference vs
the baseline over the same queries (`stats.paired_effect`) of every metric, as its
declaration says (`evaluation/metrics.py`: mean and CI, paired, or both), plus decision
distributions (iterations, stop reasons, expansions, filters) so a knob that never fires is
visible. `print_summary` shows the few columns a person reads first, with
each config named by its settings (`short_label`); the full table is `summary.csv`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.evaluation.metrics import in_groups, names
from agentic_rag.evaluation.metrics import metric as declaration
from agentic_rag.experiments.row_cache import RowCache, code_version
from agentic_rag.experiments.spec import SweepSpec
from agentic_rag.experiments.stats import bootstrap_ci, paired_effect, pareto_front

TOKENS = ["llm_prompt_tokens", "llm_completion_tokens", "judge_prompt_tokens",
          "judge_completion_tokens", "agent_prompt_tokens", "agent_completion_tokens"]


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = json.dumps(v) if isinstance(v, (list, tuple)) else v
    return out


def results_frame(rows: list[dict], configs: list) -> pd.DataFrame:
    """One row per (config, query, repeat), the config's fields flattened into columns."""
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    flat = {f"c{i:02d}": flatten(cfg.to_dict()) for i, (_, _, cfg) in enumerate(configs)}
    cfg_df = pd.DataFrame.from_dict(flat, orient="index")
    cfg_df.index.name = "config_id"
    df = df.merge(cfg_df.reset_index(), on="config_id", how="left")
    return df.sort_values(["config_id", "query_id", "repeat"]).reset_index(drop=True)


def baseline_id(spec: SweepSpec, configs: list) -> str:
    if spec.baseline:
        want = spec.base.with_overrides(spec.baseline)
        for i, (_, _, cfg) in enumerate(configs):
            if cfg == want:
                return f"c{i:02d}"
        raise ValueError(f"baseline {spec.baseline} matches none of the {len(configs)} configs")
    return "c00"


# the hallucination detector's score: not summarised (its decision, `hallucinated`, is), but a
# failed answer's or strategy's value is left out like the metrics'
SUPPORT = "support"

HALLUCINATION_NOTE = ("no labels for this model/dataset: the rate is the detector's flags, "
                      "its CI covers the sampling of questions, not the detector's error "
                      "(with labels: stats.ppi_mean / ppi_paired_difference)")


def failure_mask(results: pd.DataFrame) -> pd.Series:
    """Rows with a failed call: the answer or judge (`error`), the agent (`agent_error`) or
    an LLM strategy (`strategy_error`: its retrieval served the fallback list)."""
    mask = pd.Series(False, index=results.index)
    for c in ("error", "agent_error", "strategy_error"):
        if c in results:
            mask |= results[c].notna()
    return mask


def without_failures(results: pd.DataFrame) -> pd.DataFrame:
    """The results with every value a failed call produced set to NaN, so it is neither
    averaged nor paired (`stats.paired_effect` drops a pair with a NaN): a failed strategy's
    row loses all its metrics (they measure the fallback, not the strategy), a failed answer
    or judge its answer metrics and ragas scores, a failed agent run its agent metrics.
    The failures are counted apart (`failures`)."""
    out = results.copy()
    answer = [*in_groups("answers", "hallucination", "ragas", "ragas_nonllm"), SUPPORT]
    groups = (("strategy_error", [*names(), SUPPORT]), ("error", answer),
              ("agent_error", in_groups("agent")))
    for flag, cols in groups:
        if flag in out:
            cols = [c for c in dict.fromkeys(cols) if c in out.columns]
            out.loc[out[flag].notna(), cols] = float("nan")
    return out


def summarize(results: pd.DataFrame, spec: SweepSpec, configs: list) -> pd.DataFrame:
    """One row per config: means with 95 % CIs, and for every metric the paired difference
    vs the baseline over the same queries (repeats averaged first) with its CI and the
    relative change. Failures are not scores: a value a failed call produced is left out of
    the means and of the paired comparison (`without_failures`; a query without a value in
    both arms drops out of that metric's pair) and counted in the arm's `failures`.
    Decision distributions (iterations, stop reasons, expansions, filters) are part of the
    row, so a knob that never fires is visible."""
    if results.empty:
        return pd.DataFrame()
    counted = results
    results = without_failures(results)
    metric_cols = [c for c in names(mean=True) if c in results.columns]
    paired_cols = [c for c in names(paired=True) if c in results.columns]
    base_id = baseline_id(spec, configs)
    base = per_query_means(results[results.config_id == base_id], paired_cols)
    out = []
    fails = failure_mask(counted)
    for cid, g in results.groupby("config_id", sort=True):
        s = _counts(cid, g)
        s["failures"] = int(fails[g.index].sum())
        means = per_query_means(g, list(dict.fromkeys(metric_cols + paired_cols)))
        for m in metric_cols:
            vals = means[m]
            s[m] = float(vals.mean())
            s[f"{m}_ci_low"], s[f"{m}_ci_high"] = bootstrap_ci(vals.to_list())
        if cid != base_id:
            for m in paired_cols:
                mine = means[m]
                s.update(paired_effect(mine.to_list(), base[m].reindex(mine.index).to_list(), m))
        out.append(s)
    summary = pd.DataFrame(out)
    summary["baseline"] = summary["config_id"] == base_id
    if "hallucinated" in summary:  # the detector's rate: its own error is not in the CI
        summary["hallucinated_ci_note"] = HALLUCINATION_NOTE
        if spec.hallucination_labels:  # ... unless labels exist: then PPI (labels.py)
            summary = _with_ppi(summary, results, spec)
    quality = next((m for m in names(headline=True) if m in summary.columns), None)
    if quality:
        summary["pareto"] = pareto_front(summary, quality, ["latency_p50_ms", "context_tokens_mean"])
    return summary


def _with_ppi(summary: pd.DataFrame, results: pd.DataFrame, spec: SweepSpec) -> pd.DataFrame:
    """Each config's `labels.ppi_columns` (a config without enough labelled rows keeps the
    no-labels note, with its count of labelled rows)."""
    from agentic_rag.experiments.labels import ppi_columns, read_labels

    labels = read_labels(spec.hallucination_labels)
    cols = {cid: ppi_columns(g, labels) for cid, g in results.groupby("config_id", sort=True)}
    out = summary.copy()
    for i, cid in out["config_id"].items():
        for k, v in cols.get(cid, {}).items():
            out.loc[i, k] = v
    return out


def _counts(cid: str, g: pd.DataFrame) -> dict[str, Any]:
    """A config's summary columns that are not per-query means: sizes, latency
    quantiles, decisions, hits per chunk type, LLM token totals, ragas failures."""
    s: dict[str, Any] = {"config_id": cid, "config": g["config"].iloc[0], "n": len(g),
                         "n_queries": int(g["query_id"].nunique()),
                         "latency_p50_ms": float(g["latency_ms"].median()),
                         "latency_p95_ms": float(g["latency_ms"].quantile(0.95)),
                         "iterations_mean": float(g["iterations"].mean()),
                         "context_tokens_mean": float(g["context_tokens"].mean())}
    s.update(decision_distribution(g))
    for c in sorted(c for c in g.columns if c.startswith(("hits_", "relevant_hits_"))):
        s[f"{c}_mean"] = float(g[c].fillna(0).mean())  # per chunk type, among the top k
    for c in [c for c in TOKENS if c in g.columns]:  # LLM token usage per metric group, summed
        s[f"{c}_total"] = int(g[c].fillna(0).sum())
    for c in [c for c in g.columns if c.startswith("ragas_") and c.endswith("_error")]:
        s[c.replace("_error", "_failures")] = int(g[c].notna().sum())
    return s


def per_query_means(g: pd.DataFrame, cols: list[str]) -> dict[str, pd.Series]:
    """Each column's mean per query (repeats averaged first), as floats: one groupby for all
    numeric columns (the same per-column sums as one groupby each), the others one by one."""
    by = g.groupby("query_id")
    numeric = [c for c in cols if pd.api.types.is_numeric_dtype(g[c])]
    out: dict[str, pd.Series] = {}
    if numeric:
        means = by[numeric].mean()
        out.update({c: means[c].astype(float) for c in numeric})
    for c in cols:
        if c not in out:
            out[c] = by[c].mean().astype(float)
    return out


def decision_distribution(g: pd.DataFrame) -> dict[str, Any]:
    """How often each gate / filter decision fired, as JSON-able columns."""
    out: dict[str, Any] = {
        "iterations_dist": json.dumps({int(k): int(v) for k, v in
                                       g["iterations"].value_counts().sort_index().items()}),
        "stop_reasons": json.dumps({str(k): int(v) for k, v in
                                    g["stop_reason"].value_counts().sort_index().items()})}
    if "expansions" in g:
        counts: dict[str, int] = {}
        for e in g["expansions"].dropna():
            for step in json.loads(e):
                counts[step] = counts.get(step, 0) + 1
        out["expansions_fired"] = json.dumps(dict(sorted(counts.items())))
    for c, name in (("filter_applied", "filter_applied_share"),
                    ("dropped_filters", "dropped_filters_share"),
                    ("skipped_expansions", "skipped_expansions_mean")):
        if c in g:
            v = g[c].fillna(0).astype(float)
            out[name] = float((v > 0).mean()) if name.endswith("share") else float(v.mean())
    if "widened_to" in g:
        out["widened_share"] = float(g["widened_to"].notna().mean())
    return out


def cached_summary(results: pd.DataFrame, spec: SweepSpec, configs: list, lines: list[str],
                   cache: RowCache, use_cache: bool) -> pd.DataFrame:
    """`summarize(results)`, read from the row cache when the same rows (the same JSON lines,
    in the same order) were summarized against the same baseline by the same code."""
    labelled = ""
    if spec.hallucination_labels:  # labels added since: not the same summary
        from agentic_rag.experiments.labels import fingerprint

        labelled = fingerprint(spec.hallucination_labels)
    h = hashlib.sha256(f"{code_version()}|{baseline_id(spec, configs)}|{labelled}|".encode())
    h.update("\n".join(lines).encode())
    key = h.hexdigest()
    summary = cache.get_summary(key) if use_cache else None
    if summary is None:
        summary = summarize(results, spec, configs)
        cache.put_summary(key, summary)
    return summary


# --- for people: short labels and the printed table ---------------------------------------

def _retrievers(v: Any) -> str:
    names = list(v) if isinstance(v, (list, tuple)) else [str(v)]
    return "hybrid" if sorted(names) == ["bm25", "dense"] else "+".join(map(str, names))


_SHORT: dict[str, Callable[[Any], str]] = {  # setting → how its value reads in a label
    "chunking.max_tokens": lambda v: f"{v} tok",
    "gate.mode": str,
    "gate.min_confidence": lambda v: f"conf≥{v}",
    "fusion.retrievers": _retrievers,
    "context.max_tokens": lambda v: f"ctx {v} tok",
}
_LABEL_SPLIT = re.compile(r",(?=[A-Za-z_][\w.]*=)")  # "a.b=1,c=['x', 'y']" → 2 parts


def _parse_label(label: str) -> dict[str, Any]:
    """The overrides behind a config label (`spec.configs()`: "key=value,key=value")."""
    out: dict[str, Any] = {}
    for part in _LABEL_SPLIT.split(label):
        key, sep, raw = part.partition("=")
        if not sep:
            return {}
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[key] = raw
    return out


def short_label(config: str | dict[str, Any]) -> str:
    """A config named by its settings, for people: {"chunking.max_tokens": 256, "gate.mode":
    "gated", "fusion.retrievers": ["dense", "bm25"]} (or its label string, as in the
    summary's `config` column) → "256 tok · gated · hybrid". Settings without a short form
    read "key=value"; a label that is not key=value pairs is returned as it is."""
    overrides = _parse_label(config) if isinstance(config, str) else config
    if not overrides:
        return config if isinstance(config, str) else "base"
    parts = []
    for key, v in overrides.items():
        if key in _SHORT:
            parts.append(_SHORT[key](v))
        else:
            parts.append(f"{key}={'+'.join(map(str, v)) if isinstance(v, (list, tuple)) else v}")
    return " · ".join(parts)


def main_metric(summary: pd.DataFrame) -> str | None:
    """The metric a summary is read by: the first declared metric with a mean present (the
    headline retrieval metrics come first, then answer and agent metrics)."""
    return next((m for m in names(mean=True) if m in summary.columns), None)


def _num(v: float, signed: bool = False) -> str:
    return "n/a" if pd.isna(v) else (f"{v:+.3f}" if signed else f"{v:.3f}")


def _with_ci(row: pd.Series, col: str, signed: bool = False) -> str:
    return (f"{_num(row[col], signed)} [{_num(row[f'{col}_ci_low'], signed)}, "
            f"{_num(row[f'{col}_ci_high'], signed)}]")


def print_summary(summary: pd.DataFrame, log=print, metric: str | None = None,  # noqa: ANN001
                  label_width: int = 40) -> None:
    """The summary as a person reads it, within 120 columns: one line per config, best
    `metric` first (ties: lower latency), each named by its settings; the metric with its
    95 % CI, Δ vs the baseline with its paired 95 % CI, mean retrieval iterations, mean
    context tokens, median latency. The full table (every metric, decision distributions,
    relative changes) is the run's `summary.csv`."""
    if summary.empty:
        log("no rows to summarize")
        return
    if metric is not None:
        declaration(metric)  # an undeclared name is an error, not the main metric in its place
    metric = metric if metric in summary.columns else main_metric(summary)
    lower = metric is not None and declaration(metric).direction == "lower"
    rows = summary if metric is None else summary.sort_values(
        [metric, "latency_p50_ms"], ascending=[lower, True], kind="stable")
    labels = [short_label(c) for c in rows["config"]]
    w = min(label_width, max(len(x) for x in labels + ["config"]))
    head = f"{'config':<{w}}      "
    if metric:
        head += f"{metric + ' [95% CI]':<22}  {'Δ vs baseline [95% CI]':<25}"
    log(head + f"{'iter':>5}  {'ctx tok':>7}  {'p50 ms':>7}")
    for label, (_, r) in zip(labels, rows.iterrows()):
        label = label if len(label) <= w else label[:w - 1] + "…"
        flag = ("base" if r.get("baseline") else "") + ("*" if r.get("pareto") else "")
        line = f"{label:<{w}} {flag:<5}"
        if metric:
            delta = "baseline" if r.get("baseline") or f"{metric}_diff_vs_base" not in r \
                else _with_ci(r, f"{metric}_diff_vs_base", signed=True)
            line += f"{_with_ci(r, metric):<22}  {delta:<25}"
        log(line + f"{r['iterations_mean']:>5.2f}  {r['context_tokens_mean']:>7.0f}  "
                   f"{r['latency_p50_ms']:>7.1f}")
    legend = (f"Δ: paired difference vs the baseline (base) over the same queries. *: Pareto "
              f"frontier of {metric} vs latency and context tokens. " if metric else "") + \
        ("iter: mean retrieval iterations; ctx tok: mean context tokens; p50 ms: median "
         "retrieval + context latency per query.")
    for line in textwrap.wrap(legend, 120):
        log(line)
    failed = rows[rows["failures"] > 0]
    for label, n in zip(failed["config"], failed["failures"]):
        log(f"failures: {short_label(label)}: {n} row(s) left out of its means and paired Δ "
            "(see rows.jsonl `error`, `strategy_error`, `agent_error`)")


def print_chosen(exported: str | Path, log=print) -> None:  # noqa: ANN001
    """The config `export_config` chose, read back from its file: its settings, the metric
    it was chosen by on dev (and on test, when scored there), and where the file is."""
    import yaml

    prov = yaml.safe_load(Path(exported).read_text(encoding="utf-8"))["provenance"]
    metric = prov["chosen_by"]

    def value(metrics: dict[str, Any]) -> str:
        v = metrics.get(metric)
        if isinstance(v, dict):
            return f"{v['mean']:.3f} [{v['ci95'][0]:.3f}, {v['ci95'][1]:.3f}]"
        return "n/a" if v is None else f"{v:.3f}"

    how = f" under {', '.join(prov['constraints'])}" if prov.get("constraints") else ""
    log(f"chosen by {metric}{how}: {short_label(prov['config'])} ({prov['config_id']})")
    log(f"  dev  {metric} {value(prov['metrics'])}  (chosen on it: optimistic)")
    if "test" in prov:
        log(f"  test {metric} {value(prov['test']['metrics'])}  (run {prov['test']['run']})")
    log(f"  exported: {exported}  (Pipeline.from_config rebuilds it)")
