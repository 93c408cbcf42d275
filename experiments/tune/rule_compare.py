"""The choice rules side by side on every committed `tune` study (issue 63): each study's dev
table (`tune.json`'s `dev_table`, paired differences with their 95 % CIs) re-read under the old
rule (`sign`) and the new one (`noninferiority`, RULE-NONINFERIORITY.md), no search rerun; for a
study whose choice changes, what the new choice does on the held-out questions that are
committed for every candidate (`human.json`'s `human_test`: the human questions, all of them).

    PYTHONPATH=. python experiments/tune/rule_compare.py [--out experiments/tune/rule-compare.json]

No LLM, no index: reads committed files only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

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


def acceptance(tune: dict) -> str:
    g = tune.get("generated") or {}
    if g.get("accepted") is None or not g.get("drawn"):
        return "not recorded"
    return f"{g['accepted']}/{g['drawn']} ({g['accepted'] / g['drawn']:.2f})"


def _diff(rec: dict, m: str) -> dict | None:
    if m not in rec or rec[m] is None:
        return None
    ci = rec.get(f"{m} Δ CI")
    return {"diff": round(rec[f"{m} Δ"], 4), "ci95": [round(c, 4) for c in ci] if ci else None}


def study(path: Path) -> dict:
    tune = json.loads(path.read_text())
    table = table_from_records(tune["dev_table"])
    old, new = choose_by_rule(table, "sign"), choose_by_rule(table, "noninferiority")
    rel = path.parent.relative_to(ROOT)
    out = {"study": str(rel), "dev_questions": int(table["n_queries"].iloc[0]),
           "acceptance": acceptance(tune), "committed_choice": tune["chosen"],
           "old": old, "new": new, "changed": old != new}
    human = path.parent / "human.json"
    if human.exists():
        h = json.loads(human.read_text())
        recs = {r["config"]: r for r in h["human_test"]}
        corpus = rel.parts[0]
        out["held_out"] = {"questions": int(recs["default"]["n_queries"]),
                           "written_by": HELD_OUT.get(corpus, "?")}
        for name, key in ((new, "new_vs_default"), (old, "old_vs_default")):
            if name != "default":
                out["held_out"][key] = {m: _diff(recs[name], m) for m in RULE_METRICS
                                        if _diff(recs[name], m) is not None}
    else:
        test = {r["config"]: r for r in tune.get("test_table", [])}
        out["held_out"] = {"questions": int(next(iter(test.values()))["n_queries"]) if test
                           else 0, "written_by": "the generated test half (LLM-written)"}
        if new in test and new != "default":
            out["held_out"]["new_vs_default"] = {m: _diff(test[new], m) for m in RULE_METRICS
                                                 if _diff(test[new], m) is not None}
        elif new != "default":
            out["held_out"]["new_vs_default"] = "not committed (the test sweep scored the old "
            "choice only)"
    return out


def beyond_margin(held: dict | str | None) -> bool | None:
    """Is the new choice worse than the default on the held-out questions beyond δ (its CI's
    upper bound below -δ, or its mean below -δ)? None: nothing to read."""
    if not isinstance(held, dict):
        return None
    return any(v["diff"] < -NONINFERIORITY_MARGINS[m] for m, v in held.items())


def main(out: Annotated[Path, typer.Option()] = ROOT / "rule-compare.json") -> None:
    rows = [study(p) for p in sorted(ROOT.glob("**/tune.json"))]
    for r in rows:
        r["new_worse_beyond_margin"] = beyond_margin(
            (r.get("held_out") or {}).get("new_vs_default")) if r["new"] != "default" else False
        print(f"{r['study']:32} dev {r['dev_questions']:3} acc {r['acceptance']:16} "
              f"old {r['old']:26} new {r['new']:26} {'CHANGED' if r['changed'] else ''}")
    out.write_text(json.dumps({"margins": NONINFERIORITY_MARGINS, "studies": rows}, indent=2,
                              ensure_ascii=False) + "\n")


if __name__ == "__main__":
    typer.run(main)
