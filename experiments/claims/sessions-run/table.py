"""The sessions' LLM ledger rows (b-answers, c-boundaries over MTRAG's collections) as the
markdown table of experiments/conversations/README.md, read from claims.json: after a step of
run.sh, paste its output over the table there.

    python experiments/claims/sessions-run/table.py [experiments/claims/claims.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAMES = {"sessions-all": "all", "sessions-wikipedia": "wikipedia (clapnq)",
         "sessions-govt": "govt", "sessions-product-docs": "product docs (ibmcloud)",
         "sessions-finance-forum": "finance forum (fiqa)"}
CLAIMS = {"b-answers": "b-answers (dense → hybrid, ROUGE-L of the answer vs MTRAG's reference)",
          "c-boundaries": "c-boundaries (boundaries off → on, hallucinated by the `lexical` "
                          "detector at 0.536)"}


def table(ledger: list[dict]) -> str:
    lines = ["| claim | deployment | n | baseline → treatment | relative change [95 % CI] | "
             "verdict |", "|---|---|---|---|---|---|"]
    for claim, label in CLAIMS.items():
        rows = {r["deployment"]: r for r in ledger
                if r["claim"] == claim and r["deployment"] in NAMES}
        for i, dep in enumerate(NAMES):
            r = rows.get(dep)
            if r is None or r.get("baseline_value") is None:
                continue
            change = "–" if r.get("ci_low") is None else (
                f"{100 * r['relative_effect']:+.1f} % [{100 * r['ci_low']:+.1f}, "
                f"{100 * r['ci_high']:+.1f}]")
            lines.append(f"| {label if i == 0 else ''} | {NAMES[dep]} | {r['n_queries']} | "
                         f"{r['baseline_value']:.3f} → {r['treatment_value']:.3f} | {change} | "
                         f"{r['verdict']} |")
    return "\n".join(lines).replace(" -", " −").replace("[-", "[−") + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("claims", nargs="?", type=Path, default=Path("experiments/claims/claims.json"))
    print(table(json.loads(ap.parse_args().claims.read_text())["ledger"]), end="")


if __name__ == "__main__":
    main()
