"""The choice rules side by side on every committed `tune` study (issue 63): each study's dev
table (`tune.json`'s `dev_table`, paired differences with their 95 % CIs) re-read under the old
rule (`sign`) and the new one (`noninferiority`, RULE-NONINFERIORITY.md), no search rerun; for a
study whose choice changes, what the new choice does on the held-out questions that are
committed for every candidate (`human.json`'s `human_test`: the human questions, all of them),
or else on the generated test half (`test_table`: the default and the old choice only). A study
committed with its `report.md` alone (no `tune.json`: the Node.js pages, Asciidoctor) is read from
the report's tables (`tune_report.from_report`), whose figures are rounded to 3 decimals.

    PYTHONPATH=. python experiments/tune/rule_compare.py    # → rule-compare.json, rule-compare.md

No LLM, no index: reads committed files only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentic_rag.studies.tune_report import acceptance, from_report
from agentic_rag.studies.tune_space import (
    NONINFERIORITY_MARGINS,
    RULE_METRICS,
    choose_by_rule,
    table_from_records,
)

ROOT = Path(__file__).resolve().parent
# who wrote each corpus's held-out ("human") questions
HELD_OUT = {"python": "python-library-qa's 66, written by an LLM engineering session (not a person)",
            "python-full": "python-library-qa's 66, written by an LLM engineering session "
                           "(not a person)",
            "halueval": "HaluEval's 100 dev questions (written by HaluEval's authors)",
            "tau2": "τ²-banking's 97 tasks (customer tickets by τ²-bench's authors; nDCG only)"}


def _diff(rec: dict, m: str) -> dict | None:
    if m not in rec or rec[m] is None:
        return None
    ci = rec.get(f"{m} Δ CI")
    return {"diff": round(rec[f"{m} Δ"], 4), "ci95": [round(c, 4) for c in ci] if ci else None}


def study(path: Path) -> dict:
    tune = json.loads(path.read_text()) if path.suffix == ".json" else from_report(path)
    table = table_from_records(tune["dev_table"])
    old, new = choose_by_rule(table, "sign"), choose_by_rule(table, "noninferiority")
    rel = path.parent.relative_to(ROOT)
    out = {"study": str(rel) + ("" if path.suffix == ".json" else " (report.md)"),
           "dev_questions": int(table["n_queries"].iloc[0]),
           "acceptance": acceptance(tune.get("generated") or {}), "committed_choice": tune["chosen"],
           "old": old, "new": new, "changed": old != new}
    human = path.parent / "human.json"
    if human.exists():  # every candidate on all the held-out questions
        recs = {r["config"]: r for r in json.loads(human.read_text())["human_test"]}
        out["held_out"] = {"questions": int(recs["default"]["n_queries"]),
                           "written_by": HELD_OUT.get(rel.parts[0], "?")}
    else:  # the generated test half: the default and the committed choice only
        recs = {r["config"]: r for r in tune.get("test_table", [])}
        out["held_out"] = {"questions": int(next(iter(recs.values()))["n_queries"]) if recs
                           else 0, "written_by": "the generated test half (LLM-written)"}
    for name, key in ((new, "new_vs_default"), (old, "old_vs_default")):
        if name != "default":
            out["held_out"][key] = ({m: _diff(recs[name], m) for m in RULE_METRICS
                                     if _diff(recs[name], m) is not None} if name in recs else
                                    "not committed (the test sweep scored the committed choice only)")
    return out


def beyond_margin(held: dict | str | None) -> bool | None:
    """Is the new choice worse than the default on the held-out questions beyond δ (its CI's
    upper bound below -δ, or its mean below -δ)? None: nothing to read."""
    if not isinstance(held, dict):
        return None
    return any(v["diff"] < -NONINFERIORITY_MARGINS[m] for m, v in held.items())


def _fmt(held: dict | str | None, m: str) -> str:
    if not isinstance(held, dict):
        return "–"
    v = held.get(m)
    if not v:
        return "–"
    ci = f" [{v['ci95'][0]:+.3f}, {v['ci95'][1]:+.3f}]" if v["ci95"] else ""
    return f"{v['diff']:+.3f}{ci}"


def markdown(rows: list[dict]) -> str:
    """The change table: study, dev questions and acceptance, old and new choice, and on the
    held-out questions the new choice's and the old choice's Δ vs the default (nDCG@10,
    answer@5; a choice equal to the default: Δ 0 by construction, "="). """
    lines = ["| study | dev q | acceptance | old choice (`sign`) | new choice (`noninferiority`) | "
             "held-out questions | new vs default: nDCG@10 | answer@5 | old vs default: nDCG@10 "
             "| answer@5 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        h = r.get("held_out") or {}
        new = (["=", "="] if r["new"] == "default" else
               [_fmt(h.get("new_vs_default"), m) for m in RULE_METRICS])
        old = (["=", "="] if r["old"] == "default" else
               [_fmt(h.get("old_vs_default"), m) for m in RULE_METRICS])
        name = f"**{r['study']}**" if r["changed"] else r["study"]
        lines.append(f"| {name} | {r['dev_questions']} | {r['acceptance']} | {r['old']} | "
                     f"{r['new']} | {h.get('questions', 0)}: {h.get('written_by', '–')} | "
                     f"{' | '.join(new)} | {' | '.join(old)} |")
    return "\n".join(lines) + "\n"


def main(out: Annotated[Path, typer.Option()] = ROOT / "rule-compare.json") -> None:
    paths = sorted(ROOT.glob("**/tune.json"))
    done = {p.parent for p in paths}
    paths += sorted(p for p in ROOT.glob("*/report.md") if p.parent not in done)
    rows = [study(p) for p in paths]
    for r in rows:
        r["new_worse_beyond_margin"] = beyond_margin(
            (r.get("held_out") or {}).get("new_vs_default")) if r["new"] != "default" else False
        print(f"{r['study']:32} dev {r['dev_questions']:3} acc {r['acceptance']:16} "
              f"old {r['old']:26} new {r['new']:26} {'CHANGED' if r['changed'] else ''}")
    out.write_text(json.dumps({"margins": NONINFERIORITY_MARGINS, "studies": rows}, indent=2,
                              ensure_ascii=False) + "\n")
    out.with_suffix(".md").write_text(markdown(rows))


if __name__ == "__main__":
    typer.run(main)
