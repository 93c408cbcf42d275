"""A `tune` run's report: the dev and test tables as JSON records and Markdown, the plot, the
Markdown read back into its tables (`from_report`, `report_markdown`'s inverse) and
`explain_run` (a finished run's dev table under a rule, nothing rerun). Split from
`studies/tune_run.py`, which runs the steps."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from agentic_rag.studies.tune_space import (
    DEFAULT_RULE,
    NONINFERIORITY_MARGINS,
    RULE_METRICS,
    RULE_TEXT,
    RULES,
    TuneError,
    explain,
    rule_table,
    table_from_records,
)


def _metrics(table: pd.DataFrame, name: str) -> dict[str, Any]:
    row = table.set_index("config").loc[name]
    out: dict[str, Any] = {"n_queries": int(row["n_queries"])}
    for m in RULE_METRICS:
        if m in row and pd.notna(row[m]):
            out[m] = round(float(row[m]), 4)
            if name != "default" and f"{m} Δ CI" in row and isinstance(row[f"{m} Δ CI"], tuple):
                lo, hi = row[f"{m} Δ CI"]
                out[f"{m}_diff_vs_default"] = {"mean": round(float(row[f"{m} Δ"]), 4),
                                               "ci95": [round(lo, 4), round(hi, 4)]}
    return out


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    return json.loads(table.to_json(orient="records"))


def _fmt(row: pd.Series, m: str) -> str:
    if m not in row or pd.isna(row[m]):
        return "–"
    text = f"{row[m]:.3f}"
    ci = row.get(f"{m} Δ CI")
    if row["config"] != "default" and isinstance(ci, tuple):
        text += f" ({row[f'{m} Δ']:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}])"
    return text


def acceptance(gen: dict) -> str:
    """The generated set's acceptance rate, "kept/drawn (share)" ("not recorded" without)."""
    kept, drawn = gen.get("accepted"), gen.get("drawn")
    if kept is None or not drawn:
        return "not recorded"
    return f"{kept}/{drawn} ({kept / drawn:.2f})"


def report_markdown(source: Any, prof: dict, gen: dict, dev: pd.DataFrame, test: pd.DataFrame,
                    chosen: str, best: Path, plot: Path, rule: str = DEFAULT_RULE) -> str:
    """The printed report: what was generated (with its acceptance rate), the rule with its
    margins, the dev table the rule read with each candidate's verdict and why, the test
    figures with paired Δ and 95 % CIs vs the default, and the line that serves it."""
    acc = acceptance(gen)
    margins = (" δ (the margin a loss's lower bound must stay above): " + ", ".join(
        f"{m} {d}" for m, d in NONINFERIORITY_MARGINS.items()) + " (experiments/tune/"
        "RULE-NONINFERIORITY.md)." if rule == "noninferiority" else "")
    lines = [f"# Tuned for {source}", "",
             f"{prof['documents']} documents, {prof['chunks']} chunks. Questions generated "
             f"from them: {gen.get('accepted')} kept of {gen.get('drawn')} draws "
             f"(acceptance {acc}; {gen.get('llm_calls', 'unrecorded')} LLM calls; as made: "
             f"{json.dumps(gen.get('by_split'))}), "
             f"generator `{str(gen.get('generator', ''))[:40]}`.", "",
             f"Rule `{rule}` (fixed before any figure): {RULE_TEXT[rule]}.{margins}", "",
             f"## Dev: the rule chose **{chosen}** (questions' acceptance {acc})", "",
             "| config | nDCG@10 (Δ [95 % CI]) | answer@5 (Δ [95 % CI]) | context tokens | "
             "verdict |", "|---|---|---|---|---|"]
    for _, r in dev.iterrows():
        v = "baseline" if r["config"] == "default" else (
            f"{'eligible' if r['eligible'] else 'not eligible'}: {r.get('why', '')}")
        lines.append(f"| {r['config']} | {_fmt(r, 'ndcg@10')} | {_fmt(r, 'answer@5')} | "
                     f"{r['context_tokens']:.0f} | {v} |")
    lines += ["", f"## Test: scored once ({int(test['n_queries'].iloc[0])} questions; "
              f"acceptance {acc})", "",
              "| config | nDCG@10 (Δ [95 % CI]) | answer@5 (Δ [95 % CI]) | context tokens |",
              "|---|---|---|---|"]
    for _, r in test.iterrows():
        lines.append(f"| {r['config']} | {_fmt(r, 'ndcg@10')} | {_fmt(r, 'answer@5')} | "
                     f"{r['context_tokens']:.0f} |")
    if chosen == "default":
        lines += ["", "No candidate passed the rule on dev: the default is kept."]
    lines += ["", f"![dev and test]({plot.name})", "", "Serve it:", "",
              f"    agentic-rag serve --config {best}", ""]
    return "\n".join(lines)



_CELL = re.compile(r"([0-9.]+)(?: \(([+-][0-9.]+) \[([+-][0-9.]+), ([+-][0-9.]+)\]\))?")


