"""A hallucination row's rates with the detector's error carried (issue 37): prediction-powered
inference (`stats.ppi_mean`, Angelopoulos et al. 2023) from the detector's flags on every
question of an arm plus the answers of that arm someone labelled.

Each arm has one label folder (`LABELLED_ARMS`): the arm's own answers as a labeller read them
(`answers.jsonl`, with the chunks that arm served; written by `studies.detectors.own
.arm_answers`) and their labels (`labels-pass1.jsonl`). A committed row of the claim
(`claims/rows.py`: question id, arm, `hallucinated`, `answer`) is labelled when its question id
and answer text match a labelled pair (`experiments.labels.read_labels`, the reader the
sweeps use): the label is about that row's answer, never about another answer to the same
question. With both arms labelled on the same questions, the paired difference gets its own
PPI interval (`stats.ppi_paired_difference`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentic_rag.experiments.labels import MIN_LABELS, normalised, read_labels
from agentic_rag.experiments.stats import ppi_mean, ppi_paired_difference
from agentic_rag.studies.claims.registry import VERDICTS, Claim
from agentic_rag.studies.claims.rows import read_rows, rows_path
from agentic_rag.studies.detectors.own import labels_description

# The label folder of each (claim, arm): c-boundaries' arms on the claims run's first 200
# questions (the boundaries-on arm's answers also repeat b-answers' hybrid arm).
LABELLED_ARMS = {("c-boundaries", "baseline"): "experiments/detectors/c-boundaries-off",
                 ("c-boundaries", "treatment"): "experiments/detectors/c-boundaries-on"}
NO_LABELS = "no labels for this model/dataset arm"
ARMS = ("baseline", "treatment")
# the columns `ppi_fields` adds (by prefix): a row without them leaves them out of claims.json
PPI_COLUMNS = ("baseline_ppi", "treatment_ppi", "ppi_difference", "baseline_labelled",
               "treatment_labelled", "baseline_labels_only", "treatment_labels_only")


def ppi_fields(row: dict[str, Any], claim: Claim, root: str | Path = ".",
               out_dir: str | Path = "experiments/claims") -> dict[str, Any]:
    """Per arm `<arm>_ppi` (the sentence the report prints) and its estimate and CI; the
    difference treatment − baseline as `ppi_difference` (+ `ppi_difference_estimate`, CI,
    and the relative change against the baseline arm's PPI rate) when both arms have labels
    on at least `MIN_LABELS` common questions; otherwise a sentence saying what is missing.
    {} for a row that is not a measured hallucination row."""
    if claim.metric != "hallucinated" or row.get("verdict") not in VERDICTS:
        return {}
    root = Path(root)
    path = root / rows_path(claim.id, str(row.get("deployment")), out_dir)
    if not path.exists():
        return {f"{a}_ppi": f"no committed rows ({path.name})" for a in ARMS}
    rows = read_rows(path)
    if "answer" not in rows.columns:
        return {f"{a}_ppi": f"the committed rows ({path.name}) have no answers to match labels"
                for a in ARMS}
    detector = row.get("support_detector") or _detector(row)
    threshold = row.get("support_threshold")
    out: dict[str, Any] = {}
    flags: dict[str, dict[str, float]] = {}
    labels: dict[str, dict[str, float]] = {}
    rates: dict[str, float] = {}  # each arm's PPI rate
    for arm in ARMS:
        folder = LABELLED_ARMS.get((claim.id, arm))
        part = rows[(rows["arm"] == arm) & rows["hallucinated"].notna()]
        flags[arm] = dict(zip(part["query_id"].astype(str), part["hallucinated"].astype(float)))
        if folder is None or not (root / folder / "labels-pass1.jsonl").exists():
            out[f"{arm}_ppi"] = f"{NO_LABELS} ({arm})"
            continue
        pairs = read_labels([root / folder])
        labels[arm] = {q: pairs[q, normalised(a)][0]
                       for q, a in zip(part["query_id"].astype(str), part["answer"])
                       if (q, normalised(a)) in pairs}
        qids = list(labels[arm])
        if len(qids) < MIN_LABELS:
            out[f"{arm}_ppi"] = f"{len(qids)} labelled answers of this arm (< {MIN_LABELS})"
            continue
        res = ppi_mean(list(flags[arm].values()), [flags[arm][q] for q in qids],
                       [labels[arm][q] for q in qids])
        who = labels_description(root / folder)
        by = f"by {detector} < {threshold}" if detector else "by the run's detector"
        out[f"{arm}_ppi"] = (
            f"{res['estimate']:.3f} [{res['ci_low']:.3f}, {res['ci_high']:.3f}] (PPI: "
            f"{round(sum(flags[arm].values()))}/{len(flags[arm])} flags {by} + "
            f"{res['n_labelled']} labelled answers of this arm, {who}; rectifier "
            f"{res['rectifier']:+.3f}; the detector alone {res['naive']:.3f} "
            f"[{res['naive_ci_low']:.3f}, {res['naive_ci_high']:.3f}]; the labels alone "
            f"{res['labels_only']:.3f})")
        rates[arm] = res["estimate"]
        out.update({f"{arm}_ppi_estimate": res["estimate"], f"{arm}_ppi_ci_low": res["ci_low"],
                    f"{arm}_ppi_ci_high": res["ci_high"], f"{arm}_labelled": res["n_labelled"],
                    f"{arm}_labels_only": res["labels_only"]})
    out.update(_difference(flags, labels, rates, claim))
    return out


def _difference(flags: dict[str, dict[str, float]], labels: dict[str, dict[str, float]],
                rates: dict[str, float], claim: Claim) -> dict[str, Any]:
    """The paired-difference PPI; relative to the baseline arm's PPI rate (`rates`, the
    rate its row reports), and where the stated figure would put it."""
    missing = [a for a in ARMS if a not in labels]
    if missing:
        return {"ppi_difference": f"no PPI of the difference: {NO_LABELS} ({', '.join(missing)})"}
    paired = [q for q in flags["treatment"] if q in flags["baseline"]]
    both = [q for q in paired if q in labels["treatment"] and q in labels["baseline"]]
    if len(both) < MIN_LABELS:
        return {"ppi_difference": f"no PPI of the difference: {len(both)} questions labelled "
                                  f"in both arms (< {MIN_LABELS})"}
    t, b = flags["treatment"], flags["baseline"]
    res = ppi_paired_difference([t[q] for q in paired], [b[q] for q in paired],
                                [t[q] for q in both], [b[q] for q in both],
                                [labels["treatment"][q] for q in both],
                                [labels["baseline"][q] for q in both])
    base = rates["baseline"]
    rel = res["estimate"] / base if base > 0 else float("nan")
    stated = ""
    if claim.design_figure is not None:  # the stated relative change, in absolute terms
        lo, hi = sorted(claim.direction * f * base
                        for f in (claim.design_figure.low, claim.design_figure.high))
        where = ("inside" if res["ci_low"] <= hi and lo <= res["ci_high"] else "outside")
        stated = (f"; the stated {claim.design_figure.stated!r} would be "
                  f"{lo:+.3f}" + (f" to {hi:+.3f}" if hi != lo else "") + f", {where} it")
    return {"ppi_difference": (
                f"PPI of the difference (treatment − baseline): {res['estimate']:+.3f} "
                f"[{res['ci_low']:+.3f}, {res['ci_high']:+.3f}] over {len(paired)} paired "
                f"questions, {len(both)} labelled in both arms; {rel:+.1%} of the baseline "
                f"arm's PPI rate; the detector alone {res['naive']:+.3f}, the labels alone "
                f"{res['labels_only']:+.3f}{stated}"),
            "ppi_difference_estimate": res["estimate"], "ppi_difference_ci_low": res["ci_low"],
            "ppi_difference_ci_high": res["ci_high"], "ppi_difference_relative": rel,
            "ppi_difference_labelled": len(both)}


def _detector(row: dict[str, Any]) -> str | None:
    judged = str(row.get("judge_validation") or "")
    return judged.split()[1].rstrip(":") if judged.startswith("detector ") else None
