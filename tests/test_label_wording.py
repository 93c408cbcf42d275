"""Labels made by an LLM are called LLM-labelled (`llm:<model>`), never hand-labelled: in the
code that writes reports, in the docs, in the committed reports and label files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_rag.studies.claims.ledger import detector_fields
from agentic_rag.studies.detectors.own import labelled_as, labels_description

REPO = Path(__file__).resolve().parents[1]
OWN = REPO / "experiments/detectors/halueval-own"
BANNED = ("hand-labelled", "hand labels", "hand-labeled", "hand labelled", "read by hand")


def _texts():
    yield from sorted((REPO / "agentic_rag").rglob("*.py"))
    yield from sorted((REPO / "docs").glob("*.md"))
    yield REPO / "README.md"
    yield from (REPO / "experiments/claims" / n for n in ("REPORT.md", "claims.json"))
    yield from sorted((REPO / "experiments/detectors").rglob("*.csv"))
    yield from sorted((REPO / "experiments/detectors").rglob("*.json"))


@pytest.mark.parametrize("path", list(_texts()), ids=lambda p: str(p.relative_to(REPO)))
def test_no_text_calls_labels_hand_made(path):
    text = path.read_text(encoding="utf-8").lower()
    assert not [w for w in BANNED if w in text]


def test_the_committed_labels_say_an_llm_made_them():
    for p in (1, 2):
        rows = [json.loads(x) for x in (OWN / f"labels-pass{p}.jsonl").read_text().splitlines()
                if x.strip()]
        assert rows and {r["labeller"] for r in rows} == {"llm:claude-helper-session"}
        assert all(r["labeller_was"].startswith("Claude helper session") for r in rows)
    assert labels_description(OWN) == "LLM-labelled (`llm:claude-helper-session`)"


def test_labelled_as_names_people_and_models():
    assert labelled_as(["llm:qwen", "llm:qwen"]) == "LLM-labelled (`llm:qwen`)"
    assert labelled_as(["Ada"]) == "labelled by Ada"
    assert labelled_as(["Ada", "llm:qwen"]) == "LLM-labelled (`llm:qwen`); labelled by Ada"
    assert labelled_as([None]) == "labeller not recorded"


def test_the_ledger_names_the_labeller_from_the_label_files():
    text = detector_fields("mean_numbers", REPO)["judge_validation"]
    assert "LLM-labelled (`llm:claude-helper-session`)" in text