def _md_table(lines: list[str], start: int) -> list[dict]:
    """The Markdown table after `lines[start]`, as `table_from_records` records."""
    recs, i = [], start
    while i < len(lines) and not lines[i].startswith("| config"):
        i += 1
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rec: dict = {"config": cells[0], "context_tokens": float(cells[3])}
        for m, cell in zip(RULE_METRICS, cells[1:3]):
            g = _CELL.fullmatch(cell.replace("−", "-"))
            rec[m] = float(g[1])
            rec[f"{m} Δ"] = float(g[2]) if g[2] else 0.0
            rec[f"{m} Δ CI"] = [float(g[3]), float(g[4])] if g[2] else None
        recs.append(rec)
    return recs


def from_report(path: Path) -> dict:
    """`report_markdown`'s inverse: a `tune.json`-like record (dev and test tables, the set's
    kept/drawn counts, the choice) from a committed `report.md`, its figures to 3 decimals."""
    lines = path.read_text().splitlines()
    head = re.search(r"(\d+) kept of (\d+) draws", "\n".join(lines[:4]))
    dev = next(i for i, x in enumerate(lines) if x.startswith("## Dev"))
    test = next(i for i, x in enumerate(lines) if x.startswith("## Test"))
    recs = _md_table(lines, dev)
    n = re.search(r"\((\d+) questions", lines[test])
    chosen = re.search(r"\*\*(.+?)\*\*", lines[dev])[1]
    test_recs = _md_table(lines, test)
    for r in test_recs:
        r["n_queries"] = int(n[1])
    dev_n = re.search(r'"dev": (\d+)', "\n".join(lines[:4]))
    for r in recs:
        r["n_queries"] = int(dev_n[1]) if dev_n else 0
    return {"generated": {"accepted": int(head[1]), "drawn": int(head[2])} if head else {},
            "dev_table": recs, "test_table": test_recs, "chosen": chosen,
            "from": "report.md (3 decimals)"}

def _plot(dev: pd.DataFrame, test: pd.DataFrame, chosen: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 0.45 * len(dev) + 1.8))
    for ax, table, title in ((axes[0], dev, "dev (chosen on)"), (axes[1], test, "test (reported)")):
        for j, m in enumerate(m for m in RULE_METRICS if m in table):
            y = [i + 0.38 * j for i in range(len(table))]
            ax.barh(y, table[m], height=0.36, label=m,
                    color=["tab:red" if c == chosen and c != "default" else
                           ("tab:blue", "tab:cyan")[j] for c in table["config"]])
        ax.set_yticks(range(len(table)), table["config"])
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title(title)
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def explain_run(run_dir: str | Path, rule: str = DEFAULT_RULE) -> str:
    """A finished `tune` run's dev table with each candidate's verdict under `rule`, from its
    files alone (nothing rerun): `RUN_DIR/tune.json` (a `tune --out` folder: its `dev_table`),
    or a sweep run folder's `summary.csv` (a dev sweep: its configs in order, the first the
    default). The run's own choice and the questions' acceptance rate are said beside it."""
    run_dir = Path(run_dir)
    if rule not in RULES:
        raise TuneError(f"rule {rule!r}: use one of {', '.join(RULES)}")
    head = []
    if (run_dir / "tune.json").exists():
        tj = json.loads((run_dir / "tune.json").read_text())
        if not tj.get("dev_table"):
            raise TuneError(f"{run_dir}/tune.json: no dev_table in it")
        table = table_from_records(tj["dev_table"])
        head.append(f"{run_dir}: tune run on {tj.get('folder')}; questions' acceptance "
                    f"{acceptance(tj.get('generated') or {})}; it chose {tj.get('chosen')!r} "
                    f"under its rule ({tj.get('rule_name', 'sign')})")
    elif (run_dir / "summary.csv").exists():
        summary = pd.read_csv(run_dir / "summary.csv")
        for m in RULE_METRICS:  # a sweep summary gives the baseline's own difference as empty
            summary.loc[summary.index[0], f"{m}_diff_vs_base"] = 0.0
        names = ["default", *summary["config"].astype(str).iloc[1:]]
        owner = run_dir.parent.parent / "tune.json"  # a dev sweep inside a tune --out folder
        if owner.exists() and "-dev" in run_dir.name:
            space = list(json.loads(owner.read_text()).get("search_space") or [])
            names = space if len(space) == len(names) else names
        table = rule_table(summary, names, rule)
        head.append(f"{run_dir}: sweep summary, {len(names)} configs (the first read as "
                    "the default)")
    elif (run_dir / "report.md").exists():  # a study committed with its report alone
        rep = from_report(run_dir / "report.md")
        table = table_from_records(rep["dev_table"])
        head.append(f"{run_dir}: report.md only (figures to 3 decimals); questions' acceptance "
                    f"{acceptance(rep['generated'])}; it chose {rep['chosen']!r}")
    else:
        raise TuneError(f"{run_dir}: neither tune.json (a tune --out folder), summary.csv "
                        "(a sweep run folder) nor report.md in it")
    return "\n".join([*head, explain(table, rule)])
