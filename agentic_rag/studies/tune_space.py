"""The search space `tune` sweeps, the rule that chooses on dev, and its result types
(issue 38; the run: `studies/tune.py`). Pure functions of the documents' profile and of a
sweep's summary: tested without a sweep.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.config import RAGConfig
from agentic_rag.experiments.spec import DatasetSpec, SweepSpec
from agentic_rag.store.coverage import SHARED_NAMES

BUDGETS = ("quick", "standard", "thorough")
DEV_SHARE = 0.5  # of the generated questions: half to choose on, half to report on
RULE_METRICS = ("ndcg@10", "answer@5")
# the choice rules (issue 63): `noninferiority`, the default, written down before any figure in
# experiments/tune/RULE-NONINFERIORITY.md; `sign`, the rule before it, kept by name so that the
# comparison of the two on the committed studies is reproducible
RULES = ("noninferiority", "sign")
DEFAULT_RULE = "noninferiority"
# δ per rule metric, in its own units: one question in 50 losing its answer from the top 5
# (answer@5) or its document from the top 10 (nDCG@10); the argument: RULE-NONINFERIORITY.md
NONINFERIORITY_MARGINS = {"ndcg@10": 0.02, "answer@5": 0.02}
RULE_TEXT = {
    "noninferiority": (
        "on the dev questions, a candidate is eligible when the lower 95 % CI bound of its "
        "paired difference vs the default is above -δ on nDCG@10 and on answer@5 (δ = 0.02 "
        "each: one question in 50) and, on at least one of them, the whole CI lies above 0; "
        "among eligible ones, the larger lower bound of answer@5's difference wins (ties: the "
        "larger lower bound of nDCG@10's, then fewer context tokens, then the earlier in the "
        "search space); else the default is kept"),
    "sign": (
        "on the dev questions, a candidate replaces the default only if its mean paired "
        "difference vs the default is >= 0 on nDCG@10 and answer@5 and > 0 on one of them; "
        "among those, the best worst-case difference wins (ties: larger nDCG@10 difference, "
        "then fewer context tokens); else the default is kept")}
RULE = RULE_TEXT[DEFAULT_RULE]
TITLE = ("dense", "bm25", "title")
# the LLM strategies' calls per query (for the estimate): expansion 1, pointwise rerank one
# per candidate, listwise one
_LLM_CALLS = {"query.expansion": 1, "pointwise": 10, "listwise": 1}


class TuneError(ValueError):
    """Bad input to `tune` (the message names the folder, file or value)."""


@dataclass
class TuneResult:
    report: str
    config: RAGConfig
    summary: pd.DataFrame  # the test sweep: default and chosen, paired CIs
    chosen: str = "default"
    dev: pd.DataFrame = field(default_factory=pd.DataFrame)  # the dev table, one row per config
    paths: dict[str, Path] = field(default_factory=dict)


def profile(docs: list, chunks: list) -> dict[str, Any]:
    """What the search space is chosen from: documents, chunks, the share of chunks under a
    heading (sections: small-to-big has parents to grow into), of documents with a title or
    headings (the title field has something to match), of code chunks, the mean tokens
    per section (long sections: smaller chunks may find a passage better), and of documents
    whose name (`lexical.doc_name`) another document shares (a product's pages:
    `checking_accounts_blue_account_001` … `_012`). The title of a document whose id is a
    hash is no title (`_named`)."""
    n = max(1, len(chunks))
    sections: dict[tuple[str, str], int] = {}
    for c in chunks:
        if c.heading_path:
            key = (c.doc_id, c.heading_path)
            sections[key] = sections.get(key, 0) + c.token_count
    titled = {c.doc_id for c in chunks if c.heading_path} | {d.id for d in docs if _named(d)}
    from agentic_rag.store.coverage import shared_name_share

    return {"documents": len(docs), "chunks": len(chunks),
            "shared_name_share": shared_name_share(d.id for d in docs),
            "sectioned_share": round(sum(bool(c.heading_path) for c in chunks) / n, 3),
            "titled_share": round(len(titled) / max(1, len(docs)), 3),
            "code_share": round(sum(c.chunk_type == "code" for c in chunks) / n, 3),
            "mean_section_tokens": round(sum(sections.values()) / len(sections))
            if sections else 0}


def _named(doc: Any) -> bool:
    """A title that names something: a document whose id is a content hash (HaluEval's
    paragraphs) has for title its text's first 60 characters, and `store.coverage` ranks
    none of them for the same reason (`lexical.doc_name`)."""
    from agentic_rag.store.lexical import doc_name

    return bool(doc.title) and bool(doc_name(doc.id))


def search_space(prof: dict[str, Any], budget: str = "quick",
                 llm_strategies: bool = False) -> dict[str, dict[str, Any]]:
    """name → overrides of the base config, "default" first (the baseline). Chosen from the
    documents' `profile`, on principle, never from scores:
    - small-to-big (128-token chunks searched, their section's 256 tokens served) when at
      least a quarter of the chunks are under a heading: parents to grow into;
    - the title field (BM25 over titles, headings, API names) when at least half the
      documents have a title or headings; with small-to-big too when both apply;
    - smaller chunks served as they are (128) when sections average over 128 tokens;
    - a heavier BM25 weight (0.6) when at least a tenth of the chunks are code (identifiers
      are matched by words, not meaning);
    - without entity scope (`fusion.named_scope: off`) when at least a quarter of the
      documents share their name with another (a product, plan or command whose pages are
      several documents): there the default scopes (`auto`: boost, 2 hits per document;
      issue 40: the bank's right page in the top 5 0.448 → 0.896 on banking-products dev),
      and the sweep checks it on these documents; `standard` adds boost without the cap.
    `standard` adds the gate modes (static, always_expand), small-to-big 256→512 and the
    title field at 0.3 and 1.0; `thorough` adds 512-token chunks, dense or BM25 alone, and
    small-to-big with BM25 0.6. `llm_strategies` adds pointwise LLM rerank (depth 10) alone
    and on small-to-big, and (standard and up) multi-query 3 and HyDE: each calls the LLM
    per query."""
    if budget not in BUDGETS:
        raise TuneError(f"budget {budget!r}: use one of {', '.join(BUDGETS)}")
    s2b = {"chunking.max_tokens": 128, "fusion.small_to_big": "section",
           "fusion.parent_tokens": 256}
    title = {"fusion.retrievers": list(TITLE),
             "fusion.weights": {"dense": 1.0, "bm25": 0.3, "title": 0.5}}
    space: dict[str, dict[str, Any]] = {"default": {}}
    sectioned = prof["sectioned_share"] >= 0.25
    titled = prof["titled_share"] >= 0.5
    if sectioned:
        space["small-to-big 128→256"] = dict(s2b)
    if titled:
        space["title 0.5"] = dict(title)
    if sectioned and titled:
        space["small-to-big + title 0.5"] = {**s2b, **title}
    if prof["mean_section_tokens"] > 128 or not sectioned:
        space["chunks 128"] = {"chunking.max_tokens": 128}
    if prof["code_share"] >= 0.1:
        space["bm25 0.6"] = {"fusion.weights": {"dense": 1.0, "bm25": 0.6}}
    if prof.get("shared_name_share", 0.0) >= SHARED_NAMES:  # an entity spans documents
        # the default scopes here (named_scope auto): try without it, and without the cap
        space["named scope off"] = {"fusion.named_scope": "off"}
        if budget in ("standard", "thorough"):
            space["named boost"] = {"fusion.named_scope": "boost"}
    if budget in ("standard", "thorough"):
        space["gate static"] = {"gate.mode": "static"}
        space["gate always_expand"] = {"gate.mode": "always_expand"}
        if sectioned:
            space["small-to-big 256→512"] = {"fusion.small_to_big": "section",
                                             "fusion.parent_tokens": 512}
        if titled:
            for w in (0.3, 1.0):
                space[f"title {w}"] = {**title, "fusion.weights": {"dense": 1.0, "bm25": 0.3,
                                                                   "title": w}}
    if budget == "thorough":
        space["chunks 512"] = {"chunking.max_tokens": 512}
        space["dense"] = {"fusion.retrievers": ["dense"], "gate.mode": "static"}
        space["bm25"] = {"fusion.retrievers": ["bm25"], "gate.mode": "static"}
        if sectioned:
            space["small-to-big + bm25 0.6"] = {**s2b, "fusion.weights": {"dense": 1.0,
                                                                          "bm25": 0.6}}
    if llm_strategies:
        rerank = {"rerank.kind": "llm", "rerank.mode": "pointwise", "rerank.depth": 10}
        space["rerank pointwise 10"] = dict(rerank)
        if sectioned:
            space["small-to-big + pointwise 10"] = {**s2b, **rerank}
        if budget != "quick":
            space["multi-query 3"] = {"query.expansion": "multi_query", "query.expansion_n": 3}
            space["hyde"] = {"query.expansion": "hyde"}
    return space


def llm_calls_per_query(overrides: dict[str, Any]) -> int:
    """The LLM calls one query costs under `overrides` (0 for a retrieval-only config)."""
    calls = 1 if overrides.get("query.expansion") else 0
    if overrides.get("rerank.kind") == "llm":
        calls += _LLM_CALLS[overrides.get("rerank.mode", "pointwise")]
    return calls


def rule_table(summary: pd.DataFrame, names: list[str], rule: str = DEFAULT_RULE) -> pd.DataFrame:
    """One row per config of a sweep's `summary` (in `names` order, the default first): each
    `RULE_METRICS` mean, its paired difference vs the default and that difference's CI,
    context tokens, and `rule`'s verdict (`apply_rule`: `eligible`, `why`)."""
    rows = []
    for name, (_, s) in zip(names, summary.iterrows()):
        row: dict[str, Any] = {"config": name, "n_queries": int(s["n_queries"])}
        for m in RULE_METRICS:
            if m not in s or pd.isna(s[m]):
                continue
            row[m] = float(s[m])
            d = f"{m}_diff_vs_base"
            row[f"{m} Δ"] = float(s[d]) if d in s and pd.notna(s[d]) else 0.0
            if f"{d}_ci_low" in s and pd.notna(s[f"{d}_ci_low"]):
                row[f"{m} Δ CI"] = (float(s[f"{d}_ci_low"]), float(s[f"{d}_ci_high"]))
        row["context_tokens"] = float(s.get("context_tokens_mean", float("nan")))
        row["latency_p50_ms"] = float(s.get("latency_p50_ms", float("nan")))
        rows.append(row)
    return apply_rule(pd.DataFrame(rows), rule)


def table_from_records(records: list[dict[str, Any]]) -> pd.DataFrame:
    """A `rule_table` as `tune.json` stores it (`dev_table`: CIs as lists) back as a table the
    rules read; its stored verdict columns are dropped (`apply_rule` gives them again)."""
    t = pd.DataFrame(records)
    for m in RULE_METRICS:
        if f"{m} Δ CI" in t:
            t[f"{m} Δ CI"] = [tuple(v) if isinstance(v, (list, tuple)) else None
                              for v in t[f"{m} Δ CI"]]
    return t.drop(columns=[c for c in ("eligible", "why", "worst_diff") if c in t])


def _ci(row: pd.Series, m: str) -> tuple[float, float] | None:
    ci = row.get(f"{m} Δ CI")
    return ci if isinstance(ci, tuple) and len(ci) == 2 and not pd.isna(ci[0]) else None


def verdict(row: pd.Series, rule: str = DEFAULT_RULE,
            margins: dict[str, float] | None = None) -> tuple[bool, str]:
    """`rule`'s verdict on one candidate row of a `rule_table`: (eligible, why), the reason
    naming the clause that decided and its figures."""
    if rule not in RULES:
        raise TuneError(f"rule {rule!r}: use one of {', '.join(RULES)}")
    if row["config"] == "default":
        return False, "the baseline"
    present = [m for m in RULE_METRICS if m in row and pd.notna(row[m])]
    if not present:
        return False, "no rule metric measured"
    if rule == "sign":
        diffs = {m: float(row.get(f"{m} Δ", 0.0)) for m in present}
        worst = min(diffs, key=diffs.get)
        if diffs[worst] < 0:
            return False, f"{worst} mean Δ {diffs[worst]:+.3f} < 0"
        if max(diffs.values()) <= 0:
            return False, "no mean Δ > 0"
        return True, f"mean Δ >= 0 on every metric, worst {diffs[worst]:+.3f}"
    margins = margins or NONINFERIORITY_MARGINS
    fails, gains = [], []
    for m in RULE_METRICS:
        ci = _ci(row, m)
        if ci is None:
            fails.append(f"{m}: no CI")
            continue
        if not ci[0] > -margins[m]:
            fails.append(f"{m} lower bound {ci[0]:+.3f} <= -δ {-margins[m]:+.3f}")
        if ci[0] > 0:
            gains.append(f"{m} CI above 0 (lower {ci[0]:+.3f})")
    if fails:
        return False, "; ".join(fails)
    if not gains:
        return False, "non-inferior, but no CI lies above 0"
    return True, "non-inferior on every metric; " + "; ".join(gains)


def apply_rule(table: pd.DataFrame, rule: str = DEFAULT_RULE) -> pd.DataFrame:
    """`table` (a `rule_table` without verdicts) with `rule`'s `eligible` and `why` columns,
    `worst_diff` (the smaller mean difference, the `sign` rule's order) and the lower CI
    bounds the `noninferiority` rule orders by (`<metric> Δ low`)."""
    t = table.copy()
    out = [verdict(r, rule) for _, r in t.iterrows()]
    t["eligible"] = [e for e, _ in out]
    t["why"] = [w for _, w in out]
    diffs = [c for c in (f"{m} Δ" for m in RULE_METRICS) if c in t]
    t["worst_diff"] = t[diffs].min(axis=1) if diffs else 0.0
    for m in RULE_METRICS:
        t[f"{m} Δ low"] = [ci[0] if (ci := _ci(r, m)) else float("nan") for _, r in t.iterrows()]
    t.attrs["rule"] = rule
    return t


def choose_by_rule(table: pd.DataFrame, rule: str | None = None) -> str:
    """The config `rule` picks from a `rule_table` (its "default" when none is eligible);
    `rule` defaults to the one the table was made with (`apply_rule`)."""
    rule = rule or table.attrs.get("rule", DEFAULT_RULE)
    if rule != table.attrs.get("rule"):
        table = apply_rule(table, rule)
    ok = table[table["eligible"]].assign(_pos=range(int(table["eligible"].sum())))
    if ok.empty:
        return "default"
    ok = ok.assign(_ctx=-ok["context_tokens"].fillna(0), _pos=-ok["_pos"])
    if rule == "sign":
        keys = ["worst_diff", "ndcg@10 Δ", "_ctx"]
    else:
        keys = ["answer@5 Δ low", "ndcg@10 Δ low", "_ctx", "_pos"]
    keys = [k for k in keys if k in ok]
    return str(ok.sort_values(keys, ascending=False, kind="stable").iloc[0]["config"])


def explain(table: pd.DataFrame, rule: str = DEFAULT_RULE) -> str:
    """The dev table of a finished run with each candidate's verdict under `rule`: δ, each
    candidate's differences with their CIs, eligible or not and why, and the choice."""
    t = apply_rule(table, rule)
    chosen = choose_by_rule(t, rule)
    lines = [f"rule: {rule}: {RULE_TEXT[rule]}"]
    if rule == "noninferiority":
        lines.append("δ: " + ", ".join(f"{m} {d}" for m, d in NONINFERIORITY_MARGINS.items()))
    lines.append(f"{int(t['n_queries'].iloc[0])} dev questions")
    lines.append(f"{'config':28} {'nDCG@10 Δ [95% CI]':26} {'answer@5 Δ [95% CI]':26} verdict")
    for _, r in t.iterrows():
        cells = []
        for m in RULE_METRICS:
            ci = _ci(r, m)
            cells.append("–" if r["config"] == "default" or m not in r or pd.isna(r.get(m))
                         else f"{r[f'{m} Δ']:+.3f} " + (f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
                                                        if ci else "[no CI]"))
        mark = "CHOSEN " if r["config"] == chosen and chosen != "default" else ""
        v = "baseline" if r["config"] == "default" else (
            f"{mark}{'eligible' if r['eligible'] else 'not eligible'}: {r['why']}")
        lines.append(f"{str(r['config'])[:28]:28} {cells[0]:26} {cells[1]:26} {v}")
    lines.append(f"chosen: {chosen}" + (" (no candidate eligible: the default is kept)"
                                         if chosen == "default" else ""))
    return "\n".join(lines)


def spec_for(name: str, dataset: DatasetSpec, base: RAGConfig,
             space: dict[str, dict[str, Any]], names: list[str]) -> SweepSpec:
    """The sweep of `names` of `space` on `dataset` (k 10, retrieval metrics; the first
    name is the baseline)."""
    return SweepSpec(name=name, dataset=dataset, base=base, variants=[space[n] for n in names],
                     metrics=["retrieval"], k=10)
